"""Bounded distributions of sample lengths: exact while small, a log histogram beyond.

Median and p95 over a whole file (`kdash outputs`, or since kdash started) in constant memory:
values are kept exactly up to `EXACT_MAX` of them, so the figures of a small file are exact and
equal wherever they are computed; past that, a histogram with buckets 1% wide answers within
1%. Written here rather than taken from a sketch library: the whole need is these forty lines,
and a dependency's per-value overhead would be most of `kdash outputs`' cost.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass

EXACT_MAX = 10_000
"""Values kept exactly before switching to the histogram."""
GAMMA = 1.02
"""Bucket i holds values in (GAMMA**(i-1), GAMMA**i]: each answer within 1% of the truth."""
_LOG_GAMMA = math.log(GAMMA)


@dataclass(frozen=True, slots=True)
class Dist:
    """A distribution's summary: count, median, p95, max and sum (None when empty)."""

    n: int = 0
    median: float | None = None
    p95: float | None = None
    max: float | None = None
    total: float = 0.0


def rank(sorted_values: list[int] | list[float], q: float) -> float:
    """The nearest-rank quantile q of sorted values (the value at rank ceil(q * n))."""
    return float(sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)])


def summarize(values: Iterable[int]) -> Dist:
    """Exact figures of a (small) collection."""
    ordered = sorted(values)
    if not ordered:
        return Dist()
    return Dist(len(ordered), rank(ordered, 0.5), rank(ordered, 0.95), float(ordered[-1]),
                float(sum(ordered)))


class Running:
    """A distribution since start, in bounded memory."""

    __slots__ = ("_buckets", "_exact", "max", "n", "total", "zeros")

    def __init__(self) -> None:
        self.n = 0
        self.total = 0
        self.max = 0
        self.zeros = 0
        self._exact: list[int] | None = []
        """Every value, sorted (kept sorted as they come: a figure never sorts them again)."""
        self._buckets: dict[int, int] = {}

    def add(self, value: int) -> None:
        self.n += 1
        self.total += value
        if value > self.max:
            self.max = value
        if self._exact is not None:
            bisect.insort(self._exact, value)
            if len(self._exact) > EXACT_MAX:
                self._exact = None
        if value <= 0:
            self.zeros += 1
        else:
            i = math.ceil(math.log(value) / _LOG_GAMMA)
            self._buckets[i] = self._buckets.get(i, 0) + 1

    def dist(self) -> Dist:
        if not self.n:
            return Dist()
        ordered = self._exact
        if ordered is not None:
            return Dist(len(ordered), rank(ordered, 0.5), rank(ordered, 0.95),
                        float(ordered[-1]), float(self.total))
        return Dist(self.n, self._quantile(0.5), self._quantile(0.95), float(self.max),
                    float(self.total))

    def _quantile(self, q: float) -> float:
        want = max(1, math.ceil(q * self.n))
        seen = self.zeros
        if seen >= want:
            return 0.0
        for i in sorted(self._buckets):
            seen += self._buckets[i]
            if seen >= want:
                # The bucket's middle, never above the largest value seen.
                return min(float(self.max), float(round(GAMMA ** (i - 0.5))))
        return float(self.max)
