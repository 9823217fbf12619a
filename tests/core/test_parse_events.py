"""Lifecycle and failure lines (reference/log-formats.md 5.1-5.3, constructed examples)."""

from __future__ import annotations

from typing import Any

import pytest

from dash.core.log.parse import parse_line


def _event(line: str) -> dict[str, Any]:
    rec = parse_line(line, 1)
    assert rec is not None and rec["kind"] == "event", line
    return rec


def test_startup_0_5_23() -> None:
    args = _event("[2026-06-01 11:58:02] server_args={'model_path': 'meta-llama/Llama-3.1-8B-Instruct', 'tokenizer_path': 'meta-llama/Llama-3.1-8B-Instruct', 'tp_size': 2, 'dp_size': 1, 'mem_fraction_static': 0.88, 'kv_cache_dtype': 'auto', 'context_length': None, 'hicache_size': 0, 'quant': {'a': [1, 2]}, ..., 'port': 30000, ...}")
    assert args["event"] == "server_args"
    assert (args["model"], args["tp_size"], args["port"], args["mem_fraction_static"]) == (
        "meta-llama/Llama-3.1-8B-Instruct", 2, 30000, 0.88)
    assert args["args"]["quant"] == {"a": [1, 2]} and args["context_length"] is None
    w = _event("[2026-06-01 11:58:25] Load weight end. elapsed=14.87 s, type=LlamaForCausalLM, avail mem=63.41 GB, mem usage=15.12 GB.")
    assert (w["event"], w["avail_mem_gb"], w["mem_usage_gb"]) == ("load_weights", 63.41, 15.12)
    kv = _event("[2026-06-01 11:58:26] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 463000, K size: 28.26 GB, V size: 28.26 GB")
    assert (kv["event"], kv["tokens"], kv["k_size_gb"], kv["dtype"]) == ("kv_cache", 463000, 28.26, "torch.bfloat16")
    mla = _event("[2026-06-01 11:58:26 TP1] Full KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 900000, KV size: 30.00 GB")
    assert (mla["tokens"], mla["kv_size_gb"], mla["rank"]) == (900000, 30.0, "TP1")
    b = _event("[2026-06-01 11:58:26] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=6.21 GB")
    assert (b["event"], b["phase"], b["avail_mem_gb"], b["graph"]) == ("cuda_graph", "begin", 6.21, "target decode")
    e = _event("[2026-06-01 11:58:36] Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 12, 16, 24, 32], elapsed=9.81 s, mem usage=0.62 GB, avail mem=5.59 GB.")
    assert (e["phase"], e["avail_mem_gb"], e["mem_usage_gb"]) == ("end", 5.59, 0.62)
    cap = _event("[2026-06-01 11:58:37] max_total_num_tokens=463000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem=5.59 GB")
    assert (cap["event"], cap["max_total_num_tokens"], cap["max_prefill_tokens"], cap["max_running_requests"],
            cap["context_len"], cap["available_gpu_mem_gb"]) == ("kv_cache", 463000, 16384, 4096, 131072, 5.59)
    assert _event("[2026-06-01 11:58:41] The server is fired up and ready to roll!")["event"] == "ready"


def test_hybrid_model_state_pool() -> None:
    """SGLang 0.5.x `mem_cache/memory_pool.py` (`MambaPool`), printed before the KV pool's line
    on a hybrid (Mamba / GDN) model:
        f"Mamba Cache is allocated. "
        f"max_mamba_cache_size: {size}, "
        f"conv_state size: {get_tensor_size_bytes(conv_state) / GB:.2f}GB, "
        f"ssm_state size: {get_tensor_size_bytes(temporal_state) / GB:.2f}GB "
    and with speculative decoding `intermediate_ssm_state_cache size: {:.2f}GB ...` after it."""
    m = _event("[2026-06-01 11:58:26 TP0] Mamba Cache is allocated. max_mamba_cache_size: 97, "
               "conv_state size: 0.10GB, ssm_state size: 5.17GB ")
    assert (m["event"], m["mamba_slots"], m["mamba_conv_gb"], m["mamba_ssm_gb"]) == (
        "kv_cache", 97, 0.1, 5.17)
    assert "tokens" not in m and "kv_size_gb" not in m  # no KV pool figure for the facts
    spec = _event("[2026-06-01 11:58:26 TP0] Mamba Cache is allocated. max_mamba_cache_size: 48, "
                  "conv_state size: 0.09GB, ssm_state size: 6.46GB intermediate_ssm_state_cache "
                  "size: 1.20GB intermediate_conv_window_cache size: 0.02GB")
    assert (spec["mamba_slots"], spec["mamba_conv_gb"], spec["mamba_ssm_gb"]) == (48, 0.09, 6.46)


