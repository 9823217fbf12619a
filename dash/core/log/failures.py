"""The numbers and names of failure lines: what an `oom`, `crash` or `error` phrase of the
grammar (`dash.core.log.grammar`) takes out of a message it matched.

Each extractor takes the message and the phrase's match (or None) and returns the event's
fields, or None to pass the line on. A failure event carries `reason` (what happened, one word:
`gpu_memory_taken`, `nccl_timeout`, `device_assert`, `segfault`, ...), `component` where the
line names one (`DetokenizerManager`, `EngineCore`), and the numbers it prints; a `hint` where
the line alone says what to do. Wordings are those of the sources (log-shapes notes section 2):
matched on their stable substrings, never on whole messages.
"""

from __future__ import annotations

import re
from typing import Any

from dash.core.log.convert import to_float

Match = re.Match[str] | None
Fields = dict[str, Any]

# Exit codes and signals: a negative exit code is the signal that ended the process
_SIGNALS = {9: "killed", 11: "segfault", 6: "abort", 7: "bus_error", 8: "fpe", 15: "terminated"}
_SIGNAL_NAMES = {"SIGKILL": 9, "SIGSEGV": 11, "SIGABRT": 6, "SIGBUS": 7, "SIGFPE": 8, "SIGTERM": 15}
_EXIT = re.compile(r"(?:exit ?code:? |terminated with (?:signal )?|died with exit code |"
                   r"exited prematurely with code )"
                   r"(-?[0-9]{1,4}|SIG[A-Z]{2,6})")
_SHELL = {"Segmentation fault": "segfault", "Aborted": "abort", "Bus error": "bus_error",
          "Floating point exception": "fpe", "Killed": "killed"}
_FREE = re.compile(r"Free memory on device ?(\S*) \(([0-9.]+)/([0-9.]+) GiB\) on startup is less "
                   r"than desired GPU memory utilization \(([0-9.]+), ([0-9.]+) GiB\)")
_TIMEOUT = re.compile(r"OpType=(\w+).{0,200}?Timeout\(ms\)=([0-9]+)\).{0,40}? ran for ([0-9]+) "
                      r"milliseconds")
_SCHED_STATS = re.compile(r"\b(num_running_reqs|num_waiting_reqs|num_skipped_waiting_reqs|"
                          r"kv_cache_usage|gpu_cache_usage|num_corrupted_reqs|step_counter)"
                          r"=([0-9.e-]+)")
_SCHED_KEYS = {"num_running_reqs": "running_req", "num_waiting_reqs": "queue_req",
               "num_skipped_waiting_reqs": "deferred_req", "kv_cache_usage": "token_usage",
               "gpu_cache_usage": "token_usage",  # vLLM 0.8-0.9's name for it
               "num_corrupted_reqs": "corrupted_req", "step_counter": "step_counter"}


def exit_status(msg: str, _m: Match = None) -> Fields:
    """`crashed with exit code -9`, `terminated with -11`, `terminated with signal SIGABRT`:
    the reason the code stands for; `signal` (a negative code) or `exit_code` (>= 0)."""
    m = _EXIT.search(msg)
    if m is None:
        return {"reason": "process_died"}
    code = m.group(1)
    sig = _SIGNAL_NAMES.get(code) if code.startswith("SIG") else (
        -int(code) if code.startswith("-") else None)
    if sig is None:
        return {"reason": "process_died", "exit_code": int(code) if code.isdigit() else None}
    return {"reason": _SIGNALS.get(sig, "process_died"), "signal": sig}


def component(msg: str, m: Match) -> Fields:
    """`DetokenizerManager hit an exception`, `Exception in ModelTpServer:`: who crashed."""
    name = m.group(1) if m is not None else None
    return {"component": name} if name else {}


_PROCESS = re.compile(r"(?:Subprocess|[Pp]roc|Process) ([A-Za-z_][\w-]{0,80})")


def subprocess_died(msg: str, _m: Match = None) -> Fields:
    """`Subprocess detokenizer (pid=4100) crashed with exit code -9`, `Worker proc
    VllmWorker-0 died unexpectedly`, `Scheduler or DataParallelController 4242 terminated with
    -9`, `Rank 0 scheduler died during initialization (exit code: -9)`."""
    out = exit_status(msg)
    m = _PROCESS.search(msg)
    if m is not None:
        out["component"] = m.group(1)
    return out


