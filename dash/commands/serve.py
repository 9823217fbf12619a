"""`kdash serve`: the dashboard's sources and alerts without a UI, exported for Prometheus.

One asyncio loop owns the run state. Blocking reads (files, NVML, processes) run in daemon
threads (`dash.sources.blocking.run_blocking`: a hung NVML call cannot hold up the exit) and only
return observations; every observation is applied to the RunState on the loop thread, so
trackers are never touched by two threads. Each refresh the loop ticks the alert rules, hands
new alerts to the sinks, and publishes a frozen snapshot that the exporter's HTTP thread reads at
scrape time. SIGTERM, SIGHUP and SIGINT stop it cleanly, with the exit status 128 + the signal.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from functools import partial

from dash.core.clock import Clock, SystemClock
from dash.core.config import Config
from dash.core.recent import RecentSet
from dash.core.snapshot import RunSnapshot
from dash.core.state.run import RunState
from dash.sources.alert_sinks import AlertDelivery
from dash.sources.blocking import run_blocking
from dash.sources.collector import Collector, apply_files, apply_gpus, apply_http, apply_processes
from dash.sources.launch_store import remembered

Publish = Callable[[RunSnapshot], None]
EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
"""Each stops serve cleanly, with the exit status 128 + its number (what a shell expects)."""
MAX_NOTED = 100
"""Distinct delivery problems remembered as said (each is said once on stderr)."""


class Latest:
    """The last published snapshot: written on the loop thread, read by the exporter's thread.

    A single attribute assignment of a frozen value needs no lock.
    """

    def __init__(self) -> None:
        self.snapshot: RunSnapshot | None = None

    def publish(self, snap: RunSnapshot) -> None:
        self.snapshot = snap

    def get(self) -> RunSnapshot | None:
        return self.snapshot


async def _every(interval: float, stop: asyncio.Event, step: Callable[[], Awaitable[None]]) -> None:
    """Run `step` now and then `interval` seconds after each one ends: polls never overlap."""
    while not stop.is_set():
        await step()
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except asyncio.TimeoutError:
            pass


class ServeLoop:
    """The serve loop's parts: one Collector (sources), one RunState (trackers), alert sinks."""

    def __init__(self, cfg: Config, publish: Publish, *, clock: Clock | None = None,
                 nvml_module: object | None = None) -> None:
        self.cfg = cfg
        self.clock = clock or SystemClock()
        self.publish = publish
        self.collector = Collector(cfg, nvml_module=nvml_module)
        self.state = RunState(cfg)
        self.keepers = remembered(self.state, cfg)  # the earlier launches of the logs
        self.sinks = AlertDelivery.from_config(cfg)
        self._noted: RecentSet[str] = RecentSet(MAX_NOTED)

    async def files(self) -> None:
        # A backlog bigger than one read is drained at once, yielding to the loop between reads.
        while True:
            read = await run_blocking(self.collector.read_files, name="kdash-files")
            apply_files(self.state, read, self.clock.now())
            if not read.more:
                return

    async def gpus(self) -> None:
        reading = await run_blocking(self.collector.sample_gpus, name="kdash-nvml")
        apply_gpus(self.state, reading, self.clock.now())

    async def processes(self) -> None:
        procs = await run_blocking(self.collector.sample_processes, name="kdash-procs")
        apply_processes(self.state, procs, self.clock.now())

    async def http(self) -> None:
        sample = await self.collector.poll_http()
        apply_http(self.state, sample, self.clock.now())

    async def tick(self) -> None:
        """Evaluate alerts, deliver the changes, publish the snapshot."""
        now = self.clock.now()
        changes, snap = self.state.tick_and_snapshot(now)
        self.publish(snap)
        if changes:
            for err in await self.sinks.deliver(changes, now):
                self._note(f"alert delivery: {err}")
        await self.keep_launches(now)

    async def keep_launches(self, now: float, *, final: bool = False) -> None:
        """Save each kept log's launches when a start or an end came, or now and then
        (`final`: on the way out, whatever changed)."""
        for keeper in self.keepers:
            tracker = self.state.launches_for(keeper.path)
            if not keeper.due(tracker.version, tracker.boundaries, float("inf") if final else now):
                continue
            keeper.taken(tracker.version, tracker.boundaries, now)
            launches = tracker.launches()
            try:
                error = await run_blocking(partial(keeper.store.save, launches, now),
                                           timeout=3.0, name="kdash-launches")
            except TimeoutError as exc:
                error = str(exc)
            if error:
                self._note(error)

    async def run(self, stop: asyncio.Event) -> None:
        """Poll every source on its own interval until `stop` is set; then release them."""
        cfg = self.cfg
        steps = [(cfg.refresh, self.files), (cfg.nvml_interval, self.gpus)]
        if cfg.http_enabled:
            steps.append((cfg.http_interval, self.http))
        if cfg.process:
            steps.append((cfg.nvml_process_interval, self.processes))
        steps.append((cfg.refresh, self.tick))
        tasks: list[asyncio.Task[None]] = []
        try:
            # The first snapshot waits for one read of the files, so a scrape right after start
            # already has the log's backfilled history.
            await self.files()
            tasks = [asyncio.create_task(_every(i, stop, step)) for i, step in steps]
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                t.result()  # a programming error surfaces instead of a silent, half-dead loop
        finally:
            stop.set()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.close()

    async def close(self) -> None:
        await self.keep_launches(self.clock.now(), final=True)
        # The polls' threads may still be running (their tasks were cancelled): the collector
        # waits for them, with a timeout, before closing what they read.
        await self.collector.aclose()

    def _note(self, text: str) -> None:
        """A delivery problem, said once on stderr (serve has no screen to show it on)."""
        if self._noted.add(text):
            print(f"kdash serve: {text}", file=sys.stderr, flush=True)


async def serve(cfg: Config, stop: asyncio.Event, publish: Publish, *,
                clock: Clock | None = None, nvml_module: object | None = None) -> None:
    """Run the sources, alerts and snapshot publishing until `stop` is set."""
    await ServeLoop(cfg, publish, clock=clock, nvml_module=nvml_module).run(stop)


async def _main(cfg: Config, latest: Latest) -> int:
    """Serve until a signal; the exit status (128 + the signal that stopped it)."""
    stop = asyncio.Event()
    received: list[int] = []

    def on_signal(sig: int) -> None:
        received.append(sig)
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in EXIT_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        await serve(cfg, stop, latest.publish)
    finally:
        for sig in EXIT_SIGNALS:
            loop.remove_signal_handler(sig)
    return 128 + received[0] if received else 0


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def run_serve(cfg: Config) -> int:
    """`kdash serve`: 128 + the signal that stopped it; 2 when the metrics port cannot be opened."""
    from dash.sources.prom_export import ExporterError, start_exporter

    latest = Latest()
    # Until the event loop installs its own handlers, a signal (a Ctrl+C at once, a supervisor
    # stopping it while it starts) still means a clean stop, not a traceback.
    for sig in EXIT_SIGNALS:
        signal.signal(sig, _exit_cleanly)
    try:
        handle = start_exporter(cfg, latest.get)
    except ExporterError as exc:
        print(f"kdash: {exc}", file=sys.stderr)
        return 2
    print(f"kdash serve: metrics on {handle.url}", file=sys.stderr, flush=True)
    try:
        return asyncio.run(_main(cfg, latest))
    finally:
        handle.close()
