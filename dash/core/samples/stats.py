"""Per-partition output statistics: a recent window and since start, in bounded memory.

`QualityStats` takes the `SampleBatch`es of one output file; `figures()` gives the frozen
`QualityFigures` of the last `WINDOW` samples and of everything read since start (or since the
file was rewritten). The same class runs over whole files in `kdash outputs`, so the live
dashboard, `--once --json`, Prometheus and `kdash outputs` agree on the same lines.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass

from dash.core.samples.dist import Dist, Running, summarize
from dash.core.samples.model import InvalidLine, Sample, SampleBatch

WINDOW = 200
"""Samples (and lines) in the recent window."""
MAX_LIMITS = 4
"""Distinct token limits remembered (most often seen first)."""


@dataclass(frozen=True, slots=True)
class QualityFigures:
    """The figures of one span of samples (the recent window, or since start)."""

    lines: int = 0
    invalid: int = 0
    unknown: int = 0
    samples: int = 0
    errors: int = 0
    empty: int = 0
    finish: tuple[tuple[str, int], ...] = ()
    """Normalized finish reasons and their counts, most frequent first."""
    tokens: Dist = Dist()
    """Completion tokens, over the samples whose record has them."""
    chars: Dist = Dist()
    """Characters of the text, over the samples with text (the length when tokens are absent)."""
    prompt_tokens: Dist = Dist()
    reasoning: tuple[tuple[str, int], ...] = ()
    """present / empty / open / absent counts, over the samples with text."""

    @property
    def truncated(self) -> int:
        return dict(self.finish).get("length", 0)

    @property
    def with_finish(self) -> int:
        return sum(n for _, n in self.finish)

    @property
    def truncated_ratio(self) -> float | None:
        """Share of the samples with a finish reason that stopped at the token limit."""
        return self.truncated / self.with_finish if self.with_finish else None

    @property
    def error_ratio(self) -> float | None:
        return self.errors / self.samples if self.samples else None

    @property
    def empty_ratio(self) -> float | None:
        answered = self.samples - self.errors
        return self.empty / answered if answered > 0 else None

    @property
    def reasoning_ratio(self) -> float | None:
        """Share of the samples with text that carry reasoning (closed, empty or cut off)."""
        counts = dict(self.reasoning)
        known = sum(counts.values())
        return (known - counts.get("absent", 0)) / known if known else None


class _Totals:
    __slots__ = ("chars", "empty", "errors", "finish", "invalid", "lines", "prompt",
                 "reasoning", "samples", "tokens", "unknown")

    def __init__(self) -> None:
        self.lines = self.invalid = self.unknown = self.samples = self.errors = self.empty = 0
        self.finish: Counter[str] = Counter()
        self.reasoning: Counter[str] = Counter()
        self.tokens, self.chars, self.prompt = Running(), Running(), Running()

    def add(self, s: Sample) -> None:
        self.samples += 1
        self.errors += s.error is not None
        self.empty += s.empty
        if s.finish is not None:
            self.finish[s.finish] += 1
        if s.reasoning is not None:
            self.reasoning[s.reasoning] += 1
        if s.tokens is not None:
            self.tokens.add(s.tokens)
        if s.chars is not None:
            self.chars.add(s.chars)
        if s.prompt_tokens is not None:
            self.prompt.add(s.prompt_tokens)

    def figures(self) -> QualityFigures:
        return QualityFigures(self.lines, self.invalid, self.unknown, self.samples, self.errors,
                              self.empty, tuple(self.finish.most_common()), self.tokens.dist(),
                              self.chars.dist(), self.prompt.dist(),
                              tuple(self.reasoning.most_common()))


class QualityStats:
    """The statistics of one output file, fed batch by batch."""

    def __init__(self, window: int = WINDOW) -> None:
        self._window_size = window
        self.restart()

    def restart(self) -> None:
        """Forget everything (the file was truncated or replaced)."""
        self._total = _Totals()
        self._recent: deque[Sample] = deque(maxlen=self._window_size)
        self._recent_lines: deque[int] = deque(maxlen=self._window_size)
        """1 per invalid line, 0 per valid one, over the last lines."""
        self._limits: Counter[int] = Counter()
        self.shapes: Counter[str] = Counter()
        self.last_error: str | None = None
        self.last_invalid: InvalidLine | None = None
        self.oversized = 0
        self.skipped_bytes = 0
        # Never back to a number used before: a snapshot cached at that number would be
        # taken for the rewritten file's.
        self.version = getattr(self, "version", 0) + 1

    def feed(self, batch: SampleBatch) -> None:
        """Take one read of the file (a batch that restarts reading restarts the figures)."""
        if batch.restart:
            self.restart()
        t = self._total
        t.lines += batch.lines
        t.invalid += batch.invalid_count
        t.unknown += batch.unknown
        valid = batch.lines - batch.invalid_count
        # Only the share counts, not the order within a read: the invalid lines go last (a
        # crashed writer's half line is the last one it wrote).
        self._recent_lines.extend([0] * min(max(0, valid), self._window_size))
        self._recent_lines.extend([1] * min(batch.invalid_count, self._window_size))
        for s in batch.samples:
            t.add(s)
            self._recent.append(s)
            self.shapes[s.shape] += 1
            if s.error is not None:
                self.last_error = s.error
            if s.limit is not None and (s.limit in self._limits or len(self._limits) < 16):
                self._limits[s.limit] += 1
        if batch.invalid:
            self.last_invalid = batch.invalid[-1]
        self.oversized += batch.oversized
        self.skipped_bytes += batch.skipped_bytes
        self.version += 1

    def total(self) -> QualityFigures:
        return self._total.figures()

    def window(self) -> QualityFigures:
        return figures_of(self._recent, lines=len(self._recent_lines),
                          invalid=sum(self._recent_lines))

    @property
    def lines_read(self) -> int:
        return self._total.lines

    @property
    def invalid_lines(self) -> int:
        """Lines read since start that are not JSON."""
        return self._total.invalid

    @property
    def tokens_seen(self) -> int:
        """Samples read since start whose record had a completion-token count."""
        return self._total.tokens.n

    def limits(self) -> tuple[int, ...]:
        return tuple(v for v, _ in self._limits.most_common(MAX_LIMITS))

    def shape(self) -> str | None:
        return self.shapes.most_common(1)[0][0] if self.shapes else None


def figures_of(samples: Iterable[Sample], *, lines: int = 0, invalid: int = 0) -> QualityFigures:
    """Exact figures of a few samples (the window), in one pass: this runs every refresh."""
    finish: Counter[str] = Counter()
    reasoning: Counter[str] = Counter()
    tokens: list[int] = []
    chars: list[int] = []
    prompt: list[int] = []
    n = errors = empty = 0
    for s in samples:
        n += 1
        errors += s.error is not None
        empty += s.empty
        if s.finish is not None:
            finish[s.finish] += 1
        if s.reasoning is not None:
            reasoning[s.reasoning] += 1
        if s.tokens is not None:
            tokens.append(s.tokens)
        if s.chars is not None:
            chars.append(s.chars)
        if s.prompt_tokens is not None:
            prompt.append(s.prompt_tokens)
    return QualityFigures(
        lines=lines, invalid=invalid, samples=n, errors=errors, empty=empty,
        finish=tuple(finish.most_common()), tokens=summarize(tokens), chars=summarize(chars),
        prompt_tokens=summarize(prompt), reasoning=tuple(reasoning.most_common()))