def worker_died(msg: str, m: Match) -> Fields:
    """vLLM V0's `Worker VllmWorkerProcess pid 198 died, exit code: -6`: how, and which."""
    out = exit_status(msg)
    if m is not None and m.group(1):
        out["component"] = m.group(1)
    return out


_FAILED_CORE = re.compile(r"Failed core proc\(s\): \{'([\w-]{1,80})': (-?[0-9]{1,4})")


def init_failed(msg: str, _m: Match = None) -> Fields:
    """`Engine core initialization failed. See root cause above. Failed core proc(s):
    {'EngineCore_DP0': -9}`: a core a signal ended is that signal's crash (-9: killed, most
    often by the kernel's OOM killer), as SGLang's `exit code -9` is, not a start that failed
    of its own accord; `component` the core the line names first."""
    m = _FAILED_CORE.search(msg)
    if m is None:
        return {"reason": "init_failed"}
    code = int(m.group(2))
    if code < 0:
        return {"reason": _SIGNALS.get(-code, "process_died"), "signal": -code,
                "component": m.group(1)}
    return {"reason": "init_failed", "exit_code": code, "component": m.group(1)}


_WAITED_FOR = re.compile(r"Waited ([0-9]{1,9}) ?s\b")


def engine_start_timeout(msg: str, _m: Match = None) -> Fields:
    """vLLM's `Timed out waiting for engine core processes to start. ... Waited 600s
    (configured by VLLM_ENGINE_READY_TIMEOUT_S)`: how long the API server waited."""
    m = _WAITED_FOR.search(msg)
    return {"reason": "engine_start_timeout", **({"waited_s": int(m.group(1))} if m else {})}


def rpc_timeout(_msg: str, m: Match) -> Fields:
    """vLLM's multiprocessing executor: `RPC call to sample_tokens timed out.`: a worker did
    not answer the engine in time (`method`, the call it waited on)."""
    assert m is not None
    return {"reason": "worker_hung", "method": m.group(1)}


def signal_name(_msg: str, m: Match) -> Fields:
    """absl's `*** SIGABRT received at time=1720159248 on cpu 5 ***`: the signal's reason."""
    assert m is not None
    sig = _SIGNAL_NAMES.get(m.group(1))
    return {"reason": _SIGNALS.get(sig, "process_died") if sig else "process_died",
            **({"signal": sig} if sig else {})}


_WAITED = re.compile(r"found in ([0-9]{1,9}) seconds")


def workers_waiting(msg: str, _m: Match = None) -> Fields:
    """vLLM's `No available shared memory broadcast block found in 60 seconds`: a process
    waited that long on the others (`waited_s`)."""
    m = _WAITED.search(msg)
    return {"reason": "workers_waiting", **({"waited_s": int(m.group(1))} if m else {})}


_PORT = re.compile(r"bind on address \('[^']{0,100}', ([0-9]{1,5})\)| at ([0-9]{1,5}) is not available")
_HOLDER = re.compile(r"\bpid=([0-9]{1,10})")


def port_in_use(msg: str, _m: Match = None) -> Fields:
    """The server's port is taken: `port` where the line names it, the holder's `holder_pid`
    where SGLang says which process holds it."""
    out: Fields = {"reason": "port_in_use"}
    if (m := _PORT.search(msg)) is not None:
        out["port"] = int(m.group(1) or m.group(2))
    if (h := _HOLDER.search(msg)) is not None:
        out["holder_pid"] = int(h.group(1))
    return out


_STUCK = re.compile(r"stuck for ([0-9]{1,9}) seconds")


def nccl_hang(msg: str, _m: Match = None) -> Fields:
    """PyTorch's NCCL watchdog stuck or its heartbeat monitor timed out: a collective hung,
    and the process is ended; `stuck_s` where the line says for how long."""
    out: Fields = {"reason": "nccl_hang"}
    m = _STUCK.search(msg)
    if m is not None:
        out["stuck_s"] = int(m.group(1))
    return out


def shell_signal(_msg: str, m: Match) -> Fields:
    """The shell's report of a child's death: `Segmentation fault (core dumped)`, `Killed`."""
    assert m is not None
    word = next(g for g in m.groups() if g)
    return {"reason": _SHELL[word]}


