"""The run's total over several servers counts only those whose log is live, at the `now` given."""

from __future__ import annotations

from pathlib import Path

import pytest

from dash.core.config import Config
from dash.core.snapshot import Record
from dash.core.state.run import RunState

T0 = 1_750_000_000.0


def _decode(line: int, gen: float, running: int, usage: float) -> Record:
    return {"kind": "decode", "line": line, "ts": None, "running_req": running, "queue_req": 2,
            "tokens": 1000 * running, "token_usage": usage, "gen_throughput": gen,
            "engine": "sglang", "rank": "TP0"}


def _two_nodes(tmp_path: Path) -> RunState:
    """node1 prints a decode line every 10 s up to T0 + 600; node2 printed its last at T0."""
    node1, node2 = tmp_path / "node1.log", tmp_path / "node2.log"
    state = RunState(Config(log=node1, more_logs=(node2,), url=""))
    state.feed_server(str(node2), [_decode(1, 5287.55, 182, 0.27)], T0)
    for i, s in enumerate(range(0, 601, 10)):
        state.feed_server(str(node1), [_decode(i + 1, 1000.0 + s, 28, 0.10)], T0 + s)
    return state


def test_a_server_whose_log_went_quiet_is_left_out_of_the_sums(tmp_path: Path) -> None:
    state = _two_nodes(tmp_path)
    live_s = state.alert_config.log_live_s
    both = state.snapshot(T0 + live_s)  # node2's line is just within the liveness window
    assert both.total_from == (0, 1) and both.left_out == ()
    assert both.figures["running_req"] == 28 + 182

    snap = state.snapshot(T0 + 600)  # ten minutes later node2 still said nothing
    assert [x.log for x in snap.server_liveness] == ["live", "quiet"]
    assert snap.total_from == (0,) and snap.left_out == (1,)
    assert snap.total is not None
    assert snap.total.gen_throughput == pytest.approx(1600.0)
    assert (snap.total.running_req, snap.total.queue_req) == (28, 2)
    assert snap.total.token_usage == pytest.approx(0.10)  # node2's 0.27 is not current either
    assert snap.figures["gen_throughput"] == pytest.approx(1600.0)
    assert snap.figures_liveness == (False, 0.0)
    assert snap.servers[1].figures["running_req"] == 182  # its own row keeps its last figures
    # The server as one sees it (`s` selects it) has no multi-server total
    assert snap.for_server(1).total_from == () and snap.for_server(1).left_out == ()


def test_when_every_server_went_quiet_the_sums_keep_their_last_figures_as_old(
        tmp_path: Path) -> None:
    snap = _two_nodes(tmp_path).snapshot(T0 + 1800)
    assert [x.log for x in snap.server_liveness] == ["quiet", "quiet"]
    assert snap.total_from == (0, 1) and snap.left_out == ()
    assert snap.figures["gen_throughput"] == pytest.approx(1600.0 + 5287.55)
    assert snap.figures_liveness == (True, pytest.approx(1200.0))  # node1's, the freshest


def test_a_crashed_server_is_left_out_though_its_last_line_is_fresh(tmp_path: Path) -> None:
    state = _two_nodes(tmp_path)
    state.feed_server(str(tmp_path / "node2.log"), [
        _decode(2, 4000.0, 150, 0.9),
        {"kind": "event", "event": "oom", "message": "CUDA out of memory", "line": 3, "ts": None},
    ], T0 + 595)
    snap = state.snapshot(T0 + 600)
    assert snap.server_liveness[1].log == "crashed"
    assert snap.total_from == (0,) and snap.figures["running_req"] == 28
