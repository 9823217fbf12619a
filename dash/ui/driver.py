"""Textual's Linux driver with an input thread that sleeps until there is something to read.

Textual's `LinuxDriver.run_input_thread` waits on the terminal with a 0.1 s timeout, to notice
the end of the app and the key parser's timeout (a lone Escape is a key only once no sequence
follows it). That is ten wake-ups a second for ever: in an idle dashboard about a tenth of
kdash's CPU, spent waiting for keys nobody presses. This thread waits with no timeout unless the
parser is holding a partial sequence, and the app's end wakes it through a pipe. Written here
because Textual has no setting for it; the loop is Textual 8.2's own (the version is pinned)
apart from how long it waits.
"""

from __future__ import annotations

import os
import threading
from codecs import getincrementaldecoder
from selectors import EVENT_READ, SelectSelector
from typing import Any

from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver


class _WakingEvent(threading.Event):
    """The driver's exit flag: setting it also wakes the input thread's wait."""

    def __init__(self) -> None:
        super().__init__()
        self._fd_lock = threading.Lock()
        self._wake_fd: int | None = None

    def attach(self, fd: int | None) -> None:
        """The pipe a `set` writes to (None: no thread waits); under the lock, so that a
        descriptor is never written once its thread has let it go (its number may be reused)."""
        with self._fd_lock:
            self._wake_fd = fd

    def set(self) -> None:
        super().set()
        with self._fd_lock:
            if self._wake_fd is not None:
                try:
                    os.write(self._wake_fd, b"\0")
                except OSError:  # full: a wake-up is already pending
                    pass


class QuietLinuxDriver(LinuxDriver):
    """`LinuxDriver` whose input thread costs nothing while no key is pressed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exit_event = _WakingEvent()
        self._suspended = False

    def suspend_application_mode(self) -> None:
        self._suspended = True
        super().suspend_application_mode()

    def resume_application_mode(self) -> None:
        """Start application mode again, only after a suspend. A closing terminal (tmux
        kill-session, an SSH drop) sends SIGCONT with its SIGHUP, and Textual's driver took it
        for the end of a Ctrl+Z: it started a second input thread over the first, the app's
        end stopped only the second, and the first waited on the dead terminal for ever, so
        kdash never exited."""
        if not self._suspended:
            return
        self._suspended = False
        super().resume_application_mode()

    def run_input_thread(self) -> None:
        """Wait for input (or the parser's timeout, or the app's end) and dispatch events."""
        exit_event = self.exit_event
        assert isinstance(exit_event, _WakingEvent)
        wake_r, wake_w = os.pipe()  # not inherited by children (os.pipe2 is not on macOS)
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        selector = SelectSelector()  # as Textual: macOS's kqueue cannot wait on a tty
        selector.register(self.fileno, EVENT_READ)
        selector.register(wake_r, EVENT_READ)
        # Published before the flag is first tested: a `set` from now on wakes the wait below,
        # and one from before is seen by the test.
        exit_event.attach(wake_w)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode

        def wait(timeout: float | None) -> None:
            """One wait, and every event that it brings or that fell due."""
            for key, _mask in selector.select(timeout):
                if key.fd == wake_r:
                    try:
                        os.read(wake_r, 64)
                    except BlockingIOError:
                        pass
                    continue
                data = os.read(self.fileno, 1024 * 4)
                if not data:
                    # The end of input (stdin piped, or closed): nothing more can come, and a
                    # file at its end is always readable, so it is no longer waited on.
                    selector.unregister(self.fileno)
                    continue
                for event in parser.feed(decode(data)):
                    self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not exit_event.is_set():
                due = parser._timeout_time  # a partial sequence waits for its next byte
                wait(None if due is None else max(0.0, due - get_time()))
        finally:
            exit_event.attach(None)
            selector.close()
            os.close(wake_r)
            os.close(wake_w)
