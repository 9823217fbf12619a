"""Failure wordings as families: every OOM, crash and error line names its reason (and its
component where it prints one). Lines are real where real-logs has them, else filled in by hand
from the format strings quoted in the log-shapes notes (section 2); values read off by hand."""

from __future__ import annotations

from typing import Any

import pytest

from dash.core.log.parse import parse_line

VLLM = "(EngineCore_DP0 pid=2201) ERROR 09-10 12:00:10 [core.py:586] "


def _event(line: str) -> dict[str, Any]:
    rec = parse_line(line, 1)
    assert rec is not None and rec["kind"] == "event", line
    return rec


@pytest.mark.parametrize(("line", "want"), [
    # real: sglang-4547 (CUDA runtime OOM inside the overlap thread)
    ("RuntimeError: CUDA error: out of memory", {"event": "oom", "reason": "cuda_oom"}),
    # real: vllm-9290
    ("ERROR 10-11 12:27:29 engine.py:157] OutOfMemoryError('CUDA out of memory. Tried to allocate "
     "138.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 2.19 MiB is free.')",
     {"event": "oom", "reason": "cuda_oom", "engine": "vllm", "device": "0",
      "asked_gb": 0.134766, "total_gb": 79.15, "free_gb": 0.002139}),
    # PyTorch 2.1+'s wording, whole (sglang's scheduler, the simulator's format)
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 3 has a total "
     "capacity of 79.19 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process "
     "has 78.16 GiB memory in use. Of the allocated memory 75.85 GiB is allocated by PyTorch",
     {"event": "oom", "reason": "cuda_oom", "device": "3", "asked_gb": 4.0, "total_gb": 79.19,
      "free_gb": 1.02, "process_gb": 78.16}),
    # PyTorch 1.x / 2.0: the figures in parentheses
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.15 "
     "GiB total capacity; 76.31 GiB already allocated; 2.19 MiB free; 77.52 GiB reserved in total "
     "by PyTorch)",
     {"event": "oom", "reason": "cuda_oom", "device": "0", "asked_gb": 0.019531,
      "total_gb": 79.15, "free_gb": 0.002139}),
    # NCCL's own CUDA failure (src/include/checks.h CUDACHECK), the detail of a DistBackendError
    ("gpu-node-1:1187:1201 [3] NCCL WARN Cuda failure 'out of memory'",
     {"event": "oom", "reason": "nccl_cuda_oom"}),
    ("Cuda failure 'out of memory'", {"event": "oom", "reason": "nccl_cuda_oom"}),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
     {"event": "oom", "reason": "cublas_alloc"}),
    # vLLM startup: another process holds the GPU (v1/worker/utils.py, 0.15+)
    (VLLM + "ValueError: Free memory on device cuda:0 (3.10/79.11 GiB) on startup is less than "
     "desired GPU memory utilization (0.9, 71.2 GiB). Decrease GPU memory utilization or reduce "
     "GPU memory used by other processes.",
     {"event": "oom", "reason": "gpu_memory_taken", "device": "cuda:0", "free_gb": 3.1,
      "total_gb": 79.11, "gpu_memory_utilization": 0.9, "requested_gb": 71.2, "held_gb": 76.01,
      "rank": "DP0", "component": "EngineCore"}),
    # the same before 0.15 (gpu_worker.py: no device name)
    ("ValueError: Free memory on device (10.5/79.19 GiB) on startup is less than desired GPU "
     "memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory "
     "used by other processes.",
     {"event": "oom", "reason": "gpu_memory_taken", "device": None, "free_gb": 10.5,
      "held_gb": 68.69}),
    ("ValueError: No available memory for the cache blocks. Try increasing "
     "`gpu_memory_utilization` when initializing the engine.",
     {"event": "oom", "reason": "kv_cache_too_small"}),
    ("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens "
     "that can be stored in KV cache (52384). Try increasing `gpu_memory_utilization` or "
     "decreasing `max_model_len` when initializing the engine.",
     {"event": "oom", "reason": "kv_cache_too_small", "max_model_len": 131072, "kv_tokens": 52384,
      "estimated_max_model_len": 52384}),
    ("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB "
     "KV cache is needed, which is larger than the available KV cache memory (9.50 GiB).",
     {"event": "oom", "reason": "kv_cache_too_small", "max_model_len": 131072, "needed_gb": 16.0,
      "available_gb": 9.5, "estimated_max_model_len": None}),
    # vLLM v1/core/kv_cache_utils.py (main): f"To serve at least one request with the model's max
    # seq len ({max_model_len}), ({format_gib(needed_memory)} GiB KV cache is needed, which is
    # larger than the available KV cache memory ({format_gib(available_memory)} GiB).
    # {estimated_msg}" with estimated_msg "Based on the available memory, the estimated maximum
    # model length is {estimated_max_len}. "
    (VLLM + "ValueError: To serve at least one request with the model's max seq len (262144), "
     "(24.00 GiB KV cache is needed, which is larger than the available KV cache memory (8.04 "
     "GiB). Based on the available memory, the estimated maximum model length is 87840. Try "
     "increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
     "decreasing `max_model_len` when initializing the engine.",
     {"event": "oom", "reason": "kv_cache_too_small", "max_model_len": 262144, "needed_gb": 24.0,
      "available_gb": 8.04, "estimated_max_model_len": 87840, "component": "EngineCore"}),
    # vLLM v1/worker/gpu_worker.py determine_available_memory: "Error in memory profiling. "
    # f"Initial free memory {GiB(self.init_snapshot.free_memory)} GiB, current free memory
    # {GiB(free_gpu_memory)} GiB. This happens when other processes sharing the same container
    # release GPU memory while vLLM is profiling during initialization. ..."
    (VLLM + "AssertionError: Error in memory profiling. Initial free memory 70.1 GiB, current "
     "free memory 75.3 GiB. This happens when other processes sharing the same container release "
     "GPU memory while vLLM is profiling during initialization. To fix this, ensure consistent "
     "GPU memory allocation or isolate vLLM in its own container.",
     {"event": "oom", "reason": "gpu_memory_changed", "initial_free_gb": 70.1, "free_gb": 75.3}),
    # the same in V0 worker.py, in bytes: f"Initial free memory {self.init_gpu_memory}, current
    # free memory {free_gpu_memory}. This happens when the GPU memory was not properly cleaned up
    # before initializing the vLLM instance."
    ("AssertionError: Error in memory profiling. Initial free memory 12746588160, current free "
     "memory 149023916032. This happens when the GPU memory was not properly cleaned up before "
     "initializing the vLLM instance.",
     {"event": "oom", "reason": "gpu_memory_changed", "initial_free_gb": 11.87,
      "free_gb": 138.79}),
    ("[2026-06-01 12:03:11] Decode out of memory. Try to lower your batch size.",
     {"event": "oom", "reason": "kv_pool_full"}),
    ("Prefill out of memory. This should nerver happen.", {"event": "oom", "reason": "kv_pool_full"}),
    ("ValueError: Not enough host memory available. Requesting 96.00 GB but only have 40.12 GB "
     "free. Please reduce the size of the hierarchical cache.",
     {"event": "oom", "reason": "host_memory"}),
    # SGLang 0.5.13+: the pools of a hybrid model (mamba, sliding window) that do not fit
    ("RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
     "Computed max_mamba_cache_size=0 (total_rest_memory=1.20 GB, mamba_cache_per_req=52.00 MB). "
     "Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, (3) reduce "
     "--speculative-num-draft-tokens, or (4) use GPUs with more memory.",
     {"event": "oom", "reason": "mem_fraction"}),
    ("ValueError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
     "max_mamba_cache_size=3, mamba_ratio=4, resulting max_num_reqs=0. Try: (1) reduce "
     "--max-running-requests, (2) increase --mem-fraction-static",
     {"event": "oom", "reason": "mem_fraction"}),
    ("ValueError: Loaded weights leave no GPU memory for the KV cache under "
     "--mem-fraction-static=0.8. Raise --mem-fraction-static above 0.85.",
     {"event": "oom", "reason": "mem_fraction", "needed_fraction": 0.85,
      "mem_fraction_static": 0.8}),
    # sglang#7691: the memory profile leaves no tokens at all for the pool (on every rank)
    ("[2025-07-02 07:41:59 DP0 TP0] max_total_tokens=131072 is larger than the profiled value "
     "-561981. Use the profiled value instead.",
     {"event": "oom", "reason": "mem_fraction", "asked_tokens": 131072, "rank": "DP0 TP0"}),
    # a wording not listed: an exception whose advice is a larger fraction
    ("RuntimeError: DSV4 c4 index pool exhausted: need 12 new slots, available=3. Raise "
     "--mem-fraction-static, lower --max-running-requests.",
     {"event": "oom", "reason": "mem_fraction", "needed_fraction": None}),
    # vLLM 0.11+: the weights alone do not fit; the CUDA OOM it caught is quoted
    (f"{VLLM}Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization "
     "to free memory for weights, increasing --tensor-parallel-size, or using --quantization. See "
     "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. (original "
     "error: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 has a total capacity of 31.36 "
     "GiB of which 53.06 MiB is free. Including non-PyTorch memory, this process has 31.30 GiB "
     "memory in use.)",
     {"event": "oom", "reason": "weights_oom", "total_gb": 31.36, "process_gb": 31.3}),
])
def test_memory_exhaustion_families(line: str, want: dict[str, Any]) -> None:
    rec = _event(line)
    assert {k: rec.get(k) for k in want} == want


