"""Partitions: names from globs, counts over time, windowed rates, ETA ranges, statuses."""

from __future__ import annotations

import pytest

from dash.core.state.globs import expected_output
from dash.core.state.partitions import OutputCount, PartitionsTracker, glob_error, partition_name


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


def test_a_stalled_partition_has_no_eta_and_adds_no_rate_to_the_run() -> None:
    # B wrote 14 lines in its first 15 s, then nothing: its window's rate (17/min) is of
    # before, and an ETA of 57 min beside "stalled" said it was on its way.
    t = PartitionsTracker({"A": 1000, "B": 1000}, stall_after_s=20.0)
    t.apply([OutputCount("A", "out/A.jsonl", 0), OutputCount("B", "out/B.jsonl", 1)], 0.0)
    for k in range(1, 50):
        t.apply([OutputCount("A", "out/A.jsonl", k),
                 OutputCount("B", "out/B.jsonl", min(15, 1 + k))], float(k))
    a, b = t.snapshot(49.0)
    assert b.status == "stalled" and b.rate_per_min and b.eta_s is None
    assert b.eta_low_s is None and b.eta_high_s is None
    totals = t.totals(49.0)
    assert totals.rate_per_min == pytest.approx(a.rate_per_min)
    # B owes 985 lines at no rate: A is not the last to finish, and nobody knows which is
    assert totals.last_to_finish is None


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


def test_quiet_partition_is_stalled_only_when_it_owes_lines() -> None:
    t = PartitionsTracker({"B1": 50}, stall_after_s=300.0)
    t.apply([OutputCount("B1", "b1", 0), OutputCount("B2", "b2", 0)], 0.0)
    t.apply([OutputCount("B1", "b1", 20), OutputCount("B2", "b2", 30)], 30.0)
    assert [s.status for s in t.snapshot(100.0)] == ["running", "running"]
    b1, b2 = t.snapshot(400.0)
    assert (b1.status, b2.status) == ("stalled", "idle")  # B2 has no total: maybe finished
    t.apply([OutputCount("B1", "b1", 20), OutputCount("B2", "b2", 31)], 410.0)
    assert t.snapshot(410.0)[1].status == "running"


@pytest.mark.parametrize(("patterns", "name", "path"), [
    (("prepared/*/responses.jsonl",), "B3_x", "prepared/B3_x/responses.jsonl"),
    (("out/*.jsonl",), "B3", "out/B3.jsonl"),
    (("out/part_*.jsonl",), "part_B3", "out/part_B3.jsonl"),
    (("/abs/run-*/r.jsonl",), "run-7", "/abs/run-7/r.jsonl"),
    (("out/*",), "B3", ""),  # B3, B3.jsonl, B3.json...: cannot tell
    (("out/part_*.jsonl",), "B3", ""),  # no file named B3 matches
    (("out/*/*.jsonl",), "a/b", ""),
    (("out/?3.jsonl",), "B3", ""),
    (("data/**/*.jsonl",), "B3", ""),
    (("out/only.jsonl",), "only", ""),
    ((), "B3", ""),
    (("out/[ab].jsonl", "res/*.jsonl"), "B3", "res/B3.jsonl"),
])
def test_expected_output_inverts_a_single_star(patterns: tuple[str, ...], name: str,
                                               path: str) -> None:
    assert expected_output(patterns, name) == path
    if path:
        assert partition_name(next(p for p in patterns if "*" in p), path) == name


def test_partitions_known_by_totals_are_pending_until_their_file_appears() -> None:
    t = PartitionsTracker({"B5": 40}, outputs=("out/*.jsonl",))
    t.set_input_totals({"B1": 10, "B3": 30, "B4": 20})
    t.apply([OutputCount("B1", "out/B1.jsonl", 4)], 0.0)
    snaps = {s.name: s for s in t.snapshot(0.0)}
    assert sorted(snaps) == ["B1", "B3", "B4", "B5"]
    b3 = snaps["B3"]
    assert (b3.status, b3.done, b3.total, b3.at_start, b3.path) == \
        ("pending", 0, 30, 0, "out/B3.jsonl")
    assert snaps["B5"].total == 40 and snaps["B5"].path == "out/B5.jsonl"
    tot = t.totals(0.0)
    assert (tot.done, tot.total) == (4, 100)
    # B3's output appears: the same row, now counted, every line written since start.
    t.apply([OutputCount("B1", "out/B1.jsonl", 4),
             OutputCount("B3", "out/B3.jsonl", 2, appeared_later=True)], 5.0)
    snaps = {s.name: s for s in t.snapshot(5.0)}
    assert len(t.snapshot(5.0)) == 4
    b3 = snaps["B3"]
    assert (b3.status, b3.done, b3.total, b3.at_start) == ("running", 2, 30, 0)
    assert t.totals(5.0).done == 6


