"""Line numbers of a followed log: known from a file's start, counted for a backfill window."""

from __future__ import annotations

from dash.core.alerts.model import where
from dash.core.linenums import WINDOW_KEY, LineNumbers, line_order, resolved
from dash.core.log.parse import parse_line
from dash.core.state.server_log import ServerLogTracker

DECODE = ("[2025-09-03 18:33:{s:02d} TP0] Decode batch. #running-req: 3, #token: 2740, "
          "token usage: 0.01, cuda graph: True, gen throughput (token/s): {g:.2f}, #queue-req: 0")
OOM = "[2025-09-03 18:34:00 TP0] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB."


def test_from_the_start_of_a_file_the_kth_line_is_line_k_and_none_lines_count() -> None:
    n = LineNumbers()
    n.restart(0)
    recs = [n.stamp(parse_line(t)) for t in (DECODE.format(s=1, g=1.0), "noise", OOM)]
    assert recs[1] is None
    assert [r["line"] for r in recs if r] == [1, 3]


def test_inside_a_file_numbers_wait_for_the_count_and_then_resolve() -> None:
    n = LineNumbers()
    n.restart(4096)  # a backfill window: its first, partial, line is skipped by the follower
    rec = n.stamp(parse_line(OOM))
    assert rec is not None and rec["line"] is None and rec[WINDOW_KEY] == 1
    assert where(rec) == "at 2025-09-03T18:34:00 (line ?, counting)"
    counted = n.counted(41)  # 41 newlines before byte 4096; line 42 was cut and skipped
    assert counted.base == 42
    assert resolved(rec, counted.base)["line"] == 43 and WINDOW_KEY not in resolved(rec, 42)
    assert rec["line"] is None  # resolved gives a copy: a snapshot holding rec is unchanged
    later = n.stamp(parse_line(OOM))
    assert later is not None and later["line"] == 44 and WINDOW_KEY not in later
    assert resolved(rec, None)["line"] is None and where(resolved(rec, None)) == \
        "at 2025-09-03T18:34:00"


def test_order_within_a_window_still_being_counted() -> None:
    n = LineNumbers()
    n.restart(100)
    a, b = (n.stamp(parse_line(DECODE.format(s=s, g=1.0))) for s in (1, 2))
    assert a is not None and b is not None and line_order(a) < line_order(b)


def test_the_tracker_renumbers_what_it_keeps_when_the_count_comes_in() -> None:
    n = LineNumbers()
    n.restart(1 << 20)
    tracker = ServerLogTracker()
    lines = [DECODE.format(s=1, g=10.0), OOM, DECODE.format(s=2, g=20.0)]
    tracker.feed([n.stamp(parse_line(t)) for t in lines], now=0.0)
    before = tracker.snapshot(0.0)
    assert before.last_decode is not None and before.last_decode["line"] is None
    tracker.window_counted(n.counted(999).base)
    after = tracker.snapshot(0.0)
    assert after.last_decode is not None and after.last_decode["line"] == 1003
    assert [e["line"] for e in after.events] == [1002]
    assert before.events[0]["line"] is None  # the earlier snapshot is not changed under it