def test_the_healthy_budget_line_that_starts_the_same_way_is_no_oom() -> None:
    """vLLM >= 0.10.2 prints an INFO line beginning like the startup OOM on every start."""
    line = ("(EngineCore_DP0 pid=2201) INFO 09-10 12:00:10 [gpu_worker.py:276] Free memory on "
            "device (78.5/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 "
            "GiB). Actual usage is 14.99 GiB for weight, 4.35 GiB for peak activation, 0.29 GiB "
            "for non-torch memory, and 0.58 GiB for CUDAGraph memory.")
    rec = parse_line(line, 1)
    assert rec is None or rec.get("event") != "oom"


@pytest.mark.parametrize(("line", "want"), [
    # v1/worker/gpu_worker.py as vLLM 0.10.2-0.11 prints it (the KV memory in bytes)
    ("(EngineCore_DP0 pid=3021) INFO 09-23 18:12:39 [gpu_worker.py:391] Free memory on device "
     "(78.66/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). Actual "
     "usage is 14.08 GiB for weight, 1.97 GiB for peak activation, 0.07 GiB for non-torch memory, "
     "and 0.67 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with "
     "`--kv-cache-memory=58333988249` to fit into requested memory, or "
     "`--kv-cache-memory=66273897472` to fully utilize gpu memory. Current kv cache memory in use "
     "is 59212694937 bytes.",
     {"free_gb": 78.66, "total_gb": 79.19, "gpu_memory_utilization": 0.9, "requested_gb": 71.27,
      "weights_gb": 14.08, "activation_gb": 1.97, "non_torch_gb": 0.07, "cudagraph_gb": 0.67,
      "kv_size_gb": 55.15, "rank": "DP0"}),
    # and later: weights and non-torch memory as one, the KV memory in GiB
    ("(EngineCore pid=12764) INFO 08-22 20:20:16 [gpu_worker.py:789] Free memory on device "
     "(22.45/23.99 GiB) on startup. Desired GPU memory utilization is (0.85, 20.39 GiB). Actual "
     "usage is 1.49 GiB for consumed memory (weights + non-torch), 0.25 GiB for peak activation, "
     "and 0.37 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with "
     "`--kv-cache-memory=19468210074` (18.13 GiB) to fit into requested memory, or "
     "`--kv-cache-memory=21679683072` (20.19 GiB) to fully utilize gpu memory. Current kv cache "
     "memory in use is 18.65 GiB.",
     {"weights_gb": 1.49, "activation_gb": 0.25, "non_torch_gb": None, "cudagraph_gb": 0.37,
      "kv_size_gb": 18.65, "requested_gb": 20.39}),
])
def test_the_startup_memory_budget_is_a_capacity_event(line: str, want: dict[str, Any]) -> None:
    """vLLM's account of the GPU's memory at startup, every figure it prints."""
    rec = _event(line)
    assert rec["event"] == "kv_cache" and {k: rec.get(k) for k in want} == want