def fatal_python(msg: str, _m: Match = None) -> Fields:
    """`Fatal Python error: Segmentation fault` (faulthandler): the signal, when it names one."""
    for word, reason in _SHELL.items():
        if word in msg:
            return {"reason": reason}
    return {"reason": "fatal_python_error"}


def exception_type(_msg: str, m: Match) -> Fields:
    """`AttributeError: module 'x' has no attribute 'y'`, `torch.AcceleratorError: ...`: the
    exception's type as printed (`exception`)."""
    assert m is not None
    return {"exception": m.group(1)}


_TORCH_OOM = (  # PyTorch 2.1+, then 1.x / 2.0's figures in parentheses
    re.compile(r"Tried to allocate ([0-9.]+) ([KMG]iB|bytes?)\. ?GPU ?(\d+) has a total capacity "
               r"of ([0-9.]+) ([KMG]iB) of which ([0-9.]+) ([KMG]iB|bytes?) is free"),
    re.compile(r"Tried to allocate ([0-9.]+) ([KMG]iB|bytes?) \(GPU ?(\d+); ([0-9.]+) ([KMG]iB) "
               r"total capacity; [^;]*; ([0-9.]+) ([KMG]iB|bytes?) free"),
)
_TORCH_IN_USE = re.compile(r"this process has ([0-9.]+) ([KMG]iB) memory in use")
_TO_GIB = {"KiB": 1 / (1 << 20), "MiB": 1 / 1024, "GiB": 1.0, "byte": 1 / (1 << 30),
           "bytes": 1 / (1 << 30)}


def _gib(value: str, unit: str) -> float | None:
    v = to_float(value)
    return None if v is None else round(v * _TO_GIB[unit], 6)


def torch_oom(msg: str, _m: Match = None) -> Fields:
    """PyTorch's `CUDA out of memory. Tried to allocate 138.00 MiB. GPU 0 has a total capacity
    of 79.15 GiB of which 2.19 MiB is free. Including non-PyTorch memory, this process has
    79.12 GiB memory in use.`: what was asked, what the GPU had left, and what this process
    held, in GiB (`asked_gb`, `free_gb`, `total_gb`, `process_gb`), where printed."""
    out: Fields = {}
    for pattern in _TORCH_OOM:
        m = pattern.search(msg)
        if m is not None:
            out.update(device=m.group(3), asked_gb=_gib(m.group(1), m.group(2)),
                       total_gb=_gib(m.group(4), m.group(5)),
                       free_gb=_gib(m.group(6), m.group(7)))
            break
    m = _TORCH_IN_USE.search(msg)
    if m is not None:
        out["process_gb"] = _gib(m.group(1), m.group(2))
    return out


def startup_free_memory(msg: str, _m: Match = None) -> Fields:
    """vLLM's `Free memory on device cuda:0 (3.10/79.11 GiB) on startup is less than desired
    GPU memory utilization (0.9, 71.2 GiB)`: the GPU was already in use when it started."""
    out: Fields = {"reason": "gpu_memory_taken"}
    m = _FREE.search(msg)
    if m is None:
        return {**out, "hint": _TAKEN_HINT}
    free, total, util, want = (to_float(m.group(i)) for i in range(2, 6))
    out.update(device=m.group(1) or None, free_gb=free, total_gb=total,
               gpu_memory_utilization=util, requested_gb=want)
    if free is not None and total is not None and total >= free:
        out["held_gb"] = round(total - free, 2)
        out["hint"] = (f"Only {free:g} of {total:g} GiB of this GPU was free at startup: another "
                       f"process holds {total - free:.1f} GiB (often a stale server from an "
                       "earlier run, such as an orphaned VLLM::EngineCore: find it with "
                       "nvidia-smi and stop it), or lower --gpu-memory-utilization below "
                       f"{free / total:.2f}." if total else _TAKEN_HINT)
    else:
        out["hint"] = _TAKEN_HINT
    return out


_TAKEN_HINT = ("Another process holds memory on this GPU (often a stale server from an earlier "
               "run, such as an orphaned VLLM::EngineCore: find it with nvidia-smi and stop "
               "it), or lower --gpu-memory-utilization.")


_HOST_ASKED = re.compile(r"Requesting ([0-9.]+) GB but only have ([0-9.]+) GB free")


