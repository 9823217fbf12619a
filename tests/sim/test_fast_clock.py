"""`kdash sim --speed 10` writes stamps that run ten times faster than the wall clock; the
dashboard watching it learns the rate, so its ages and silences stay in wall seconds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dash.core.clock import FakeClock, SystemClock
from dash.core.config import Config
from dash.core.state.run import RunState
from dash.sim.run import SimRun
from dash.sources.collector import Collector, apply_files

START = 1_780_000_000.0


def _watch(run: SimRun) -> tuple[RunState, Collector]:
    cfg = Config(log=run.server_log, url="", alert_history=False)
    return RunState(cfg), Collector(cfg)


def test_a_log_ten_times_faster_than_the_clock(tmp_path: Path) -> None:
    run = SimRun(tmp_path, "healthy", speed=10.0, start_epoch=START)
    run.prepare()
    clock = FakeClock(START)
    state, col = _watch(run)
    ages = []
    try:
        for k in range(1, 91):  # a read every wall second; the simulation moves ten
            run.advance_to(10.0 * k)
            clock.set(START + k)
            apply_files(state, col.read_files(), clock.now())
            state.tick(clock.now())
            snap = state.snapshot(clock.now())
            if snap.server.last_record_at is not None:
                ages.append(clock.now() - snap.server.last_record_at)
        snap = state.snapshot(clock.now())
        assert snap.server.clock.rate == pytest.approx(10.0, rel=0.05)
        assert max(ages) < 5.0 and min(ages) >= 0.0
        assert snap.server.gen_throughput.t[-1] == pytest.approx(clock.now(), abs=2.0)
        assert snap.server.gen_throughput.t[0] >= START - 1.0  # the history is on the wall clock
        assert "server_silent" not in {a.id for a in snap.alerts}
        # a real silence is one still: nothing written for six wall minutes
        for t in range(30, 420, 30):
            state.tick(START + 90 + t)
        assert "server_silent" in {a.id for a in state.snapshot(START + 510).alerts}
    finally:
        col.close()


@pytest.mark.slow
def test_the_simulator_running_at_10x_in_real_time(tmp_path: Path) -> None:
    with SimRun(tmp_path, "healthy", speed=10.0) as run:
        run.start()
        state, col = _watch(run)
        clock = SystemClock()
        ages = []
        try:
            deadline = time.monotonic() + 30.0
            while time.monotonic() < deadline:
                time.sleep(0.5)
                apply_files(state, col.read_files(), clock.now())
                state.tick(clock.now())
                snap = state.snapshot(clock.now())
                if snap.server.last_record_at is not None and snap.server.clock.rate != 1.0:
                    ages.append(clock.now() - snap.server.last_record_at)
            snap = state.snapshot(clock.now())
        finally:
            col.close()
    assert snap.server.clock.rate == pytest.approx(10.0, rel=0.1)
    assert ages and max(ages) < 3.0
    assert "server_silent" not in {a.id for a in snap.alerts}
