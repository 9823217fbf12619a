"""kdash in a real terminal: a detached 160x45 tmux session on a simulated run (`kdash demo`),
and `kdash replay` and the plain dashboard on the files of one.

Reads the screen with `capture-pane`, presses keys with `send-keys`, and checks the exit status and
that the terminal is restored (alternate screen off) after `q` (exit 0) and after SIGTERM, SIGHUP
and SIGINT (128 + the signal, as a shell expects of a process a signal ended).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


class Tmux:
    """One detached tmux session running kdash under bash, which records the exit status.

    `args`: kdash's arguments (default: the demo); `size`: the pane's; `env`: more variables.
    """

    def __init__(self, tmp: Path, args: str | None = None, size: tuple[int, int] = (160, 45),
                 env: dict[str, str] | None = None) -> None:
        self.name = f"kdash-test-{uuid.uuid4().hex[:8]}"
        self.exit_file = tmp / "exit"
        self.pid_file = tmp / "pid"
        run_dir = tmp / "run"
        kdash = f"{sys.executable} -m dash " + (args or f"demo --speed 10 --dir {run_dir}")
        # kdash runs in the foreground (it owns the terminal); bash records its exit status.
        script = (f"cd {REPO}; echo $$ > {self.pid_file}; {kdash}; echo $? > {self.exit_file}; "
                  "sleep 60")
        # pytest-xdist workers export COLUMNS=80 and LINES=24, which would override the pane's size.
        full = {k: v for k, v in os.environ.items()
                if k not in ("NO_COLOR", "TMUX", "COLUMNS", "LINES")}
        full["TERM"] = "xterm-256color"
        full["XDG_STATE_HOME"] = str(tmp / "state")  # the alert history stays in the test's dir
        full.update(env or {})
        # A server of its own (-L) with no user config (-f): another tmux server on the machine,
        # with its own sizes and options, cannot change what this test sees.
        self.base = ["tmux", "-L", self.name, "-f", "/dev/null"]
        subprocess.run([*self.base, "new-session", "-d", "-s", self.name, "-x", str(size[0]),
                        "-y", str(size[1]), "bash", "--norc", "-c", script], check=True, env=full)

    def tmux(self, *args: str) -> str:
        out = subprocess.run([*self.base, *args], capture_output=True, text=True, check=False)
        return out.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", self.name, key)
            time.sleep(0.15)

    def wait_for(self, check: Callable[[str], bool], timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if check(screen):
                return screen
            time.sleep(0.3)
        raise AssertionError(f"screen never matched; last screen:\n{screen}")

    def kdash_pid(self) -> int:
        shell = int(self.pid_file.read_text())
        out = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True)
        return int(out.stdout.split()[0])

    def exit_status(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exit_file.exists() and self.exit_file.read_text().strip():
                return int(self.exit_file.read_text())
            time.sleep(0.2)
        raise AssertionError("kdash did not exit")

    def alternate_screen(self) -> bool:
        return self.tmux("display", "-p", "-t", self.name, "#{alternate_on}").strip() == "1"

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    session = Tmux(tmp_path)
    try:
        yield session
    finally:
        session.close()


def _ready(screen: str) -> bool:
    # The partition's row, not the client line's progress bar, which names it too.
    return all(word in screen for word in ("partitions", "GPUs", "alerts", "gen tok/s")) and any(
        "B2_opencodeinstruct" in line and "/5000" in line and "%|" not in line
        for line in screen.splitlines()
    )


def _details(screen: str) -> str | None:
    """The first line of the selected partition's details (it starts with the partition name)."""
    for line in screen.splitlines():
        body = line.lstrip("│")
        # "NAME  /path/to/output" (a long path is cut short at the panel's edge)
        if body.split(" ", 1)[0].startswith("B") and "  /" in body:
            return body
    return None


def _details_line(screen: str) -> str:
    line = _details(screen)
    if line is None:
        raise AssertionError(f"no partition details on screen:\n{screen}")
    return line


