"""GPU memory and utilisation of the simulated server over its life (pure).

Memory follows the startup lines (weights, then the KV pool, then CUDA graphs; avail mem as the
log prints it), then the KV usage while serving, and drops to nothing while the server is down.
"""

from __future__ import annotations

from dataclasses import dataclass

from dash.sim.engine import WEIGHTS_GB, Simulation
from dash.sim.scenarios import GPU_TOTAL_GB, Life

GIB = 1024**3


@dataclass(frozen=True, slots=True)
class GpuLevel:
    """One GPU at one moment."""

    used_bytes: int
    util_gpu: int
    util_mem: int
    busy: bool
    """The server process holds this GPU (so it appears in the process list)."""


def _used_gb(life: Life, dt: float, usage: float) -> float:
    """GB in use on a GPU, `dt` seconds after the server's first line."""
    if dt < 3:
        return 1.5
    if dt < 8:
        return 1.5 + WEIGHTS_GB * (dt - 3) / 5
    if dt < 9:
        return 1.5 + WEIGHTS_GB
    pool_used = GPU_TOTAL_GB * life.mem_fraction + 0.06
    after_graph = GPU_TOTAL_GB - life.avail_after_graph_gb
    if dt < 10:
        return pool_used
    if dt < 14:
        return pool_used + (after_graph - pool_used) * (dt - 10) / 4
    if life.end_kind == "oom" and life.end is not None and dt >= life.end - life.start - 1:
        return GPU_TOTAL_GB - 0.79  # the last moment before the allocation failed
    return after_graph - 0.30 + 0.35 * usage


def levels(sim: Simulation, t: float, gpus: int) -> list[GpuLevel]:
    """Every GPU at simulated time t."""
    life = sim.life_at(t)
    if life is None:
        return [GpuLevel(0, 0, 0, False) for _ in range(gpus)]
    load = sim.counters.load if t >= life.ready_at else None
    usage = load.usage if load else 0.0
    used = _used_gb(life, t - life.start, usage)
    util = 0 if load is None else min(100, 80 + load.running // 6)
    out = []
    for i in range(gpus):
        extra = 0.30 if i == 0 else 0.0  # rank 0 also holds the scheduler's buffers
        gb = min(GPU_TOTAL_GB, used + extra)
        out.append(GpuLevel(int(gb * GIB), max(0, util - i % 3),
                            util // 2 if util else 0, True))
    return out
