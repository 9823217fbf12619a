"""GPU readings and the tracker that turns them into a GpusSnapshot with bounded history.

A reading is what one NVML poll gave: a tuple of `GpuSnapshot` (one per selected GPU, a lost GPU
included and marked), or `NvmlUnavailable` when NVML cannot be used at all. The tracker is pure:
it keeps a ring buffer per GPU for the charts and works out the smallest free memory across GPUs,
the headroom that decides whether the server survives CUDA graph capture.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dash.core.series import Series, SeriesView
from dash.core.snapshot import GpuSnapshot, GpusSnapshot


@dataclass(frozen=True, slots=True)
class NvmlUnavailable:
    """NVML could not be used at all; `reason` is the text the UI shows as is."""

    reason: str
    """Always starts with "NVML unavailable: ", e.g. "NVML unavailable: NVML Shared Library Not
    Found"."""

    @property
    def detail(self) -> str:
        """The reason without the "NVML unavailable: " prefix (what GpusSnapshot.reason holds)."""
        return self.reason.removeprefix(UNAVAILABLE_PREFIX)


UNAVAILABLE_PREFIX = "NVML unavailable: "


GpuReading = tuple[GpuSnapshot, ...] | NvmlUnavailable
"""One poll of NVML: every selected GPU, or the reason there are none."""


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One reading and when it was taken: applied late (a busy UI), it keeps its own time."""

    reading: GpuReading
    at: float

DEFAULT_HISTORY = 3600
"""Points kept per GPU and per series: an hour at one poll a second."""

MAX_GPUS = 64
"""More GPU indices than any box has; a bound on the tracker's memory whatever it is fed."""


def min_free_bytes(gpus: Iterable[GpuSnapshot]) -> int | None:
    """The smallest free memory among GPUs that reported it (lost GPUs excluded)."""
    free = [g.memory_free for g in gpus if not g.lost and g.memory_free is not None]
    return min(free) if free else None


class GpuTracker:
    """Holds the last reading and a bounded history (memory used, GPU utilization) per GPU."""

    def __init__(self, history: int = DEFAULT_HISTORY) -> None:
        self._history = max(1, history)
        self._memory_used: dict[int, Series] = {}
        self._util: dict[int, Series] = {}
        self._available = False
        self._reason: str | None = "not polled yet"
        self._gpus: tuple[GpuSnapshot, ...] = ()
        self._sampled_at: float | None = None

    def apply(self, reading: GpuReading, now: float) -> None:
        """Take one poll's result. An unavailable reading keeps the history for the charts."""
        self._sampled_at = now
        if isinstance(reading, NvmlUnavailable):
            self._available = False
            # The snapshot holds the bare reason; the UI and the JSON add their own wording.
            self._reason = reading.detail
            self._gpus = ()
            return
        self._available = True
        self._reason = None
        self._gpus = tuple(reading)
        for gpu in self._gpus:
            if gpu.lost:
                continue
            if gpu.memory_used is not None:
                self._append(self._memory_used, gpu.index, now, float(gpu.memory_used))
            if gpu.util_gpu is not None:
                self._append(self._util, gpu.index, now, float(gpu.util_gpu))

    def _append(self, table: dict[int, Series], index: int, now: float, value: float) -> None:
        series = table.get(index)
        if series is None:
            if len(table) >= MAX_GPUS:
                return
            series = table[index] = Series(maxlen=self._history)
        series.append(now, value)

    def snapshot(self) -> GpusSnapshot:
        """The frozen state for the UI, `--once --json` and the alert rules."""
        return GpusSnapshot(
            available=self._available,
            reason=self._reason,
            gpus=self._gpus,
            memory_used_history=_views(self._memory_used),
            util_history=_views(self._util),
            min_free_bytes=min_free_bytes(self._gpus),
            sampled_at=self._sampled_at,
        )


def _views(table: dict[int, Series]) -> dict[int, SeriesView]:
    return {index: series.view() for index, series in sorted(table.items())}
