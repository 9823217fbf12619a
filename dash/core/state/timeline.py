"""Replay of a finished log, as pure steps: each record's time, and a cursor over them.

`Timeline` collects a log's records in file order with their epoch times (the log's own
timestamps; untimed records take the time of the record before, so the times never go back).
A log with no timestamp at all is spaced at a nominal one record per second, and says so.
`ReplayCursor` moves a log clock over those times and answers which records to feed next: forward
steps feed what was passed; a step back asks the caller to rebuild its state from the start.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from math import inf

from dash.core.snapshot import Record
from dash.core.state.record_series import RecordSeries
from dash.core.state.series_piece import SeriesPiece, piece_stamps
from dash.core.state.stamp_times import epoch as _epoch

MAX_RECORDS = 3_000_000
"""Records kept for a replay (about 60 bytes each as series); a longer log is cut there, and
says so."""
DAY_S = 86400.0
MAX_QUIET_TICKS = 360
"""Alert ticks through a stretch without records (an hour at 10 s) before the rest is skipped."""
ROLLOVER_S = 12 * 3600.0
"""A time-only stamp this far behind the one before it has passed midnight."""


_MISSING = -1.0e300  # not yet in a piece's cache of stamp times


class Timeline:
    """Records in file order with non-decreasing epoch times; bounded by `cap` records."""

    def __init__(self, ref: float, cap: int = MAX_RECORDS) -> None:
        self.ref = ref
        """Supplies the date of stamps that print none (the log file's modification time)."""
        self.cap = cap
        self.records = RecordSeries()
        self.times: array[float] = array("d")
        self.timed = False
        """At least one record carried a usable timestamp."""
        self.cut = False
        """The log had more than `cap` records: the replay ends at the last one kept."""
        self._last: float | None = None
        self.lines: int | None = None
        """The log's lines, every one read (None: not counted, or the log was cut): the lines
        after the last record count too, at the end of a replay."""
        self.broke_off: str | None = None
        """The compressed log broke off (cut short or damaged): the one-line message saying
        after which line; the replay holds the records before the break."""

    def add(self, rec: Record) -> bool:
        """Keep one record; False once the cap is reached (the caller stops reading)."""
        if len(self.records) >= self.cap:
            self.cut = True
            return False
        t = self._time_of(rec)
        if t is not None and self._last is None:
            # the untimed records before the first stamp happened at (or just before) it
            self.times = array("d", [t] * len(self.records))
        if t is not None:
            self._last = t if self._last is None else max(self._last, t)
            self.timed = True
        self.records.append(rec)
        self.times.append(self._last if self._last is not None else 0.0)
        return True

    def add_piece(self, piece: SeriesPiece, offset: int) -> bool:
        """Keep a reading process's piece (line numbers moved by `offset`); False once the
        cap is reached."""
        taken = self.records.extend_piece(piece, offset, self.cap - len(self.records))
        if len(piece.times) == len(piece.order):  # the piece's running times: ours from here
            self._add_running(piece.times[:taken])
        else:  # a stamp without a date: its time depends on the ones before
            stamps = piece_stamps(piece, taken)
            self._add_times_in_order(map(piece.stamps.__getitem__, stamps))
        if taken < len(piece.order):
            self.cut = True
            return False
        return True

    def _add_running(self, local: array[float]) -> None:
        """Append records' times given their running maximum within their piece (-inf: no
        time yet; ascending): the running maximum over the log is the time before until the
        piece's reaches it, then the piece's. Untimed records take the time before, so times
        never go back; the work is done in C (`bisect`, `array`)."""
        before = -inf if self._last is None else self._last
        reach = bisect_left(local, before)
        got = array("d", repeat(before, reach)) if reach else array("d")
        got.extend(local[reach:])
        self._extend_times(got)

    def _extend_times(self, got: array[float]) -> None:
        before = -inf if self._last is None else self._last
        if not got or got[-1] == -inf:
            self.times.extend(repeat(0.0 if self._last is None else before, len(got)))
            return
        if self._last is None:
            # the untimed records before the first stamp happened at (or just before) it
            first = bisect_right(got, -inf)
            self.times = array("d", [got[first]]) * (len(self.times) + first)
            got = got[first:]
        self.times.extend(got)
        self._last = got[-1]
        self.timed = True

    def _add_times_in_order(self, stamps: Iterable[str | None]) -> None:
        times, last = self.times, self._last
        cache: dict[str, float | None] = {}
        for ts in stamps:
            t = None
            if ts is not None:
                t = cache.get(ts, _MISSING)
                if t is _MISSING or (t is not None and last is not None
                                     and t < last - ROLLOVER_S):
                    self._last = last
                    t = self._stamp_time(ts)
                    if ts[4:5] == "-":  # a dated stamp's time depends on nothing else
                        cache[ts] = t
            if t is not None:
                if last is None:
                    times = self.times = array("d", [t] * len(times))
                last = t if last is None else max(last, t)
                self.timed = True
            times.append(last if last is not None else 0.0)
        self._last = last

    def _time_of(self, rec: Record) -> float | None:
        return self._stamp_time(rec.get("ts"))

    def _stamp_time(self, ts: object) -> float | None:
        ref = self.ref if self._last is None else self._last
        t = _epoch(ts, ref)
        if t is not None and self._last is not None and t < self._last - ROLLOVER_S:
            # a time-only (or month-day) stamp past midnight: the next day
            later = _epoch(ts, self._last + DAY_S)
            if later is not None and later >= self._last:
                t = later
        return t

    def finish(self) -> None:
        """After the last record: a log without any timestamp gets one record per second."""
        if not self.timed:
            self.times = array("d", (self.ref + i for i in range(len(self.records))))


@dataclass(frozen=True, slots=True)
class Step:
    """What the caller does after a cursor move: (rebuild, then) feed records[start:stop]."""

    rebuild: bool
    """The clock went back: start again from a fresh state before feeding."""
    since: float
    """The log clock before the move (the first record's time after a rebuild)."""
    start: int
    stop: int
    now: float
    """The log clock after the move."""


class ReplayCursor:
    """A log clock over a timeline's times; `fed` records are already in the caller's state."""

    def __init__(self, times: Sequence[float]) -> None:
        self.times = times
        self.start = float(times[0]) if len(times) else 0.0
        self.end = float(times[-1]) if len(times) else 0.0
        self.now = self.start
        self.fed = 0

    @property
    def at_end(self) -> bool:
        """Every record is fed and the clock reached the last one."""
        return self.fed >= len(self.times) and self.now >= self.end

    @property
    def fraction(self) -> float:
        """How far through the log the clock is, 0..1."""
        span = self.end - self.start
        if span <= 0:
            return 1.0 if self.fed >= len(self.times) else 0.0
        return (self.now - self.start) / span

    def first(self) -> Step:
        """The records at the very start (everything stamped with the first time)."""
        return self.advance_to(self.start)

    def advance_to(self, t: float) -> Step:
        """Move the clock forward to `t` (clamped to the log); feed what it passed."""
        t = min(max(t, self.now), self.end)
        stop = bisect_right(self.times, t)
        step = Step(False, self.now, self.fed, stop, t)
        self.now, self.fed = t, max(self.fed, stop)
        return step

    def seek(self, t: float) -> Step:
        """Move the clock to `t`, either way; back means rebuild from the first record."""
        t = min(max(t, self.start), self.end)
        if t >= self.now:
            return self.advance_to(t)
        stop = bisect_right(self.times, t)
        self.now, self.fed = t, stop
        return Step(True, self.start, 0, stop, t)

    def jump(self, seconds: float) -> Step:
        """Move the clock by `seconds` of log time (negative: back)."""
        return self.seek(self.now + seconds)


def runs(step: Step, times: Sequence[float], tick_s: float) -> list[tuple[int, int, float]]:
    """Split a step into (start, stop, now) runs, one per `tick_s` of log time.

    Feeding run by run and evaluating alerts after each lets durations and `since` times come
    out as they would have live, whatever the size of the step. A quiet stretch is ticked through
    too (a silent log is an alert), but at most `MAX_QUIET_TICKS` times: longer gaps are skipped.
    """
    out: list[tuple[int, int, float]] = []
    i, t, quiet = step.start, step.since, 0
    while True:
        upcoming = float(times[i]) if i < step.stop else step.now
        if quiet >= MAX_QUIET_TICKS and upcoming - t > tick_s:
            t = upcoming - tick_s  # skip the rest of a long gap
        t = min(t + tick_s, step.now)
        j = bisect_right(times, t, i, step.stop)
        out.append((i, j, t))
        quiet = 0 if j > i else quiet + 1
        i = j
        if t >= step.now:
            return out


CHECKPOINT_S = 300.0
"""Log time between saved states, so a step back replays minutes, not the whole log."""
MAX_CHECKPOINTS = 128
"""Saved states kept; when full, every other one is dropped and the spacing doubles."""


class Checkpoints:
    """States saved along the log (opaque payloads, e.g. pickled), bounded in number."""

    def __init__(self, every_s: float = CHECKPOINT_S, cap: int = MAX_CHECKPOINTS) -> None:
        self.every_s = every_s
        self.cap = max(2, cap)
        self.items: list[tuple[float, int, object]] = []
        """(log time, records fed, payload), in time order."""

    def due(self, now: float) -> bool:
        """Whether a state at `now` is worth saving."""
        return not self.items or now >= self.items[-1][0] + self.every_s

    def add(self, now: float, fed: int, payload: object) -> None:
        """Save the state at `now` (after `fed` records); never out of order."""
        if self.items and now <= self.items[-1][0]:
            return
        self.items.append((now, fed, payload))
        if len(self.items) > self.cap:
            self.items = self.items[::2]
            self.every_s *= 2

    def resume(self, step: Step) -> tuple[Step, object | None]:
        """A rebuild step starting from the last saved state at or before its target, if any."""
        if not step.rebuild:
            return step, None
        best = None
        for item in self.items:
            if item[0] > step.now or item[1] > step.stop:
                break
            best = item
        if best is None:
            return step, None
        now, fed, payload = best
        return Step(True, now, fed, step.stop, step.now), payload
