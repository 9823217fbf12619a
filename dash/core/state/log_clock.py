"""The log's clock is not the wall clock: learn how its stamps map to kdash's clock.

Stamps carry no zone. A server in a container stamps UTC while the box runs on Tokyo time, so a
stamp read as the box's local time is nine hours behind the moment the line was written, and
every age and silence computed from it would be nine hours off. kdash learns the difference
from lines as they are written: the newest stamp of a read, against the time the file was last
written (its mtime, or the arrival of the line), is "now" in the log's clock. Zones differ by
whole quarter hours, so the offset is rounded to one; a new offset is taken only when a few
lines in a row agree on it. A stamp with a zone in it (RFC 3339) needs no guess. A server whose
own clock is minutes off (no NTP in its container) is in no zone: lines seen arriving as they
are written, several reads apart, agree on the exact difference, and that is taken as a skew.

A simulator (`kdash sim --speed 10`) writes stamps that run faster than the clock. Over a few
dozen seconds of lines the rate shows, and such a log's stamps map by rate instead: a line's
clock time is where the rate puts it from the latest line seen, so ages and silences stay in
clock seconds. Pure: every time is passed in.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from dash.core.log.timestamps import ts_to_epoch
from dash.core.snapshot import LogClockView

QUARTER_H_S = 900.0
"""Zones differ from UTC by whole quarter hours (Nepal's +5:45 included)."""
MAX_ZONE_S = 15 * 3600.0
"""A larger difference is no zone: a log copied in, or old lines appended; it teaches nothing."""
ZONES_MIN = frozenset(range(-12 * 60, 14 * 60 + 1, 60)) | frozenset(
    (-570, -210, -150, 210, 270, 330, 345, 390, 525, 570, 630, 765, 825))
"""The zones in use, in minutes east of UTC (whole hours, and the half and quarter hours of
Newfoundland, Iran, Afghanistan, India, Nepal, Myanmar, Eucla, central Australia, Lord Howe
and Chatham, with their summer times). A difference that would put the log in no zone is a
log copied in, or read late: `UTC+1:30` taught from it made every age unknown. A constant, not
`zoneinfo`: that reads the tz database from disk, and this module does no I/O."""
ZONE_SLACK_S = 120.0
"""The last line's stamp against the file's mtime differs from a zone by seconds (the line was
written then); further off, the read teaches nothing (a copy), and a later read teaches it.
When lines without a stamp came after the stamped one (a progress bar while weights load), the
stamp is older than the write by their time, and the nearest quarter hour is taken."""
AGREE = 3
"""Lines in a row that must agree on a new offset before it replaces the one in use."""
SKEW_AGREE_S = 5.0
"""Reads that put a log in no zone teach a skew when their differences agree within this (a
stamp prints whole seconds, a read comes a second or so after the write)."""
SKEW_SPAN_S = 10.0
"""...and they span at least this much clock time: one burst of reads is not a clock."""
MOVE_MIN_S = 30.0
"""A change of map that moves a stamp by less than this leaves placed points where they are
(a rate's anchor follows each line by a second or so)."""
RATE_SPAN_S = 20.0
"""Clock seconds of lines it takes to believe a rate."""
RATE_WINDOW_S = 120.0
"""The rate is measured over the lines of the last this many clock seconds."""
FAST = 1.5
"""A log whose stamps run this much faster (or slower) than the clock is on a clock of its own;
between 1/FAST and FAST it is a real server with read delays (rate 1)."""
DAY_S = 86400.0

_ZONE = re.compile(r"(?:Z|[+-]\d{2}:?\d{2})\Z")


def stamp_is_zoned(ts: str) -> bool:
    """The stamp names its zone (`...Z`, `...+09:00`)."""
    return bool(_ZONE.search(ts)) and "T" in ts


def stamp_is_dated(ts: str) -> bool:
    """The stamp prints a date (a time-only stamp is ambiguous by whole days)."""
    return "T" in ts or "-" in ts[:10]


def box_utc_offset(t: float) -> float:
    """The box's zone at `t`, in seconds east of UTC (from the TZ setting, not a clock)."""
    return float(time.localtime(t).tm_gmtoff)


def zone_text(offset_s: float) -> str:
    """`UTC+9`, `UTC-7`, `UTC+5:30`, `UTC+0`."""
    minutes = round(offset_s / 60)
    sign = "-" if minutes < 0 else "+"
    h, m = divmod(abs(minutes), 60)
    return f"UTC{sign}{h}" + (f":{m:02d}" if m else "")


def _times(rate: float) -> str:
    """`8x`, `0.61x`, `1,600x`, `1/250x`: never in scientific notation. Two figures: the rate
    is learned again as lines come, and a third figure flickers (`8.01x`, `8x`, `8.01x`)."""
    if rate >= 100:
        return f"{rate:,.0f}x"
    if rate >= 0.01:
        return f"{rate:.2g}x"
    return f"1/{1 / rate:,.0f}x"


def _skew_text(skew_s: float, than: str) -> str:
    """`10 min behind the box's`, `2 min 30 s ahead of ...`: a skew (clock minus stamp), to
    ten seconds (a stamp prints whole seconds, and a read comes a little after the write)."""
    m, sec = divmod(round(abs(skew_s) / 10) * 10, 60)
    size = f"{m} min" + (f" {sec} s" if sec else "") if m else f"{sec} s"
    return f"{size} {'behind' if skew_s > 0 else 'ahead of'} {than}"


def clock_text(view: LogClockView) -> str | None:
    """What to tell the user when the log's clock is not the box's; None when it is."""
    if view.rate != 1.0:
        return f"log clock runs {_times(view.rate)} the wall clock"
    if view.offset_s == 0.0:
        return None
    log_zone, skew = view.log_utc_offset_s, view.skew_s
    if log_zone is None or view.box_utc_offset_s is None:
        return f"log clock {view.offset_s / 3600:+.2g} h from the box"
    if skew and log_zone == view.box_utc_offset_s:
        return "log clock " + _skew_text(skew, "the box's")
    zones = f"log clock {zone_text(log_zone)}, box {zone_text(view.box_utc_offset_s)}"
    return f"{zones}, {_skew_text(skew, 'its zone')}" if skew else zones


@dataclass(frozen=True, slots=True)
class _Map:
    """clock = anchor_clock + (stamp - anchor_stamp) / rate; rate 1 is a plain offset."""

    offset: float = 0.0
    rate: float = 1.0
    anchor_stamp: float = 0.0
    anchor_clock: float = 0.0

    def to_clock(self, stamp: float) -> float:
        if self.rate == 1.0:
            return stamp + self.offset
        return self.anchor_clock + (stamp - self.anchor_stamp) / self.rate

    def to_stamp(self, clock: float) -> float:
        if self.rate == 1.0:
            return clock - self.offset
        return self.anchor_stamp + (clock - self.anchor_clock) * self.rate


class LogClock:
    """Learns the map from a log's stamps to clock time; identity until a line teaches it."""

    def __init__(self) -> None:
        self._map = _Map()
        self._samples: deque[tuple[float, float]] = deque(maxlen=64)
        self._votes: deque[float] = deque(maxlen=AGREE)
        self._skews: deque[tuple[float, float]] = deque(maxlen=64)
        """(written at, clock minus stamp) of the reads in a row that put the log in no zone,
        and agree."""
        self._skew = 0.0
        """The part of the offset that is no zone: how far the server's clock is off."""
        self.zoned = False
        self.learned = False

    @property
    def offset_s(self) -> float:
        return self._map.offset

    @property
    def rate(self) -> float:
        return self._map.rate

    @property
    def identity(self) -> bool:
        """Stamps are clock times as they are (nothing learned, or no difference)."""
        return self._map.rate == 1.0 and self._map.offset == 0.0

    def to_clock(self, stamp: float) -> float:
        """The clock time of a stamp (as `ts_to_epoch` reads it, in the box's zone)."""
        return self._map.to_clock(stamp)

    def stamp_ref(self, now: float) -> float:
        """`now` on the log's clock: the reference that dates a stamp printing no date."""
        return self._map.to_stamp(now)

    def observe(self, stamp: float, written_at: float, ts: str,
                exact: bool = True) -> Callable[[float], float] | None:
        """A line stamped `ts` (read as `stamp`) was written at clock time `written_at` (with
        `exact` False: at or before it, lines without a stamp having followed it).

        Returns how clock times placed with the map before move to the new map, when it moved
        by `MOVE_MIN_S` or more; None when points already placed stay where they are.
        """
        if stamp_is_zoned(ts):
            self.zoned = self.learned = True
            return None
        samples = self._samples
        if samples and samples[-1] == (written_at, stamp):
            return None
        samples.append((written_at, stamp))
        before = self._map
        rate = self._rate()
        if rate is not None:
            self._map = _Map(rate=rate, anchor_stamp=stamp, anchor_clock=written_at)
            self.learned = True
        else:
            self._learn_offset(written_at - stamp, stamp_is_dated(ts), box_utc_offset(written_at),
                               exact, written_at)
        after = self._map
        if abs(after.to_clock(stamp) - before.to_clock(stamp)) < MOVE_MIN_S:
            return None
        return lambda t: after.to_clock(before.to_stamp(t))

    def _rate(self) -> float | None:
        """The stamps' rate against the clock when it is clearly not 1, else None."""
        last_w, last_s = self._samples[-1]
        recent = [(w, s) for w, s in self._samples if last_w - w <= RATE_WINDOW_S]
        first_w, first_s = recent[0]
        if len(recent) < 4 or last_w - first_w < RATE_SPAN_S:
            return self._map.rate if self._map.rate != 1.0 else None  # keep what was learned
        rate = (last_s - first_s) / (last_w - first_w)
        if not (rate >= FAST or 0 < rate <= 1 / FAST):
            return None
        # A clock of its own runs fast between every two reads; one jump in the stamps (old
        # lines appended in a burst, a night's gap caught up in seconds) is no rate.
        steps = sorted((s1 - s0) / (w1 - w0) for (w0, s0), (w1, s1)
                       in itertools.pairwise(recent) if w1 > w0)
        typical = steps[len(steps) // 2] if steps else 0.0
        return rate if typical > 0 and 0.5 <= typical / rate <= 2.0 else None

    def _learn_offset(self, raw: float, dated: bool, box_s: float, exact: bool = True,
                      written_at: float = 0.0) -> None:
        if not dated:  # a time-only stamp says nothing of the day: the nearest one
            raw = (raw + DAY_S / 2) % DAY_S - DAY_S / 2
        if abs(raw) > MAX_ZONE_S:
            return
        offset = round(raw / QUARTER_H_S) * QUARTER_H_S + 0.0  # no -0.0
        in_zone = round((box_s - offset) / 60) in ZONES_MIN
        if exact and (not in_zone or abs(raw - offset) > ZONE_SLACK_S):
            self._learn_skew(raw, box_s, written_at)  # a copy, a late read, or a clock off
            return
        if not in_zone:
            return  # the log in no zone there is: a copy, or lines read late
        self._skews.clear()
        if not self.learned or self._map.rate != 1.0:
            self._map, self.learned, self._skew = _Map(offset=offset), True, 0.0
            self._votes.clear()
            return
        self._votes.append(offset)
        if (offset != self._map.offset and len(self._votes) == AGREE
                and all(v == offset for v in self._votes)):
            self._map, self._skew = _Map(offset=offset), 0.0

    def _learn_skew(self, raw: float, box_s: float, written_at: float) -> None:
        """A read whose last line was written `raw` seconds after its stamp, more than a zone's
        slack off any zone: a log copied in or read late teaches nothing (one read, or reads
        that disagree), but reads some seconds apart that agree within `SKEW_AGREE_S` are lines
        seen as they were written by a server whose clock is off by that much."""
        if self._skew and abs(raw - self._map.offset) <= SKEW_AGREE_S:
            self._skews.clear()  # the skew in use: nothing new (a second's jitter moves nothing)
            return
        skews = self._skews
        if skews and written_at <= skews[-1][0]:
            return
        if any(abs(raw - r) > SKEW_AGREE_S for _, r in skews):
            skews.clear()  # the run of reads that agree starts again here
        skews.append((written_at, raw))
        if len(skews) < AGREE or written_at - skews[0][0] < SKEW_SPAN_S:
            return
        raws = sorted(r for _, r in skews)
        offset = float(round(raws[len(raws) // 2]))
        # The zone the stamps are in: the nearest one there is; the rest is the clock's skew.
        zone = min((box_s - z * 60.0 for z in ZONES_MIN), key=lambda o: abs(offset - o))
        self._map, self.learned, self._skew = _Map(offset=offset), True, offset - zone
        self._votes.clear()
        skews.clear()

    def view(self, last_line_at: float | None, now: float) -> LogClockView:
        """The frozen picture: the map, and the box's zone at `now`."""
        return LogClockView(offset_s=self._map.offset, rate=self._map.rate, zoned=self.zoned,
                            learned=self.learned, last_line_at=last_line_at,
                            box_utc_offset_s=box_utc_offset(now),
                            skew_s=self._skew if self._map.rate == 1.0 else 0.0)


def _epoch(ts: str, ref: float) -> float | None:
    try:
        return ts_to_epoch(ts, ref=ref)
    except (ValueError, TypeError, OverflowError):
        return None


class LogTimes:
    """A log's stamps as clock times: its learned clock, and when its last stamped line was."""

    def __init__(self) -> None:
        self.clock = LogClock()
        self.last_line_at: float | None = None
        """Clock time of the newest stamped line seen (lines of no interest count)."""

    def time_of(self, ts: str, now: float) -> float | None:
        """The clock time of a record's stamp (None: no time in it)."""
        clock = self.clock
        if clock.identity:
            t = _epoch(ts, now)
        else:
            t = _epoch(ts, clock.stamp_ref(now))
            t = None if t is None else clock.to_clock(t)
        if t is not None:
            self.saw(t)
        return t

    def learn(self, ts: str, written_at: float, now: float,
              exact: bool = True) -> Callable[[float], float] | None:
        """The file's last line, stamped `ts`, was written at clock time `written_at`; how the
        times placed so far move, when the clock learned moved them."""
        stamp = _epoch(ts, self.clock.stamp_ref(now))
        if stamp is None:
            return None
        moved = self.clock.observe(stamp, written_at, ts, exact)
        if moved is not None and self.last_line_at is not None:
            self.last_line_at = moved(self.last_line_at)
        self.saw(self.clock.to_clock(stamp))
        return moved

    def saw(self, t: float) -> None:
        if self.last_line_at is None or t > self.last_line_at:
            self.last_line_at = t

    def view(self, now: float) -> LogClockView:
        return self.clock.view(self.last_line_at, now)