def test_pending_partition_without_a_derivable_path_has_an_empty_path() -> None:
    t = PartitionsTracker({"B2": 5}, outputs=("out/*",))
    (s,) = t.snapshot(0.0)
    assert (s.name, s.path, s.status, s.total) == ("B2", "", "pending", 5)


def test_an_unreadable_output_is_named_and_a_glob_that_matches_nothing_is_told() -> None:
    from dash.core.state.partitions import OutputCount, PartitionsTracker

    tracker = PartitionsTracker(outputs=("out/*.jsonl", "out/*.jsnl"))
    assert tracker.unmatched() == ()  # not looked yet: nothing to say
    tracker.apply([OutputCount("B1", "out/B1.jsonl", 10)], 0.0)
    assert tracker.unmatched() == ("out/*.jsnl",)
    tracker.note_errors(["out/B1.jsonl: Permission denied"])
    [p] = tracker.snapshot(1.0)
    assert (p.status, p.error, p.done) == ("unreadable", "Permission denied", 10)
    tracker.note_errors([])
    assert tracker.snapshot(2.0)[0].status == "pending"


def test_a_file_written_just_now_is_running_from_its_mtime() -> None:
    from dash.core.state.partitions import OutputCount, PartitionsTracker

    tracker = PartitionsTracker(stall_after_s=300.0)
    tracker.apply([OutputCount("B1", "out/B1.jsonl", 10, mtime=990.0),
                   OutputCount("B2", "out/B2.jsonl", 5, mtime=100.0)], 1000.0)
    status = {p.name: (p.status, p.last_write) for p in tracker.snapshot(1000.0)}
    assert status == {"B1": ("running", 990.0), "B2": ("pending", None)}  # old: not "stalled"


def test_a_client_that_stopped_before_kdash_leaves_its_partition_stalled() -> None:
    from dash.core.state.partitions import OutputCount, PartitionsTracker

    # Partitions in turn: B1 finished, B2 part-written an hour ago, B3 part-written by an
    # earlier run, B4 not started; the client stopped in B2 20 minutes before kdash looked.
    tracker = PartitionsTracker({"B1": 10, "B2": 10, "B3": 10, "B4": 10}, stall_after_s=300.0)
    tracker.apply([OutputCount("B1", "out/B1.jsonl", 10, mtime=-3000.0),
                   OutputCount("B2", "out/B2.jsonl", 4, mtime=-1200.0),
                   OutputCount("B3", "out/B3.jsonl", 7, mtime=-86400.0)], 0.0)
    snaps = {p.name: p for p in tracker.snapshot(1.0)}
    assert {n: p.status for n, p in snaps.items()} == {
        "B1": "done", "B2": "stalled", "B3": "pending", "B4": "pending"}
    assert snaps["B2"].last_write == -1200.0 and snaps["B2"].eta_s is None

    # Once the client writes again (here B3, resumed), nothing is stalled: the others wait.
    tracker.apply([OutputCount("B1", "out/B1.jsonl", 10, mtime=-3000.0),
                   OutputCount("B2", "out/B2.jsonl", 4, mtime=-1200.0),
                   OutputCount("B3", "out/B3.jsonl", 8, mtime=5.0)], 5.0)
    assert {p.name: p.status for p in tracker.snapshot(6.0)} == {
        "B1": "done", "B2": "pending", "B3": "running", "B4": "pending"}


def test_no_total_no_stall_from_before_kdash() -> None:
    from dash.core.state.partitions import OutputCount, PartitionsTracker

    # Without a total a quiet file may simply be finished: never stalled on its mtime alone.
    tracker = PartitionsTracker(stall_after_s=300.0)
    tracker.apply([OutputCount("B1", "out/B1.jsonl", 4, mtime=-1200.0)], 0.0)
    assert tracker.snapshot(1.0)[0].status == "pending"


