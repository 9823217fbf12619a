"""NVML: the only module that talks to the GPU driver (through nvidia-ml-py's `pynvml`).

`NvmlSource.sample(now)` returns one reading per poll and never raises. NVML is initialised lazily
inside `sample()`, so importing kdash works on a machine without a GPU; a failed init is retried
every few seconds (a driver being reloaded comes back on its own). One field NVML cannot give
(power on some cards) is None; a lost GPU is marked on its own snapshot; NVML gone as a whole
(library missing, driver/library mismatch, driver unloaded mid-run) is one `NvmlUnavailable`.

Blocking: call it from a worker thread, one poll at a time (a lock makes overlapping calls wait).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import psutil

from dash.core.snapshot import GpuProcess, GpuSnapshot
from dash.core.state.gpus import UNAVAILABLE_PREFIX, GpuReading, NvmlUnavailable

_pynvml: ModuleType | None
try:
    import pynvml
except ImportError as _exc:  # nvidia-ml-py is a dependency, but a broken install must not crash
    _pynvml = None
    _IMPORT_ERROR = str(_exc)
else:
    _pynvml = pynvml
    _IMPORT_ERROR = ""

RETRY_INTERVAL_S = 5.0
"""Seconds between init attempts after NVML failed (driver reload, library installed later)."""

MAX_PROCESSES = 256
"""Processes kept per GPU: the panel shows a handful; a runaway list must not grow memory."""

# nvml.h return codes (a stable ABI); read here so a fake module need not carry them.
_NOT_SUPPORTED = 3
_FUNCTION_NOT_FOUND = 13
_ARGUMENT_VERSION_MISMATCH = 25
# NVML as a whole must be initialised again: the driver went away, was reloaded or upgraded.
_NVML_GONE = frozenset({1, 9, 12, 18})  # uninitialized, driver not loaded, no library, mismatch
# This GPU stopped answering; the others may be fine.
_GPU_LOST = frozenset({15, 16})  # GPU is lost, GPU requires reset
_TEMPERATURE_GPU = 0  # NVML_TEMPERATURE_GPU


def real_module() -> ModuleType | None:
    """The real `pynvml` module (None if nvidia-ml-py is missing); the fake borrows its errors."""
    return _pynvml


class _NvmlGone(Exception):
    """Internal: abort this poll, NVML must be initialised again."""


class _GpuLost(Exception):
    """Internal: this GPU no longer answers."""


def _text(value: Any) -> str | None:
    """Old bindings return bytes for names and UUIDs; new ones return str."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _process_name(pid: int) -> str | None:
    """psutil's name for `pid`; None when it exited since NVML listed it (or is hidden from us)."""
    try:
        return psutil.Process(pid).name()
    except (psutil.Error, ValueError, OSError):
        return None


