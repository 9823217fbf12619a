"""The fix an alert gives for failure lines that print their own cause: vLLM's engine start
timeout, a worker's RPC timeout, a core killed while starting, weights that do not fit, and
SGLang's pool that names the memory share it needs. Hand-made logs from the servers' format
strings, read by the real parser and replayed by the real rules."""

from __future__ import annotations

from dash.core.log.parse import parse_line
from dash.core.snapshot import Alert
from dash.core.state.run import replay_alerts

V = "(EngineCore_DP0 pid=2201) ERROR 12-01 10:{m:02d}:00 [core.py:900] "
API = "(APIServer pid=2100) ERROR 12-01 10:{m:02d}:00 [core_client.py:600] "
ARGS = ("(APIServer pid=2100) INFO 12-01 10:00:00 [utils.py:326] non-default args: {'model': 'm', "
        "'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.9}")


def _fired(*lines: str) -> dict[str, Alert]:
    records = [parse_line(text, i + 1) for i, text in enumerate(lines)]
    return {a.id: a for a in replay_alerts(records)}


def test_an_engine_that_did_not_start_in_time_names_the_timeout_to_raise() -> None:
    crash = _fired(ARGS, API.format(m=10) + "TimeoutError: Timed out waiting for engine core "
                   "processes to start. This is often caused by slow weight loading for large "
                   "models. Waited 600s (configured by VLLM_ENGINE_READY_TIMEOUT_S). To increase "
                   "the timeout, set the environment variable: VLLM_ENGINE_READY_TIMEOUT_S="
                   "<seconds>")["server_crash"]
    assert crash.message == "server crashed: the engine did not report ready in time"
    assert "(600 s)" in crash.hint and "Raise VLLM_ENGINE_READY_TIMEOUT_S" in crash.hint


def test_a_worker_rpc_timeout_is_a_hung_worker_not_a_timeout_to_fix() -> None:
    """The engine's traceback chains a bare `TimeoutError` into the RPC's: the RPC line says
    what happened, and its fix is the hung worker's, not `Fix the TimeoutError`."""
    wait = ("(EngineCore_DP0 pid=2201) WARNING 12-01 10:{m:02d}:00 [shm_broadcast.py:466] No "
            "available shared memory broadcast block found in 60 seconds. This typically happens "
            "when some processes are hanging or doing some time-consuming work (e.g. compilation, "
            "weight/kv cache quantization).")
    fired = _fired(ARGS, wait.format(m=1), wait.format(m=2),
                   V.format(m=3) + "EngineCore encountered a fatal error.",
                   V.format(m=3) + "Traceback (most recent call last):",
                   V.format(m=3) + "TimeoutError",
                   V.format(m=3) + "The above exception was the direct cause of the following "
                   "exception:",
                   V.format(m=3) + "TimeoutError: RPC call to sample_tokens timed out.",
                   API.format(m=3) + "AsyncLLM output_handler failed.")
    crash = fired["server_crash"]
    assert crash.message.startswith("server crashed: a worker stopped answering the engine; ")
    assert "`sample_tokens` call" in crash.hint and "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS" in crash.hint
    assert not crash.hint.startswith("Fix the TimeoutError")
    assert crash.line is not None and "RPC call to sample_tokens" in crash.line


def test_a_core_killed_while_starting_is_a_kill_not_a_failed_start() -> None:
    crash = _fired(ARGS, API.format(m=5) + "RuntimeError: Engine core initialization failed. See "
                   "root cause above. Failed core proc(s): {'EngineCore_DP0': -9}")["server_crash"]
    assert crash.message == "server crashed: the server was killed (often the kernel's OOM killer)"
    assert "host RAM ran out" in crash.hint


def test_weights_that_do_not_fit_want_more_gpus_or_quantization() -> None:
    oom = _fired(ARGS, V.format(m=2) + "Failed to load model - not enough GPU memory. Try lowering "
                 "--gpu-memory-utilization to free memory for weights, increasing "
                 "--tensor-parallel-size, or using --quantization. (original error: CUDA out of "
                 "memory. Tried to allocate 768.00 MiB. GPU 0 has a total capacity of 95.01 GiB "
                 "of which 438.31 MiB is free.)",
                 V.format(m=2) + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                 "768.00 MiB.")["server_oom"]
    assert oom.message == "the model's weights do not fit in GPU memory"
    assert "--tensor-parallel-size" in oom.hint and "quantized" in oom.hint
    assert "Lower --gpu-memory-utilization" not in oom.hint
    assert "GPU 0: 438 MiB free of 95.01 GiB, 768 MiB asked" in oom.evidence


