"""A fake `pynvml`: the functions kdash's NVML adapter calls, for tests and the demo.

It is injected in place of the real module (`NvmlSource(module=FakeNvml.scenario("h200"))`), so
tests run the adapter's real code. It behaves like the real bindings where kdash can tell:
calls before `nvmlInit()` fail with Uninitialized, init is reference-counted, structs are
pynvml's own ctypes types, and every error is pynvml's real exception class raised with its real
code (`NVMLError(NVML_ERROR_NOT_SUPPORTED)` is an `NVMLError_NotSupported`). Constants and error
classes not defined here are read from the real module.

The simulator drives it: `set_memory_used`, `set_utilization`, `set_processes`, `lose_gpu`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid as uuidlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dash.sources.nvml import real_module

_real: Any = real_module()
if _real is None:  # pragma: no cover - nvidia-ml-py is a dependency
    raise ImportError("the fake NVML borrows pynvml's error classes: install nvidia-ml-py")

MIB = 1024**2
RTX_PRO_6000 = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
H200 = "NVIDIA H200"
SCENARIOS = (
    "rtx-pro-6000x8",
    "h200",
    "library-missing",
    "driver-mismatch",
    "power-not-supported",
    "gpu-lost",
    "vanishing-process",
)
"""Names `FakeNvml.scenario()` accepts; the first is the default."""


@dataclass
class FakeGpu:
    """One simulated GPU; byte and milliwatt units as NVML gives them."""

    name: str
    total: int
    reserved: int = 0
    """Driver-reserved memory: counted in v1's `used`, kept apart by the v2 API."""
    used: int = 0
    util_gpu: int = 0
    util_mem: int = 0
    temperature: int = 35
    power_mw: int | None = 75_000
    """None: NVML answers NotSupported, as some cards do."""
    power_limit_mw: int | None = 600_000
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    uuid: str = ""
    lost: bool = False
    lost_after_reads: int | None = None
    """Memory reads left before the GPU falls off the bus (GPU lost mid-run)."""


@dataclass(frozen=True)
class _Handle:
    index: int