class NvmlSource:
    """Polls NVML for the selected GPUs (all when `indices` is None)."""

    def __init__(
        self,
        indices: tuple[int, ...] | None = None,
        module: object | None = None,
        process_interval: float = 5.0,
        retry_interval: float = RETRY_INTERVAL_S,
    ) -> None:
        self._m: Any = module if module is not None else _pynvml
        self._indices = indices
        self._process_interval = process_interval
        self._retry_interval = retry_interval
        self._lock = threading.Lock()
        error = getattr(self._m, "NVMLError", None)
        self._nvml_error: type[BaseException] = error if isinstance(error, type) else _NoError
        mismatch = getattr(self._m, "NVMLLibraryMismatchError", None)
        # Raised (not an NVMLError) when an unversioned function is missing from the library.
        self._binding_errors: tuple[type[BaseException], ...] = (
            (mismatch, AttributeError) if isinstance(mismatch, type) else (AttributeError,)
        )
        # What a call into the library can raise besides NVMLError: a binding gap, an OSError.
        self._call_errors: tuple[type[BaseException], ...] = (*self._binding_errors, OSError)
        self._any_error: tuple[type[BaseException], ...] = (self._nvml_error, *self._call_errors)
        self._ready = False
        self._next_init = float("-inf")
        self._failure: NvmlUnavailable | None = None
        self._reset_device_state()

    def _reset_device_state(self) -> None:
        self._count = 0
        self._handles: dict[int, Any] = {}
        self._static: dict[int, tuple[str | None, str | None]] = {}
        self._procs: dict[int, tuple[GpuProcess, ...]] = {}
        self._next_procs = float("-inf")
        self._last_now = float("-inf")
        self._mem_v2 = getattr(self._m, "nvmlMemory_v2", None) is not None

    def sample(self, now: float) -> GpuReading:
        """Poll every selected GPU once. Never raises."""
        with self._lock:
            try:
                return self._sample(now)
            except Exception as exc:  # a days-long monitor must outlive a binding's surprise
                self._drop()
                return self._fail(now, f"{type(exc).__name__}: {exc}")

    def shutdown(self) -> None:
        """Release NVML (safe to call more than once)."""
        with self._lock:
            self._drop()

    def _sample(self, now: float) -> GpuReading:
        if self._m is None:
            return NvmlUnavailable(f"{UNAVAILABLE_PREFIX}nvidia-ml-py not installed ({_IMPORT_ERROR})")
        if not self._ready:
            if now < self._next_init and self._failure is not None:
                return self._failure
            reason = self._init()
            if reason is not None:
                return self._fail(now, reason)
        # A clock that went back (wall clock set) must not stall the process list for hours.
        poll_procs = now >= self._next_procs or now < self._last_now
        self._last_now = now
        try:
            gpus = tuple(self._read_gpu(i, poll_procs) for i in self._selected())
        except _NvmlGone as gone:
            self._drop()
            return self._fail(now, str(gone))
        if poll_procs:
            self._next_procs = now + self._process_interval
        return gpus

    def _fail(self, now: float, reason: str) -> NvmlUnavailable:
        self._failure = NvmlUnavailable(UNAVAILABLE_PREFIX + reason)
        self._next_init = now + self._retry_interval
        return self._failure

    def _init(self) -> str | None:
        """Initialise NVML and count GPUs; the reason text on failure."""
        try:
            self._m.nvmlInit()
        except self._nvml_error as exc:
            return str(exc)
        except self._call_errors as exc:
            return f"{type(exc).__name__}: {exc}"
        self._ready = True
        self._reset_device_state()
        try:
            self._count = int(self._m.nvmlDeviceGetCount())
        except self._any_error as exc:
            self._drop()
            return str(exc)
        return None

    def _drop(self) -> None:
        """Shut NVML down (ignoring its errors) and forget every handle."""
        if self._ready:
            try:
                self._m.nvmlShutdown()
            except self._any_error:
                pass  # the driver is already gone; nothing left to release
        self._ready = False
        self._reset_device_state()

    def _selected(self) -> tuple[int, ...]:
        return self._indices if self._indices is not None else tuple(range(self._count))

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One NVML call: its value, or None when this field is not available on this GPU."""
        try:
            return fn(*args, **kwargs)
        except self._nvml_error as exc:
            code = getattr(exc, "value", None)
            if code in _NVML_GONE:
                raise _NvmlGone(str(exc)) from None
            if code in _GPU_LOST:
                raise _GpuLost(str(exc)) from None
            return None
        except self._binding_errors:
            return None

    def _read_gpu(self, index: int, poll_procs: bool) -> GpuSnapshot:
        if index >= self._count:
            return _empty(index, None, None, error=f"no GPU {index} (NVML sees {self._count})")
        try:
            handle = self._handle(index)
            name, uuid = self._static_info(index, handle)
            m = self._m
            mem = self._memory(handle)
            util = self._call(m.nvmlDeviceGetUtilizationRates, handle)
            temp = self._call(m.nvmlDeviceGetTemperature, handle, _TEMPERATURE_GPU)
            power = self._call(m.nvmlDeviceGetPowerUsage, handle)
            limit = self._call(m.nvmlDeviceGetEnforcedPowerLimit, handle)
            if poll_procs:
                self._procs[index] = self._processes(handle)
        except _GpuLost as lost:
            self._procs.pop(index, None)
            self._handles.pop(index, None)
            name, uuid = self._static.get(index, (None, None))
            return _empty(index, name, uuid, error=str(lost), lost=True)
        return GpuSnapshot(
            index=index,
            uuid=uuid,
            name=name,
            memory_used=_int(mem, "used"),
            memory_total=_int(mem, "total"),
            memory_free=_int(mem, "free"),
            util_gpu=_float(util, "gpu"),
            util_mem=_float(util, "memory"),
            temperature_c=None if temp is None else float(temp),
            power_w=None if power is None else power / 1000.0,
            power_limit_w=None if limit is None else limit / 1000.0,
            processes=self._procs.get(index, ()),
        )

    def _handle(self, index: int) -> Any:
        handle = self._handles.get(index)
        if handle is None:
            handle = self._call(self._m.nvmlDeviceGetHandleByIndex, index)
            if handle is None:
                raise _GpuLost(f"no handle for GPU {index}")
            self._handles[index] = handle
        return handle

    def _static_info(self, index: int, handle: Any) -> tuple[str | None, str | None]:
        """Name and UUID never change while NVML is up: read them once per init."""
        info = self._static.get(index)
        if info is None or None in info:
            name = _text(self._call(self._m.nvmlDeviceGetName, handle))
            uuid = _text(self._call(self._m.nvmlDeviceGetUUID, handle))
            info = self._static[index] = (name, uuid)
        return info

    def _memory(self, handle: Any) -> Any:
        """The v2 struct (used excludes driver-reserved memory, as nvidia-smi shows), else v1."""
        if self._mem_v2:
            try:
                return self._m.nvmlDeviceGetMemoryInfo(handle, version=self._m.nvmlMemory_v2)
            except TypeError:  # bindings older than the `version` argument
                self._mem_v2 = False
            except self._nvml_error as exc:
                code = getattr(exc, "value", None)
                if code not in (_FUNCTION_NOT_FOUND, _NOT_SUPPORTED, _ARGUMENT_VERSION_MISMATCH):
                    return self._call(_reraise, exc)
                self._mem_v2 = False  # an older driver: v1 from now on
        return self._call(self._m.nvmlDeviceGetMemoryInfo, handle)

    def _processes(self, handle: Any) -> tuple[GpuProcess, ...]:
        listed = self._call(self._m.nvmlDeviceGetComputeRunningProcesses, handle) or ()
        out: list[GpuProcess] = []
        for proc in list(listed)[:MAX_PROCESSES]:
            pid = getattr(proc, "pid", None)
            if not isinstance(pid, int):
                continue
            used = getattr(proc, "usedGpuMemory", None)
            out.append(GpuProcess(pid, _process_name(pid), used if isinstance(used, int) else None))
        return tuple(out)


class _NoError(Exception):
    """Stands in for NVMLError when the module has none (nothing is ever raised as it)."""


def _reraise(exc: BaseException) -> None:
    raise exc


def _int(struct: Any, attr: str) -> int | None:
    value = getattr(struct, attr, None)
    return int(value) if isinstance(value, int) else None


def _float(struct: Any, attr: str) -> float | None:
    value = getattr(struct, attr, None)
    return float(value) if isinstance(value, (int, float)) else None


def _empty(
    index: int, name: str | None, uuid: str | None, *, error: str, lost: bool = False
) -> GpuSnapshot:
    return GpuSnapshot(
        index=index, uuid=uuid, name=name, memory_used=None, memory_total=None,
        memory_free=None, util_gpu=None, util_mem=None, temperature_c=None, power_w=None,
        power_limit_w=None, lost=lost, error=error,
    )
