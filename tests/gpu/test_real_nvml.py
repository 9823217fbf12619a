"""The adapter against the real NVML library; skipped where there is no NVIDIA driver."""

from __future__ import annotations

import shutil
import subprocess
import time

import pynvml
import pytest

from dash.sources.nvml import NvmlSource

pytestmark = pytest.mark.gpu

MIB = 1024**2


@pytest.fixture
def device_count() -> int:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        pytest.skip(f"NVML not usable here: {exc}")
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


def test_every_gpu_is_read(device_count: int) -> None:
    src = NvmlSource()
    try:
        reading = src.sample(time.time())
    finally:
        src.shutdown()
    assert isinstance(reading, tuple), reading
    assert [g.index for g in reading] == list(range(device_count))
    for g in reading:
        assert not g.lost and g.name and g.uuid and g.uuid.startswith(("GPU-", "MIG-"))
        assert g.memory_total and g.memory_total > 0
        assert g.memory_used is not None and g.memory_free is not None
        assert g.memory_used + g.memory_free <= g.memory_total


def test_matches_nvidia_smi(device_count: int) -> None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        pytest.skip("nvidia-smi not on PATH")
    out = subprocess.run(
        [smi, "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout
    rows = [[c.strip() for c in line.split(",")] for line in out.strip().splitlines()]
    src = NvmlSource()
    try:
        reading = src.sample(time.time())
    finally:
        src.shutdown()
    assert isinstance(reading, tuple)
    for (index, name, total_mib), g in zip(rows, reading, strict=True):
        assert int(index) == g.index and name == g.name
        assert g.memory_total is not None and abs(int(total_mib) - g.memory_total // MIB) <= 1