def host_memory(msg: str, _m: Match = None) -> Fields:
    """SGLang's host pool of the hierarchical cache that host RAM cannot hold: what it asked
    for and what was free (`requested_gb`, `host_free_gb`), where printed."""
    out: Fields = {"reason": "host_memory"}
    if (m := _HOST_ASKED.search(msg)) is not None:
        out.update(requested_gb=to_float(m.group(1)), host_free_gb=to_float(m.group(2)))
    return out


def nccl_timeout(msg: str, _m: Match = None) -> Fields:
    """torch's `Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5,
    OpType=ALLREDUCE, ..., Timeout(ms)=600000) ran for 600012 milliseconds before timing out.`"""
    out: Fields = {"reason": "nccl_timeout"}
    m = _TIMEOUT.search(msg)
    if m is not None:
        out.update(op=m.group(1), timeout_ms=int(m.group(2)), ran_for_ms=int(m.group(3)))
    return out


def dist_backend(msg: str, _m: Match = None) -> Fields:
    """`DistBackendError: NCCL error in: ...` or `... Watchdog caught collective operation
    timeout ...`: the collective failed, or it hung."""
    if "timeout" in msg.lower() or "timed out" in msg:
        return nccl_timeout(msg)
    return {"reason": "nccl_error"}


def scheduler_stats(msg: str, _m: Match = None) -> Fields | None:
    """vLLM's `Dumping scheduler stats: SchedulerStats(num_running_reqs=12, num_waiting_reqs=3,
    kv_cache_usage=0.61, ...)` before it re-raises: the engine's last state."""
    out: Fields = {"reason": "engine_state"}
    for key, value in _SCHED_STATS.findall(msg):
        num = to_float(value)
        name = _SCHED_KEYS[key]
        if num is None or name in out:
            continue
        if name == "token_usage":
            out[name] = num if num <= 1 else None
        else:
            out[name] = int(num) if num == int(num) else None
    return out


def cuda_error(msg: str, _m: Match = None) -> Fields:
    """`CUDA error: misaligned address` and the like: the CUDA context is lost."""
    m = re.search(r"CUDA error: ([^.\n]{1,120})", msg)
    return {"reason": "cuda_error", "detail": m.group(1).strip() if m else None}


def cpp_terminate(msg: str, _m: Match = None) -> Fields:
    """`terminate called after throwing an instance of 'c10::DistBackendError'`: the C++
    runtime aborts the process; a collective's failure says so."""
    if "DistBackendError" in msg:
        return {"reason": "nccl_error", "detail": "c10::DistBackendError"}
    m = re.search(r"instance of '([^']{1,120})'", msg)
    return {"reason": "abort", "detail": m.group(1) if m else None}


def device_assert(msg: str, _m: Match = None) -> Fields:
    """A kernel's `Assertion `t >= 0 && t < n_classes` failed.` (one line per failing thread),
    or the `CUDA error: device-side assert triggered` that follows it."""
    m = re.search(r"Assertion `(.{1,200})` failed", msg)
    return {"reason": "device_assert", "detail": m.group(1) if m else None}


# What a pool that does not fit says the share must be: `Raise --mem-fraction-static above 0.612`,
# `to at least 0.7`; and the share it ran with, `under --mem-fraction-static=0.5`
_FRACTION_NEEDED = re.compile(r"--mem-fraction-static (?:to )?(?:above|at least|>=?) ?([01]?\.[0-9]{1,4})")
_FRACTION_NOW = re.compile(r"(?:--mem-fraction-static|mem_fraction_static) ?= ?([01]?\.[0-9]{1,4})")


def mem_fraction_short(msg: str, _m: Match = None) -> Fields:
    """A KV (or state) pool that does not fit in the memory share: the share the line says is
    needed (`needed_fraction`) and the one it ran with (`mem_fraction_static`), where printed."""
    out: Fields = {"reason": "mem_fraction"}
    if (m := _FRACTION_NEEDED.search(msg)) is not None:
        out["needed_fraction"] = to_float(m.group(1))
    if (m := _FRACTION_NOW.search(msg)) is not None:
        out["mem_fraction_static"] = to_float(m.group(1))
    return out


_KV_HINT = ("The KV cache does not fit: raise --gpu-memory-utilization (and check that no other "
            "process holds GPU memory), or lower --max-model-len.")


