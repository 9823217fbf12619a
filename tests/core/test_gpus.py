"""GpuTracker: bounded history per GPU, min free memory, the unavailable state."""

from __future__ import annotations

import dataclasses

from dash.core.snapshot import GpuSnapshot
from dash.core.state.gpus import MAX_GPUS, GpuTracker, NvmlUnavailable, min_free_bytes

GB = 1024**3


def gpu(index: int, free: int | None = 5 * GB, used: int | None = 90 * GB, util: float | None = 95.0,
        lost: bool = False) -> GpuSnapshot:
    return GpuSnapshot(
        index=index, uuid=f"GPU-{index}", name="NVIDIA H200", memory_used=used,
        memory_total=141 * GB, memory_free=free, util_gpu=util, util_mem=40.0,
        temperature_c=50.0, power_w=500.0, power_limit_w=700.0, lost=lost,
        error="GPU is lost" if lost else None,
    )


def test_before_any_poll() -> None:
    snap = GpuTracker().snapshot()
    assert (snap.available, snap.reason, snap.gpus, snap.min_free_bytes, snap.sampled_at) == (
        False, "not polled yet", (), None, None)


def test_reading_gives_gpus_history_and_min_free() -> None:
    tracker = GpuTracker()
    tracker.apply((gpu(0, free=5 * GB), gpu(1, free=int(0.82 * GB))), 100.0)
    tracker.apply((gpu(0, free=4 * GB, used=91 * GB, util=50.0), gpu(1, free=2 * GB)), 101.0)
    snap = tracker.snapshot()
    assert snap.available and snap.reason is None and snap.sampled_at == 101.0
    assert snap.min_free_bytes == 2 * GB
    assert snap.memory_used_history[0].t == (100.0, 101.0)
    assert snap.memory_used_history[0].v == (90.0 * GB, 91.0 * GB)
    assert snap.util_history[0].v == (95.0, 50.0)
    assert sorted(snap.memory_used_history) == [0, 1]


def test_lost_gpu_and_missing_fields_are_left_out_of_history_and_min_free() -> None:
    tracker = GpuTracker()
    readings = (gpu(0, free=9 * GB), gpu(1, free=None, used=None, util=None), gpu(2, lost=True))
    tracker.apply(readings, 10.0)
    snap = tracker.snapshot()
    assert snap.min_free_bytes == 9 * GB
    assert list(snap.memory_used_history) == [0] and list(snap.util_history) == [0]
    assert snap.gpus[2].lost and snap.gpus[2].error == "GPU is lost"
    assert min_free_bytes([gpu(0, lost=True)]) is None and min_free_bytes([]) is None


def test_unavailable_keeps_history_and_says_why() -> None:
    tracker = GpuTracker()
    tracker.apply((gpu(0),), 1.0)
    tracker.apply(NvmlUnavailable("NVML unavailable: Driver Not Loaded"), 2.0)
    snap = tracker.snapshot()
    assert not snap.available and snap.reason == "Driver Not Loaded"  # the UI adds its wording
    assert snap.gpus == () and snap.min_free_bytes is None
    assert len(snap.memory_used_history[0]) == 1
    tracker.apply((gpu(0),), 3.0)
    assert tracker.snapshot().available and tracker.snapshot().reason is None


def test_history_is_bounded() -> None:
    tracker = GpuTracker(history=5)
    for k in range(50):
        tracker.apply((gpu(0, used=k),), float(k))
    view = tracker.snapshot().memory_used_history[0]
    assert view.v == (45.0, 46.0, 47.0, 48.0, 49.0)


def test_number_of_tracked_gpus_is_bounded() -> None:
    tracker = GpuTracker(history=2)
    tracker.apply(tuple(gpu(i) for i in range(MAX_GPUS + 10)), 1.0)
    assert len(tracker.snapshot().memory_used_history) == MAX_GPUS


def test_snapshot_is_frozen_and_not_shared_with_the_tracker() -> None:
    tracker = GpuTracker()
    tracker.apply((gpu(0),), 1.0)
    snap = tracker.snapshot()
    tracker.apply((gpu(0),), 2.0)
    assert len(snap.memory_used_history[0]) == 1
    assert dataclasses.is_dataclass(snap) and snap.__dataclass_params__.frozen  # type: ignore[attr-defined]
