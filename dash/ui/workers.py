"""The source workers: each poll runs in one exclusive worker and only posts messages.

Blocking sources (files, NVML, processes) run in thread workers that loop until the app stops;
HTTP and the file watcher run in async workers on the app's loop. None of them touches a widget or
the run state: they post `dash.ui.messages` observations that the app applies on its main thread.
A loop inside one exclusive worker means two polls of the same source can never overlap.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from textual import work
from textual.app import App
from textual.worker import Worker, WorkerState, get_current_worker

from dash.core.config import Config
from dash.ui.messages import FilesObserved, GpusSampled, HttpSampled, ProcessesSampled

BACKLOG = 20
"""Messages waiting on the main thread beyond which the file reader slows down."""
MIN_READ_GAP_S = 0.25
"""Reads never come closer than this, whatever the refresh period."""
PROCESS_INTERVAL_S = 5.0


class WorkerApp(App[int]):
    """The part of the app that runs the sources; `DashApp` adds the screen."""

    def __init__(self, cfg: Config, collector: Any | None) -> None:
        super().__init__()
        self.cfg = cfg
        self.collector = collector
        """A `dash.sources.collector.Collector` (or a test double with the same methods); None: no sources."""
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._watching = False
        self._failed: set[str] = set()
        self._delivery: Any = None
        self._delivery_errors: set[str] = set()

    def start_sources(self) -> None:
        """Start one worker per configured source."""
        if self.collector is None:
            return
        self.files_loop()
        self.nvml_loop()
        if self.cfg.process:
            self.processes_loop()
        if self.cfg.http_enabled and hasattr(self.collector, "poll_http"):
            self.http_loop()
        if not self.cfg.poll and hasattr(self.collector, "watch"):
            self._watching = True
            self.watch_loop()

    def stop_sources(self) -> None:
        """Ask the worker loops to end (they finish their current poll first)."""
        self._stop.set()
        self._wake.set()

    @work(thread=True, exclusive=True, exit_on_error=False, group="files")
    def files_loop(self) -> None:
        """Read new bytes of every followed file, on a watch wake-up or every refresh period."""
        worker = get_current_worker()
        while not worker.is_cancelled and not self._stop.is_set():
            # With a watcher, the timeout is only a safety net; without one it is the poll rate.
            idle = self.cfg.refresh * (3 if self._watching else 1)
            # Wake-ups within one refresh period are merged into one read: on a busy log the
            # watcher fires several times a second, and the screen shows nothing faster anyway.
            gap = max(MIN_READ_GAP_S, self.cfg.refresh)
            self._wake.clear()
            reading = self.collector.read_files()  # type: ignore[union-attr]
            self.post_message(FilesObserved(reading))
            # Back off while the main thread is behind, so line batches never pile up unbounded.
            backlog = self.message_queue_size > BACKLOG
            more = getattr(reading, "more", False)  # more bytes waiting (a backlog): read again soon
            self._stop.wait((MIN_READ_GAP_S if more else gap) * (8 if backlog else 1))
            if not more:
                self._wake.wait(max(0.0, idle - gap))

    @work(thread=True, exclusive=True, exit_on_error=False, group="nvml")
    def nvml_loop(self) -> None:
        """Sample the GPUs every `nvml_interval` seconds (NVML calls can stall: not on the loop)."""
        worker = get_current_worker()
        while not worker.is_cancelled and not self._stop.is_set():
            self.post_message(GpusSampled(self.collector.sample_gpus()))  # type: ignore[union-attr]
            self._stop.wait(self.cfg.nvml_interval)

    @work(thread=True, exclusive=True, exit_on_error=False, group="procs")
    def processes_loop(self) -> None:
        """Look for the client processes every few seconds (slow-changing and not free)."""
        worker = get_current_worker()
        while not worker.is_cancelled and not self._stop.is_set():
            procs = self.collector.sample_processes()  # type: ignore[union-attr]
            self.post_message(ProcessesSampled(procs))
            self._stop.wait(PROCESS_INTERVAL_S)

    @work(exclusive=True, exit_on_error=False, group="http")
    async def http_loop(self) -> None:
        """Poll the server with the collector's one HTTP client; an error is a value."""
        while not self._stop.is_set():
            sample = await self.collector.poll_http()  # type: ignore[union-attr]
            self.post_message(HttpSampled(sample))
            await asyncio.sleep(self.cfg.http_interval)

    @work(exit_on_error=False, group="alerts")
    async def deliver_alerts(self, changes: Any, at: float) -> None:
        """Send new alerts to --on-alert, --webhook and the history file (errors: one notice)."""
        if self._delivery is None:
            from dash.sources.alert_sinks import AlertDelivery

            self._delivery = AlertDelivery.from_config(self.cfg)
        for error in await self._delivery.deliver(changes, at):
            if error not in self._delivery_errors:
                self._delivery_errors.add(error)
                self.notify(error, title="alert delivery", severity="warning")

    @work(exclusive=True, exit_on_error=False, group="watch")
    async def watch_loop(self) -> None:
        """Wake the file reader as soon as a watched file changes."""
        stop = asyncio.Event()
        try:
            async for _ in self.collector.watch(stop):  # type: ignore[union-attr]
                self._wake.set()
                if self._stop.is_set():
                    break
        finally:
            stop.set()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Say once when a source's worker died; the other sources keep going."""
        worker = event.worker
        if event.state != WorkerState.ERROR or worker.group in self._failed:
            return
        self._failed.add(worker.group)
        if worker.group == "watch":
            self._watching = False  # the reader falls back to polling at the refresh rate
        self.notify(f"{worker.group}: {worker.error!r}", title="source stopped", severity="error")
