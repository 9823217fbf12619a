"""Dataset partitions: per output file progress, rates and ETAs (pure; counts come from sources).

A partition is one output JSONL file; its progress is its count of complete lines. Lines already
there when kdash started (a resumed run) are kept apart from lines written since, so the rate is
what this run does. The rate is the growth over a window (10 minutes by default), which a burst
of lines cannot swing; the ETA range comes from the long window and a recent one.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from typing import Literal

from dash.core.snapshot import PartitionSnapshot, RunTotals
from dash.core.state.globs import expected_output, glob_error, partition_name

__all__ = ["RECENT_S", "STALL_AFTER_S", "WINDOW_S", "OutputCount", "PartitionsTracker", "Status",
           "glob_error", "partition_name"]

WINDOW_S = 600.0
RECENT_S = 120.0
STALL_AFTER_S = 300.0
RECENT_COUNTS = 16
"""Growth points a partition's snapshot carries: enough to tell what was written after a
moment a minute or so ago (the silence rule asks whether a quiet server's requests ended)."""
Status = Literal["counting", "pending", "running", "stalled", "idle", "done", "unreadable",
                 "missing"]

MIN_SPAN_S = 20.0
"""A rate over less time than this is noise."""


@dataclass(frozen=True, slots=True)
class OutputCount:
    """One output file as counted by a source at one poll."""

    name: str
    path: str
    lines: int | None
    """Complete lines; None while the first count runs or when the file is absent."""
    counting: bool = False
    progress: float | None = None
    reset: bool = False
    """The file was truncated or replaced since the last count."""
    appeared_later: bool = False
    """The file did not exist when following started: all its lines are written since."""
    mtime: float | None = None
    """The file's modification time (wall clock) as the source saw it: when it was last
    written, also before kdash started."""


class _Part:
    __slots__ = ("at_start", "base_t", "counting", "done", "grew_from", "history", "last_write",
                 "missing", "path", "progress", "seen_t", "wrote_before")

    def __init__(self, path: str) -> None:
        self.path = path
        self.done: int | None = None
        self.at_start: int | None = None
        self.history: deque[tuple[float, int]] = deque(maxlen=4096)
        self.base_t: float | None = None
        self.last_write: float | None = None
        self.counting = False
        self.progress: float | None = None
        self.missing = False
        """Counted before, and not there now (deleted or moved): its count is the last one."""
        self.seen_t: float | None = None
        """The last poll that counted it."""
        self.grew_from: float | None = None
        """The last poll before its first growth since the base: a partition the client takes
        up only later (partitions in turn) is measured from there, not over its wait."""
        self.wrote_before: float | None = None
        """When the file was last written before it was first counted, where that is longer
        ago than the stall window (a write within it counts as the last write)."""

    def rebase(self, now: float) -> None:
        self.history.clear()
        if self.done is not None:
            self.history.append((now, self.done))
        self.base_t = self.seen_t = now
        self.grew_from = None

    def done_at(self, t: float) -> int | None:
        """The count at time t (the last point at or before it)."""
        best: int | None = None
        for pt, n in self.history:
            if pt > t:
                break
            best = n
        return best

    def growth(self, now: float, window: float,
               min_span: float = MIN_SPAN_S) -> tuple[float, int] | None:
        """(start, lines written since): over the window, from no earlier than the base, nor
        than the wait before the first line; None over less than `min_span`."""
        if self.base_t is None or self.done is None:
            return None
        start = max(now - window, self.base_t if self.grew_from is None else self.grew_from)
        before = self.done_at(start)
        if now - start < min_span or now <= start or before is None:
            return None
        return start, max(0, self.done - before)

    def rate_per_min(self, now: float, window: float,
                     min_span: float = MIN_SPAN_S) -> float | None:
        g = self.growth(now, window, min_span)
        return None if g is None else g[1] * 60.0 / (now - g[0])


class PartitionsTracker:
    """Counts of every partition over time -> PartitionSnapshots and RunTotals."""

    def __init__(
        self,
        expect: Mapping[str, int] | None = None,
        *,
        window_s: float = WINDOW_S,
        recent_s: float = RECENT_S,
        stall_after_s: float = STALL_AFTER_S,
        outputs: tuple[str, ...] = (),
        min_span_s: float = MIN_SPAN_S,
    ) -> None:
        """`outputs`: the output globs, to say where a partition with no file yet will write.
        `min_span_s`: the shortest time a rate is measured over (shorter is noise; a sample of
        a few seconds, `--once`, accepts its own length)."""
        self._expect = dict(expect or {})
        self._input_totals: dict[str, int] = {}
        self._parts: dict[str, _Part] = {}
        self._outputs = outputs
        self._expected_paths: dict[str, str] = {}
        self._window = window_s
        self._recent = recent_s
        self._stall = stall_after_s
        self._min_span = min_span_s
        self._errors: dict[str, str] = {}
        self._scanned = False

    def apply(self, counts: Iterable[OutputCount], now: float) -> None:
        """Take one poll's counts (of every file the globs match: none is news too)."""
        self._scanned = True
        for c in counts:
            p = self._parts.get(c.name)
            if p is None:
                p = self._parts[c.name] = _Part(c.path)
            p.path = c.path
            p.counting = c.counting
            p.progress = c.progress if c.counting else None
            if c.lines is not None:
                p.missing = False
                self._take(p, c, now)
            elif not c.counting:
                p.missing = p.done is not None

    def _take(self, p: _Part, c: OutputCount, now: float) -> None:
        n = c.lines
        assert n is not None
        if p.done is None:
            p.at_start = 0 if c.appeared_later else n
            p.done = n
            if c.appeared_later and n:
                p.last_write = now
            elif c.mtime is not None and n:
                # Written shortly before kdash looked: being written ("running"), not "pending";
                # longer ago: kept, to tell which partition the client left (`_stalled_before`).
                written = min(c.mtime, now)
                if now - written <= self._stall:
                    p.last_write = written
                else:
                    p.wrote_before = written
            p.rebase(now)
            return
        if c.reset or n < p.done:
            # Truncated or replaced: the lines there at start are gone, what is there now was
            # written since.
            p.done = n
            p.at_start = 0
            p.rebase(now)
            return
        if n > p.done:
            if p.grew_from is None and p.seen_t is not None:
                p.grew_from = p.seen_t
            p.done = n
            p.last_write = now
            p.history.append((now, n))
            self._prune(p, now)
        p.seen_t = now

    def _prune(self, p: _Part, now: float) -> None:
        """Keep the window's points and the one before it (the step the window starts on)."""
        cutoff = now - self._window
        while len(p.history) > 1 and p.history[1][0] <= cutoff:
            p.history.popleft()

    def set_input_totals(self, totals: Mapping[str, int]) -> None:
        """Totals counted from `--inputs` prompt files (an `--expect` value wins)."""
        self._input_totals = dict(totals)

    def note_errors(self, errors: Iterable[str]) -> None:
        """This poll's "path: why" texts for files that could not be read; the rest read fine."""
        found: dict[str, str] = {}
        for text in errors:
            for p in self._parts.values():
                if text.startswith(p.path + ": "):
                    found[p.path] = text[len(p.path) + 2:]
        self._errors = found

    def note_restart(self, now: float) -> None:
        """The server restarted: rates start again from here; counts and totals stay."""
        for p in self._parts.values():
            p.rebase(now)

    def unmatched(self) -> tuple[str, ...]:
        """Output globs that matched no file at the last poll (a typo: `out/*.jsnl`)."""
        if not self._scanned:
            return ()
        paths = [p.path for p in self._parts.values()]
        return tuple(g for g in self._outputs if not any(fnmatch(path, g) for path in paths))

    def total_of(self, name: str) -> int | None:
        return self._expect.get(name, self._input_totals.get(name))

    def snapshot(self, now: float) -> tuple[PartitionSnapshot, ...]:
        """Every partition, sorted by name: those with an output file, and those only known
        by a total (`--inputs`, `--expect`) whose file does not exist yet ("pending")."""
        names = sorted(self._parts.keys() | self._expect.keys() | self._input_totals.keys())
        snaps = []
        for name in names:
            p = self._parts.get(name)
            snaps.append(self._pending(name) if p is None else self._snap(name, p, now))
        return self._stalled_before(snaps, now)

    def _stalled_before(self, snaps: list[PartitionSnapshot],
                        now: float) -> tuple[PartitionSnapshot, ...]:
        """A client that stopped before kdash started: when no partition is being written, the
        one that still owes lines and was written last is where the client stopped, "stalled"
        since its file's last write (a one-shot `check` of a run that hung 20 minutes ago warns
        rather than say "pending"). The others stay "pending": partitions are often taken in
        turn, and a resumed run leaves earlier ones part-written for later."""
        if any(s.status in ("running", "counting") for s in snaps):
            return tuple(snaps)
        left = [(before, i) for i, s in enumerate(snaps)
                if s.status == "pending" and s.total is not None and s.done < s.total
                and (part := self._parts.get(s.name)) is not None
                and part.last_write is None and (before := part.wrote_before) is not None]
        if left:
            before, i = max(left)
            snaps[i] = dataclasses.replace(snaps[i], status="stalled", last_write=before,
                                           eta_s=None, eta_low_s=None, eta_high_s=None)
        return tuple(snaps)

    def _pending(self, name: str) -> PartitionSnapshot:
        path = self._expected_paths.get(name)
        if path is None:
            path = self._expected_paths[name] = expected_output(self._outputs, name)
        return PartitionSnapshot(name=name, path=path, done=0, total=self.total_of(name),
                                 at_start=0, rate_per_min=None, eta_s=None, status="pending")

    def _snap(self, name: str, p: _Part, now: float) -> PartitionSnapshot:
        total = self.total_of(name)
        done = p.done or 0
        # A file that is not there any more grows at no rate that can be told.
        rate = None if p.missing else p.rate_per_min(now, self._window, self._min_span)
        recent = None if p.missing else p.rate_per_min(now, self._recent, self._min_span)
        status = "unreadable" if p.path in self._errors else self._status(p, total, now)
        eta = low = high = None
        # A stalled partition is not on its way at any rate: its window's rate is of before.
        if total is not None and rate and status != "stalled":
            remaining = max(0, total - done)
            eta = remaining * 60.0 / rate
            rates = [r for r in (rate, recent) if r is not None]
            # The spread of the two windows, widened by 10% each way: rates wander.
            low = remaining * 60.0 / (max(rates) * 1.1)
            high = remaining * 60.0 / (min(rates) * 0.9) if min(rates) > 0 else None
        return PartitionSnapshot(
            name=name, path=p.path, done=done, total=total, at_start=p.at_start or 0,
            rate_per_min=rate, eta_s=eta, eta_low_s=low, eta_high_s=high,
            status=status,
            error=self._errors.get(p.path), last_write=p.last_write,
            counting_progress=p.progress, recent_rate_per_min=recent,
            recent_counts=tuple(itertools.islice(p.history, max(0, len(p.history) - RECENT_COUNTS),
                                                 None)),
        )

    def _status(self, p: _Part, total: int | None, now: float) -> Status:
        if p.missing:
            return "missing"
        if p.done is None:
            return "counting" if p.counting else "pending"
        if total is not None and p.done >= total:
            return "done"
        if p.last_write is None:
            return "pending"
        if now - p.last_write <= self._stall:
            return "running"
        # Without a total a quiet partition may just be finished (or its client gone): only
        # one that still owes lines is stalled.
        return "stalled" if total is not None else "idle"

    def _run_rate(self, snaps: Iterable[PartitionSnapshot], now: float) -> float | None:
        """The lines every partition on its way wrote, over one span: the earliest start among
        them. A sum of each one's rate counts twice the partition that finished a minute ago
        (its window still holds its lines) and the one that took over from it (measured from
        its own first line), when a client takes partitions in turn."""
        grown = [g for s in snaps if s.status != "stalled" and (part := self._parts.get(s.name))
                 and (g := part.growth(now, self._window, self._min_span)) is not None]
        wrote = [g for g in grown if g[1]]  # one that wrote nothing does not widen the span
        if not wrote:
            return 0.0 if grown else None
        start = min(g[0] for g in wrote)
        return sum(g[1] for g in wrote) * 60.0 / (now - start)

    def totals(self, now: float) -> RunTotals:
        """The whole run: sums, a run ETA, and the partition that will finish last."""
        snaps = self.snapshot(now)
        if not snaps:
            return RunTotals()
        done = sum(s.done for s in snaps)
        totals = [s.total for s in snaps]
        total = sum(t for t in totals if t is not None) if all(t is not None for t in totals) else None
        rate = self._run_rate(snaps, now)
        eta = max(0, total - done) * 60.0 / rate if total is not None and rate else None
        pending = [s for s in snaps if s.status != "done" and s.eta_s is not None]
        # A partition that owes lines at no rate (pending, stalled) finishes after all of
        # those with an ETA, at a time nobody knows: naming one of them would be false.
        owing = [s for s in snaps if s.status != "done" and s.eta_s is None
                 and (s.total is None or s.done < s.total)]
        last = max(pending, key=lambda s: s.eta_s or 0.0).name if pending and not owing else None
        return RunTotals(done=done, total=total, rate_per_min=rate, eta_s=eta, last_to_finish=last)
