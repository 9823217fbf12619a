"""The text chart `summary` prints: its time axis."""

from __future__ import annotations

import re

import pytest

from dash.commands.textchart import render_chart


@pytest.mark.parametrize("t,v", [([0.0, 0.0, 0.0], [1774.38, 3166.9, 4779.06]),  # DP ranks, one second
                                 ([0.0], [29.2])])  # vLLM#19680's one stats line
def test_a_log_of_one_instant_has_no_negative_seconds(t: list[float], v: list[float]) -> None:
    """sglang PR#17392's three ranks printed in one second: the axis of `seconds from first
    decode` ran from -1.00 to 1.00, as if lines came before the first."""
    text = render_chart(t, v, 72, 12, "gen throughput")
    axis = text.splitlines()[-1]
    labels = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", axis)]
    assert labels and min(labels) == 0.0 and max(labels) > 0.0


def test_a_log_over_time_keeps_its_own_axis() -> None:
    text = render_chart([0.0, 5.0, 10.0], [1.0, 2.0, 3.0], 72, 12, "gen throughput")
    labels = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text.splitlines()[-1])]
    assert min(labels) == 0.0 and max(labels) == 10.0


def test_a_steady_rate_is_drawn_from_zero_not_as_a_swing() -> None:
    """10.92-10.94 tok/s drawn over its own 0.02 looked like a server swinging wildly."""
    text = render_chart([0.0, 5.0, 10.0, 15.0], [10.92, 10.94, 10.93, 10.92], 72, 12, "gen")
    rows = text.splitlines()
    ys = [float(m.group(1)) for row in rows if (m := re.match(r"\s*(-?\d+(?:\.\d+)?)\s*[┤│┼]", row))]
    assert ys and min(ys) == 0.0 and max(ys) >= 10.9
    plotted = [i for i, row in enumerate(rows) if re.search(r"[⠁-⣿]", row)]
    assert plotted and max(plotted) - min(plotted) <= 1  # one row high: flat