def test_the_stale_process_hint_says_what_holds_the_gpu() -> None:
    rec = _event("ValueError: Free memory on device cuda:0 (3.10/79.11 GiB) on startup is less "
                 "than desired GPU memory utilization (0.9, 71.2 GiB).")
    assert "another process holds 76.0 GiB" in rec["hint"] and "nvidia-smi" in rec["hint"]


@pytest.mark.parametrize(("line", "want"), [
    # `X hit an exception` from every SGLang component, not only the Scheduler
    ("[2026-06-01 12:10:05] Scheduler hit an exception: Traceback (most recent call last):",
     {"reason": "exception", "component": "Scheduler"}),
    ("[2025-03-11 10:00:05 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):",
     {"reason": "exception", "component": "TpModelWorkerClient", "rank": "TP0"}),
    ("[2026-06-01 12:10:05] DataParallelController hit an exception: Traceback (most recent call last):",
     {"reason": "exception", "component": "DataParallelController"}),
    ("[2026-06-01 12:10:05] DetokenizerManager hit an exception: Traceback (most recent call last):",
     {"reason": "exception", "component": "DetokenizerManager"}),
    ("[2026-06-01 12:10:05] TokenizerManager hit an exception: Traceback (most recent call last):",
     {"reason": "exception", "component": "TokenizerManager"}),
    ("[2026-06-01 12:10:05] MultiTokenizerRouter hit an exception: Traceback",
     {"reason": "exception", "component": "MultiTokenizerRouter"}),
    ("Exception in ModelRpcClient:", {"reason": "exception", "component": "ModelRpcClient"}),
    ("[2024-08-01 10:00:00 TP0] Exception in ModelTpServer:",
     {"reason": "exception", "component": "ModelTpServer"}),
    # real: vllm-ascend-issue616
    ("^[[1;36m(VllmWorkerProcess pid=176029)^[[0;0m ERROR 04-17 15:30:42 [multiproc_worker_utils.py:238] "
     "Exception in worker VllmWorkerProcess while processing method load_model.^M",
     {"reason": "exception", "component": "VllmWorkerProcess"}),
    (VLLM + "EngineCore encountered a fatal error.", {"reason": "exception", "component": "EngineCore"}),
    ("(VllmWorker rank=3 pid=1187) ERROR 05-01 12:00:10 [multiproc_executor.py:470] WorkerProc hit "
     "an exception.", {"reason": "exception", "component": "WorkerProc", "rank": "rank=3"}),
    ("(APIServer pid=1) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
     "See stack trace (above) for the root cause.",
     {"reason": "engine_dead", "component": "EngineCore"}),
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
     "{'EngineCore_DP0': 1}", {"reason": "init_failed"}),
    (VLLM + "EngineCore failed to start.", {"reason": "init_failed", "component": "EngineCore"}),
    # process deaths: the exit code says how
    ("[2026-06-01 12:10:07] Subprocess detokenizer (pid=4100) crashed with exit code -9. "
     "Triggering SIGQUIT for cleanup...", {"reason": "killed", "signal": 9}),
    ("[2025-08-01 12:10:07] Scheduler or DataParallelController 4242 terminated with -11",
     {"reason": "segfault", "signal": 11}),
    ("RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is "
     "-9 (SIGKILL), a common cause is the OS OOM killer.", {"reason": "killed", "signal": 9}),
    ("(APIServer pid=1) ERROR 05-01 12:00:10 [core_client.py:1] Engine core proc EngineCore_DP0 "
     "died unexpectedly, shutting down client.",
     {"reason": "process_died", "component": "EngineCore_DP0"}),
    ("Worker proc VllmWorker-1 died unexpectedly (exit code: -6), shutting down executor.",
     {"reason": "abort", "signal": 6, "component": "VllmWorker-1"}),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGABRT",
     {"reason": "abort", "signal": 6}),
    # NCCL and collectives (torch ProcessGroupNCCL.cpp, NCCLUtils.hpp; pynccl)
    ("[rank0]:[E1120 12:00:00.123456 1234 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
     "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
     "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
     {"reason": "nccl_timeout", "op": "ALLREDUCE", "timeout_ms": 600000, "ran_for_ms": 600012}),
    ("(VllmWorker rank=3 pid=1187) torch.distributed.DistBackendError: NCCL error in: "
     "../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled cuda error (run with "
     "NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
     {"reason": "nccl_error", "rank": "rank=3", "component": "VllmWorker"}),
    ("terminate called after throwing an instance of 'c10::DistBackendError'",
     {"reason": "nccl_error"}),
    ("RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
     {"reason": "nccl_error"}),
    # CUDA kernel faults (one assert line per failing thread, then the Python exception)
    ("/pytorch/aten/src/ATen/native/cuda/Loss.cu:245: nll_loss_forward_reduce_cuda_kernel_2d: "
     "block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.",
     {"reason": "device_assert", "detail": "t >= 0 && t < n_classes"}),
    ("RuntimeError: CUDA error: device-side assert triggered", {"reason": "device_assert"}),
    ("torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
     {"reason": "illegal_memory_access"}),
    ("RuntimeError: CUDA error: misaligned address", {"reason": "cuda_error",
                                                      "detail": "misaligned address"}),
    # signals, as the shell and faulthandler report them
    ("Segmentation fault (core dumped)", {"reason": "segfault"}),
    ("Aborted (core dumped)", {"reason": "abort"}),
    ("launch.sh: line 7: 4021 Segmentation fault      (core dumped) python -m sglang.launch_server",
     {"reason": "segfault"}),
    ("Fatal Python error: Segmentation fault", {"reason": "segfault"}),
    ("Fatal Python error: Aborted", {"reason": "abort"}),
    ("Bus error (core dumped)", {"reason": "bus_error"}),
    # absl's failure signal handler, in a process tag or bare
    ("(RayWorkerWrapper pid=4009) *** SIGABRT received at time=1720159248 on cpu 5 ***",
     {"reason": "abort", "signal": 6, "component": "RayWorkerWrapper"}),
    ("*** SIGSEGV received at time=1720159248 on cpu 5 ***", {"reason": "segfault", "signal": 11}),
    # PyTorch's NCCL watchdog hang, in its own prefix: the rank and the month-day stamp read
    ("[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) "
     "Rank 6] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
     "monitoring enqueued collectives.",
     {"reason": "nccl_hang", "stuck_s": 480, "rank": "rank=6", "ts": "04-29T13:55:49"}),
    ("[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 2 Rank 0] Heartbeat monitor timed out! Process "
     "will be terminated after dumping debug info. workMetaList_.size()=9",
     {"reason": "nccl_hang", "rank": "rank=0", "ts": None}),
    ("[rank1]:[F1019 01:14:03.358291284 ProcessGroupNCCL.cpp:1614] [PG ID 0 PG GUID 0(default_pg) "
     "Rank 1] Terminating the process after attempting to dump debug info, due to "
     "ProcessGroupNCCL watchdog hang.", {"reason": "nccl_hang", "ts": "10-19T01:14:03"}),
    # the server's port is taken: Python's socket error, uvicorn's, SGLang's wait for it
    ("(APIServer pid=1) OSError: [Errno 98] Address already in use", {"reason": "port_in_use"}),
    ("[2026-11-20 10:00:40] ERROR:    [Errno 98] error while attempting to bind on address "
     "('0.0.0.0', 30000): address already in use", {"reason": "port_in_use", "port": 30000}),
    ("[2026-11-20 10:00:40] ValueError: Server port at 30000 is not available in 30 seconds. "
     "Server port is used by a process already. process.name()='python3' pid=4021",
     {"reason": "port_in_use", "port": 30000, "holder_pid": 4021}),
    # SGLang: a SIGTERM while the health check fails is the server stopped for not answering
    ("[2026-11-20 10:01:05] Signal SIGTERM received while health check failed. Force exiting.",
     {"reason": "unhealthy"}),
    # vLLM V1's API server loses its output handler; V0's launcher and workers
    ("(APIServer pid=1) ERROR 06-01 12:00:30 [async_llm.py:957] AsyncLLM output_handler failed.",
     {"reason": "exception", "component": "AsyncLLM"}),
    ("CRITICAL 11-20 10:00:01 launcher.py:99] MQLLMEngine is already dead, terminating server "
     "process", {"reason": "engine_dead"}),
    ("CRITICAL 11-20 10:00:02 [launcher.py:116] AsyncLLMEngine has failed, terminating server "
     "process", {"reason": "engine_dead"}),
    ("ERROR 10-30 11:56:48 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 198 died, "
     "exit code: -6", {"reason": "abort", "signal": 6, "component": "VllmWorkerProcess"}),
    # vLLM V1: a core ended by a signal while it started is that signal's crash; one that
    # exited of its own is a start that failed
    ("(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. "
     "Failed core proc(s): {'EngineCore_DP0': -9}",
     {"reason": "killed", "signal": 9, "component": "EngineCore_DP0"}),
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core "
     "proc(s): {'EngineCore_DP1': 1}", {"reason": "init_failed", "exit_code": 1,
                                        "component": "EngineCore_DP1"}),
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core "
     "proc(s): {}", {"reason": "init_failed", "component": None}),
    # vLLM V1's API server gave up on its engine; its executor on a worker
    ("(APIServer pid=1) ERROR 12-01 10:10:00 [core_client.py:600] TimeoutError: Timed out waiting "
     "for engine core processes to start. This is often caused by slow weight loading for large "
     "models. Waited 600s (configured by VLLM_ENGINE_READY_TIMEOUT_S). To increase the timeout, "
     "set the environment variable: VLLM_ENGINE_READY_TIMEOUT_S=<seconds>",
     {"reason": "engine_start_timeout", "waited_s": 600}),
    (f"{VLLM}TimeoutError: RPC call to sample_tokens timed out.",
     {"reason": "worker_hung", "method": "sample_tokens", "rank": "DP0"}),
])
def test_crash_families(line: str, want: dict[str, Any]) -> None:
    rec = _event(line)
    assert rec["event"] == "crash", line
    assert {k: rec.get(k) for k in want} == want


