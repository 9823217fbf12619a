"""Partitions: names from globs, counts over time, windowed rates, ETA ranges, statuses."""

from __future__ import annotations

import pytest

from dash.core.partitions import OutputCount, PartitionsTracker, glob_error, partition_name


@pytest.mark.parametrize(("pattern", "path", "name"), [
    ("prepared/*/responses.jsonl", "prepared/B2_opencodeinstruct/responses.jsonl",
     "B2_opencodeinstruct"),
    ("out/*.jsonl", "out/B1.jsonl", "B1"),
    ("/abs/run-*/part_?.jsonl", "/abs/run-3/part_7.jsonl", "run-3/part_7"),
    ("out/only.jsonl", "out/only.jsonl", "only"),
    ("data/**/*.jsonl", "data/a/b/c.jsonl", "a/b/c"),
])
def test_partition_names(pattern: str, path: str, name: str) -> None:
    assert partition_name(pattern, path) == name


@pytest.mark.parametrize("bad", ["", "  ", "out/[ab.jsonl", "out/", "a\x00b"])
def test_bad_globs_say_why(bad: str) -> None:
    assert glob_error(bad)


def test_good_globs_pass() -> None:
    assert glob_error("prepared/*/responses.jsonl") is None
    assert glob_error("out/[ab].jsonl") is None


def _obs(n: int | None, **kw: object) -> list[OutputCount]:
    return [OutputCount("B1", "out/B1.jsonl", n, **kw)]  # type: ignore[arg-type]


def test_resumed_run_keeps_lines_at_start_apart_and_rates_what_this_run_does() -> None:
    t = PartitionsTracker({"B1": 2000})
    t.apply(_obs(1374), 0.0)
    (s,) = t.snapshot(0.0)
    assert (s.done, s.at_start, s.written, s.status, s.rate_per_min) == (1374, 1374, 0, "pending", None)
    for i in range(1, 11):
        t.apply(_obs(1374 + 10 * i), 60.0 * i)
    (s,) = t.snapshot(600.0)
    assert s.at_start == 1374 and s.written == 100
    assert s.rate_per_min == pytest.approx(10.0)
    assert s.eta_s == pytest.approx((2000 - 1474) * 6.0)
    assert s.status == "running"
    assert s.percent == pytest.approx(73.7)


def test_a_burst_does_not_swing_the_windowed_rate() -> None:
    t = PartitionsTracker({"B1": 10000})
    t.apply(_obs(0), 0.0)
    for i in range(1, 10):
        t.apply(_obs(10 * i), 60.0 * i)
    t.apply(_obs(90 + 100), 600.0)  # a burst: 100 lines in one poll
    (s,) = t.snapshot(600.0)
    assert s.rate_per_min == pytest.approx(19.0)
    assert s.recent_rate_per_min is not None and s.recent_rate_per_min > s.rate_per_min
    assert s.eta_low_s is not None and s.eta_high_s is not None
    assert s.eta_low_s < s.eta_s < s.eta_high_s  # type: ignore[operator]


def test_stalled_done_and_truncation() -> None:
    t = PartitionsTracker({"B1": 50}, stall_after_s=300.0)
    t.apply(_obs(0), 0.0)
    t.apply(_obs(20), 30.0)
    (s,) = t.snapshot(400.0)
    assert s.status == "stalled" and s.last_write == 30.0
    t.apply(_obs(5, reset=True), 410.0)
    (s,) = t.snapshot(410.0)
    assert s.done == 5 and s.rate_per_min is None
    t.apply(_obs(50), 500.0)
    assert t.snapshot(500.0)[0].status == "done"


def test_restart_resets_rates_not_counts() -> None:
    t = PartitionsTracker()
    t.apply(_obs(0), 0.0)
    t.apply(_obs(100), 100.0)
    assert t.snapshot(100.0)[0].rate_per_min == pytest.approx(60.0)
    t.note_restart(100.0)
    (s,) = t.snapshot(105.0)
    assert s.done == 100 and s.rate_per_min is None and s.total is None and s.eta_s is None


def test_counting_status_and_a_file_that_appears_later() -> None:
    t = PartitionsTracker()
    t.apply(_obs(None, counting=True, progress=0.25), 0.0)
    (s,) = t.snapshot(0.0)
    assert s.status == "counting" and s.counting_progress == 0.25
    t.apply([OutputCount("B2", "out/B2.jsonl", 7, appeared_later=True)], 1.0)
    b2 = t.snapshot(1.0)[1]
    assert b2.at_start == 0 and b2.written == 7 and b2.status == "running"


def test_totals_inputs_expect_and_last_to_finish() -> None:
    t = PartitionsTracker({"A": 100})
    t.set_input_totals({"A": 999, "B": 200})
    t.apply([OutputCount("A", "a", 0), OutputCount("B", "b", 0)], 0.0)
    t.apply([OutputCount("A", "a", 50), OutputCount("B", "b", 10)], 60.0)
    a, b = t.snapshot(60.0)
    assert a.total == 100 and b.total == 200  # --expect wins over --inputs
    tot = t.totals(60.0)
    assert tot.done == 60 and tot.total == 300 and tot.rate_per_min == pytest.approx(60.0)
    assert tot.eta_s == pytest.approx(240.0) and tot.last_to_finish == "B"