def test_a_pool_that_names_the_share_it_needs_is_told_that_share() -> None:
    args = "[2026-12-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.5)"
    oom = _fired(args, "[2026-12-01 10:00:20 TP0] ValueError: Loaded weights leave no GPU memory "
                 "for the KV cache under --mem-fraction-static=0.5. Raise --mem-fraction-static "
                 "above 0.612 (minimum for this model).")["server_oom"]
    assert oom.hint.startswith("Raise --mem-fraction-static above 0.612 (now 0.5), as the line says")
    assert "0.53" not in oom.hint
    # without the arguments line, the share the line names is the one it ran with
    oom = _fired("[2026-12-01 10:00:20 TP0] ValueError: Loaded weights leave no GPU memory for the "
                 "KV cache under --mem-fraction-static=0.5. Raise --mem-fraction-static above "
                 "0.612.")["server_oom"]
    assert oom.hint.startswith("Raise --mem-fraction-static above 0.612 (now 0.5)")
    # a line that names no share still gets a step up from the one it ran with
    oom = _fired(args, "[2026-12-01 10:00:20 TP0] RuntimeError: Not enough memory. Please try to "
                 "increase --mem-fraction-static.")["server_oom"]
    assert oom.hint.startswith("Raise --mem-fraction-static (now 0.5; try 0.53)")


def test_a_worker_that_died_first_is_the_cause_not_the_executors_exception() -> None:
    """vLLM: a worker dies (no traceback of its own), then the engine raises `RuntimeError:
    Executor failed.` and the API server's engine is dead: the death is where it began."""
    api = "(APIServer pid=100) ERROR 12-01 10:03:05 [async_llm.py:480] "
    fired = _fired(ARGS, V.format(m=3) + "Worker proc VllmWorker-1 died unexpectedly, shutting "
                   "down executor.", V.format(m=3) + "EngineCore encountered a fatal error.",
                   V.format(m=3) + "Traceback (most recent call last):",
                   V.format(m=3) + "RuntimeError: Executor failed.",
                   api + "AsyncLLM output_handler failed.",
                   api + "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
                   "issue. See stack trace (above) for the root cause.")
    crash = fired["server_crash"]
    assert crash.message.startswith("server crashed: a server process died; ")
    assert "RuntimeError" not in crash.message and not crash.hint.startswith("Fix the")
    assert "(VllmWorker-1) died before anything else failed" in crash.hint
    assert crash.line is not None and "VllmWorker-1 died unexpectedly" in crash.line


def test_a_workers_own_exception_before_the_rpc_timeout_is_still_the_cause() -> None:
    worker = "(Worker_TP1 pid=2301) ERROR 12-01 10:02:00 [multiproc_executor.py:700] "
    fired = _fired(ARGS, worker + "WorkerProc hit an exception.",
                   worker + "Traceback (most recent call last):",
                   worker + "ValueError: could not broadcast input array from shape (3,) into (4,)",
                   V.format(m=3) + "EngineCore encountered a fatal error.",
                   V.format(m=3) + "TimeoutError",
                   V.format(m=3) + "TimeoutError: RPC call to sample_tokens timed out.")
    crash = fired["server_crash"]
    assert crash.message.startswith("server crashed: ValueError; ")
    assert crash.hint.startswith("Fix the ValueError")


def test_a_cuda_oom_while_the_weights_load_is_the_weights_not_the_batch() -> None:
    """vLLM 0.34 and SGLang raise torch's own OOM from `load_model`: the line before it is
    the load's start, so the fix is more GPUs or quantization, not a smaller batch."""
    oom = _fired(ARGS, "(EngineCore pid=4300) INFO 12-01 10:00:20 [model_runner.py:412] Loading "
                 "model from scratch...", V.format(m=1) + "EngineCore failed to start.",
                 V.format(m=1) + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                 "896.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 410.31 MiB is free."
                 )["server_oom"]
    assert oom.message == "the model's weights do not fit in GPU memory"
    assert "--tensor-parallel-size" in oom.hint and "--max-num-seqs" not in oom.hint
    sgl = _fired("[2026-01-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
                 "[2026-01-10 10:00:10 TP0] Load weight begin. avail mem=78.50 GB",
                 "[2026-01-10 10:00:50 TP0] Scheduler hit an exception: Traceback (most recent "
                 "call last):", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                 "1.75 GiB.")["server_oom"]
    assert sgl.message == "the model's weights do not fit in GPU memory" and "--tp-size" in sgl.hint
    # loaded, then out of memory at run time: the batch's
    late = _fired("[2026-01-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
                  "[2026-01-10 10:00:10 TP0] Load weight begin. avail mem=78.50 GB",
                  "[2026-01-10 10:00:40 TP0] Load weight end. type=X, avail mem=40.20 GB, mem "
                  "usage=38.30 GB.", "torch.OutOfMemoryError: CUDA out of memory.")["server_oom"]
    assert late.message.startswith("CUDA out of memory in the server")