@pytest.mark.parametrize("line", [
    "[2026-06-01 12:10:05] Aborted request abc123 because the client went away",
    "INFO:     Exception in ASGI application",
    "Task exception was never retrieved: Exception in callback foo()",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    # a server that moves on to another port
    "(APIServer pid=1) WARNING 06-01 12:00:00 [utils.py:841] Address already in use. Retrying "
    "with a new port.",
    "INFO 06-01 12:00:00 [network.py:33] Port 8000 is already in use, trying port 8001",
])
def test_near_misses_are_no_crash(line: str) -> None:
    rec = parse_line(line, 1)
    assert rec is None or rec.get("event") != "crash", line


@pytest.mark.parametrize("line", [
    # SGLang 0.5.23's warning: the pool is smaller than the context, the server runs on
    "[2026-11-20 10:00:24 TP0] KV pool holds 30000 tokens, fewer than --context-length 131072. One "
    "full-length request cannot fit, so long requests will be refused or truncated at serving "
    "time. Lower --context-length, raise --mem-fraction-static, or free memory taken before the "
    "pool is sized.",
    "[2026-11-20 10:00:00] server_args=ServerArgs(mem_fraction_static=0.88, tp_size=1)",
])
def test_advice_in_a_warning_is_no_oom(line: str) -> None:
    rec = parse_line(line, 1)
    assert rec is None or rec.get("event") not in ("oom", "crash"), line