# vLLM v1/core/kv_cache_utils.py: `To serve at least one request with the model's (0.10: `models's`)
# max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache
# memory (9.50 GiB). Based on the available memory, the estimated maximum model length is 77840.`
# and before it `The model's max seq len (131072) is larger than the maximum number of tokens that
# can be stored in KV cache (52384).`
_KV_NEED = re.compile(r"max seq len \(([0-9]+)\), \(([0-9.]+) GiB KV cache is needed, which is larger "
                      r"than the available KV cache memory \(([0-9.]+) GiB\)")
_KV_TOKENS = re.compile(r"max seq len \(([0-9]+)\) is larger than the maximum number of tokens "
                        r"that can be stored in KV cache \(([0-9]+)\)")
_KV_ESTIMATE = re.compile(r"estimated maximum model length is ([0-9]+)")


def kv_cache_too_small(msg: str, _m: Match = None) -> Fields:
    """vLLM's startup capacity errors: no memory left for the KV cache blocks, or not enough
    for one request of the model's max length (with the figures it prints, and the length
    that would fit where it says)."""
    out: Fields = {"reason": "kv_cache_too_small"}
    if (m := _KV_NEED.search(msg)) is not None:
        out.update(max_model_len=int(m.group(1)), needed_gb=to_float(m.group(2)),
                   available_gb=to_float(m.group(3)))
    elif (t := _KV_TOKENS.search(msg)) is not None:
        out.update(max_model_len=int(t.group(1)), kv_tokens=int(t.group(2)))
    fits = _KV_ESTIMATE.search(msg)
    fit = int(fits.group(1)) if fits else out.get("kv_tokens")
    if "Cannot auto-fit max_model_len" in msg:  # --max-model-len -1 (auto) found no length
        out["hint"] = ("Not one token of KV cache fits beside the weights: raise "
                       "--gpu-memory-utilization if the GPU has memory to spare (and check that "
                       "no other process holds some), else spread the weights over more GPUs (a "
                       "larger --tensor-parallel-size) or use a quantized model.")
    elif "already takes all device memory" in msg:
        # vLLM 0.34's extensible KV cache takes all the memory the weights leave (a share of
        # 1.0): there is no share to raise; the request or the weights must be smaller
        out["hint"] = ((f"The KV cache holds at most {fit:,} tokens of one request: lower "
                        f"--max-model-len to {fit:,} or less, " if fit else "Lower --max-model-len ")
                       + "or --max-num-seqs; else spread the weights over more GPUs (a larger "
                       "--tensor-parallel-size) or use a quantized model. The KV cache already "
                       "takes all the memory the weights leave: a higher "
                       "--gpu-memory-utilization gives it nothing.")
        if fit and out.get("max_model_len"):
            out["estimated_max_model_len"] = fit
    elif fit and out.get("max_model_len"):
        out["estimated_max_model_len"] = fit
        out["hint"] = (f"The KV cache holds at most {fit:,} tokens of one request, fewer than "
                       f"--max-model-len {out['max_model_len']:,}: lower --max-model-len to "
                       f"{fit:,} or less, or raise --gpu-memory-utilization (and check that no "
                       "other process holds GPU memory).")
    else:
        out["hint"] = _KV_HINT
    return out


def memory_profiling(msg: str, _m: Match = None) -> Fields:
    """vLLM's startup assertion `Error in memory profiling. Initial free memory 70.1 GiB, current
    free memory 75.3 GiB.`: another process on the GPU freed (or took) memory while the engine
    measured what it may use, so the KV cache cannot be sized."""
    out: Fields = {"reason": "gpu_memory_changed", "hint": _CHANGED_HINT}
    m = _PROFILED.search(msg)
    if m is not None:
        scale = 1.0 if m.group(2) else float(1 << 30)  # bytes before 0.8
        before, now = to_float(m.group(1)), to_float(m.group(3))
        if before is not None and now is not None:
            out.update(initial_free_gb=round(before / scale, 2), free_gb=round(now / scale, 2))
    return out


# `Initial free memory 70.10 GiB, current free memory 75.30 GiB` (0.8+); bytes before
_PROFILED = re.compile(r"Initial free memory ([0-9.]+)( GiB)?, current free memory ?([0-9.]+)")
_CHANGED_HINT = ("Another process on this GPU changed its memory while the server measured it at "
                 "startup: give the server GPUs of its own (or its own container), then start "
                 "it again.")
