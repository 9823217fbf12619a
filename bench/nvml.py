"""Cost of one NVML poll of 8 GPUs in kdash's own code.

The adapter (`NvmlSource.sample`) runs against the fake pynvml of an 8 x RTX PRO 6000 box. The
baseline, measured in the same run, calls the same fake functions directly for the same fields,
with nothing around them; the difference is what kdash adds (error handling, caching, building
the frozen snapshots). A real driver's calls cost more than the fake's, so on a GPU box the ratio
is smaller; the difference is what matters. With processes, most of kdash's share is psutil
reading each process's name from /proc (real work, done every ~5 s, not every tick).

    .venv/bin/python bench/nvml.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dash.sim.fake_nvml import FakeNvml
from dash.sources.nvml import NvmlSource

GPUS = 8


def baseline_poll(fake: FakeNvml, handles: list[object], with_processes: bool) -> None:
    """The fake's functions alone: what any poller must call for the same fields."""
    v2 = fake.nvmlMemory_v2
    temp = fake.NVML_TEMPERATURE_GPU
    for h in handles:
        fake.nvmlDeviceGetMemoryInfo(h, version=v2)
        fake.nvmlDeviceGetUtilizationRates(h)
        fake.nvmlDeviceGetTemperature(h, temp)
        fake.nvmlDeviceGetPowerUsage(h)
        fake.nvmlDeviceGetEnforcedPowerLimit(h)
        if with_processes:
            fake.nvmlDeviceGetComputeRunningProcesses(h)


def best_per_poll(fn: Callable[[int], None], polls: int, repeats: int) -> float:
    """Seconds per poll, best of `repeats` timed loops (the least disturbed by other work)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(polls)
        best = min(best, (time.perf_counter() - start) / polls)
    return best


def measure(with_processes: bool, polls: int, repeats: int) -> tuple[float, float]:
    fake = FakeNvml.scenario("rtx-pro-6000x8")
    # Processes every poll (interval 0) or never after the first (a huge interval).
    src = NvmlSource(module=fake, process_interval=0.0 if with_processes else 1e12)
    now = [1_750_000_000.0]

    def adapter(n: int) -> None:
        for _ in range(n):
            now[0] += 1.0
            src.sample(now[0])

    fake.nvmlInit()  # the baseline's own reference on the fake, as a direct user would hold
    handles = [fake.nvmlDeviceGetHandleByIndex(i) for i in range(GPUS)]

    def baseline(n: int) -> None:
        for _ in range(n):
            baseline_poll(fake, handles, with_processes)

    reading = src.sample(now[0])
    assert isinstance(reading, tuple) and len(reading) == GPUS, reading
    adapter(polls // 10)  # warm up both paths
    baseline(polls // 10)
    result = best_per_poll(adapter, polls, repeats), best_per_poll(baseline, polls, repeats)
    src.shutdown()
    fake.nvmlShutdown()
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer polls (a smoke run)")
    ns = ap.parse_args(argv)
    polls, repeats = (200, 3) if ns.quick else (2000, 5)
    print(f"nvml poll, {GPUS} fake GPUs, best of {repeats} x {polls} polls (pid {os.getpid()})")
    for label, with_procs in (("fields only (the 1 s tick)", False),
                              ("fields + processes (every ~5 s)", True)):
        adapter, base = measure(with_procs, polls, repeats)
        own = adapter - base
        print(
            f"  {label}: adapter {adapter * 1e6:.1f} us/poll, fake calls alone "
            f"{base * 1e6:.1f} us/poll, kdash's own code {own * 1e6:.1f} us/poll "
            f"({adapter / base:.2f}x the baseline)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