@pytest.mark.parametrize("line", [
    # a traceback's quoted source: the words of the error it raises are no event of their own
    '(APIServer pid=223598)     raise RuntimeError("Engine core initialization failed. "',
    '        "Engine core initialization failed. See root cause above."',
    '    raise ValueError("No available memory for the cache blocks. Try increasing")',
    '    logger.error("Health check failed. Server couldn\'t get a response")',
])
def test_a_tracebacks_source_lines_are_no_events(line: str) -> None:
    assert parse_line(line, 1) is None, line


def test_the_engine_state_of_vllm_0_9s_dump() -> None:
    """Before `Dumping scheduler stats:` (0.10), the dump was the bare `SchedulerStats(...)`
    with `gpu_cache_usage`."""
    rec = _event("ERROR 06-15 13:57:57 [dump_input.py:82] SchedulerStats(num_running_reqs=1, "
                 "num_waiting_reqs=0, gpu_cache_usage=0.0006499203847528667, prefix_cache_stats="
                 "PrefixCacheStats(reset=False, requests=1, queries=12, hits=0))")
    assert (rec["reason"], rec["running_req"], rec["queue_req"], rec["token_usage"]) == (
        "engine_state", 1, 0, 0.0006499203847528667)


def test_the_engine_state_dumped_before_a_fatal_error() -> None:
    """vLLM (dump_input.py) dumps the scheduler's stats before it re-raises: its last state."""
    rec = _event(VLLM + "Dumping scheduler stats: SchedulerStats(num_running_reqs=12, "
                 "num_waiting_reqs=3, step_counter=0, current_wave=0, kv_cache_usage=0.61, "
                 "prefix_cache_stats=PrefixCacheStats(reset=False, requests=2, queries=4096, "
                 "hits=512), spec_decoding_stats=None, num_corrupted_reqs=0)")
    assert {k: rec.get(k) for k in ("event", "reason", "running_req", "queue_req", "token_usage",
                                    "corrupted_req", "rank")} == {
        "event": "error", "reason": "engine_state", "running_req": 12, "queue_req": 3,
        "token_usage": 0.61, "corrupted_req": 0, "rank": "DP0"}


