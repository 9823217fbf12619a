"""The grammar's event phrases (`dash.core.log.grammar` assembles them with the prefixes and
the stats families): lifecycle, memory and capacity lines, and every failure wording.

Tried in order; the first phrase that reads a line wins. Matched on message text, never on
level or prefix alone: SGLang prints no level, and a WARNING or ERROR line looks like an INFO
line (reference/log-formats.md sections 5 and 8). Failure phrases are families, keyed on the
stable substring of each wording (log-shapes notes section 2), each with its `reason`:
memory exhaustion is `oom` (run time and startup), what ends a server process is `crash`, and
what may not is `error`.
"""

from __future__ import annotations

from dash.core.log import events as ev
from dash.core.log import failures as fail
from dash.core.log.syntax import Phrase

_SHUTDOWN = Phrase("shutdown", any=("SIGTERM received", "Shutting down", "Finished server process"),
                   examples=("INFO:     Shutting down",))

_STARTUP = (
    Phrase("server_args", any=("server_args=", "non-default args: {", "args: Namespace("),
           starts=("ServerArgs(",), extract=ev.server_args,
           examples=("server_args=ServerArgs(model_path='m', tp_size=2)",
                     "args: Namespace(host=None, port=8000, model='m', tensor_parallel_size=2)")),
    Phrase("retract", any=("out of memory happened", "Retract requests", "Testing retraction"),
           extract=ev.retract,
           examples=("KV cache pool is full. Retract requests. #retracted_reqs: 2, "
                     "#new_token_ratio: 0.4000 -> 0.5322",
                     "decode out of memory happened, #retracted_reqs: 1, "
                     "#new_token_ratio: 0.3000 -> 0.6000")),
    Phrase("retract", every=("preempted", "KV cache space"), extract=ev.retract,
           examples=("Sequence group 3 is preempted by PreemptionMode.RECOMPUTE mode because "
                     "there is not enough KV cache space.",)),
)

