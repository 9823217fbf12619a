"""A double of `dash.sources.observations.Sources`: scripted observations, and a record of when
each poll ran and when the sources were closed, for tests of the workers and of shutdown.

It keeps the real contract: blocking methods are called from worker threads, `poll_http` and
`watch` run on the loop, I/O problems are values (unless a test scripts one that escapes), and
`aclose` releases what it "opened". It stands in for the machine's files and GPUs only where a
test needs a poll to block, fail or take a given time; the real `Collector` is tested on real
files elsewhere.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator, Callable

from dash.core.state.gpus import GpuReading, NvmlUnavailable
from dash.core.state.http_state import HttpSample
from dash.sim.fake_nvml import FakeNvml
from dash.sources.observations import FilesRead, ProcessesReading, Sources

Step = Callable[[], object]
"""What a poll does before it answers (block on an event, sleep, raise)."""


NO_GPU = NvmlUnavailable("NVML unavailable: no GPU in this test")


class ScriptedSources:
    """Answers every poll with `files` / `gpus`, after running the poll's scripted steps."""

    def __init__(self, files: FilesRead | None = None, gpus: GpuReading = NO_GPU) -> None:
        self.files = files or FilesRead()
        self.gpus = gpus
        self.before_read: list[Step] = []
        """Run (and dropped) one per read, oldest first: a read that blocks, raises, ..."""
        self.before_gpus: list[Step] = []
        self.events: list[str] = []
        """"read", "read done", "gpus", "gpus done", "closed", in the order they happened."""
        self.in_poll = 0
        self.polling_at_close: int | None = None
        """How many polls were still running when `aclose` was called."""
        self._lock = threading.Lock()

    def _note(self, event: str, delta: int = 0) -> None:
        with self._lock:
            self.events.append(event)
            self.in_poll += delta

    def _poll(self, name: str, steps: list[Step]) -> None:
        self._note(name, +1)
        try:
            if steps:
                steps.pop(0)()
        finally:
            self._note(f"{name} done", -1)

    def read_files(self) -> FilesRead:
        self._poll("read", self.before_read)
        return self.files

    def sample_gpus(self) -> GpuReading:
        self._poll("gpus", self.before_gpus)
        return self.gpus

    def sample_processes(self) -> ProcessesReading:
        return None

    async def poll_http(self) -> HttpSample | None:
        return None

    def poll_http_now(self) -> HttpSample | None:
        return None

    async def watch(self, stop_event: asyncio.Event) -> AsyncGenerator[None, None]:
        while not stop_event.is_set():
            await asyncio.sleep(0.05)
            yield None

    async def aclose(self, timeout: float | None = None) -> None:
        with self._lock:
            self.polling_at_close = self.in_poll
            self.events.append("closed")

    def wait_for(self, event: str, timeout: float = 5.0) -> None:
        """Block until `event` has happened (from a test's thread, not the app's loop)."""
        deadline = time.monotonic() + timeout
        while event not in self.events:
            if time.monotonic() > deadline:
                raise AssertionError(f"{event!r} never happened: {self.events}")
            time.sleep(0.01)


def stuck_nvml() -> tuple[FakeNvml, threading.Event, threading.Event]:
    """The fake NVML, stopping inside its first poll (listing processes) until released, as a
    GPU falling off the bus does: (nvml, entered, release)."""
    nvml = FakeNvml.scenario("h200")
    entered, release = threading.Event(), threading.Event()

    def hold(index: int) -> None:
        entered.set()
        release.wait(30)

    nvml.on_list_processes = hold
    return nvml, entered, release


def _implements(sources: ScriptedSources) -> Sources:
    return sources  # mypy checks here that the double implements the protocol
