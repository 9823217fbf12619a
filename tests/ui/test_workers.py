"""The dashboard's source workers: errors, GPU samples that wait in the queue, and shutdown."""

from __future__ import annotations

import asyncio
import errno
import threading
import time
from pathlib import Path

import pytest
from textual.message import Message

from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.log.grammar import GRAMMAR
from dash.core.log.parse import LineParser, Record
from dash.core.snapshot import GpuSnapshot
from dash.core.state.gpus import GpuSample
from dash.core.state.run import RunState
from dash.sources.collector import Collector
from dash.sources.observations import Sources
from dash.ui import workers
from dash.ui.app import MAX_ANNOUNCED, DashApp
from dash.ui.messages import GpusSampled
from ui.fake_sources import ScriptedSources, stuck_nvml

SIZE = (120, 40)
DECODE = ("[2025-09-03 18:33:{s:02d} TP0] Decode batch. #running-req: 3, #token: 2740, "
          "token usage: 0.01, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0\n")


def _cfg(**kw: object) -> Config:
    base: dict[str, object] = dict(url="", refresh=0.05, nvml_interval=0.05, poll=True,
                                   alert_history=False, bell=False)
    base.update(kw)
    return Config(**base)  # type: ignore[arg-type]


def _app(sources: Sources, cfg: Config | None = None, state: RunState | None = None) -> DashApp:
    cfg = cfg or _cfg()
    return DashApp(cfg, state=state or RunState(cfg), collector=sources,
                   clock=FakeClock(1_750_000_000.0), cpu_meter=lambda: 0.4)


def _gpu(used: int) -> GpuSnapshot:
    return GpuSnapshot(index=0, uuid="GPU-0", name="H200", memory_used=used, memory_total=100,
                       memory_free=100 - used, util_gpu=50.0, util_mem=10.0, temperature_c=40.0,
                       power_w=100.0, power_limit_w=700.0)


# -- errors -----------------------------------------------------------------------------------

class _BrokenParser(LineParser):
    def parse(self, text: str, lineno: int = 0) -> Record | None:
        raise KeyError("a parser bug")


async def test_a_parser_bug_stops_the_app_loudly(tmp_path: Path) -> None:
    """Not a toast and stale data: the bug's own exception, exit status 1, a failing test."""
    log = tmp_path / "server.log"
    log.write_text("".join(DECODE.format(s=i) for i in range(3)))
    cfg = _cfg(log=log)
    app = _app(Collector(cfg, parser=_BrokenParser(GRAMMAR)), cfg)
    with pytest.raises(KeyError, match="a parser bug"):
        async with app.run_test(size=SIZE) as pilot:
            deadline = time.monotonic() + 10
            while app.return_code is None and time.monotonic() < deadline:
                await pilot.pause(0.05)
    assert app.return_code == 1


async def test_an_io_error_that_escapes_a_source_is_a_notice_and_the_loop_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "IO_RETRY_S", 0.05)
    sources = ScriptedSources()

    def eio() -> None:
        raise OSError(errno.EIO, "Input/output error")

    sources.before_read.append(eio)
    app = _app(sources)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if sources.events.count("read done") >= 3:
                break
        assert "files: Input/output error" in app.state.snapshot(0.0).notices
        assert sources.events.count("read done") >= 3  # it kept reading after the error
        assert app.is_running


# -- the watch --------------------------------------------------------------------------------

