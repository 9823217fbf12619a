"""Output quality per partition: statistics of the samples read, the last raw lines, rates.

Fed `SampleBatch`es (read from the output files by `dash.sources.samples`) on the thread that
owns the run state; `snapshot(name, now)` gives each partition's frozen `QualitySnapshot`.
Memory is bounded: counters, a window of small `Sample`s, the last few raw lines (capped in
bytes), a minute of arrival counts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from dash.core.samples.fieldspec import OutputFields
from dash.core.samples.model import FieldHits, InvalidLine, RawSample, SampleBatch
from dash.core.samples.snapshot import QualitySnapshot
from dash.core.samples.stats import QualityFigures, QualityStats

LATEST = 8
"""Raw lines kept per partition for the sample view (`n`/`p` go through them)."""
LATEST_BYTES = 4 * 1024 * 1024
"""...but no more than this many characters of them (the newest is always kept)."""
RATE_WINDOW_S = 300.0
"""The samples' tokens/s is their tokens over this window: a sample's tokens all arrive when it
finishes (10K of them at once for a long one), so over a minute the figure swung from 390 to 920
around a server's steady 600."""
MIN_RATE_SPAN_S = 10.0
"""A tokens/s figure over less time than this is noise."""
UNMATCHED_AFTER = 20
"""Records a configured path must miss (with no hit) before it is a notice."""
LIVE_PERIOD_S = 5.0
"""The live screen's figures change at most this often while samples arrive: a window of 200
samples moves a little with every read, and redoing it each refresh only makes the partition
table and every quality alert's evidence jitter (and redraw) each second. The live dashboard
reads the samples once a period (`dash.sources.samples.SampleSource`'s `every_s`), every file
in the same read, so the screen changes once a period, not once for each partition (and the
alerts panel's height, which lays the screen out again, at most once); `period_s` keeps
figures for a period where the samples are read more often.
"""
REASONING_SEEN = 20
"""Samples with reasoning after which the run's records are expected to carry it: one client
and one model write every partition, so reasoning seen in one partition is expected in all."""


@dataclass(frozen=True, slots=True)
class _Figures:
    """What the screen shows of a partition's statistics, at one version of them: on the live
    screen they change together, once a period (an alert's evidence names the last error and
    the limit beside the counts)."""

    version: int
    at: float
    window: QualityFigures
    total: QualityFigures
    shape: str | None
    limits: tuple[int, ...]
    last_error: str | None
    last_invalid: InvalidLine | None


class _Part:
    __slots__ = ("applied", "arrivals", "arrived", "cache", "fields", "first_live", "in_order",
                 "latest", "latest_chars", "reasoning_seen", "reasoning_shapes", "shown", "stats")

    def __init__(self) -> None:
        self.stats = QualityStats()
        self.latest: deque[RawSample] = deque(maxlen=LATEST)
        self.latest_chars = 0
        self.fields: dict[str, FieldHits] = {}
        self.arrivals: deque[tuple[float, int]] = deque()
        """(when, tokens) of each live read in the last RATE_WINDOW_S, oldest first."""
        self.arrived = 0
        """Their tokens, less those that came with the first live read (not a rate)."""
        self.in_order = True
        """No read was applied at a time before the one before it (the rate then need not
        sum the window: only its oldest arrivals can have left it)."""
        self.first_live: float | None = None
        self.reasoning_seen = 0
        self.reasoning_shapes: set[str] = set()
        """The record shapes whose samples here carried reasoning: another partition's samples
        are expected to carry it only where they have one of these shapes (a flat `response`
        file beside a chat one with `reasoning_content` is another pipeline, not a broken one)."""
        self.cache: _Figures | None = None
        """The figures at a version of the stats, and when they were worked out."""
        self.applied = 0
        """Reads applied (each may change the raw lines, the fields' hits, the counts)."""
        self.shown: tuple[tuple[object, ...], QualitySnapshot] | None = None
        """The last snapshot given and what it was made of: given again while that holds (the
        figures change once a period, and the rules then see the same object)."""

    def arrive(self, now: float, tokens: int) -> None:
        if self.arrivals and now < self.arrivals[-1][0]:
            self.in_order = False
        self.arrivals.append((now, tokens))
        if self.first_live is not None and now > self.first_live:
            self.arrived += tokens

    def prune(self, now: float) -> None:
        arrivals = self.arrivals
        while arrivals and now - arrivals[0][0] > RATE_WINDOW_S:
            t, n = arrivals.popleft()
            if self.first_live is not None and t > self.first_live:
                self.arrived -= n

    def keep(self, raws: Iterable[RawSample]) -> None:
        for raw in raws:
            if len(self.latest) == self.latest.maxlen:
                self.latest_chars -= len(self.latest[0].text)
            self.latest.append(raw)
            self.latest_chars += len(raw.text)
        while len(self.latest) > 1 and self.latest_chars > LATEST_BYTES:
            self.latest_chars -= len(self.latest.popleft().text)


