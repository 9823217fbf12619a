"""Bounded time series: ring buffers that hold a chart's history in constant memory.

A long run (days) at one decode line a second would grow without bound; instead each series keeps
its most recent `maxlen` points, and `window`/`downsample` give a chart what fits its width.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SeriesView:
    """An immutable copy of a series' points, oldest first (what crosses into a snapshot)."""

    t: tuple[float, ...] = ()
    v: tuple[float, ...] = ()

    def __len__(self) -> int:
        return len(self.t)

    @property
    def last(self) -> float | None:
        return self.v[-1] if self.v else None

    def window(self, start: float) -> SeriesView:
        """The points at or after time `start`."""
        lo = _bisect_left(self.t, start)
        return SeriesView(self.t[lo:], self.v[lo:])

    def downsample(self, buckets: int) -> SeriesView:
        """At most `buckets` points: each bucket of equal time width keeps its maximum.

        Max, not mean, so that a short spike (the 1317 tok/s peak) survives on a narrow chart.
        """
        n = len(self.t)
        if buckets <= 0 or n <= buckets:
            return self
        t0, t1 = self.t[0], self.t[-1]
        span = (t1 - t0) or 1.0
        out_t: list[float] = []
        out_v: list[float] = []
        current = -1
        for t, v in zip(self.t, self.v, strict=True):
            b = min(buckets - 1, int((t - t0) / span * buckets))
            if b != current:
                out_t.append(t)
                out_v.append(v)
                current = b
            elif v > out_v[-1]:
                out_v[-1] = v
        return SeriesView(tuple(out_t), tuple(out_v))


def _bisect_left(a: tuple[float, ...], x: float) -> int:
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


class Series:
    """A ring buffer of (time, value) points; appending is O(1), memory is bounded."""

    __slots__ = ("_t", "_v", "_view")

    def __init__(self, maxlen: int = 4096, points: Iterable[tuple[float, float]] = ()) -> None:
        self._t: deque[float] = deque(maxlen=maxlen)
        self._v: deque[float] = deque(maxlen=maxlen)
        self._view: SeriesView | None = None  # shared by snapshots until a point arrives
        for t, v in points:
            self.append(t, v)

    def append(self, t: float, v: float) -> None:
        """Add a point. A point older than the last one is dropped: charts need ordered time."""
        if self._t and t < self._t[-1]:
            return
        self._t.append(t)
        self._v.append(v)
        self._view = None

    def remap(self, fn: Callable[[float], float]) -> None:
        """Move every point's time by `fn` (an increasing map: the clock they were placed on
        turned out to be another one)."""
        self._t = deque(map(fn, self._t), maxlen=self._t.maxlen)
        self._view = None

    def clear(self) -> None:
        self._t.clear()
        self._v.clear()
        self._view = None

    def __len__(self) -> int:
        return len(self._t)

    @property
    def last(self) -> float | None:
        return self._v[-1] if self._v else None

    def view(self) -> SeriesView:
        if self._view is None:
            self._view = SeriesView(tuple(self._t), tuple(self._v))
        return self._view