# Memory exhaustion, at run time and at startup (capacity misconfiguration)
_OOM = (
    Phrase("oom", every=("Free memory on device", "on startup is less than"),
           extract=fail.startup_free_memory,
           examples=("ValueError: Free memory on device cuda:0 (3.10/79.11 GiB) on startup is "
                     "less than desired GPU memory utilization (0.9, 71.2 GiB). Decrease GPU "
                     "memory utilization or reduce GPU memory used by other processes.",)),
    Phrase("oom", any=("No available memory for the cache blocks",
                       "that can be stored in KV cache",
                       "larger than the available KV cache memory",
                       "Cannot auto-fit max_model_len"),
           extract=fail.kv_cache_too_small,
           examples=("ValueError: No available memory for the cache blocks. Try increasing "
                     "`gpu_memory_utilization` when initializing the engine.",)),
    Phrase("oom", any=("Error in memory profiling",), extract=fail.memory_profiling,
           examples=("AssertionError: Error in memory profiling. Initial free memory 70.10 GiB, "
                     "current free memory 75.30 GiB. This happens when other processes sharing "
                     "the same container release GPU memory while vLLM is profiling during "
                     "initialization.",)),
    Phrase("oom", any=("Cuda failure 'out of memory'",), fields={"reason": "nccl_cuda_oom"},
           examples=("gpu-node:1187:1187 [3] NCCL WARN Cuda failure 'out of memory'",)),
    Phrase("oom", any=("CUBLAS_STATUS_ALLOC_FAILED",), fields={"reason": "cublas_alloc"},
           examples=("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
                     "`cublasCreate(handle)`",)),
    # vLLM 0.11+'s model runner: the weights alone do not fit (it logs this, quoting the CUDA
    # OOM it caught, then re-raises that)
    Phrase("oom", any=("Failed to load model - not enough GPU memory",),
           fields={"reason": "weights_oom"}, extract=fail.torch_oom,
           examples=("Failed to load model - not enough GPU memory. Try lowering "
                     "--gpu-memory-utilization to free memory for weights, increasing "
                     "--tensor-parallel-size, or using --quantization. (original error: CUDA out "
                     "of memory. Tried to allocate 768.00 MiB. GPU 0 has a total capacity of "
                     "95.01 GiB of which 438.31 MiB is free.)",)),
    Phrase("oom", any=("CUDA out of memory", "OutOfMemoryError", "CUDA error: out of memory",
                       "NPU out of memory", "HIP out of memory", "XPU out of memory"),
           fields={"reason": "cuda_oom"}, extract=fail.torch_oom,
           examples=("torch.OutOfMemoryError: CUDA out of memory.",
                     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. "
                     "GPU 3 has a total capacity of 79.19 GiB of which 1.02 GiB is free.")),
    # SGLang's hierarchical cache in host memory: its pools (the KV pool's, 0.5.x's others by
    # name: `Not enough host memory for V4 paged pool c4_indexer. Requesting ...`)
    # (not `Not enough host memory for request <rid>`: a PD decode server's offload of one
    # request, which it skips and serves on)
    Phrase("oom", pattern=r"Not enough host memory (?:available|for (?!request\b))",
           needs=("Not enough host memory",), extract=fail.host_memory,
           examples=("ValueError: Not enough host memory available. Requesting 96.00 GB but "
                     "only have 40.12 GB free. Please reduce the size of the hierarchical cache.",
                     "ValueError: Not enough host memory for V4 paged pool c4_indexer. "
                     "Requesting 210.00 GB but only have 120.50 GB free.")),
    # SGLang 0.5.13+: the pools of a hybrid (mamba, linear-attention, sliding-window) model
    # that do not fit in what the memory fraction leaves (kv_cache_configurator.py,
    # pool_configurator.py)
    Phrase("oom", any=("Not enough GPU memory for ", "cache is too small to serve",
                       "leaves no room for the full KV pool",
                       "leave no GPU memory for the KV cache"),
           extract=fail.mem_fraction_short,
           examples=("RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) "
                     "state cache. Computed max_mamba_cache_size=0 (total_rest_memory=1.20 GB, "
                     "mamba_cache_per_req=52.00 MB). Try: (1) reduce --max-running-requests, (2) "
                     "increase --mem-fraction-static, or (4) use GPUs with more memory.",
                     "RuntimeError: SWA pool cap (fixed 30.00 GiB) leaves no room for the full KV "
                     "pool within the available 28.00 GiB. Reduce --max-running-requests, lower "
                     "SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static.",
                     "ValueError: Loaded weights leave no GPU memory for the KV cache under "
                     "--mem-fraction-static=0.5. Raise --mem-fraction-static above 0.612 (minimum "
                     "viable for this model and parallelism).")),
    # Any exception whose advice is a larger memory fraction: a pool that does not fit, in the
    # words of a newer release (a warning with that advice is no exception line: not matched)
    Phrase("oom", pattern=r"^[\w.]{0,200}(?:Error|Exception): .{0,2000}?\b(?:[Rr]aise|[Ii]ncrease) "
                          r"--mem-fraction-static", needs=("--mem-fraction-static",),
           extract=fail.mem_fraction_short,
           examples=("RuntimeError: [unified-memory-pool] pool: byte budget 1024 cannot fit ONE "
                     "worst-case request. Raise --mem-fraction-static, lower --context-length.",)),
    Phrase("oom", any=("Not enough memory. Please try",), extract=fail.mem_fraction_short,
           examples=("RuntimeError: Not enough memory. Please try to increase "
                     "--mem-fraction-static.",)),
    Phrase("oom", any=("out of memory. Try to lower", "runs out of memory"),
           fields={"reason": "kv_pool_full"},
           examples=("Decode out of memory. Try to lower your batch size.",)),
    Phrase("oom", pattern=r"^(?:Decode|Prefill) out of memory\.", needs=("out of memory.",),
           fields={"reason": "kv_pool_full"},  # SGLang 0.1.x, a bare print
           examples=("Decode out of memory. This should never happen.",)),
)