@pytest.mark.parametrize(("line", "want"), [
    ("ncclUnhandledCudaError: Call to CUDA function failed.", "nccl_error"),
    ("gpu-node-1:1187:1201 [3] NCCL WARN NET/IB : Got async event : port error", "nccl_warn"),
    ("[rank7]:[E909 08:45:30.167701534 ProcessGroupNCCL.cpp:2252] [PG ID 2 PG GUID 3 Rank 7]  "
     "failure detected by watchdog at work sequence id: 40231 PG status: last enqueued work: "
     "40267, last completed work: 40230", "nccl_timeout"),
    ("[2025-09-17 16:23:13 TP1] Decode transfer failed for request rank=1 req.rid='c1' "
     "req.bootstrap_room=4242 with exception KVTransferError(bootstrap_room=4242): Failed due to "
     "an unknown reason from another rank", "kv_transfer"),
    ("Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
     "kernels, subsequent GPU operations might run on corrupted/incomplete data.", "nccl_error"),
])
def test_error_details(line: str, want: str) -> None:
    rec = _event(line)
    assert (rec["event"], rec["reason"]) == ("error", want)


def test_a_crash_read_off_an_exception_line_keeps_its_type() -> None:
    rec = _event("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert (rec["event"], rec["reason"], rec["exception"]) == (
        "crash", "illegal_memory_access", "RuntimeError")
    assert _event("torch.OutOfMemoryError: CUDA out of memory.")["exception"] == "torch.OutOfMemoryError"
    assert "exception" not in _event("Received sigquit from a child process.")


