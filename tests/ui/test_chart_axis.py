"""The time axis of the "all" window says how far back the kept points go."""

from __future__ import annotations

from dash.core.series import Series
from dash.ui.widgets.charts import WINDOWS, axis_label, window_bounds


def test_the_all_window_of_a_long_run_says_how_far_back_its_points_go() -> None:
    # Ten hours of decode lines every 2 s: a series keeps its last 4,096 points, 2h16m of
    # them. An axis that read "-all" let a chart of the last two hours pass for the whole run
    # (its 1,317 tok/s start, a restart five hours in: none of it on screen).
    s = Series(4096)
    for i in range(18000):
        s.append(2.0 * i, 606.0)
    now = 2.0 * 17999
    label, span = WINDOWS[-1]
    start, end = window_bounds((s.view(),), now, span)
    assert axis_label(label, span, start, end) == "-2h16m (all kept)"
    assert axis_label("15m", 900.0, now - 900.0, now) == "-15m"