def test_an_extensible_kv_cache_that_does_not_fit_is_not_told_to_raise_the_share() -> None:
    oom = _fired(ARGS, V.format(m=2) + "ValueError: To serve at least one request with the "
                 "model's max seq len (131072), (20.0 GiB KV cache is needed, which is larger than "
                 "the available KV cache memory (9.5 GiB). Based on the available memory, the "
                 "estimated maximum model length is 62208. The extensible KV cache already takes "
                 "all device memory left after the model and its activations; decrease "
                 "`max_model_len` or `max_num_seqs`.")["server_oom"]
    assert oom.hint.startswith("The KV cache holds at most 62,208 tokens of one request: lower "
                               "--max-model-len to 62,208 or less")
    assert "gives it nothing" in oom.hint


def test_host_memory_short_for_the_hierarchical_cache_is_no_gpu_share_to_lower() -> None:
    oom = _fired("[2026-01-10 10:00:00] server_args=ServerArgs(model_path='m', "
                 "mem_fraction_static=0.85)", "[2026-01-10 10:01:13 TP0] ValueError: Not enough "
                 "host memory for V4 paged pool c4_indexer. Requesting 960.00 GB but only have "
                 "400.12 GB free.")["server_oom"]
    assert oom.hint.startswith("Host RAM, not GPU memory, is short for the hierarchical KV cache "
                               "(960 GB asked, 400.12 GB free): lower --hicache-ratio")
    assert "Lower --mem-fraction-static" not in oom.hint


def test_a_kill_after_a_cuda_oom_is_the_servers_teardown_not_the_oom_killer() -> None:
    fired = _fired("[2026-01-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
                   "[2026-01-10 10:00:30] The server is fired up and ready to roll!",
                   "[2026-01-10 10:02:00 TP0] Scheduler hit an exception: Traceback (most recent "
                   "call last):", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                   "1.75 GiB.", "[2026-01-10 10:02:00] Received sigquit from a child process. It "
                   "usually means the child failed.", "Killed")
    crash = fired["server_crash"]
    assert "OOM killer" not in crash.message and "the server was killed" in crash.message
    # `Killed` alone is another matter: nothing else failed
    alone = _fired("[2026-01-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
                   "Killed")["server_crash"]
    assert "often the kernel's OOM killer" in alone.message


def test_the_silent_servers_hint_asks_only_for_what_kdash_lacks() -> None:
    from dash.core.alerts.rules_server import _tell_how
    assert _tell_how("sglang", outputs=True, http_up=False) == "--enable-metrics lets kdash tell."
    assert _tell_how("sglang", outputs=False, http_up=False) == (
        "--enable-metrics or --outputs let kdash tell.")
    assert _tell_how("vllm", outputs=True, http_up=True) == ""


def test_a_worker_error_of_the_crash_lines_own_type_is_still_the_cause() -> None:
    """`RuntimeError: Expected all tensors ...` then vLLM's `RuntimeError: Engine core
    initialization failed`: the same type, but the first says what happened."""
    worker = "(Worker_TP1 pid=2301) ERROR 12-01 10:02:00 [multiproc_executor.py:700] "
    fired = _fired(ARGS, worker + "WorkerProc hit an exception.",
                   worker + "RuntimeError: Expected all tensors to be on the same device, but "
                   "found at least two devices, cuda:1 and cpu!",
                   API.format(m=3) + "RuntimeError: Engine core initialization failed. See root "
                   "cause above. Failed core proc(s): {'EngineCore_DP0': 1}")
    crash = fired["server_crash"]
    assert crash.message.startswith("server crashed: RuntimeError; ")
    assert crash.line is not None and "Expected all tensors" in crash.line


def test_a_kill_after_a_cuda_oom_is_not_told_it_died_before_anything_else() -> None:
    fired = _fired("[2026-01-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
                   "[2026-01-10 10:01:00 TP0] torch.OutOfMemoryError: CUDA out of memory.",
                   "[2026-01-10 10:01:00] Subprocess scheduler_0 (pid=4100) crashed with exit "
                   "code -9.")
    assert "died before anything else failed" not in fired["server_crash"].hint


def test_one_requests_host_offload_that_failed_is_no_oom() -> None:
    """SGLang's PD decode server skips a request whose KV cannot be offloaded, and serves on."""
    from dash.core.log.parse import parse_line
    rec = parse_line("[2026-01-10 10:00:04 TP0] Not enough host memory for request 7f3a9c1e2b", 1)
    assert rec is None or rec.get("event") != "oom"