@pytest.mark.parametrize(("line", "want"), [
    # SGLang 0.5.23's host pools of the hierarchical cache, each by name
    ("ValueError: Not enough host memory for V4 paged pool c4_indexer. Requesting 210.00 GB but "
     "only have 120.50 GB free.", {"event": "oom", "reason": "host_memory", "requested_gb": 210.0,
                                   "host_free_gb": 120.5}),
    ("ValueError: Not enough host memory for M3.1 NVFP4 KV, index and draft caches",
     {"event": "oom", "reason": "host_memory"}),
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current "
     "value: mem_fraction_static=0.5", {"event": "oom", "mem_fraction_static": 0.5}),
    # vLLM --max-model-len -1 that found no length
    (f"{VLLM}ValueError: Cannot auto-fit max_model_len: not enough GPU memory available to serve "
     "even a single token. Try increasing `gpu_memory_utilization` when initializing the engine.",
     {"event": "oom", "reason": "kv_cache_too_small"}),
    # a bare errno (SGLang's --enable-http-worker-reuseport logs the error itself), a named port
    ("[2026-01-10 10:01:00] [Errno 98] Address already in use", {"event": "crash",
                                                                 "reason": "port_in_use"}),
    ("RuntimeError: engine_info_bootstrap_port 6789 is already in use. When running multiple "
     "instances on the same node, each instance must use a different --engine-info-bootstrap-port.",
     {"event": "crash", "reason": "port_in_use"}),
    ("(Worker_TP0 pid=4400) ERROR 01-10 10:05:00 [multiproc_executor.py:1091] RuntimeError: "
     "Insufficient space in /dev/shm for the worker message queue: 256 MiB required, 64 MiB "
     "free. Increase /dev/shm (e.g. --shm-size or --ipc=host).",
     {"event": "crash", "reason": "shm_too_small"}),
    ("[2026-01-10 10:00:05 TP0] PPConsensusStore background thread crashed: Connection refused",
     {"event": "crash", "reason": "thread_crashed", "component": "PPConsensusStore"}),
    ("[2026-01-10 10:00:09 TP0] Weight cache daemon (pid=5000) exited prematurely with code -9",
     {"event": "crash", "reason": "killed", "signal": 9}),
    # PD disaggregation
    ("[2026-01-10 10:00:04 DP0 TP0] Decode handshake failed for request rank=0 "
     "decode_req.req.rid='a1' with exception KVTransferError(bootstrap_room=42): Failed to get "
     "kvcache from prefill instance, it might be dead", {"event": "error", "reason": "kv_transfer"}),
    ("[2026-01-10 10:00:04 TP0] RuntimeError: Transfer thread failed because of Connection reset "
     "by peer. Prefill instance with bootstrap_port=8998 is dead.",
     {"event": "error", "reason": "prefill_lost"}),
    ("[2026-01-10 10:00:05 TP0] Prefill instance failed to register to bootstrap server after 5 "
     "retries", {"event": "error", "reason": "pd_bootstrap"}),
    ("[2026-01-10 10:00:08 TP0] KV pool holds 30000 tokens, fewer than --context-length 131072. "
     "One full-length request cannot fit.", {"event": "error", "reason": "kv_below_context",
                                             "pool_tokens": 30000, "context_length": 131072}),
])
def test_newer_failure_wordings(line: str, want: dict[str, Any]) -> None:
    rec = _event(line)
    assert {k: rec.get(k) for k in want} == want
