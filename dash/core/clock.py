"""Time as a value passed in, never read inside the core.

The core takes `now` (seconds since the epoch, float) as an argument. Whoever drives it owns a
clock: the live dashboard a `SystemClock`, tests a `FakeClock`, replay and `kdash summary` a clock
set from the log's own timestamps.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Something that tells the time."""

    def now(self) -> float:
        """Wall-clock seconds since the epoch (what alerts and charts are stamped with)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for intervals and rates)."""
        ...


class SystemClock:
    """The machine's clocks."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to: deterministic tests and replay."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self._now = float(start)
        self._mono = 0.0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        """Move both clocks forward."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._now += seconds
        self._mono += seconds

    def set(self, now: float) -> None:
        """Jump the wall clock to `now` (replay); the monotonic clock follows forward jumps only."""
        if now > self._now:
            self._mono += now - self._now
        self._now = float(now)