class QualityTracker:
    """Every partition's output statistics."""

    def __init__(self, spec: OutputFields | None = None, *,
                 min_span_s: float = MIN_RATE_SPAN_S, period_s: float = 0.0,
                 read_every_s: float = 0.0) -> None:
        """`min_span_s`: the shortest time tokens/s is measured over (a sample of a few
        seconds, `--once`, accepts its own length; infinite: never measured). `period_s`: how
        long figures are kept while new samples arrive (0: every snapshot is exact, as the
        headless commands need); a file read anew, its first samples and its first invalid
        line show at once. `read_every_s`: the samples are read this often (the live screen:
        `LIVE_PERIOD_S`); tokens/s is then measured up to the last read that brought any, or
        that long ago when none did, so that it does not sink between two reads."""
        self.spec = spec or OutputFields()
        self._min_span = min_span_s
        self._period = period_s
        self._read_every = read_every_s
        self._applied_at = float("-inf")
        """When the last samples were applied."""
        self._round_at = float("-inf")
        """When the figures of every partition with new samples were last worked out."""
        self._parts: dict[str, _Part] = {}

    def apply(self, batches: Iterable[SampleBatch], now: float) -> list[str]:
        """Take one read's batches, applied at `now`; notices (a field path that matches
        nothing)."""
        notices: list[str] = []
        self._applied_at = now
        for b in batches:
            p = self._parts.get(b.name)
            if p is None:
                p = self._parts[b.name] = _Part()
            if b.restart or (b.invalid_count and not p.stats.invalid_lines):
                p.cache = None  # shown at once, not at the next period
            if b.restart:
                p.latest.clear()
                p.latest_chars = 0
                p.fields.clear()
                p.reasoning_seen = 0
                p.reasoning_shapes.clear()
            p.stats.feed(b)
            p.applied += 1
            p.keep(b.latest)
            carried = [s.shape for s in b.samples if s.reasoning not in (None, "absent")]
            p.reasoning_seen += len(carried)
            p.reasoning_shapes.update(carried)
            for f in b.fields:
                old = p.fields.get(f.field)
                p.fields[f.field] = f if old is None else FieldHits(
                    f.field, f.path, old.hits + f.hits, old.misses + f.misses)
            if not b.backfill:
                if p.first_live is None:
                    p.first_live = now
                p.arrive(now, sum(s.tokens or 0 for s in b.samples))
            p.prune(now)
            notices.extend(_unmatched(b.name, p))
        return notices

    def names(self) -> tuple[str, ...]:
        return tuple(self._parts)

    def snapshot(self, name: str, now: float) -> QualitySnapshot | None:
        """The partition's figures at `now`, or None when none of its samples were read."""
        p = self._parts.get(name)
        if p is None:
            return None
        s = p.stats
        if now - self._round_at >= self._period:
            self._round_at = now  # a new period: figures worked out before now are due
        if p.cache is None or (p.cache.version != s.version and (self._period <= 0
                                                                 or p.cache.at < self._round_at)):
            p.cache = _Figures(s.version, now, s.window(), s.total(), s.shape(), s.limits(),
                               s.last_error, s.last_invalid)
        f = p.cache
        mine = f.shape
        seen_in = name if p.reasoning_seen >= REASONING_SEEN else next(
            (n for n, o in self._parts.items()
             if o.reasoning_seen >= REASONING_SEEN and mine in o.reasoning_shapes), None)
        rate = self._rate(p, now)
        made_of = (f, p.applied, rate, seen_in)
        if p.shown is not None and p.shown[0][0] is f and p.shown[0] == made_of:
            return p.shown[1]
        expected = (self.spec.expect_reasoning if self.spec.expect_reasoning is not None
                    else seen_in is not None)
        q = QualitySnapshot(
            window=f.window, total=f.total, shape=f.shape, limits=f.limits,
            last_error=f.last_error, last_invalid=f.last_invalid, oversized=s.oversized,
            skipped_bytes=s.skipped_bytes, latest=tuple(p.latest),
            fields=tuple(p.fields.values()), tokens_per_s=rate,
            reasoning_expected=expected, reasoning_seen_in=seen_in,
            expect_configured=self.spec.expect_reasoning is not None,
            configured_limit=self.spec.max_tokens)
        p.shown = (made_of, q)
        return q

    def tokens_per_s(self, now: float) -> float | None:
        """Output tokens arriving per second over every partition (None: not known yet)."""
        rates = [r for p in self._parts.values() if (r := self._rate(p, now)) is not None]
        return sum(rates) if rates else None

    def _rate(self, p: _Part, now: float) -> float | None:
        if p.first_live is None or not p.stats.tokens_seen:
            return None
        if self._read_every > 0:
            now = max(min(now, self._applied_at), now - self._read_every)
        span = min(RATE_WINDOW_S, now - p.first_live)
        if span < self._min_span or span <= 0:
            return None
        # Arrivals applied at first_live came with the first read after start: not a rate.
        first = p.first_live
        if not p.in_order:
            return sum(n for t, n in p.arrivals if now - t < span and t > first) / span
        tokens = p.arrived
        for t, n in p.arrivals:  # the oldest that are out of the span, in order
            if now - t < span:
                break
            if t > first:
                tokens -= n
        return tokens / span


def _unmatched(name: str, p: _Part) -> list[str]:
    """A configured path that has matched none of the records read (given once enough were)."""
    return [f"{name}: [outputs] {f.field} = {f.path!r} matched none of the records read; "
            "the figures fall back to detected fields"
            for f in p.fields.values()
            if f.hits == 0 and f.misses >= min(UNMATCHED_AFTER, max(1, p.stats.lines_read))]