def test_panels_keys_and_q(tmux: Tmux) -> None:
    # The details panel fills on the first output count, which a loaded machine can delay.
    screen = tmux.wait_for(lambda s: _ready(s) and _details(s) is not None
                           and "GPU 0 memory" in s)
    assert "server" in screen and "memory" in screen
    # the selection follows the partition being written (B2 once its first line is seen)
    assert _details_line(screen).split()[0] in ("B1_glaive", "B2_opencodeinstruct")

    tmux.keys("1")
    screen = tmux.wait_for(lambda s: (_details(s) or "").startswith("B1"))
    tmux.keys("2", "g")
    screen = tmux.wait_for(lambda s: "GPU 1 memory" in s and (_details(s) or "").startswith("B2"))
    assert _details_line(screen).startswith("B2_opencodeinstruct")

    # A lone Escape is a key once no sequence follows it (the input thread's one timed wait).
    tmux.keys("?")
    tmux.wait_for(lambda s: "kdash keys" in s)
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "kdash keys" not in s and _ready(s))

    tmux.keys("q")
    assert tmux.exit_status() == 0
    assert not tmux.alternate_screen()


SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]


@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_signals_restore_the_terminal_and_exit_with_128_plus_the_signal(
        tmux: Tmux, sig: signal.Signals) -> None:
    tmux.wait_for(_ready)
    assert tmux.alternate_screen()
    os.kill(tmux.kdash_pid(), sig)
    assert tmux.exit_status() == 128 + sig
    assert not tmux.alternate_screen()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files of a simulated run that has ended (a log to replay, outputs to count)."""
    from dash.sim import SimRun

    root = tmp_path_factory.mktemp("finished")
    SimRun(root, "healthy").advance_to(300)
    return root


def _replay_ready(screen: str) -> bool:
    return "replay" in screen and _files_ready(screen)


def _files_ready(screen: str) -> bool:
    return all(w in screen for w in ("partitions", "GPUs", "alerts", "B2_opencodeinstruct"))


@pytest.mark.parametrize(("command", "stop", "status"), [
    ("replay", "q", 0), ("replay", signal.SIGTERM, 143),
    ("dashboard", "q", 0), ("dashboard", signal.SIGINT, 130),
], ids=["replay-q", "replay-SIGTERM", "dashboard-q", "dashboard-SIGINT"])
def test_replay_and_the_dashboard_exit_status(tmp_path: Path, finished_run: Path, command: str,
                                              stop: str | signal.Signals, status: int) -> None:
    outputs = f"'{finished_run / 'outputs' / '*.jsonl'}'"
    if command == "replay":
        args, ready = f"replay {finished_run / 'server.log'} --outputs {outputs}", _replay_ready
    else:
        args = f"--log {finished_run / 'server.log'} --outputs {outputs} --url ''"
        ready = _files_ready
    session = Tmux(tmp_path, args)
    try:
        session.wait_for(ready)
        assert session.alternate_screen()
        if isinstance(stop, str):
            session.keys(stop)
        else:
            os.kill(session.kdash_pid(), stop)
        assert session.exit_status() == status
        assert not session.alternate_screen()
    finally:
        session.close()


def test_replay_of_a_gz_that_breaks_off_exits_1_and_says_where(tmp_path: Path,
                                                               finished_run: Path) -> None:
    import gzip

    whole = gzip.compress((finished_run / "server.log").read_bytes())
    cut = tmp_path / "server.log.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    session = Tmux(tmp_path, f"replay {cut}")
    try:
        session.wait_for(lambda s: "breaks off after line" in s)  # the toast
        session.keys("q")
        assert session.exit_status() == 1
        assert not session.alternate_screen()
        said = session.screen()  # the shell's screen again: the stderr line kdash left on it
        assert f"kdash: {cut}: the compressed log breaks off after line" in said
    finally:
        session.close()