class FakeNvml:
    """A module-like object with pynvml's function names and signatures."""

    def __init__(
        self,
        gpus: Sequence[FakeGpu],
        *,
        init_error: int | None = None,
        memory_v2: bool = True,
    ) -> None:
        self.gpus = list(gpus)
        for i, gpu in enumerate(self.gpus):
            if not gpu.uuid:
                gpu.uuid = "GPU-" + str(uuidlib.uuid5(uuidlib.NAMESPACE_OID, f"kdash-{gpu.name}-{i}"))
        self.init_error = init_error
        """A return code `nvmlInit()` fails with (library missing, driver mismatch)."""
        self.memory_v2 = memory_v2
        """False: an older driver without nvmlDeviceGetMemoryInfo_v2."""
        self.init_calls = 0
        self.on_list_processes: Callable[[int], None] | None = None
        """Called with the GPU index after the process list is made, before it is returned."""
        self.driver_error: int | None = None
        """While set, every call fails with this code (a driver unloaded or upgraded mid-run)."""
        self._refcount = 0

    def __getattr__(self, name: str) -> Any:
        # Constants, error classes and struct types come from the real bindings; a function this
        # fake lacks is missing, as in an old library.
        if name.startswith(("NVML", "nvmlMemory_v", "c_nvml")):
            return getattr(_real, name)
        raise AttributeError(name)

    NVMLError = _real.NVMLError
    NVMLLibraryMismatchError = _real.NVMLLibraryMismatchError
    NVML_TEMPERATURE_GPU = _real.NVML_TEMPERATURE_GPU
    nvmlMemory_v2 = _real.nvmlMemory_v2

    @classmethod
    def scenario(cls, name: str = SCENARIOS[0]) -> FakeNvml:
        """A named box or failure; see SCENARIOS."""
        builders: dict[str, Callable[[], FakeNvml]] = {
            "rtx-pro-6000x8": lambda: cls(_rtx_box()),
            "h200": lambda: cls([_h200()]),
            "library-missing": lambda: cls([], init_error=_real.NVML_ERROR_LIBRARY_NOT_FOUND),
            "driver-mismatch": lambda: cls([], init_error=_real.NVML_ERROR_LIB_RM_VERSION_MISMATCH),
            "power-not-supported": lambda: cls(_rtx_box(power=False)),
            "gpu-lost": _gpu_lost,
            "vanishing-process": _vanishing_process,
        }
        if name not in builders:
            raise ValueError(f"unknown fake NVML scenario {name!r}; one of {', '.join(SCENARIOS)}")
        return builders[name]()

    # -- what the simulator and tests drive ------------------------------------------------

    def set_memory_used(self, index: int, used_bytes: int) -> None:
        """Memory in use on GPU `index` (clamped to what the card has)."""
        gpu = self.gpus[index]
        gpu.used = max(0, min(int(used_bytes), gpu.total - gpu.reserved))

    def set_utilization(self, index: int, gpu_pct: float, mem_pct: float) -> None:
        self.gpus[index].util_gpu = int(max(0, min(100, gpu_pct)))
        self.gpus[index].util_mem = int(max(0, min(100, mem_pct)))

    def set_processes(self, index: int, processes: Sequence[tuple[int, int | None]]) -> None:
        """Compute processes on GPU `index` as (pid, used GPU bytes) pairs."""
        self.gpus[index].processes = list(processes)

    def set_temperature(self, index: int, celsius: int) -> None:
        self.gpus[index].temperature = int(celsius)

    def set_power(self, index: int, watts: float | None) -> None:
        """Power draw; None makes NVML answer NotSupported."""
        self.gpus[index].power_mw = None if watts is None else int(watts * 1000)

    def lose_gpu(self, index: int) -> None:
        """GPU `index` falls off the bus: every call on it raises GpuIsLost."""
        self.gpus[index].lost = True

    def unload_driver(self, code: int = _real.NVML_ERROR_DRIVER_NOT_LOADED) -> None:
        """The driver goes away: every call, init included, fails with `code` until reloaded."""
        self.driver_error = code

    def reload_driver(self) -> None:
        """The driver is back; NVML must be initialised again, as after a real reload."""
        self.driver_error = None
        self._refcount = 0

    # -- the pynvml functions the adapter calls ---------------------------------------------

    def nvmlInit(self) -> None:
        self.init_calls += 1
        error = self.driver_error if self.driver_error is not None else self.init_error
        if error is not None:
            raise _real.NVMLError(error)
        self._refcount += 1

    def nvmlShutdown(self) -> None:
        self._check()
        self._refcount -= 1

    def nvmlDeviceGetCount(self) -> int:
        self._check()
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        self._check()
        if not 0 <= index < len(self.gpus):
            raise _real.NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        if self.gpus[index].lost:
            raise _real.NVMLError(_real.NVML_ERROR_GPU_IS_LOST)
        return _Handle(index)

    def nvmlDeviceGetName(self, handle: _Handle) -> str:
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle: _Handle) -> str:
        return self._gpu(handle).uuid

    def nvmlDeviceGetMemoryInfo(self, handle: _Handle, version: int | None = None) -> Any:
        gpu = self._gpu(handle)
        if gpu.lost_after_reads is not None:
            gpu.lost_after_reads -= 1
            if gpu.lost_after_reads < 0:
                gpu.lost = True
                raise _real.NVMLError(_real.NVML_ERROR_GPU_IS_LOST)
        free = gpu.total - gpu.reserved - gpu.used
        if not version:
            return _real.c_nvmlMemory_t(total=gpu.total, free=free, used=gpu.used + gpu.reserved)
        if not self.memory_v2:
            raise _real.NVMLError(_real.NVML_ERROR_FUNCTION_NOT_FOUND)
        return _real.c_nvmlMemory_v2_t(
            version=version, total=gpu.total, reserved=gpu.reserved, free=free, used=gpu.used
        )

    def nvmlDeviceGetUtilizationRates(self, handle: _Handle) -> Any:
        gpu = self._gpu(handle)
        return _real.c_nvmlUtilization_t(gpu=gpu.util_gpu, memory=gpu.util_mem)

    def nvmlDeviceGetTemperature(self, handle: _Handle, sensor: int) -> int:
        gpu = self._gpu(handle)
        if sensor != _real.NVML_TEMPERATURE_GPU:
            raise _real.NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        return gpu.temperature

    def nvmlDeviceGetPowerUsage(self, handle: _Handle) -> int:
        return _supported(self._gpu(handle).power_mw)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: _Handle) -> int:
        return _supported(self._gpu(handle).power_limit_mw)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: _Handle) -> list[Any]:
        gpu = self._gpu(handle)
        procs = [
            _real.nvmlFriendlyObject(
                {"pid": pid, "usedGpuMemory": used, "gpuInstanceId": 0xFFFFFFFF,
                 "computeInstanceId": 0xFFFFFFFF}
            )
            for pid, used in gpu.processes
        ]
        if self.on_list_processes is not None:
            self.on_list_processes(handle.index)
        return procs

    def _check(self) -> None:
        if self.driver_error is not None:
            raise _real.NVMLError(self.driver_error)
        if self._refcount <= 0:
            raise _real.NVMLError(_real.NVML_ERROR_UNINITIALIZED)

    def _gpu(self, handle: _Handle) -> FakeGpu:
        self._check()
        gpu = self.gpus[handle.index]
        if gpu.lost:
            raise _real.NVMLError(_real.NVML_ERROR_GPU_IS_LOST)
        return gpu


def _supported(value: int | None) -> int:
    if value is None:
        raise _real.NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
    return value


def _rtx_box(power: bool = True) -> list[FakeGpu]:
    """The user's box: 8 x 96 GB, SGLang holding ~90 GB on each, tp=8."""
    pid = os.getpid()  # the process hosting the fake stands in for the server
    return [
        FakeGpu(
            name=RTX_PRO_6000, total=97_887 * MIB, reserved=562 * MIB, used=90_112 * MIB,
            util_gpu=97, util_mem=61, temperature=58 + i, power_mw=412_000 + 3_000 * i if power
            else None, power_limit_mw=600_000 if power else None,
            processes=[(pid, 90_100 * MIB)],
        )
        for i in range(8)
    ]


def _h200() -> FakeGpu:
    return FakeGpu(
        name=H200, total=143_771 * MIB, reserved=640 * MIB, used=128_400 * MIB, util_gpu=88,
        util_mem=54, temperature=47, power_mw=512_000, power_limit_mw=700_000,
        processes=[(os.getpid(), 128_380 * MIB)],
    )


def _gpu_lost() -> FakeNvml:
    """GPU 3 answers three polls, then falls off the bus (Xid 79); the rest carry on."""
    gpus = _rtx_box()
    gpus[3].lost_after_reads = 3
    return FakeNvml(gpus)


def _vanishing_process() -> FakeNvml:
    """One H200 listing a live process and one that exited before its name could be read."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    gpu = _h200()
    gpu.processes = [(os.getpid(), 128_380 * MIB), (gone.pid, 1_024 * MIB)]
    return FakeNvml([gpu])
