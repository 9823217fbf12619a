"""The source workers: each source is polled by one loop that only posts messages.

Blocking sources (files, NVML, HTTP, processes) run in `SourceThread`s that loop until the app
stops; the file watcher runs in an async worker on the app's loop. None of them touches a widget
or the run state: they post `dash.ui.messages` observations that the app applies on its main
thread. One loop per source means two polls of the same source can never overlap. The GPU
samples (every second) and the HTTP polls (every few) are not posted: each would wake the main
thread between two ticks to be applied, and the screen shows them only at the next tick. They
wait in bounded mailboxes that the tick empties first (`take_samples`), each applied at the
time it came.

Errors: an I/O error is a value inside the observation; one that escapes a source anyway
(`OSError`) becomes a notice and the loop carries on. Anything else is a bug, and stops the app
loudly (a traceback and exit 1, as Textual's `exit_on_error` does) instead of leaving a toast
and stale data.

Shutdown: `close_sources` stops the loops, waits for them (with a timeout), and only then has the
collector close what it opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.message import Message
from textual.worker import Worker, WorkerError

from dash.core.alerts.model import AlertChanges
from dash.core.clock import Clock
from dash.core.config import Config
from dash.core.recent import RecentSet
from dash.core.state.gpus import GpuSample
from dash.core.state.http_state import HttpSample
from dash.sources.blocking import run_blocking
from dash.sources.observations import FilesRead, Sources
from dash.ui.messages import (
    MAX_FOLDED_SAMPLES,
    FilesObserved,
    ProcessesSampled,
    SourceFailed,
    SourceTrouble,
)

if TYPE_CHECKING:
    from textual.driver import Driver

    from dash.core.launch import Launch
    from dash.core.state.run import RunState
    from dash.sources.alert_sinks import AlertDelivery
    from dash.sources.launch_store import LaunchKeeper

BACKLOG = 2
"""Messages waiting on the main thread beyond which the file reader waits: each read of a burst
holds some MB of lines and records until it is applied."""
MIN_READ_GAP_S = 0.25
"""Reads never come closer than this, whatever the refresh period."""
QUIET_READS = 3
"""Reads in a row that found nothing new, after which the files count as quiet: the watch runs
then, and the reader waits for it (up to a few refresh periods) instead of reading every one."""
PROCESS_INTERVAL_S = 5.0
IO_RETRY_S = 5.0
"""After an I/O error that escaped a source, its loop waits this long before trying again."""
JOIN_TIMEOUT_S = 3.0
"""How long shutting down waits for the polls in progress (a read, an NVML call) to end and the
sources to close, all together."""
MIN_CLOSE_S = 0.5
"""The sources always get this long to close, even when waiting for the loops took it all."""
MAX_HTTP_MAIL = 16
"""HTTP polls kept for the tick at most (a main thread stalled that long loses the oldest)."""
MAX_DELIVERY_ERRORS = 64
"""Distinct alert-delivery errors remembered, so that each is shown once (they hold webhook
answers, which can differ every time)."""


class SourceThread:
    """One source's loop, in a daemon thread of its own.

    Not a Textual thread worker: those run in the event loop's default executor, which
    `asyncio.run` joins without a timeout at exit, so one NVML call that never returns or a
    read on a dead NFS mount would hold the process after `q` or SIGTERM. This thread can be
    waited for with a timeout, and then left behind.
    """

    def __init__(self, name: str, step: Callable[[], None], stop: threading.Event,
                 post: Callable[[Message], object]) -> None:
        self.name = name
        self._step = step
        self._stop = stop
        self._post = post
        self._thread = threading.Thread(target=self._run, name=f"kdash-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float) -> None:
        self._thread.join(max(0.0, timeout))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._step()
            except OSError as exc:
                self._post(SourceTrouble(self.name, exc))
                self._stop.wait(IO_RETRY_S)
            except Exception as exc:  # a bug: handed to the main thread, which stops the app
                self._post(SourceFailed(self.name, exc))
                return


class WorkerApp(App[int]):
    """The part of the app that runs the sources; `DashApp` adds the screen."""

    def __init__(self, cfg: Config, collector: Sources | None, clock: Clock,
                 launch_keepers: tuple[LaunchKeeper, ...] = ()) -> None:
        super().__init__()
        self.cfg = cfg
        self.collector = collector
        """The run's sources (a `dash.sources.collector.Collector`); None: no sources."""
        self.clock = clock
        """The run state's clock: what observations are applied at, samples stamped with."""
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._watching = False
        self._quiet = threading.Event()
        """Set by the reader while the files are quiet (the watch is then worth running)."""
        self._quiet_reads = 0
        self._on_quiet: Callable[[], object] | None = None
        """Called by the reader when the files turn quiet (wakes the watch loop, which sleeps
        until then)."""
        self._last_counts: tuple[int | None, ...] = ()
        self._threads: list[SourceThread] = []
        self._loop_workers: list[Worker[None]] = []
        self._sources_closed = False
        self._delivery: AlertDelivery | None = None
        self._delivery_errors: RecentSet[str] = RecentSet(MAX_DELIVERY_ERRORS)
        self.launch_keepers = launch_keepers
        """Save the logs' launches to the state directory (none: they are not kept)."""
        self._launch_state: RunState | None = None
        self._gpu_mail: deque[GpuSample] = deque(maxlen=MAX_FOLDED_SAMPLES)
        """GPU samples taken since the last tick, oldest first (appended by the NVML thread;
        a main thread stalled longer than the charts' history loses only the oldest)."""
        self._http_mail: deque[tuple[HttpSample | None, float]] = deque(maxlen=MAX_HTTP_MAIL)
        """HTTP polls since the last tick and when each came, oldest first (from its thread)."""

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this terminal; on Linux and macOS one whose input thread sleeps
        while no key is pressed (`dash.ui.driver`). A driver named in TEXTUAL_DRIVER is kept."""
        chosen = super().get_driver_class()
        if sys.platform != "win32":
            from textual.drivers.linux_driver import LinuxDriver

            if chosen is LinuxDriver:
                from dash.ui.driver import QuietLinuxDriver

                return QuietLinuxDriver
        return chosen

    def start_sources(self) -> None:
        """Start one loop per configured source."""
        sources = self.collector
        if sources is None:
            return
        loops: list[tuple[str, Callable[[], None]]] = [
            ("files", lambda: self._read_files(sources)),
            ("nvml", lambda: self._sample_gpus(sources)),
        ]
        if self.cfg.http_enabled:
            loops.append(("http", lambda: self._poll_http(sources)))
        if self.cfg.process:
            loops.append(("procs", lambda: self._sample_processes(sources)))
        for name, step in loops:
            thread = SourceThread(name, step, self._stop, self.post_message)
            self._threads.append(thread)
            thread.start()
        if not self.cfg.poll:
            self._loop_workers.append(self.watch_loop(sources))

    def stop_sources(self) -> None:
        """Ask the loops to end (each finishes its current poll first)."""
        self._stop.set()
        self._wake.set()

    async def close_sources(self, timeout: float = JOIN_TIMEOUT_S) -> tuple[str, ...]:
        """Stop the loops, wait for them, then close the sources; the loops still running.

        A loop still inside a poll after `timeout` is left behind (its thread is a daemon); the
        collector does not close a resource while a poll of it is in progress either.
        """
        if self._sources_closed:
            return tuple(t.name for t in self._threads if t.running)
        self._sources_closed = True
        self.stop_sources()
        for worker in self._loop_workers:
            worker.cancel()
        deadline = time.monotonic() + timeout
        for worker in self._loop_workers:
            try:
                await asyncio.wait_for(worker.wait(), max(0.0, deadline - time.monotonic()))
            except (WorkerError, asyncio.TimeoutError):
                pass  # cancelled as asked; a failure has already stopped the app

        def join() -> None:
            for thread in self._threads:
                thread.join(deadline - time.monotonic())

        await run_blocking(join, name="kdash-join")  # bounded by the deadline: off the loop
        await self._save_launches_now(max(MIN_CLOSE_S, deadline - time.monotonic()))
        if self.collector is not None:
            await self.collector.aclose(max(MIN_CLOSE_S, deadline - time.monotonic()))
        return tuple(t.name for t in self._threads if t.running)

    # -- one step of each loop (in its own thread) -------------------------------------------

    def _read_files(self, sources: Sources) -> None:
        """Read new bytes of every followed file, on a watch wake-up or every refresh period."""
        # With a watcher, the timeout is only a safety net; without one it is the poll rate.
        idle = self.cfg.refresh * (3 if self._watching else 1)
        # Wake-ups within one refresh period are merged into one read: on a busy log the
        # watcher fires several times a second, and the screen shows nothing faster anyway.
        gap = max(MIN_READ_GAP_S, self.cfg.refresh)
        self._wake.clear()
        reading = sources.read_files()
        self.post_message(FilesObserved(reading))
        self._note_activity(reading)
        # More bytes waiting (a backlog in the file): read again soon.
        self._stop.wait(MIN_READ_GAP_S if reading.more else gap)
        # Wait while the main thread is behind: a burst stays in the file, not in the queue.
        while self.message_queue_size > BACKLOG and not self._stop.wait(MIN_READ_GAP_S / 5):
            pass
        if not reading.more:
            self._wake.wait(max(0.0, idle - gap))

    def _note_activity(self, reading: FilesRead) -> None:
        """Count the reads in a row that found nothing new (quiet files: the watch may run)."""
        counts = tuple(o.lines for o in reading.outputs)
        grew = counts != self._last_counts or any(
            f.bytes_read for f in (*(log.follow for log in reading.logs), reading.client) if f)
        self._last_counts = counts
        self._quiet_reads = 0 if grew else self._quiet_reads + 1
        if self._quiet_reads >= QUIET_READS:
            if not self._quiet.is_set():
                self._quiet.set()
                notify = self._on_quiet
                if notify is not None:
                    try:
                        notify()
                    except RuntimeError:
                        pass  # the loop has closed: the app is ending
        else:
            self._quiet.clear()

    def _sample_gpus(self, sources: Sources) -> None:
        """Sample the GPUs every `nvml_interval` seconds (NVML calls can stall: not on the loop)."""
        reading = sources.sample_gpus()
        self._gpu_mail.append(GpuSample(reading, self.clock.now()))
        self._stop.wait(self.cfg.nvml_interval)

    def _poll_http(self, sources: Sources) -> None:
        """Poll the server every `http_interval` seconds with the collector's one HTTP client
        (an error is a value in the sample)."""
        sample = sources.poll_http_now()
        self._http_mail.append((sample, self.clock.now()))
        self._stop.wait(self.cfg.http_interval)

    def take_samples(self) -> tuple[tuple[GpuSample, ...], tuple[tuple[HttpSample | None, float], ...]]:
        """The GPU samples and HTTP polls (with when each came) since the last call, oldest
        first (for the tick to apply)."""
        gpus, http = self._gpu_mail, self._http_mail
        return (tuple(gpus.popleft() for _ in range(len(gpus))),
                tuple(http.popleft() for _ in range(len(http))))

    def _sample_processes(self, sources: Sources) -> None:
        """Look for the client processes every few seconds (slow-changing and not free)."""
        self.post_message(ProcessesSampled(sources.sample_processes()))
        self._stop.wait(PROCESS_INTERVAL_S)

    # -- async loops -------------------------------------------------------------------------

    @work(exclusive=True, group="watch")
    async def watch_loop(self, sources: Sources) -> None:
        """While the files are quiet, wake the file reader as soon as a watched file changes.

        While they change at every read, the reader reads once a refresh anyway, which the
        watch cannot make sooner: it is then stopped, as its inotify thread and the thread
        round trip of each batch of changes cost more than the reads it would save. It then
        sleeps until the reader finds the files quiet, without waking to look.
        """
        went_quiet = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._on_quiet = partial(loop.call_soon_threadsafe, went_quiet.set)
        try:
            while not self._stop.is_set():
                if not self._quiet.is_set():
                    # Cleared and waited for in one step: the reader's set runs in a later one.
                    went_quiet.clear()
                    await went_quiet.wait()
                    continue
                await self._watch_while_quiet(sources)
        except OSError as exc:
            self.post_message(SourceTrouble("watch", exc))
        finally:
            self._on_quiet = None
            # Without a watcher (it failed, or ended), the reader polls at the refresh rate.
            self._watching = False
            self._wake.set()

    async def _watch_while_quiet(self, sources: Sources) -> None:
        stop = asyncio.Event()
        self._watching = True
        try:
            async with contextlib.aclosing(sources.watch(stop)) as changes:
                async for _ in changes:
                    self._wake.set()
                    if self._stop.is_set() or not self._quiet.is_set():
                        break
        finally:
            stop.set()
            self._watching = False

    def keep_launches(self, state: RunState, now: float) -> None:
        """Save each kept log's launches when they changed enough (a start or an end: at once)."""
        self._launch_state = state
        for keeper in self.launch_keepers:
            tracker = state.launches_for(keeper.path)
            if keeper.due(tracker.version, tracker.boundaries, now):
                keeper.taken(tracker.version, tracker.boundaries, now)
                self.save_launches(keeper, tracker.launches(), now, tracker.version)

    @work(group="launches", exclusive=False)
    async def save_launches(self, keeper: LaunchKeeper, launches: tuple[Launch, ...],
                            at: float, version: int | None = None) -> None:
        """Write a launches file off the loop; a failure is a notice (once)."""
        try:
            error = await run_blocking(lambda: keeper.store.save(launches, at, version),
                                       timeout=JOIN_TIMEOUT_S, name="kdash-launches")
        except TimeoutError as exc:
            error = str(exc)
        if error and self._delivery_errors.add(error):
            self.notify(error, title="launches", severity="warning")

    async def _save_launches_now(self, timeout: float) -> None:
        """On the way out: what changed since the last save."""
        state = self._launch_state
        if state is None:
            return
        for keeper in self.launch_keepers:
            tracker = state.launches_for(keeper.path)
            if not keeper.due(tracker.version, tracker.boundaries, float("inf")):
                continue
            keeper.taken(tracker.version, tracker.boundaries, float("inf"))
            launches = tracker.launches()
            try:
                await run_blocking(partial(keeper.store.save, launches, self.clock.now(),
                                           tracker.version),
                                   timeout=timeout, name="kdash-launches")
            except TimeoutError:
                return  # a hung state directory: the exit does not wait for it

    @work(group="alerts")
    async def deliver_alerts(self, changes: AlertChanges, at: float) -> None:
        """Send new alerts to --on-alert, --webhook and the history file (errors: one notice)."""
        if self._delivery is None:
            from dash.sources.alert_sinks import AlertDelivery

            self._delivery = AlertDelivery.from_config(self.cfg)
        for error in await self._delivery.deliver(changes, at):
            if self._delivery_errors.add(error):
                self.notify(error, title="alert delivery", severity="warning")
