"""The server panel's facts in the launches table's words: a HiCache of size 0 is `off` (or
the ratio that sizes it), not `0`."""

from __future__ import annotations

from typing import Any

import pytest

from dash.core.log.parse import parse_line
from dash.core.state.server_log import ServerLogTracker
from dash.ui.widgets.server import _fact


def _facts(args: str) -> dict[str, Any]:
    tracker = ServerLogTracker()
    tracker.feed([parse_line(f"[2026-03-01 08:00:00] server_args=ServerArgs({args})", 1)],
                 1_772_352_000.0)
    return dict(tracker.snapshot(1_772_352_000.0).facts)


@pytest.mark.parametrize(("args", "shown"), [
    ("model_path='m', hicache_size=0, enable_hierarchical_cache=False", "off"),
    ("model_path='m', hicache_size=0, hicache_ratio=2.0, enable_hierarchical_cache=True",
     "ratio 2"),
    ("model_path='m', hicache_size=200, enable_hierarchical_cache=True", "200 GB"),
    ("model_path='m', hicache_size=0", "off"),
])
def test_hicache_is_shown_as_the_launches_table_says_it(args: str, shown: str) -> None:
    assert _fact(_facts(args), "hicache_size", "{:g} GB") == shown


def test_the_host_pool_the_log_reported_wins() -> None:
    assert _fact({"hicache_size": 0, "hicache_host_gb": 37.5}, "hicache_size",
                 "{:g} GB") == "37.5 GB host"


def test_tp_and_dp_from_the_arguments_else_from_the_rank_tags_the_log_printed() -> None:
    tracker = ServerLogTracker()
    lines = ["[2026-03-01 08:00:00 DP1 TP3 EP3] Load weight begin. avail mem=70.00 GB",
             "[2026-03-01 08:00:00 DP0 TP0 EP0] Load weight begin. avail mem=70.00 GB"]
    tracker.feed([parse_line(line, i) for i, line in enumerate(lines, 1)], 1_772_352_000.0)
    facts = dict(tracker.snapshot(1_772_352_000.0).facts)
    assert _fact(facts, "tp_size", "{}") == "≥4 ranks"
    assert _fact(facts, "dp_size", "{}") == "≥2 ranks"
    assert _fact({**facts, "tp_size": 4}, "tp_size", "{}") == "4"
    assert _fact({}, "tp_size", "{}") == "-"