# What ends a server process: an exception, a hang, a signal, a collective or kernel failure
_CRASH = (
    Phrase("crash", any=("atchdog caught collective operation timeout",), extract=fail.nccl_timeout,
           examples=("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
                     "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                     "600012 milliseconds before timing out.",)),
    # PyTorch's NCCL watchdog (ProcessGroupNCCL.cpp): a collective that never returns; the
    # heartbeat monitor then ends the process
    Phrase("crash", any=("watchdog got stuck for", "Heartbeat monitor timed out",
                         "due to ProcessGroupNCCL watchdog hang"),
           extract=fail.nccl_hang,
           examples=("[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID "
                     "0(default_pg) Rank 6] ProcessGroupNCCL's watchdog got stuck for 480 seconds "
                     "without making progress in monitoring enqueued collectives.",
                     "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 2 Rank 0] Heartbeat monitor timed "
                     "out! Process will be terminated after dumping debug info.",
                     "[rank1]:[F513 12:46:14.495035780 ProcessGroupNCCL.cpp:1614] [PG ID 0 PG GUID "
                     "0(default_pg) Rank 1] Terminating the process after attempting to dump debug "
                     "info, due to ProcessGroupNCCL watchdog hang.")),
    # The server's port is taken (the server restarted from, still running, most often): the
    # socket's error as Python raises it, uvicorn's bind error, SGLang's wait for the port.
    # Not a line that goes on to another port (`... trying port`, `Retrying with a new port`)
    Phrase("crash", pattern=r"^(?:(?:OSError: )?\[Errno 98\] Address already in use\s*$|(?:ERROR: +)?\[Errno 98\] "
                            r"error while attempting to bind on address|.{0,80} at [0-9]{1,5} is not "
                            r"available in [0-9]{1,6} seconds|[\w.]{0,80}(?:Error|Exception): "
                            r"\w{0,40}port [0-9]{1,5} is already in use)",
           needs=("Address already in use", "error while attempting to bind on address",
                  "is not available in", "is already in use"),
           extract=fail.port_in_use,
           examples=("OSError: [Errno 98] Address already in use",
                     "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', "
                     "30000): address already in use",
                     "ValueError: Server port at 30000 is not available in 30 seconds. Server port "
                     "is used by a process already. process.name()='python3' pid=4021",
                     "[Errno 98] Address already in use",
                     "RuntimeError: engine_info_bootstrap_port 6789 is already in use. When running "
                     "multiple instances on the same node, each instance must use a different "
                     "--engine-info-bootstrap-port.")),
    # SGLang's tokenizer manager: a SIGTERM while the health check fails (an orchestrator's
    # liveness probe ending a server that stopped answering) exits at once
    Phrase("crash", any=("received while health check failed",), fields={"reason": "unhealthy"},
           examples=("Signal SIGTERM received while health check failed. Force exiting.",)),
    # vLLM V1's API server: the task that reads the engine's outputs died; the server exits
    Phrase("crash", any=("output_handler failed",),
           fields={"reason": "exception", "component": "AsyncLLM"},
           examples=("AsyncLLM output_handler failed.",)),
    # vLLM V0's launcher (logger.fatal): the engine is gone and the API server ends
    Phrase("crash", any=("terminating server process",), fields={"reason": "engine_dead"},
           examples=("MQLLMEngine is already dead, terminating server process",
                     "AsyncLLMEngine has failed, terminating server process")),
    # vLLM V0's multiprocessing executor: `Worker %s pid %s died, exit code: %s`
    Phrase("crash", any=(" died, exit code",),
           pattern=r"(?:Worker ([A-Za-z_][\w-]{0,80}) pid [0-9]{1,10} )?died, exit code",
           extract=fail.worker_died,
           examples=("Worker VllmWorkerProcess pid 198 died, exit code: -6",)),
    # absl's failure signal handler (JAX, TensorFlow and XLA-linked extensions in the process)
    Phrase("crash", pattern=r"^\*\*\* (SIG[A-Z]{2,6}) received at time=", needs=(" received at time=",),
           extract=fail.signal_name,
           examples=("*** SIGABRT received at time=1720159248 on cpu 5 ***",
                     "*** SIGSEGV received at time=1720159248 on cpu 5 ***")),
    Phrase("crash", any=("terminated with",),
           pattern=r"terminated with (?:signal )?(?:-?[0-9]{1,4}\b|SIG[A-Z]{2,6})",
           extract=fail.subprocess_died,
           examples=("Scheduler or DataParallelController 4242 terminated with -9",
                     "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated "
                     "with signal SIGABRT")),
    Phrase("crash", any=(" hit an exception",), pattern=r"([A-Za-z_]\w{0,80}) hit an exception",
           extract=fail.component, fields={"reason": "exception"},
           examples=("Scheduler hit an exception: Traceback",
                     "DetokenizerManager hit an exception: Traceback (most recent call last):",
                     "WorkerProc hit an exception.")),
    Phrase("crash", pattern=r"^Exception in ([A-Za-z_]\w{0,80}):\s*$", needs=("Exception in ",),
           extract=fail.component, fields={"reason": "exception"},  # SGLang <= 0.2
           examples=("Exception in ModelRpcClient:", "Exception in ControllerSingle:")),
    Phrase("crash", any=("Exception in worker ",),
           pattern=r"Exception in worker (\S{1,80}) while processing method",
           extract=fail.component, fields={"reason": "exception"},  # vLLM V0 workers
           examples=("Exception in worker VllmWorkerProcess while processing method load_model.",)),
    Phrase("crash", any=(" encountered a fatal error",),
           pattern=r"(\w{1,80}) encountered a fatal error", extract=fail.component,
           fields={"reason": "exception"}, examples=("EngineCore encountered a fatal error.",)),
    Phrase("crash", any=("EngineDeadError",), fields={"reason": "engine_dead",
                                                      "component": "EngineCore"},
           examples=("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                     "See stack trace (above) for the root cause.",)),
    Phrase("crash", any=("initialization failed", "Initialization failed"),
           extract=fail.init_failed,
           examples=("RuntimeError: Engine core initialization failed. See root cause above.",
                     "Initialization failed. warmup error: Traceback",
                     "RuntimeError: Engine core initialization failed. See root cause above. "
                     "Failed core proc(s): {'EngineCore_DP0': -9}")),
    # vLLM's shared-memory message queue between its processes does not fit in /dev/shm (a
    # container's 64 MB default)
    Phrase("crash", every=("Insufficient space in", "shm"), fields={"reason": "shm_too_small"},
           examples=("RuntimeError: Insufficient space in /dev/shm for the worker message queue: "
                     "256 MiB required, 64 MiB free. Increase /dev/shm (e.g. --shm-size or "
                     "--ipc=host).",)),
    # SGLang's PP consensus store (`logger.critical`, then `os._exit(1)`)
    Phrase("crash", any=("background thread crashed",), pattern=r"(\w{1,80}) background thread crashed",
           extract=fail.component, fields={"reason": "thread_crashed"},
           examples=("PPConsensusStore background thread crashed: Connection refused",)),
    # vLLM V1's API server stopped waiting for its engine cores to report ready
    # (VLLM_ENGINE_READY_TIMEOUT_S, 600 s by default): slow weight loading, compile or warmup
    Phrase("crash", any=("Timed out waiting for engine core processes to start",),
           extract=fail.engine_start_timeout,
           examples=("TimeoutError: Timed out waiting for engine core processes to start. This is "
                     "often caused by slow weight loading for large models. Waited 600s "
                     "(configured by VLLM_ENGINE_READY_TIMEOUT_S). To increase the timeout, set "
                     "the environment variable: VLLM_ENGINE_READY_TIMEOUT_S=<seconds>",)),
    # vLLM's multiprocessing executor: a worker did not answer a call of the engine in time (a
    # hung collective, a dead worker, a step past VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS)
    Phrase("crash", any=("RPC call to ",), pattern=r"RPC call to (\w{1,80}) timed out",
           extract=fail.rpc_timeout,
           examples=("TimeoutError: RPC call to sample_tokens timed out.",
                     "TimeoutError: RPC call to execute_model timed out.")),
    Phrase("crash", any=(" failed to start",), pattern=r"(\w{1,80}) failed to start",
           extract=fail.component, fields={"reason": "init_failed"},
           examples=("EngineCore failed to start.",)),
    Phrase("crash", any=("crashed with exit code", "died unexpectedly", "exited unexpectedly",
                         "died during initialization", "scheduler is dead", "died with exit code",
                         "exited prematurely with code"),
           extract=fail.subprocess_died,
           examples=("Subprocess detokenizer (pid=4100) crashed with exit code -9.",
                     "Worker proc VllmWorker-0 died unexpectedly, shutting down executor.",
                     "Weight cache daemon (pid=5000) exited prematurely with code -9")),
    Phrase("crash", any=("atchdog timeout",), extract=ev.watchdog,
           examples=("Watchdog timeout (self.watchdog_timeout=300)",)),
    Phrase("crash", any=("DistBackendError",), extract=fail.dist_backend,
           examples=("torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:317, "
                     "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL "
                     "version 2.21.5",)),
    Phrase("crash", any=("terminate called after throwing",), extract=fail.cpp_terminate,
           examples=("terminate called after throwing an instance of 'c10::DistBackendError'",)),
    Phrase("crash", any=("Error: NCCL error", "NCCL error in:", "NCCL error: "),
           fields={"reason": "nccl_error"},
           examples=("RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO "
                     "for details)",)),
    Phrase("crash", any=("Assertion `",), pattern=r"Assertion `.{0,200}` failed",
           extract=fail.device_assert,
           examples=("/pytorch/aten/src/ATen/native/cuda/Loss.cu:245: nll_loss_forward_reduce_"
                     "cuda_kernel_2d: block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < "
                     "n_classes` failed.",)),
    Phrase("crash", any=("device-side assert triggered",), extract=fail.device_assert,
           examples=("RuntimeError: CUDA error: device-side assert triggered",)),
    Phrase("crash", any=("illegal memory access",), fields={"reason": "illegal_memory_access"},
           examples=("RuntimeError: CUDA error: an illegal memory access was encountered",)),
    Phrase("crash", any=("CUDA error: ", "CUBLAS_STATUS_"), extract=fail.cuda_error,
           examples=("torch.AcceleratorError: CUDA error: unspecified launch failure",)),
    Phrase("crash", any=("Received sigquit", "SIGQUIT received"), fields={"reason": "sigquit"},
           examples=("Received sigquit from a child process. It usually means the child failed.",)),
    Phrase("crash", any=("Fatal Python error",), extract=fail.fatal_python,
           examples=("Fatal Python error: Segmentation fault",)),
    Phrase("crash", pattern=r"^(?:.{0,200}: line \d+: +\d+ )?Killed(?:\s|$)", needs=("Killed",),
           fields={"reason": "killed"}, examples=("Killed", "run.sh: line 3: 4242 Killed  python")),
    # the shell's report of a child killed by a signal, bare or as bash prints it
    Phrase("crash", pattern=r"^(?:.{0,200}: line \d+: +\d+ +(Segmentation fault|Aborted|Bus error|"
                            r"Floating point exception)(?: +\(core dumped\))?(?: .*)?"
                            r"|(Segmentation fault|Aborted|Bus error|Floating point exception)"
                            r"(?: \(core dumped\))?)\s*$",
           needs=("Segmentation fault", "Aborted", "Bus error", "Floating point exception"),
           extract=fail.shell_signal,
           examples=("Segmentation fault (core dumped)", "Aborted (core dumped)",
                     "launch.sh: line 7: 4021 Segmentation fault      (core dumped) python -m "
                     "sglang.launch_server")),
)

# Memory and capacity at startup: numbers for the server panel's facts
_CAPACITY = (
    # SGLang 0.5.23+ may size the pool after CUDA graph capture (kv_pool_runtime.py): then the
    # first line is the address space's upper bound and `Post-capture KV sizing: KV cache
    # allocated. dtype: %s, #tokens: %d, KV size: %.2f GB, avail mem=%.2f GB` the real pool
    Phrase("kv_cache", any=("KV Cache is allocated", "KV Cache VA upper bound",
                            "KV cache allocated. dtype"),
           extract=ev.kv_cache,
           examples=("KV Cache is allocated. #tokens: 463000, K size: 28.26 GB, V size: 28.26 GB",
                     "Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: "
                     "463000, KV size: 56.52 GB, avail mem=5.60 GB")),
    Phrase("kv_cache", any=("Mamba Cache is allocated",), extract=ev.mamba_cache,
           examples=("Mamba Cache is allocated. max_mamba_cache_size: 97, conv_state size: "
                     "0.10GB, ssm_state size: 5.17GB ",)),
    # SGLang's memory profile below what was asked; one of no tokens at all is an OOM
    Phrase("kv_cache", any=("is larger than the profiled value",), extract=ev.profiled,
           examples=("max_total_tokens=500000 is larger than the profiled value 463000. Use the "
                     "profiled value instead.",
                     "max_total_tokens=131072 is larger than the profiled value -561981. Use the "
                     "profiled value instead.")),
    Phrase("kv_cache", any=("max_total_num_token",), extract=ev.capacity,
           examples=("max_total_num_tokens=463000, max_prefill_tokens=16384",
                     "Rank 0: max_total_num_token=463000, max_prefill_num_token=16384, "
                     "context_len=4096, ")),
    Phrase("kv_cache", any=("blocks: ", " KV cache size: ", "Maximum concurrency",
                            "Available KV cache memory: ", "reserved for KV Cache is ",
                            "GiB memory for KV Cache"),
           extract=ev.vllm_capacity,
           examples=("# GPU blocks: 5691, # CPU blocks: 2048", "GPU KV cache size: 1,234 tokens",
                     "# cuda blocks: 26436, # CPU blocks: 2048",
                     "Available KV cache memory: 31.50 GiB",
                     "model weights take 14.96GiB; non_torch_memory takes 0.10GiB; PyTorch "
                     "activation peak memory takes 9.37GiB; the rest of the memory reserved for "
                     "KV Cache is 4.20GiB.",
                     "Initial free memory 78.63 GiB, reserved 30.0 GiB memory for KV Cache as "
                     "specified by kv_cache_memory_bytes config and skipped memory profiling.")),
    Phrase("kv_cache", any=("Extended KV cache to ", "Memory after warmup: "),
           extract=ev.vllm_extensible,
           examples=("Extended KV cache to 2681 blocks (10.47 GiB).",
                     "Memory after warmup: 12.31 GiB free, 0.5 GiB committed to the KV cache, "
                     "1.62 GiB kept for transient activations; 2681 KV cache blocks (10.47 GiB) "
                     "fit within the requested 79.19 GiB.")),
    Phrase("kv_cache", any=("reduced max_model_len from", "max_model_len: reduced from"),
           extract=ev.auto_fit,
           examples=("--max-model-len auto reduced max_model_len from 40960 to 34816 (8.41 GiB "
                     "GPU left for the KV cache).",
                     "Auto-fit max_model_len: reduced from 40960 to 34816 to fit in the KV cache.")),
    Phrase("kv_cache", every=("Free memory on device", "Desired GPU memory utilization is"),
           extract=ev.vllm_budget,
           examples=("Free memory on device (78.66/79.19 GiB) on startup. Desired GPU memory "
                     "utilization is (0.9, 71.27 GiB). Actual usage is 14.08 GiB for weight, "
                     "1.97 GiB for peak activation, 0.07 GiB for non-torch memory, and 0.67 GiB "
                     "for CUDAGraph memory.",)),
    Phrase("kv_cache", every=("total_gpu_memory (", "x gpu_memory_utilization ("),
           extract=ev.vllm_share,
           examples=("the current vLLM instance can use total_gpu_memory (39.50GiB) x "
                     "gpu_memory_utilization (0.90) = 35.55GiB",)),
    Phrase("kv_cache", any=("host memory for hierarchical KV cache", "hierarchical KV host pool"),
           extract=ev.hicache,
           examples=("Allocating 96.00 GB host memory for hierarchical KV cache.",
                     "Allocating full hierarchical KV host pool: 926000 tokens, 121.38 GB host "
                     "memory.")),
    Phrase("kv_cache", any=("Memory pool end",), fields={"phase": "end"}, extract=ev.memory,
           examples=("Memory pool end. avail mem=9.87 GB",)),
    Phrase("cuda_graph", any=("Capture ",),
           pattern=r"Capture (?:([\w -]{1,40}?) )?(?:cuda|CUDA|npu|NPU|cpu|CPU|xpu|XPU|musa|MUSA)"
                   r" graph (begin|end)\b", extract=ev.graph,
           examples=("Capture cuda graph end. Time elapsed: 9.81 s. avail mem=5.59 GB.",)),
    # other graph captures, named without `cuda graph` (SGLang's `Capture single-CG draft extend
    # begin. ... avail mem=...`): a `Capture ... begin|end.` line that says the memory left
    Phrase("cuda_graph", every=("Capture ", "avail mem="),
           pattern=r"^Capture ([\w-]{1,24}(?: [\w-]{1,24}){0,4}) (begin|end)\.", extract=ev.graph,
           examples=("Capture single-CG draft extend end. elapsed=3.20 s, mem usage=0.40 GB, "
                     "avail mem=3.00 GB.",)),
    Phrase("cuda_graph", any=("Graph capturing finished",), extract=ev.graph_took,
           examples=("Graph capturing finished in 12 secs, took 0.58 GiB",)),
    Phrase("cuda_graph", any=("CUDA graph pool memory: ",),
           pattern=r"CUDA graph pool memory: ([0-9.]+) GiB \(actual\)", extract=ev.graph_pool,
           examples=("CUDA graph pool memory: 0.52 GiB (actual), 0.61 GiB (estimated), "
                     "difference: 0.09 GiB (17.3%).",)),
    Phrase("load_weights", any=("Load weight begin",), fields={"phase": "begin"},
           extract=ev.memory, examples=("Load weight begin. avail mem=70.02 GB",)),
    # vLLM's model runner as it starts to load the weights (V1: `Starting to load model %s...`,
    # 0.2x: `Loading model from scratch...`): an OOM before they are loaded is theirs
    Phrase("load_weights", any=("Starting to load model ", "Loading model from scratch"),
           fields={"phase": "begin", "avail_mem_gb": None, "mem_usage_gb": None},
           examples=("Starting to load model meta-llama/Llama-3.1-70B-Instruct...",
                     "Loading model from scratch...")),
    Phrase("load_weights", any=("Load weight end",), fields={"phase": "end"}, extract=ev.memory,
           examples=("Load weight end. type=X, avail mem=63.41 GB, mem usage=15.12 GB.",)),
    Phrase("load_weights", pattern=r"(?:Loading model weights|Model loading) took ([\d.]+) ?Gi?B",
           needs=("Loading model weights", "Model loading"), extract=ev.weights_taken,
           fields={"phase": "end"}, examples=("Loading model weights took 14.9595 GB",)),
    Phrase("ready", any=("ready to roll", "Starting vLLM API server", "Starting vLLM server on"),
           examples=("The server is fired up and ready to roll!",)),
)

# Lines that report a failure that may not end the server (or a detail of one that did)
_ERRORS = (
    Phrase("error", any=("Dumping scheduler stats", "SchedulerStats(num_running_reqs="),
           extract=fail.scheduler_stats,
           examples=("Dumping scheduler stats: SchedulerStats(num_running_reqs=12, "
                     "num_waiting_reqs=3, step_counter=0, current_wave=0, kv_cache_usage=0.61, "
                     "prefix_cache_stats=PrefixCacheStats(reset=False, requests=2, queries=4096, "
                     "hits=512), spec_decoding_stats=None, num_corrupted_reqs=0)",)),
    Phrase("error", any=("Some NCCL operations have failed", "ncclUnhandledCudaError",
                         "unhandled cuda error"), fields={"reason": "nccl_error"},
           examples=("ncclUnhandledCudaError: Call to CUDA function failed.",)),
    # vLLM's shared-memory queue between its processes (shm_broadcast.py): a reader waited a
    # minute or more for the others, hung or busy (compiling, quantizing). With no stats line
    # while it lasts, the one line that tells a hung server from an idle one. Its 0.11+ INFO
    # wording only: 0.8-0.10 printed `... found in 60 second.` at DEBUG, idle workers too.
    Phrase("error", every=("No available shared memory broadcast block found", "typically happens"),
           extract=fail.workers_waiting,
           examples=("No available shared memory broadcast block found in 60 seconds. This "
                     "typically happens when some processes are hanging or doing some "
                     "time-consuming work (e.g. compilation, weight/kv cache quantization).",)),
    # PyTorch's NCCL watchdog before it ends the process: the collective that timed out
    Phrase("error", any=("failure detected by watchdog", "dump signal due to a collective timeout"),
           fields={"reason": "nccl_timeout"},
           examples=("[rank7]:[E909 08:45:30.167701534 ProcessGroupNCCL.cpp:2252] [PG ID 2 PG GUID 3 "
                     "Rank 7]  failure detected by watchdog at work sequence id: 40231 PG status: "
                     "last enqueued work: 40267, last completed work: 40230",)),
    Phrase("error", any=(" NCCL WARN ",), fields={"reason": "nccl_warn"},
           examples=("gpu-node:1187:1187 [3] NCCL WARN NET/IB : Got async event",)),
    # SGLang's PD disaggregation (mooncake): the prefill server a decode server reads from died
    Phrase("error", every=("Prefill instance with bootstrap_port", "is dead"),
           fields={"reason": "prefill_lost"},
           examples=("RuntimeError: Transfer thread failed because of Connection reset by peer. "
                     "Prefill instance with bootstrap_port=8998 is dead.",)),
    Phrase("error", starts=("Traceback (most recent call last)", "ERROR:"),
           examples=("Traceback (most recent call last):",)),
    # a Python exception line (a traceback's last): its type is what a crash after it died of
    Phrase("error", pattern=r"^((?:[A-Za-z_][\w.]{0,200})?Exception|[A-Za-z_][\w.]{0,200}"
                            r"(?:Error|Exit|Interrupt))(?::|$)",
           needs=("Error", "Exception", "Exit", "Interrupt"), extract=fail.exception_type,
           examples=("ValueError: bad", "KeyboardInterrupt", "Exception: bad")),
    Phrase("error", any=("Health check failed", "health check failed"),
           examples=("Health check failed", "Encoder health check failed: timeout")),
    # SGLang's PD disaggregation: a request's KV cache did not arrive from the prefill server
    Phrase("error", any=("transfer failed for request", "handshake failed for request",
                         "bootstrap failed for request"), fields={"reason": "kv_transfer"},
           examples=("Decode transfer failed for request rank=1 req.rid='a1' "
                     "req.bootstrap_room=42 with exception KVTransferError(bootstrap_room=42): "
                     "Failed due to an unknown reason from another rank",)),
    # SGLang's PD disaggregation: a decode server lost its prefill server
    Phrase("error", any=("Lost connection with prefill instance",),
           fields={"reason": "prefill_lost"},
           examples=("Lost connection with prefill instance (bootstrap_addr: 10.0.0.2:8998), "
                     "12 requests affected",)),
    # SGLang's PD disaggregation: the prefill and decode servers never found each other
    Phrase("error", any=("failed to register to bootstrap server",
                         "Could not fetch prefill parallel info"),
           fields={"reason": "pd_bootstrap"},
           examples=("Prefill instance failed to register to bootstrap server after 5 retries",
                     "Could not fetch prefill parallel info from 10.0.0.2:8998 after 3 attempts")),
    # SGLang 0.5.23: the KV pool cannot hold one request of the context length
    Phrase("error", any=("fewer than --context-length",), fields={"reason": "kv_below_context"},
           extract=ev.capacity_short,
           examples=("KV pool holds 30000 tokens, fewer than --context-length 131072. One "
                     "full-length request cannot fit, so long requests will be refused or "
                     "truncated at serving time.",)),
    Phrase("error", any=("Weights are not ready after waiting",),
           fields={"reason": "weights_not_ready"},
           examples=("Weights are not ready after waiting 600 seconds. Consider increasing "
                     "SGLANG_WAIT_WEIGHTS_READY_TIMEOUT environment variable.",)),
    Phrase("error", levels=("ERROR", "CRITICAL", "FATAL"),
           examples=("engine died",)),  # after a prefix that prints ERROR
)

PHRASES = (*_STARTUP, *_OOM, *_CRASH, *_CAPACITY, _SHUTDOWN, *_ERRORS)
