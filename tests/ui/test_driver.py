"""The terminal driver's input thread: asleep while no key is pressed, keys and a lone Escape
delivered as Textual's own driver delivers them, and the app's end wakes it at once.

The real driver and its real thread read a real pseudo-terminal; the test's subclass only
records the events the thread hands on, instead of posting them to a running app.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable
from selectors import SelectSelector
from typing import Any

import pytest
from textual import events
from textual.app import App
from textual.message import Message

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the Linux/macOS driver")

if sys.platform != "win32":
    import signal
    import tty

    from dash.ui import driver as driver_mod
    from dash.ui.workers import WorkerApp


class _CountingSelector(SelectSelector):
    waits: list[float | None] = []

    def select(self, timeout: float | None = None) -> Any:
        _CountingSelector.waits.append(timeout)
        return super().select(timeout)


async def _until(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.01)
    return check()


@pytest.fixture
def restore_signals() -> Any:
    # The driver installs SIGTSTP/SIGCONT handlers for Ctrl+Z, as Textual's does.
    saved = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


async def test_input_thread_sleeps_until_a_key_and_delivers_it(
        monkeypatch: pytest.MonkeyPatch, restore_signals: None) -> None:
    monkeypatch.setattr(driver_mod, "SelectSelector", _CountingSelector)
    _CountingSelector.waits = []
    got: list[Message] = []

    class Recording(driver_mod.QuietLinuxDriver):
        def process_message(self, message: Message) -> None:
            got.append(message)

    master, slave = os.openpty()
    tty.setraw(slave)  # as the driver's application mode leaves the terminal
    try:
        drv = Recording(App(), debug=False, mouse=False, size=(80, 24))
        drv.fileno = slave
        thread = threading.Thread(target=drv.run_input_thread, daemon=True)
        thread.start()
        await asyncio.sleep(0.5)  # Textual's own loop would have woken five times by now
        assert _CountingSelector.waits == [None], "the idle thread woke up"

        keys = lambda: [m.key for m in got if isinstance(m, events.Key)]  # noqa: E731
        os.write(master, b"q")
        assert await _until(lambda: keys() == ["q"])
        # A lone Escape is a key only once no sequence follows it: the one wait with a timeout.
        os.write(master, b"\x1b")
        assert await _until(lambda: keys() == ["q", "escape"])
        assert any(w is not None for w in _CountingSelector.waits)
        assert _CountingSelector.waits[-1] is None  # and asleep again after it

        start = time.monotonic()
        drv.exit_event.set()
        thread.join(2.0)
        assert not thread.is_alive()
        assert time.monotonic() - start < 1.0  # woken by the pipe, not a timeout
    finally:
        os.close(master)
        os.close(slave)


def test_the_app_uses_it_where_textual_would_use_its_linux_driver(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.drivers.headless_driver import HeadlessDriver
    from textual.drivers.linux_driver import LinuxDriver

    monkeypatch.setattr(App, "get_driver_class", lambda self: LinuxDriver)
    assert WorkerApp.get_driver_class(object.__new__(WorkerApp)) is driver_mod.QuietLinuxDriver
    # A driver chosen through TEXTUAL_DRIVER (or any other) is left alone.
    monkeypatch.setattr(App, "get_driver_class", lambda self: HeadlessDriver)
    assert WorkerApp.get_driver_class(object.__new__(WorkerApp)) is HeadlessDriver


async def test_input_at_its_end_is_no_longer_waited_on(
        monkeypatch: pytest.MonkeyPatch, restore_signals: None) -> None:
    # stdin piped from a finished command: always readable, never anything to read
    monkeypatch.setattr(driver_mod, "SelectSelector", _CountingSelector)
    _CountingSelector.waits = []
    read_end, write_end = os.pipe()
    os.close(write_end)
    try:
        drv = driver_mod.QuietLinuxDriver(App(), debug=False, mouse=False, size=(80, 24))
        drv.fileno = read_end
        thread = threading.Thread(target=drv.run_input_thread, daemon=True)
        thread.start()
        await asyncio.sleep(0.3)
        assert thread.is_alive()
        assert len(_CountingSelector.waits) == 2  # the end of input, then asleep
        drv.exit_event.set()
        thread.join(2.0)
        assert not thread.is_alive()
    finally:
        os.close(read_end)


def test_a_closing_terminal_ends_kdash(tmp_path: Any) -> None:
    """A terminal that closes (tmux kill-session, an SSH drop) sends SIGCONT with its SIGHUP.
    Textual's driver took the SIGCONT for the end of a Ctrl+Z and started a second input
    thread; the app's end stopped only that one, and the process waited for ever on the first.
    Here the real dashboard runs on a real pseudo-terminal, gets both signals and loses its
    terminal: it must exit, with SIGHUP's status."""
    import subprocess

    log = tmp_path / "server.log"
    log.write_text("")
    master, slave = os.openpty()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color",
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.Popen([sys.executable, "-m", "dash", "--log", str(log), "--no-http",
                             "--no-bell"], stdin=slave, stdout=slave, stderr=slave, env=env,
                            cwd=tmp_path, start_new_session=True)
    os.close(slave)
    try:
        deadline = time.monotonic() + 30
        seen = b""
        while b"kdash" not in seen and time.monotonic() < deadline:  # the first frame
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
        assert b"kdash" in seen, "the dashboard did not start"
        time.sleep(1.0)
        proc.send_signal(signal.SIGCONT)
        proc.send_signal(signal.SIGHUP)
        os.close(master)
        master = -1
        assert proc.wait(timeout=20) == 128 + signal.SIGHUP
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
