"""kdash's own CPU use, for the header."""

from __future__ import annotations

import time


class CpuMeter:
    """This process's CPU use in percent of one core, averaged over `period` seconds."""

    def __init__(self, period: float = 5.0) -> None:
        self.period = period
        self._last = (time.monotonic(), time.process_time())
        self._value: float | None = None

    def __call__(self) -> float | None:
        wall, cpu = time.monotonic(), time.process_time()
        dw, dc = wall - self._last[0], cpu - self._last[1]
        if dw >= self.period:  # a steadier figure, and a header that repaints less often
            self._last = (wall, cpu)
            self._value = 100.0 * dc / dw
        return self._value