def test_a_partition_tells_how_many_lines_came_after_a_moment() -> None:
    t = PartitionsTracker({"B1": 2000})
    t.apply(_obs(100), 0.0)
    for i in range(1, 41):  # one line a second, more points than a snapshot carries
        t.apply(_obs(100 + i), float(i))
    (s,) = t.snapshot(41.0)
    assert len(s.recent_counts) == 16 and s.recent_counts[-1] == (40.0, 140)
    assert s.written_after(37.5) == 3
    assert s.written_after(40.0) == 0
    # Before the oldest point carried: at least what the points show.
    assert s.written_after(2.0) == 140 - s.recent_counts[0][1]


def test_a_counted_file_that_is_not_there_any_more_is_missing_until_it_comes_back() -> None:
    t = PartitionsTracker({"B1": 2000})
    t.apply(_obs(100), 0.0)
    for i in range(1, 6):
        t.apply(_obs(100 + 10 * i), 30.0 * i)
    t.apply(_obs(None), 180.0)  # deleted (or moved away): the source counts nothing
    (s,) = t.snapshot(180.0)
    assert (s.status, s.done, s.rate_per_min, s.eta_s) == ("missing", 150, None, None)
    t.apply(_obs(3, reset=True), 200.0)  # written again from the start
    (s,) = t.snapshot(200.0)
    assert s.status != "missing" and s.done == 3


def test_a_file_never_counted_is_pending_not_missing() -> None:
    t = PartitionsTracker({"B1": 2000})
    t.apply(_obs(None), 0.0)
    assert t.snapshot(0.0)[0].status == "pending"


def test_a_truncated_file_has_no_lines_from_before_the_start() -> None:
    t = PartitionsTracker({"B1": 1000})
    t.apply(_obs(2), 0.0)  # two lines there when kdash started
    t.apply(_obs(9), 10.0)
    t.apply(_obs(1, reset=True), 20.0)  # `: > out/B1.jsonl`, then one line written
    (s,) = t.snapshot(20.0)
    assert (s.done, s.at_start, s.written) == (1, 0, 1)


def _in_turn(t: PartitionsTracker, until: int, *, b_there_from_start: bool) -> None:
    """A client that takes A (1 line/s) and then B: B's first line comes when A is done."""
    for s in range(0, until + 1, 5):
        counts = [OutputCount("A", "out/A.jsonl", min(1000, s))]
        if b_there_from_start or s >= 1000:
            counts.append(OutputCount("B", "out/B.jsonl", max(0, s - 1000),
                                      appeared_later=not b_there_from_start))
        t.apply(counts, float(s))


@pytest.mark.parametrize("b_there_from_start", [True, False])
def test_partitions_taken_in_turn_give_the_run_one_rate_not_two(b_there_from_start: bool) -> None:
    # A finished 100 s ago; its window still holds its lines, while B is measured from its own
    # first line. Summing the two rates said 110/min and an ETA of half the true one.
    t = PartitionsTracker({"A": 1000, "B": 1000})
    _in_turn(t, 1100, b_there_from_start=b_there_from_start)
    tot = t.totals(1100.0)
    assert tot.rate_per_min == pytest.approx(60.0)
    assert tot.eta_s == pytest.approx(900.0)


def test_a_partition_taken_up_late_is_measured_from_its_first_line_not_over_its_wait() -> None:
    # B's file was there (empty) from the start: over a window that is mostly its wait, its
    # rate read 3/min and its ETA five hours, for a partition written at 60/min.
    t = PartitionsTracker({"A": 1000, "B": 1000})
    _in_turn(t, 1030, b_there_from_start=True)
    b = t.snapshot(1030.0)[1]
    assert b.status == "running"
    assert b.rate_per_min == pytest.approx(60.0, rel=0.2)
    assert b.eta_s is not None and b.eta_s < 1200.0


def test_a_partition_done_before_the_window_does_not_dilute_the_run_rate() -> None:
    # A finished at 1000 s, long before the 10-minute window; after a pause the client took up
    # B at 2000 s, at 60/min. A wrote nothing in the window, so it must not stretch the run's
    # span to the whole window (that gave half B's own rate for the run).
    t = PartitionsTracker({"A": 1000, "B": 1000})
    for s in range(0, 2301, 5):
        t.apply([OutputCount("A", "out/A.jsonl", min(1000, s)),
                 OutputCount("B", "out/B.jsonl", max(0, s - 2000))], float(s))
    tot = t.totals(2300.0)
    b = t.snapshot(2300.0)[1]
    assert b.rate_per_min == pytest.approx(60.0, rel=0.05)
    assert tot.rate_per_min == pytest.approx(b.rate_per_min)
