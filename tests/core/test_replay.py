"""The replay's pure part: record times from a log's own stamps, and the cursor over them."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import pytest

from dash.core.snapshot import Record
from dash.core.state.timeline import MAX_QUIET_TICKS, ReplayCursor, Timeline, runs


def rec(ts: str | None, kind: str = "decode", line: int = 0) -> Record:
    return {"kind": kind, "line": line, "ts": ts, "rank": None, "engine": "sglang"}


def local(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def timeline(stamps: list[str | None], ref: str = "2025-03-01T12:00:00", cap: int = 100) -> Timeline:
    tl = Timeline(ref=local(ref), cap=cap)
    for i, ts in enumerate(stamps):
        tl.add(rec(ts, line=i + 1))
    tl.finish()
    return tl


def test_dated_stamps_give_their_own_times_and_untimed_records_take_the_one_before() -> None:
    tl = timeline([None, "2025-02-27T04:46:39", None, "2025-02-27T04:46:41.500"])
    t0 = local("2025-02-27T04:46:39")
    assert list(tl.times) == [t0, t0, t0, t0 + 2.5]
    assert tl.timed and not tl.cut


def test_times_never_go_back_when_ranks_print_out_of_order() -> None:
    tl = timeline(["2025-02-27T04:46:40", "2025-02-27T04:46:38", "2025-02-27T04:46:41"])
    t0 = local("2025-02-27T04:46:40")
    assert list(tl.times) == [t0, t0, t0 + 1]


def test_time_only_stamps_roll_over_midnight() -> None:
    # The file was last written the morning after: the first stamp belongs to the day before.
    tl = timeline(["23:59:50", "23:59:59", "00:00:05", "01:30:00"], ref="2024-08-02T01:31:00")
    start = local("2024-08-01T23:59:50")
    assert [t - start for t in tl.times] == [0.0, 9.0, 15.0, 5410.0]


def test_a_log_without_any_stamp_is_spaced_one_record_a_second() -> None:
    tl = timeline([None, None, None])
    assert not tl.timed
    assert [t - tl.times[0] for t in tl.times] == [0.0, 1.0, 2.0]


def test_the_cap_cuts_the_log_and_says_so() -> None:
    tl = Timeline(ref=0.0, cap=2)
    assert tl.add(rec("2025-02-27T04:46:39")) and tl.add(rec("2025-02-27T04:46:40"))
    assert not tl.add(rec("2025-02-27T04:46:41"))
    assert tl.cut and len(tl.records) == len(tl.times) == 2


def test_garbage_stamps_are_untimed_not_fatal() -> None:
    tl = timeline(["2025-02-27T04:46:39", "99:99:99", "2025-13-45T00:00:00"])
    assert list(tl.times) == [tl.times[0]] * 3


TIMES = [100.0, 100.0, 130.0, 170.0, 200.0, 290.0]


def test_cursor_starts_with_the_records_at_the_first_time() -> None:
    c = ReplayCursor(TIMES)
    step = c.first()
    assert (step.rebuild, step.start, step.stop, step.now) == (False, 0, 2, 100.0)
    assert c.fraction == 0.0 and not c.at_end


def test_advance_feeds_what_the_clock_passed_and_stops_at_the_end() -> None:
    c = ReplayCursor(TIMES)
    c.first()
    step = c.advance_to(175.0)
    assert (step.start, step.stop, step.now) == (2, 4, 175.0)
    assert c.advance_to(150.0).stop == 4  # advancing never goes back
    assert c.now == 175.0
    step = c.advance_to(10_000.0)
    assert (step.start, step.stop, step.now) == (4, 6, 290.0)
    assert c.at_end and c.fraction == 1.0


def test_seek_back_asks_for_a_rebuild_up_to_the_target() -> None:
    c = ReplayCursor(TIMES)
    c.advance_to(250.0)
    step = c.jump(-60)
    assert (step.rebuild, step.start, step.stop, step.now) == (True, 0, 4, 190.0)
    assert c.fed == 4
    step = c.jump(60)
    assert (step.rebuild, step.start, step.stop, step.now) == (False, 4, 5, 250.0)


def test_seek_is_clamped_to_the_log() -> None:
    c = ReplayCursor(TIMES)
    assert c.jump(-60).now == 100.0
    assert c.jump(10_000).now == 290.0 and c.at_end
    step = c.seek(-5.0)
    assert step.rebuild and step.stop == 2 and step.now == 100.0


def test_an_empty_log_is_at_its_end() -> None:
    c = ReplayCursor([])
    assert c.first().stop == 0 and c.at_end


def test_runs_tick_every_interval_of_log_time() -> None:
    c = ReplayCursor(TIMES)
    c.first()
    step = c.advance_to(290.0)
    got = runs(step, TIMES, 60.0)
    assert got == [(2, 3, 160.0), (3, 5, 220.0), (5, 5, 280.0), (5, 6, 290.0)]
    fed = [i for a, b, _ in got for i in range(a, b)]
    assert fed == [2, 3, 4, 5]  # each record once, in order
    for a, b, t in got:
        assert all(TIMES[i] <= t for i in range(a, b))  # never fed ahead of the clock


def test_runs_skip_the_rest_of_a_long_quiet_stretch() -> None:
    times = [0.0, 1_000_000.0]
    c = ReplayCursor(times)
    c.first()
    got = runs(c.advance_to(1_000_000.0), times, 10.0)
    assert len(got) <= MAX_QUIET_TICKS + 3
    assert got[-1] == (1, 2, 1_000_000.0)


@pytest.mark.parametrize("target", [100.0, 150.0, 290.0])
def test_a_rebuild_feeds_from_the_first_record(target: float) -> None:
    c = ReplayCursor(TIMES)
    c.advance_to(290.0)
    step = c.seek(target - 0.5) if target > 100.0 else c.seek(target)
    got = runs(step, TIMES, 10.0)
    assert got[0][0] == 0 and got[-1][2] == step.now


def test_a_step_back_resumes_from_the_last_saved_state_before_it() -> None:
    from dash.core.state.timeline import Checkpoints

    c = ReplayCursor(TIMES)
    cps = Checkpoints(every_s=60.0)
    for _i, j, t in runs(c.advance_to(290.0), TIMES, 10.0):
        if cps.due(t):
            cps.add(t, j, f"state@{t:g}")
    assert [(t, fed) for t, fed, _ in cps.items] == [(110.0, 2), (170.0, 4), (230.0, 5), (290.0, 6)]
    step, saved = cps.resume(c.seek(200.0))
    assert saved == "state@170" and (step.rebuild, step.since, step.start, step.stop) == (True, 170.0, 4, 5)
    step, saved = cps.resume(c.seek(100.0))
    assert saved is None and (step.start, step.stop) == (0, 2)  # before the first: from scratch
    forward = c.advance_to(250.0)
    assert cps.resume(forward) == (forward, None)  # only a step back restores


def test_checkpoints_stay_bounded_by_thinning() -> None:
    from dash.core.state.timeline import Checkpoints

    cps = Checkpoints(every_s=1.0, cap=8)
    for t in range(100):
        if cps.due(float(t)):
            cps.add(float(t), t, t)
    assert 4 <= len(cps.items) <= 8 and cps.every_s > 1.0
    assert [t for t, _, _ in cps.items] == sorted(t for t, _, _ in cps.items)


# -- the times of a piece, a column at a time -----------------------------------------------

@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Australia/Lord_Howe", "Europe/Dublin"])
def test_stamp_times_equal_ts_to_epoch_across_clock_changes(
        monkeypatch: pytest.MonkeyPatch, zone: str) -> None:
    """Each minute's local time is worked out once: on the days the clocks change (by an
    hour, or by half an hour on Lord Howe) every stamp still gets what `ts_to_epoch` gives."""
    import time

    from dash.core.log import timestamps
    from dash.core.log.timestamps import ts_to_epoch
    from dash.core.state.stamp_times import stamp_epochs

    monkeypatch.setenv("TZ", zone)
    time.tzset()
    timestamps._full_stamp_to_epoch.cache_clear()  # it keeps times of the zone before
    try:
        stamps: list[str | None] = [None, "", "08:00:01", "10-11T12:27:29", "2026-02-30T10:00:00",
                                    "2026-03-01T24:00:00", "2026-03-01T08:00:60",
                                    "2026-03-01T08:00:05Z", "2026-03-01 08:00:05,250"]
        for day in ("2026-03-08", "2026-11-01", "2026-04-05", "2026-10-04", "2026-03-29",
                    "2026-10-25"):
            for h in range(0, 4):
                for mi in (0, 15, 29, 30, 59):
                    stamps += [f"{day}T{h:02d}:{mi:02d}:{s:02d}" for s in (0, 1, 30, 59)]
            stamps.append(f"{day}T01:30:00.123456789")
        got = stamp_epochs(stamps)
        for ts, t in zip(stamps, got, strict=True):
            if not ts:
                assert t == -math.inf
            elif ts[4:5] != "-":
                assert math.isnan(t), ts
            else:
                want = ts_to_epoch(ts, 0.0)
                assert (t == -math.inf) if want is None else t == want, ts
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
        timestamps._full_stamp_to_epoch.cache_clear()


def test_int_columns_widen_to_what_their_largest_value_needs() -> None:
    from array import array

    from dash.core.state.series_piece import extend

    col = extend(array("B"), [1, 2, 200])
    assert col.typecode == "B"
    col = extend(col, [7, 70_000, 3])
    col = extend(col, [2 ** 40])
    assert col.typecode == "Q" and list(col) == [1, 2, 200, 7, 70_000, 3, 2 ** 40]
    from dash.core.state.series_piece import read_column

    read = read_column("int", b"2\n70000\n3")
    assert read.typecode == "I" and list(read) == [2, 70_000, 3]
    assert read_column("int", b"255").typecode == "B"
    assert read_column("int", b"256\n0").typecode == "H"
    assert list(read_column("int", b"%d" % 2 ** 40)) == [2 ** 40]
    assert list(read_column("bool", b"True\nFalse")) == [1, 0]
    assert list(read_column("float", b"0.5\n12.25")) == [0.5, 12.25]
    narrow = extend(array("B", [1]), array("H", [300]))
    assert narrow.typecode == "H" and list(narrow) == [1, 300]
    assert list(extend(array("I", [5]), array("B", [6]))) == [5, 6]


def test_a_replay_run_obeys_the_screen_on_the_log_clock(tmp_path: Path) -> None:
    """The replay's pure part, as its thread drives it: real time paced at a speed, pause,
    a jump back to a saved state, and frames that say what changed."""
    from dash.commands.replay import replay_config
    from dash.core.config import Config
    from dash.core.state.replay_run import ReplayRun, obey
    from dash.sim import SimRun
    from dash.sources.replay_read import load_timeline

    t0 = 1_750_000_000.0
    SimRun(tmp_path, "oom-crash-restart", start_epoch=t0).advance_to(420)
    log = tmp_path / "server.log"
    run = ReplayRun(replay_config(log, (), base=Config()), load_timeline(log))
    first = run.frame()
    assert first.now == t0 and first.fresh_pane and first.pane
    paced, paused = obey(run, ("pace", 10.0), 0.0, False, 30.0)
    assert run.cursor.now == t0 + 60.0 and (paced, paused) == (10.0, False)  # 2 s at most
    paced, paused = obey(run, ("pause", 11.0, True), paced, paused, 30.0)
    paced, paused = obey(run, ("pace", 20.0), paced, paused, 30.0)
    assert run.cursor.now == t0 + 60.0 and paused
    for _ in range(4):
        paced, paused = obey(run, ("jump", 21.0, 60.0), paced, paused, 30.0)
    assert run.cursor.now == t0 + 300.0  # the OOM's time
    assert "server_oom" in {a.id for a in run.frame().snapshot.alerts}
    before = run.state
    obey(run, ("jump", 22.0, -120.0), paced, paused, 30.0)
    frame = run.frame()
    assert run.state is not before and frame.fresh_pane and frame.now == t0 + 180.0
    assert "server_oom" not in {a.id for a in frame.snapshot.alerts}


def test_a_replay_counts_the_log_lines_not_only_its_stats(tmp_path: Path) -> None:
    """The server panel's `N lines, M stats`: a replay at the end of a log has counted every
    line of it (the access lines between the stats lines too), as a live run counts them."""
    from dash.commands.replay import replay_config
    from dash.core.config import Config
    from dash.core.state.replay_run import ReplayRun, obey
    from dash.sim import SimRun
    from dash.sources.replay_read import load_timeline

    SimRun(tmp_path, "healthy", start_epoch=1_750_000_000.0).advance_to(600)
    log = tmp_path / "server.log"
    run = ReplayRun(replay_config(log, (), base=Config()), load_timeline(log))
    run.advance(300.0)
    half = run.frame().snapshot.server
    assert half.records < half.lines < len(log.read_text().splitlines())
    obey(run, ("jump", 1.0, -120.0), 0.0, False, 30.0)  # rebuilt from a saved state
    back = run.frame().snapshot.server
    assert back.records < back.lines < half.lines
    run.advance(10_000.0)
    end = run.frame().snapshot.server
    assert end.lines == len(log.read_text().splitlines()) > 2 * end.records


def test_a_replay_at_its_end_counts_the_lines_after_the_last_record(tmp_path: Path) -> None:
    """A log that ends in lines of no interest (an access line, a traceback's frames): at the
    end of the replay the server panel said `log 2 lines` of a 6-line log, where the
    dashboard, `--once` and `summary` say 6."""
    from dash.commands.replay import replay_config
    from dash.core.config import Config
    from dash.core.state.replay_run import ReplayRun
    from dash.sources.replay_read import load_timeline

    log = tmp_path / "server.log"
    log.write_text("[2025-09-03 18:33:19 TP0] Decode batch. #running-req: 1, #token: 137, token "
                   "usage: 0.00, gen throughput (token/s): 1.06, #queue-req: 0\n"
                   'INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
                   "  a line of no interest\n\n")
    run = ReplayRun(replay_config(log, (), base=Config()), load_timeline(log))
    run.advance(3600.0)
    frame = run.frame()
    assert frame.at_end and frame.snapshot.server.lines == 4