def test_startup_0_4_3_and_0_2() -> None:
    a = _event("[2025-02-20 11:57:58] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', tokenizer_path='x, y', tp_size=1, dp_size=1, mem_fraction_static=0.88, kv_cache_dtype='auto', max_running_requests=None, context_length=8192, device=device(type='cuda'), port=30000)")
    assert (a["model"], a["tp_size"], a["context_length"], a["port"]) == ("meta-llama/Llama-3.1-8B-Instruct", 1, 8192, 30000)
    assert a["args"]["tokenizer_path"] == "x, y" and a["args"]["device"] == "device(type='cuda')"
    e = _event("[2025-02-20 11:58:36 TP0] Capture cuda graph end. Time elapsed: 9.81 s. avail mem=5.59 GB. mem usage=0.62 GB.")
    assert (e["phase"], e["avail_mem_gb"], e["mem_usage_gb"]) == ("end", 5.59, 0.62)
    w = _event("[11:58:25 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.41 GB")
    assert (w["avail_mem_gb"], w["mem_usage_gb"], w["ts"]) == (63.41, None, "11:58:25")
    cap = _event("[11:58:37 TP0] max_total_num_tokens=463000, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072")
    assert cap["max_total_num_tokens"] == 463000 and "available_gpu_mem_gb" not in cap


@pytest.mark.parametrize(("line", "want"), [
    ("[2024-12-01 12:03:11 TP0] Decode out of memory happened. #retracted_reqs: 3, #new_token_ratio: 0.4000 -> 0.5322",
     {"event": "retract", "retracted_req": 3, "new_token_ratio": 0.5322}),
    ("[2025-08-01 12:03:11] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.4000 -> 0.5322",
     {"event": "retract", "retracted_req": 3}),
    ("[2025-10-20 12:03:11] KV cache pool is full. Retract requests. #retracted_reqs: 3, #aborted_retracted_reqs: 0, #new_token_ratio: 0.4000 -> 0.5322",
     {"event": "retract", "aborted_retracted_req": 0}),
    ("[2026-06-01 12:03:11] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_tokens_gained: 12288, #new_token_ratio: 0.4000 -> 0.5322",
     {"event": "retract", "new_tokens_gained": 12288, "new_token_ratio": 0.5322}),
    ("[2025-08-01 12:10:00] Watchdog timeout (self.watchdog_timeout=300)", {"event": "crash", "reason": "watchdog"}),
    ("[2026-06-01 12:10:00] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
     {"event": "crash", "reason": "watchdog"}),
    ("[2026-06-01 12:10:00] TokenizerManager watchdog timeout (self.watchdog_timeout=300, self.soft=True)", {"event": "error"}),
    ("[2026-06-01 12:10:05] Scheduler hit an exception: Traceback (most recent call last):", {"event": "crash", "reason": "exception"}),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB", {"event": "oom"}),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.15 GiB total capacity)", {"event": "oom"}),
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", {"event": "oom"}),
    ("[2026-06-01 12:10:05] SIGQUIT received. signum=3, frame=<frame at 0x7f3a2c1d4a40, file '.../uvloop/...', line 1, code run>. It usually means one child failed.",
     {"event": "crash", "reason": "sigquit"}),
    ("[2025-08-29 03:50:55] Received sigquit from a child process. It usually means the child failed.", {"event": "crash", "reason": "sigquit"}),
    ("Killed", {"event": "crash", "reason": "killed"}),
    ("/bin/bash: line 1:  4021 Killed                  python -m sglang.launch_server", {"event": "crash", "reason": "killed"}),
    ("[2026-06-01 12:10:07] Subprocess detokenizer (pid=4100) crashed with exit code -9. Triggering SIGQUIT for cleanup...",
     {"event": "crash", "reason": "killed", "signal": 9, "component": "detokenizer"}),
    ("[2026-06-01 12:10:31] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds.", {"event": "error"}),
    ("[2026-06-01 12:11:00] SIGTERM received. signum=15 frame=None. Draining requests and shutting down...", {"event": "shutdown"}),
    ("[2026-06-01 12:11:01] INFO:     Shutting down", {"event": "shutdown"}),
    ("ValueError: bad value", {"event": "error"}),
    ("ERROR 10-11 12:27:29 engine.py:157] Something went wrong", {"event": "error", "engine": "vllm"}),
    ("INFO 01-22 18:27:20 preempt.py:1] Sequence group 12 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.",
     {"event": "retract", "engine": "vllm"}),
    ("INFO 05-01 12:00:10 [gpu_worker.py:1] GPU KV cache size: 1,234,560 tokens", {"event": "kv_cache", "max_total_num_tokens": 1234560}),
    ("INFO 05-01 12:00:10 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000", {"event": "ready"}),
])
def test_runtime_events(line: str, want: dict[str, Any]) -> None:
    rec = _event(line)
    assert {k: rec.get(k) for k in want} == want
    assert rec["message"] and not rec["message"].startswith("[20")


@pytest.mark.parametrize("line", [
    "ERROR 10-11 12:27:29 engine.py:157]   File \"/x/engine.py\", line 155, in start",
    "ERROR 10-11 12:27:29 engine.py:157]     ^^^^^^^^^^^^^",
    "[2026-06-01 12:10:31] Endpoint '/get_server_info' is deprecated and will be removed in a future version.",
    "/opt/conda/lib/python3.10/site-packages/torch/x.py:1575: UserWarning: Dynamo detected a call",
    "[2025-09-11 10:25:44 TP0] Capture cuda graph bs [1, 2, 4, 8, 16]",
])
def test_not_events(line: str) -> None:
    assert parse_line(line) is None
