"""The live dashboard on a server of 8 DP ranks: the header's figures are the whole server's,
and `R` shows each rank's row (tests/dp_logs.py holds the values the log was written with)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from dp_logs import DpLog, decode_line, dp_values, write_dp_log

from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.state.run import RunState
from dash.sources.collector import Collector
from dash.ui.app import DashApp
from dash.ui.widgets.ranks import RanksScreen
from ui.fake_run import screen_text, wait_screen

START = 1_780_000_000.0


async def _wait(pilot, app: DashApp, until) -> None:  # type: ignore[no-untyped-def]
    for _ in range(300):  # 30 s: a loaded machine is slow, a quick one leaves at once
        await pilot.pause(0.1)
        if app.snap is not None and until(app.snap):
            return
    raise AssertionError("the dashboard never showed it")


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_the_dashboard_shows_the_whole_server_and_its_ranks(tmp_path: Path,
                                                                   size: tuple[int, int]) -> None:
    log: DpLog = dp_values(ranks=8, minutes=15, start=START)
    path = tmp_path / "dp.log"
    head = DpLog(log.lines[:-8 * 15], 8, log.interval_s, log.peak_until_s, START)
    write_dp_log(path, head)  # the last minute arrives while the dashboard runs
    cfg = Config(log=path, url="", bell=False, alert_history=False)
    clock = FakeClock(log.end + 2.0)
    app = DashApp(cfg, state=RunState(cfg), collector=Collector(cfg), clock=clock,
                  cpu_meter=lambda: 1.0)
    async with app.run_test(size=size) as pilot:
        await _wait(pilot, app, lambda s: s.server.now is not None and len(s.server.now.ranks) == 8)
        with path.open("a") as fh:
            fh.write("".join(decode_line(rl) for rl in log.lines[-8 * 15:]))
        os.utime(path, (time.time(), time.time()))
        await _wait(pilot, app, lambda s: s.server.last_decode is not None
                    and s.server.last_decode["line"] == len(log.lines) + 8)
        now = app.snap.server.now  # type: ignore[union-attr]
        assert now is not None and now.gen_throughput == pytest.approx(600.0, rel=0.01)
        text = screen_text(app)
        assert "600 tok/s (peak 1400)" in text and "8 ranks" in text
        await pilot.press("R")
        text = await wait_screen(pilot, app, lambda t: isinstance(app.screen, RanksScreen)
                                  and " DP7 " in t and " total " in t)
        for d, rl in log.last().items():
            row = next(line for line in text.splitlines() if f" DP{d} " in line)
            assert f"{rl.gen:,.1f}" in row and f"{round(100 * rl.usage)}%" in row
        total = next(line for line in text.splitlines() if " total " in line)
        assert "600.0" in total and "max 95%" in total
        await pilot.press("escape")
        await wait_screen(pilot, app, lambda _: not isinstance(app.screen, RanksScreen))
    app.stop_sources()
