"""The NVML adapter, run for real against the fake pynvml (which raises pynvml's own errors)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import psutil
import pynvml
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.snapshot import GpuSnapshot
from dash.core.state.gpus import GpuTracker, NvmlUnavailable
from dash.sim.fake_nvml import H200, MIB, RTX_PRO_6000, SCENARIOS, FakeNvml
from dash.sources.nvml import NvmlSource

T0 = 1_750_000_000.0


def gpus_of(reading: object) -> tuple[GpuSnapshot, ...]:
    assert isinstance(reading, tuple), reading
    return reading


def source(scenario: str, **kw: object) -> tuple[FakeNvml, NvmlSource]:
    fake = FakeNvml.scenario(scenario)
    return fake, NvmlSource(module=fake, **kw)  # type: ignore[arg-type]


# -- the fake behaves like pynvml ---------------------------------------------------------------


def test_fake_raises_pynvmls_real_exception_classes_with_their_codes() -> None:
    fake = FakeNvml.scenario("power-not-supported")
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()
    fake.nvmlInit()
    handle = fake.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported) as info:
        fake.nvmlDeviceGetPowerUsage(handle)
    assert info.value.value == pynvml.NVML_ERROR_NOT_SUPPORTED
    assert str(info.value) == "Not Supported"
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        fake.nvmlDeviceGetHandleByIndex(8)
    fake.lose_gpu(2)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake.nvmlDeviceGetHandleByIndex(2)
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        FakeNvml.scenario("library-missing").nvmlInit()
    with pytest.raises(pynvml.NVMLError_LibRmVersionMismatch):
        FakeNvml.scenario("driver-mismatch").nvmlInit()
    fake.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()


def test_fake_returns_pynvmls_own_structs() -> None:
    fake = FakeNvml.scenario("h200")
    fake.nvmlInit()
    h = fake.nvmlDeviceGetHandleByIndex(0)
    v2 = fake.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
    v1 = fake.nvmlDeviceGetMemoryInfo(h)
    assert isinstance(v2, pynvml.c_nvmlMemory_v2_t) and isinstance(v1, pynvml.c_nvmlMemory_t)
    # v1 counts driver-reserved memory as used; v2 keeps it apart; free is the same.
    assert v1.used == v2.used + v2.reserved and v1.free == v2.free
    assert v2.total == v2.used + v2.reserved + v2.free
    assert isinstance(fake.nvmlDeviceGetUtilizationRates(h), pynvml.c_nvmlUtilization_t)
    with pytest.raises(AttributeError):
        fake.nvmlDeviceGetFanSpeed  # noqa: B018 - a function the fake lacks is missing


def test_unknown_scenario_is_refused_with_the_list() -> None:
    with pytest.raises(ValueError, match="rtx-pro-6000x8"):
        FakeNvml.scenario("nope")


# -- scenarios through the real adapter ---------------------------------------------------------


def test_eight_rtx_pro_6000_every_field() -> None:
    _fake, src = source("rtx-pro-6000x8")
    gpus = gpus_of(src.sample(T0))
    assert [g.index for g in gpus] == list(range(8))
    assert {g.name for g in gpus} == {RTX_PRO_6000}
    assert len({g.uuid for g in gpus}) == 8 and all(g.uuid.startswith("GPU-") for g in gpus)
    g = gpus[0]
    assert g.memory_total == 97_887 * MIB
    assert g.memory_used == 90_112 * MIB  # v2: driver-reserved memory not counted as used
    assert g.memory_free == (97_887 - 562 - 90_112) * MIB
    assert (g.util_gpu, g.util_mem, g.temperature_c) == (97.0, 61.0, 58.0)
    assert (g.power_w, g.power_limit_w) == (412.0, 600.0)  # milliwatts -> watts
    assert gpus[7].power_w == 433.0 and gpus[7].temperature_c == 65.0
    assert not g.lost and g.error is None
    (proc,) = g.processes
    assert proc.pid == os.getpid() and proc.used_memory == 90_100 * MIB
    assert proc.name == psutil.Process().name()
    src.shutdown()


def test_h200() -> None:
    _fake, src = source("h200")
    (g,) = gpus_of(src.sample(T0))
    assert g.name == H200 and g.memory_total == 143_771 * MIB
    assert g.power_limit_w == 700.0


@pytest.mark.parametrize(
    ("scenario", "text"),
    [
        ("library-missing", "NVML unavailable: NVML Shared Library Not Found"),
        ("driver-mismatch", "NVML unavailable: RM has detected an NVML/RM version mismatch."),
    ],
)
def test_no_nvml_is_one_clear_state(scenario: str, text: str) -> None:
    _fake, src = source(scenario)
    reading = src.sample(T0)
    assert reading == NvmlUnavailable(text)
    tracker = GpuTracker()
    tracker.apply(reading, T0)
    snap = tracker.snapshot()
    bare = text.removeprefix("NVML unavailable: ")
    assert reading.detail == bare  # type: ignore[union-attr]
    assert (snap.available, snap.reason, snap.gpus, snap.min_free_bytes) == (False, bare, (), None)
    src.shutdown()  # nothing was initialised; must not raise


def test_failed_init_is_retried_every_few_seconds_not_every_poll() -> None:
    fake, src = source("library-missing", retry_interval=5.0)
    assert isinstance(src.sample(T0), NvmlUnavailable)
    assert isinstance(src.sample(T0 + 1), NvmlUnavailable)
    assert isinstance(src.sample(T0 + 4.9), NvmlUnavailable)
    assert fake.init_calls == 1
    fake.init_error = None  # the library is installed / the driver reloaded
    fake.gpus = FakeNvml.scenario("h200").gpus
    assert isinstance(src.sample(T0 + 5.0), tuple)
    assert fake.init_calls == 2


def test_driver_unloaded_mid_run_then_reloaded() -> None:
    fake, src = source("h200", retry_interval=3.0)
    gpus_of(src.sample(T0))
    fake.unload_driver()
    reading = src.sample(T0 + 1)
    assert reading == NvmlUnavailable("NVML unavailable: Driver Not Loaded")
    fake.reload_driver()
    assert isinstance(src.sample(T0 + 2), NvmlUnavailable)  # not retried yet
    (g,) = gpus_of(src.sample(T0 + 4))
    assert g.name == H200 and g.memory_total == 143_771 * MIB


def test_power_not_supported_is_none_for_that_field_only() -> None:
    _fake, src = source("power-not-supported")
    gpus = gpus_of(src.sample(T0))
    assert len(gpus) == 8
    for g in gpus:
        assert g.power_w is None and g.power_limit_w is None
        assert g.memory_used == 90_112 * MIB and g.temperature_c is not None
        assert g.util_gpu == 97.0 and g.error is None and not g.lost


def test_gpu_lost_mid_run_marks_that_gpu_only() -> None:
    _fake, src = source("gpu-lost")
    for k in range(3):
        assert not any(g.lost for g in gpus_of(src.sample(T0 + k)))
    for k in (3, 4):  # and it stays lost
        gpus = gpus_of(src.sample(T0 + k))
        lost = gpus[3]
        assert lost.lost and lost.error == "GPU is lost"
        assert lost.name == RTX_PRO_6000 and lost.uuid  # still says which card it was
        assert lost.memory_used is None and lost.processes == ()
        assert [g.index for g in gpus if not g.lost] == [0, 1, 2, 4, 5, 6, 7]
        assert all(g.memory_free is not None for g in gpus if not g.lost)
    tracker = GpuTracker()
    tracker.apply(gpus, T0 + 4)
    assert tracker.snapshot().min_free_bytes == (97_887 - 562 - 90_112) * MIB


def test_vanishing_process_scenario_gives_name_none() -> None:
    _fake, src = source("vanishing-process")
    (g,) = gpus_of(src.sample(T0))
    live, gone = g.processes
    assert live.name == psutil.Process().name()
    assert gone.name is None and gone.used_memory == 1_024 * MIB


def test_process_exiting_between_listing_and_lookup() -> None:
    """A real process, killed after NVML listed it and before its name is read."""
    fake = FakeNvml.scenario("h200")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        fake.set_processes(0, [(child.pid, 2 * MIB)])
        assert psutil.Process(child.pid).is_running()

        def kill_it(index: int) -> None:
            child.kill()
            child.wait()

        fake.on_list_processes = kill_it
        (g,) = gpus_of(NvmlSource(module=fake).sample(T0))
    finally:
        child.kill()
        child.wait()
    (proc,) = g.processes
    assert proc.pid == child.pid and proc.name is None and proc.used_memory == 2 * MIB


def test_processes_are_polled_every_process_interval_and_cached_between() -> None:
    fake, src = source("h200", process_interval=5.0)
    first = gpus_of(src.sample(T0))[0].processes
    fake.set_processes(0, [(os.getpid(), 7 * MIB)])
    fake.set_memory_used(0, 100 * MIB)
    g = gpus_of(src.sample(T0 + 1))[0]
    assert g.processes == first  # cached
    assert g.memory_used == 100 * MIB  # memory is polled every time
    g = gpus_of(src.sample(T0 + 5))[0]
    assert [(p.pid, p.used_memory) for p in g.processes] == [(os.getpid(), 7 * MIB)]
    fake.set_processes(0, [])
    assert gpus_of(src.sample(T0 + 2))[0].processes == ()  # clock went back: poll again


def test_index_selection_and_an_index_that_does_not_exist() -> None:
    _fake, src = source("rtx-pro-6000x8", indices=(0, 3, 9))
    gpus = gpus_of(src.sample(T0))
    assert [g.index for g in gpus] == [0, 3, 9]
    assert gpus[1].name == RTX_PRO_6000
    assert gpus[2].error == "no GPU 9 (NVML sees 8)" and gpus[2].memory_free is None


def test_older_driver_without_memory_v2_falls_back_to_v1() -> None:
    fake = FakeNvml.scenario("h200")
    fake.memory_v2 = False
    (g,) = gpus_of(NvmlSource(module=fake).sample(T0))
    assert g.memory_used == (128_400 + 640) * MIB  # v1 counts reserved memory as used
    assert g.memory_free == (143_771 - 640 - 128_400) * MIB


def test_simulator_controls_drive_the_readings() -> None:
    fake, src = source("rtx-pro-6000x8")
    fake.set_memory_used(2, 95_000 * MIB)
    fake.set_utilization(2, 12.0, 3.0)
    fake.set_temperature(2, 81)
    fake.set_power(2, 250.5)
    g = gpus_of(src.sample(T0))[2]
    assert g.memory_used == 95_000 * MIB and g.memory_free == (97_887 - 562 - 95_000) * MIB
    assert (g.util_gpu, g.util_mem, g.temperature_c, g.power_w) == (12.0, 3.0, 81.0, 250.5)
    fake.set_memory_used(2, 10**15)  # clamped to the card
    assert gpus_of(src.sample(T0 + 1))[2].memory_free == 0


def test_never_raises_whatever_the_module_does() -> None:
    class Broken:
        NVMLError = pynvml.NVMLError

        def nvmlInit(self) -> None:
            pass

        def nvmlShutdown(self) -> None:
            pass

        def nvmlDeviceGetCount(self) -> int:
            raise RuntimeError("boom")

    assert NvmlSource(module=object()).sample(T0) == NvmlUnavailable(
        "NVML unavailable: AttributeError: 'object' object has no attribute 'nvmlInit'"
    )
    reading = NvmlSource(module=Broken()).sample(T0)
    assert reading == NvmlUnavailable("NVML unavailable: RuntimeError: boom")


def test_shutdown_releases_nvml() -> None:
    fake, src = source("h200")
    gpus_of(src.sample(T0))
    src.shutdown()
    src.shutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()
    assert isinstance(src.sample(T0 + 1), tuple)  # initialises again on the next poll


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_serialises_as_plain_json(scenario: str) -> None:
    _fake, src = source(scenario)
    reading = src.sample(T0)
    if isinstance(reading, NvmlUnavailable):
        doc: object = dataclasses.asdict(reading)
        assert json.loads(json.dumps(doc))["reason"].startswith("NVML unavailable: ")
        return
    # No `default=`: anything but dataclasses of primitives would make json.dumps raise.
    back = json.loads(json.dumps([dataclasses.asdict(g) for g in reading]))
    assert [g["index"] for g in back] == [g.index for g in reading]
    assert back[0]["memory_free"] == reading[0].memory_free
    assert back[0]["processes"][0]["pid"] == reading[0].processes[0].pid


_ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["memory", "lose", "unload", "reload", "power", "procs", "poll"]),
        st.integers(0, 7),
        st.integers(-(2**40), 2**40),
    ),
    max_size=30,
)


def _act(fake: FakeNvml, action: str, index: int, value: int) -> None:
    if action == "memory":
        fake.set_memory_used(index, value)
    elif action == "lose":
        fake.lose_gpu(index)
    elif action == "unload":
        fake.unload_driver()
    elif action == "reload":
        fake.reload_driver()
    elif action == "power":
        fake.set_power(index, None if value < 0 else value / 1e9)
    elif action == "procs":  # pids above Linux's PID_MAX_LIMIT: never a live process
        fake.set_processes(index, [(2**23 + index, abs(value))])


@settings(max_examples=60, deadline=None)
@given(actions=_ACTIONS)
def test_any_sequence_of_driver_events_gives_a_reading_never_an_exception(actions: list) -> None:
    fake = FakeNvml.scenario("rtx-pro-6000x8")
    fake.set_processes(0, [])  # keep psutil out of the loop: this is about NVML's states
    src = NvmlSource(module=fake, retry_interval=2.0, process_interval=3.0)
    now = T0
    for action, index, value in actions:
        _act(fake, action, index, value)
        now += 1.0
        reading = src.sample(now)
        if isinstance(reading, NvmlUnavailable):
            assert reading.reason.startswith("NVML unavailable: ")
            continue
        assert [g.index for g in reading] == list(range(8))
        for g in reading:
            assert g.lost == fake.gpus[g.index].lost
            if not g.lost:
                assert g.memory_free is not None and 0 <= g.memory_free <= g.memory_total
