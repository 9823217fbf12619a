"""A log's charts end at its last stats line when its figures are history and "now" would show
nothing (a finished log an hour or a year old), and at "now" while it lives or went quiet
within the window (the silence then shows as the empty right of the chart)."""

from __future__ import annotations

import time
from pathlib import Path

from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.series import SeriesView
from dash.core.snapshot import Liveness, RunSnapshot
from dash.core.state.run import RunState
from dash.sources.collector import Collector
from dash.ui.app import DashApp
from dash.ui.widgets.charts import log_bounds
from ui.fake_run import wait_screen

NOW = 1_800_000_000.0
SERIES = (SeriesView(t=tuple(NOW - 7200 + 10 * i for i in range(60)), v=(600.0,) * 60),)
LAST = SERIES[0].t[-1]  # 6610 s before now


def _snap(stale: bool) -> RunSnapshot:
    live = Liveness(log="quiet" if stale else "live", stale=stale)
    return RunSnapshot(now=NOW, liveness=live)


def test_a_log_quiet_longer_than_the_window_ends_at_its_last_line() -> None:
    assert log_bounds(_snap(True), SERIES, 900.0) == (LAST - 900.0, LAST, "last line")
    assert log_bounds(_snap(False), SERIES, 900.0) == (NOW - 900.0, NOW, "now")
    # quiet for less than the window: the silence is shown, at the right of the chart
    assert log_bounds(_snap(True), SERIES, 7200.0) == (NOW - 7200.0, NOW, "now")


def test_all_that_is_kept_ends_at_the_last_line_when_the_silence_is_the_longer() -> None:
    start, end, right = log_bounds(_snap(True), SERIES, None)
    assert (start, end, right) == (SERIES[0].t[0], LAST, "last line")
    recent = (SeriesView(t=tuple(NOW - 600 + 10 * i for i in range(55)), v=(1.0,) * 55),)
    assert log_bounds(_snap(True), recent, None)[2] == "now"


async def test_a_finished_real_log_draws_its_charts(real_logs: Path) -> None:
    """sglang-4407: seven decode lines, 630 days old: the charts draw them, not an empty axis."""
    log = real_logs / "sglang-4407-decode-largest-len-trailing-comma.log"
    cfg = Config(log=log, url="", bell=False, alert_history=False)
    app = DashApp(cfg, state=RunState(cfg), collector=Collector(cfg), clock=FakeClock(time.time()),
                  cpu_meter=lambda: 1.0)
    async with app.run_test(size=(160, 45)) as pilot:
        text = await wait_screen(pilot, app, lambda t: "last line" in t)
        rows = text.splitlines()
        axis = next(i for i, row in enumerate(rows) if "last line" in row)
        assert "now" not in rows[axis]
        # braille beyond the peak's dotted guide (⠁) in the throughput chart's rows
        assert any(set(row[6:39]) - {" ", "⠁", "┤"} for row in rows[axis - 9:axis]), text
    app.stop_sources()