async def _until(pilot: object, what: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not what() and time.monotonic() < deadline:  # type: ignore[operator]
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    return bool(what())  # type: ignore[operator]


async def test_the_watch_runs_only_while_the_files_are_quiet(tmp_path: Path) -> None:
    """A log that grows at every read is read once a refresh without a watch; once it is quiet
    the watch starts, and a line written then is still read."""
    log = tmp_path / "server.log"
    log.write_text("")
    cfg = _cfg(log=log, poll=False, refresh=0.2)
    app = _app(Collector(cfg), cfg)
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.wait(0.05):
            with log.open("a") as fh:
                fh.write(DECODE.format(s=i % 60))
            i += 1

    writer = threading.Thread(target=write, daemon=True)
    async with app.run_test(size=SIZE) as pilot:
        writer.start()
        try:
            assert await _until(pilot, lambda: app.state.snapshot(0.0).server.lines >= 10, 10)
            watched = []
            for _ in range(30):  # 1.5 s: several reads, each of them finding new lines
                watched.append(app._watching)
                await pilot.pause(0.05)
            assert not any(watched)
        finally:
            stop.set()
            writer.join()
        assert await _until(pilot, lambda: app._watching, 10), "quiet, and still no watch"
        lines = app.state.snapshot(0.0).server.lines
        with log.open("a") as fh:
            fh.write(DECODE.format(s=1))
        assert await _until(pilot, lambda: app.state.snapshot(0.0).server.lines == lines + 1, 10)


# -- GPU samples ------------------------------------------------------------------------------

def test_a_superseded_gpu_sample_travels_on_in_the_newer_one() -> None:
    first, second = GpuSample((_gpu(10),), 1.0), GpuSample((_gpu(20),), 2.0)
    older, newer = GpusSampled(first), GpusSampled(second)
    assert older.can_replace(newer)
    assert newer.samples == (first, second)


async def test_gpu_samples_that_waited_in_the_queue_leave_no_gap_in_the_history() -> None:
    cfg = _cfg()
    state = RunState(cfg)
    app = DashApp(cfg, state=state, clock=FakeClock(1_750_000_100.0), live=False,
                  cpu_meter=lambda: 0.4)
    async with app.run_test(size=SIZE) as pilot:
        # Posted together, as a worker does while the main thread is busy: Textual keeps only
        # the newest on the queue, and the older ones ride along in it.
        for i in range(5):
            app.post_message(GpusSampled(GpuSample((_gpu(10 + i),), 1_750_000_000.0 + i)))
        await pilot.pause()
        history = state.gpus.snapshot().memory_used_history[0]
    assert history.t == tuple(1_750_000_000.0 + i for i in range(5))  # their own times
    assert history.v == (10.0, 11.0, 12.0, 13.0, 14.0)
    assert state.gpus.snapshot().gpus[0].memory_used == 14


# -- shutdown ---------------------------------------------------------------------------------

async def test_quit_waits_for_a_read_in_progress_before_closing_the_sources() -> None:
    sources = ScriptedSources()
    release = threading.Event()
    sources.before_read += [lambda: None, lambda: release.wait(5)]  # the second read is slow
    app = _app(sources)
    async with app.run_test(size=SIZE) as pilot:
        while sources.events.count("read") < 2:
            await pilot.pause(0.02)
        threading.Timer(0.3, release.set).start()  # it ends while the app is shutting down
        await pilot.press("q")
    assert app.return_code == 0
    assert sources.polling_at_close == 0
    assert sources.events.index("closed") > sources.events.index("read done", 2)


async def test_a_poll_that_never_returns_is_left_behind_after_the_join_timeout() -> None:
    sources = ScriptedSources()
    hung = threading.Event()
    sources.before_gpus.append(lambda: hung.wait(30))  # a GPU off the bus: NVML never answers
    app = _app(sources)
    async with app.run_test(size=SIZE) as pilot:
        while "gpus" not in sources.events:
            await pilot.pause(0.02)
        started = time.monotonic()
        left = await app.close_sources(timeout=0.3)
        took = time.monotonic() - started
    hung.set()
    assert left == ("nvml",)
    assert took < 2.0
    assert "closed" in sources.events


class _HungShutdown:
    """NVML whose shutdown never returns (a hung driver); the rest behaves normally."""

    def __init__(self) -> None:
        from dash.sim.fake_nvml import FakeNvml

        self._real = FakeNvml.scenario("h200")
        self.release = threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)

    def nvmlShutdown(self) -> None:
        self.release.wait(30)
        self._real.nvmlShutdown()


async def test_nvml_shutdown_never_blocks_the_event_loop() -> None:
    nvml = _HungShutdown()
    col = Collector(_cfg(), nvml_module=nvml)
    assert col.sample_gpus()  # NVML initialised, so closing shuts it down
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    started = time.monotonic()
    await col.aclose(timeout=0.5)
    took = time.monotonic() - started
    task.cancel()
    nvml.release.set()
    assert 0.4 < took < 2.0  # waited its timeout, then left the hung call behind
    assert len(ticks) > 20  # the loop kept running all the while


