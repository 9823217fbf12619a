"""The log's clock: an offset in quarter hours learned from lines as written, or a rate."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dash.core.log import timestamps
from dash.core.snapshot import LogClockView
from dash.core.state.log_clock import LogClock, clock_text, stamp_is_zoned, zone_text
from dash.core.state.server_log import ServerLogTracker

W0 = 1_780_000_000.0
H = 3600.0
DATED = "2026-06-01T12:00:00"
TIME_ONLY = "12:00:00"


def test_a_zone_offset_is_learned_to_the_nearest_quarter_hour() -> None:
    clock = LogClock()
    assert clock.to_clock(W0) == W0 and not clock.learned  # identity until a line teaches it
    clock.observe(W0 - 9 * H - 2.0, W0, DATED)  # written two seconds after its stamp
    assert clock.offset_s == 9 * H and clock.learned
    assert clock.to_clock(W0 - 9 * H + 30) == W0 + 30
    assert clock.stamp_ref(W0) == W0 - 9 * H


@pytest.fixture
def box_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Put the box in a zone (TZ), as a machine in Kathmandu or on Kiritimati is."""
    def put(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        timestamps._full_stamp_to_epoch.cache_clear()  # it keeps times of the zone before
    yield put
    monkeypatch.undo()
    time.tzset()
    timestamps._full_stamp_to_epoch.cache_clear()


# A box in Nepal or on Kiritimati reading a UTC log, a UTC box reading logs stamped in Bangkok
# or Adelaide (which is offset -9.5 h: the stamps are ahead), and the same zone.
@pytest.mark.parametrize(("box", "offset"), [("Asia/Kathmandu", 5.75 * H), ("UTC", -7 * H),
                                             ("UTC", -9.5 * H), ("Pacific/Kiritimati", 14 * H),
                                             ("UTC", 0.0)])
def test_any_zone_difference(box_zone: Callable[[str], None], box: str, offset: float) -> None:
    box_zone(box)
    clock = LogClock()
    clock.observe(W0 - offset - 0.7, W0, DATED)
    assert clock.offset_s == offset


@pytest.mark.parametrize("raw", [1.5 * H, -5.25 * H, 9 * H + 300])
def test_a_difference_that_puts_the_log_in_no_zone_teaches_nothing(
        box_zone: Callable[[str], None], raw: float) -> None:
    # On a UTC box a log at UTC-1:30 or UTC+5:15 is in no zone there is (a log copied in an
    # hour and a half after its last line), and one 9 h 05 min behind is a file whose last
    # stamped line is older than its last write: a later read teaches the zone.
    box_zone("UTC")
    clock = LogClock()
    clock.observe(W0 - raw, W0, DATED)
    assert not clock.learned and clock.offset_s == 0.0
    clock.observe(W0 + 10 - 9 * H, W0 + 10, DATED)
    assert clock.offset_s == 9 * H


def test_a_difference_no_zone_has_teaches_nothing() -> None:
    clock = LogClock()
    clock.observe(W0 - 3 * 86400, W0, DATED)  # days old: a log copied in, not a zone
    assert not clock.learned and clock.offset_s == 0.0


def test_a_time_only_stamp_takes_the_nearest_day() -> None:
    clock = LogClock()
    # A stamp seven hours ahead read as the day before is 17 h behind: it is -7 h
    clock.observe(W0 - 17 * H, W0, TIME_ONLY)
    assert clock.offset_s == -7 * H


def test_a_new_offset_is_taken_when_lines_in_a_row_agree_and_points_move_with_it() -> None:
    clock = LogClock()
    assert clock.observe(W0 - 1.0, W0, DATED) is None  # offset 0 learned; nothing to move
    assert clock.observe(W0 + 10 - 9 * H, W0 + 10, DATED) is None
    assert clock.observe(W0 + 20 - 9 * H, W0 + 20, DATED) is None
    assert clock.offset_s == 0.0
    move = clock.observe(W0 + 30 - 9 * H, W0 + 30, DATED)
    assert clock.offset_s == 9 * H and move is not None
    assert move(W0 - 9 * H) == W0  # a point placed with the old offset goes where it belongs


def test_zoned_stamps_need_no_guess() -> None:
    clock = LogClock()
    assert stamp_is_zoned("2026-02-11T08:15:03Z") and stamp_is_zoned("2026-02-11T08:15:03+09:00")
    assert not stamp_is_zoned("2026-02-11T08:15:03") and not stamp_is_zoned("08:15:03")
    clock.observe(W0 - 9 * H, W0, "2026-02-11T08:15:03Z")
    assert clock.zoned and clock.offset_s == 0.0


def test_a_clock_ten_times_faster_is_learned_as_a_rate() -> None:
    clock = LogClock()
    moved = []
    for k in range(40):  # a read a second; stamps advance ten seconds per second
        move = clock.observe(W0 + 10.0 * k, W0 + k + 0.3, DATED)
        if move is not None:
            moved.append(k)
    assert clock.rate == pytest.approx(10.0, rel=0.02)
    assert moved and moved[0] <= 25  # within the first few dozen seconds of lines
    assert clock.to_clock(W0 + 390.0) == pytest.approx(W0 + 39.3)  # the last line: written now
    assert clock.to_clock(W0 + 290.0) == pytest.approx(W0 + 29.3, abs=0.5)
    assert clock.stamp_ref(W0 + 40.3) == pytest.approx(W0 + 400.0, abs=1.0)


def test_old_lines_appended_in_a_burst_teach_no_rate() -> None:
    """A log's night-long gap caught up in seconds (old lines appended as they come) is one
    jump in the stamps, not a clock that runs fast."""
    clock = LogClock()
    for k in range(30):  # a line every 0.7 s, stamped 2 s apart, with a 17 h gap in the middle
        stamp = W0 + 2.0 * k + (17 * H if k >= 15 else 0.0)
        clock.observe(stamp, W0 + 0.7 * k, DATED)
    assert clock.rate == 1.0


def test_a_rate_is_said_without_scientific_notation() -> None:
    assert clock_text(LogClockView(rate=1600.0)) == "log clock runs 1,600x the wall clock"
    assert clock_text(LogClockView(rate=0.608)) == "log clock runs 0.61x the wall clock"
    # A rate learned again as lines come keeps its text: no third figure to flicker.
    assert {clock_text(LogClockView(rate=r)) for r in (7.996, 8.0, 8.013)} == {
        "log clock runs 8x the wall clock"}
    assert clock_text(LogClockView(rate=0.004)) == "log clock runs 1/250x the wall clock"


def test_a_real_server_with_read_delays_stays_at_rate_one() -> None:
    clock = LogClock()
    for k in range(300):  # lines stamped in whole seconds, read 0-1.9 s after
        stamp = float(int(W0 + 2 * k))
        clock.observe(stamp - 9 * H, stamp + (k * 7 % 19) / 10, DATED)
    assert clock.rate == 1.0 and clock.offset_s == 9 * H


def test_zone_text_and_what_the_user_is_told() -> None:
    assert [zone_text(s) for s in (0, 9 * H, -7 * H, 5.5 * H, 5.75 * H)] == \
        ["UTC+0", "UTC+9", "UTC-7", "UTC+5:30", "UTC+5:45"]
    assert clock_text(LogClockView(box_utc_offset_s=9 * H)) is None
    assert clock_text(LogClockView(offset_s=9 * H, box_utc_offset_s=9 * H)) == \
        "log clock UTC+0, box UTC+9"
    assert clock_text(LogClockView(rate=10.0)) == "log clock runs 10x the wall clock"


def _local(t: float) -> str:
    """The stamp a server in the box's zone prints at `t` (what ts_to_epoch reads back as t)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def _decode(ts: str, gen: float = 100.0, line: int = 1) -> dict[str, Any]:
    return {"kind": "decode", "line": line, "ts": ts, "rank": None, "engine": "sglang",
            "running_req": 8, "queue_req": 0, "tokens": 8000, "token_usage": 0.3,
            "gen_throughput": gen}


def test_a_log_nine_hours_behind_reads_fresh_once_its_clock_is_learned() -> None:
    tr = ServerLogTracker("x.log")
    # the backfill: an hour of lines, the last written a second ago (the file's mtime)
    backfill = [_decode(_local(W0 - 9 * H - 3600 + 10 * i), line=i + 1) for i in range(361)]
    tr.feed(backfill, W0 + 1, written_at=W0)
    snap = tr.snapshot(W0 + 1)
    assert snap.clock.offset_s == 9 * H and snap.clock.learned
    assert snap.last_record_at == pytest.approx(W0)
    assert snap.gen_throughput.t[0] == pytest.approx(W0 - 3600)
    tr.feed([_decode(_local(W0 - 9 * H + 5), line=400)], W0 + 6, written_at=W0 + 5.2)
    snap = tr.snapshot(W0 + 6)
    assert snap.last_record_at == pytest.approx(W0 + 5)
    assert snap.clock.last_line_at == pytest.approx(W0 + 5)


def test_points_placed_before_the_clock_was_known_move_when_it_is() -> None:
    tr = ServerLogTracker("x.log")
    tr.feed([_decode(_local(W0 - 9 * H - 20 + i)) for i in range(5)], W0)  # no mtime: as stamped
    assert tr.snapshot(W0).gen_throughput.t[-1] == pytest.approx(W0 - 9 * H - 16)
    tr.feed([_decode(_local(W0 - 9 * H + 1))], W0 + 2, written_at=W0 + 1.5)
    snap = tr.snapshot(W0 + 2)
    assert snap.gen_throughput.t == pytest.approx((W0 - 20, W0 - 19, W0 - 18, W0 - 17, W0 - 16,
                                                   W0 + 1))


def test_replays_and_summaries_keep_the_stamps_as_they_are() -> None:
    tr = ServerLogTracker("x.log")
    tr.feed([_decode(_local(W0 - 9 * H))], W0)
    snap = tr.snapshot(W0)
    assert snap.clock.offset_s == 0.0 and not snap.clock.learned
    assert snap.gen_throughput.t == (W0 - 9 * H,)


def test_a_stamp_that_unstamped_lines_followed_takes_the_nearest_quarter_hour(
        box_zone: Callable[[str], None]) -> None:
    # A server loading its weights draws a progress bar without stamps for minutes: its last
    # stamp is older than the file's last write by that long, and the zone is still learned.
    box_zone("Asia/Tokyo")
    clock = LogClock()
    clock.observe(W0 - 9 * H - 300, W0, DATED, exact=False)
    assert clock.offset_s == 9 * H


@pytest.mark.parametrize(("box", "raw", "skew", "text"), [
    ("UTC", 600.0, 600.0, "log clock 10 min behind the box's"),
    ("UTC", -150.0, -150.0, "log clock 2 min 30 s ahead of the box's"),
    ("Asia/Tokyo", 9 * H + 180, 180.0, "log clock UTC+0, box UTC+9, 3 min behind its zone"),
])
def test_a_server_clock_minutes_off_is_learned_from_reads_that_agree(
        box_zone: Callable[[str], None], box: str, raw: float, skew: float, text: str) -> None:
    # A container without NTP: every line is written `raw` seconds after its stamp says (a
    # second of jitter between reads), which no zone explains.
    box_zone(box)
    clock = LogClock()
    for i in range(11):  # a read a second, as the follower reads a busy log
        assert not clock.learned  # one read, or a few seconds of them, are no clock
        w = W0 + i
        clock.observe(w - raw - (0.4, 1.3, 0.2)[i % 3], w, DATED)
    assert clock.learned and clock.offset_s == pytest.approx(raw, abs=1.0)
    view = clock.view(None, W0 + 12)
    assert view.skew_s == pytest.approx(skew, abs=1.0) and clock_text(view) == text
    # the next reads, a second off either way, leave the map where it is
    for i, jitter in enumerate((1.9, -0.8)):
        w = W0 + 20 + 5 * i
        assert clock.observe(w - raw - jitter, w, DATED) is None
    assert clock.offset_s == pytest.approx(raw, abs=1.0)


def test_reads_that_disagree_or_come_in_a_burst_teach_no_skew(
        box_zone: Callable[[str], None]) -> None:
    box_zone("UTC")
    clock = LogClock()
    for i, raw in enumerate((600.0, 900.0 + 400, 2000.0)):  # a copy read three times, late
        clock.observe(W0 + 6 * i - raw, W0 + 6 * i, DATED)
    assert not clock.learned
    burst = LogClock()
    for i in range(3):  # three reads within two seconds: one burst, not a clock
        burst.observe(W0 + i - 600.0, W0 + i, DATED)
    assert not burst.learned


def test_an_unstamped_line_after_an_idle_servers_stats_teaches_no_zone(
        box_zone: Callable[[str], None]) -> None:
    # An idle server's last stats line is 3h04m old when a warning without a stamp is
    # appended: its stamp says nothing of when the warning was written (it taught "UTC-3").
    box_zone("UTC")
    tr = ServerLogTracker("x.log")
    tr.feed([_decode(_local(W0 - 3 * H - 240), line=1)], W0, written_at=W0, stamp_last=False)
    snap = tr.snapshot(W0)
    assert snap.clock.offset_s == 0.0 and not snap.clock.learned
    assert snap.last_record_at == pytest.approx(W0 - 3 * H - 240)