async def test_each_notice_is_remembered_in_a_bounded_set() -> None:
    cfg = _cfg()
    state = RunState(cfg)
    app = DashApp(cfg, state=state, clock=FakeClock(1_750_000_100.0), live=False,
                  cpu_meter=lambda: 0.4)
    shown: list[str] = []
    app.notify = lambda message, **kw: shown.append(message)  # type: ignore[method-assign]
    async with app.run_test(size=SIZE):
        for i in range(3 * MAX_ANNOUNCED):
            state.add_notice(f"/out/B{i}.jsonl: permission denied")
            app.refresh_state()
    assert len(shown) == 3 * MAX_ANNOUNCED  # each new one shown once
    assert len(app._announced) == MAX_ANNOUNCED


async def test_quit_with_a_hung_nvml_poll_ends_within_the_shutdown_budget() -> None:
    """The real collector on an NVML that stops answering mid-poll: `q` still ends the app."""
    nvml, hung, release = stuck_nvml()
    cfg = _cfg()
    app = _app(Collector(cfg, nvml_module=nvml), cfg)
    try:
        async with app.run_test(size=SIZE) as pilot:
            while not hung.is_set():
                await pilot.pause(0.02)
            started = time.monotonic()
            await pilot.press("q")
        took = time.monotonic() - started
    finally:
        release.set()
    assert app.return_code == 0
    assert took < workers.JOIN_TIMEOUT_S + workers.MIN_CLOSE_S + 1.5


# -- the tick ---------------------------------------------------------------------------------

async def test_the_tick_follows_the_reads_and_the_timer_ticks_only_while_none_comes() -> None:
    """A busy run's reads, one a refresh, each tick at once (one wake a refresh, not a read and
    a timer apart); while a read hangs the timer keeps the screen's beat."""
    sources = ScriptedSources()
    release = threading.Event()
    cfg = _cfg(refresh=0.5)
    app = _app(sources, cfg)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(2.6)
        by_read, by_timer = app.ticks["read"], app.ticks["timer"]
        assert by_read >= 4
        assert by_timer * 2 < by_read, app.ticks  # (a read late under load lets the timer in)
        sources.before_read.append(lambda: release.wait(5))  # the next read hangs
        await pilot.pause(2.0)
        assert app.ticks["timer"] - by_timer >= 2, app.ticks  # the beat goes on, from the timer
        assert app.frames >= by_read + app.ticks["timer"]  # each tick drew a frame
        release.set()
        reads = app.ticks["read"]
        await pilot.pause(1.6)
        assert app.ticks["read"] > reads  # the reads take the beat back
        await pilot.press("q")
    assert app.return_code == 0


def _posted(app: DashApp) -> list[str]:
    """The names of the messages posted to `app` from now on (from any thread)."""
    posted: list[str] = []
    real_post = app.post_message

    def post(message: Message) -> bool:
        posted.append(type(message).__name__)
        return real_post(message)

    app.post_message = post  # type: ignore[method-assign]
    return posted


async def test_gpu_samples_wait_for_the_tick_without_waking_the_main_thread() -> None:
    """Sampled 20 times a second and ticked twice: every sample reaches the history at its own
    time, none through a message of its own (each would wake the main thread)."""
    sources = ScriptedSources(gpus=(_gpu(30),))
    cfg = _cfg(refresh=0.5, nvml_interval=0.05)
    state = RunState(cfg)
    app = _app(sources, cfg, state)
    posted = _posted(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.3)
        history = state.gpus.snapshot().memory_used_history[0]
        await pilot.press("q")
    assert len(history.t) >= 8  # the fake clock stands still: one point a sample, same time
    assert "GpusSampled" not in posted and "FilesObserved" in posted


async def test_http_polls_run_in_one_thread_and_wait_for_the_tick() -> None:
    """Every poll in the same long-lived thread, none posted (each would wake the main thread
    between ticks), all of them applied; the thread is joined when the app quits."""
    from dash.core.state.http_state import HttpSample

    threads: set[int] = set()

    class Polled(ScriptedSources):
        def poll_http_now(self) -> HttpSample | None:
            threads.add(threading.get_ident())
            return HttpSample(at=time.time(), reachable=True, latency_s=0.01)

    sources = Polled()
    cfg = _cfg(url="http://127.0.0.1:9", refresh=0.5, http_interval=0.1)
    state = RunState(cfg)
    app = _app(sources, cfg, state)
    posted = _posted(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.3)
        assert state.http.snapshot(app.clock.now()).state == "up"
        names = [t.name for t in threading.enumerate() if t.ident in threads]
        await pilot.press("q")
    assert len(threads) == 1 and names == ["kdash-http"]
    assert "HttpSampled" not in posted
    assert app._threads and not any(t.running for t in app._threads)  # joined at the quit
