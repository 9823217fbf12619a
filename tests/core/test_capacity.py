"""Memory and capacity lines become events with their numbers (real lines from real-logs where
they exist, else filled in by hand from the format strings in the log-shapes notes section 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dash.core.log.parse import parse_line


@pytest.mark.parametrize(("line", "want"), [
    # real: sglang-11716-tp8-init-load-weight-begin.log
    ("[2025-10-16 09:06:10 TP5] Load weight begin. avail mem=137.29 GB",
     {"event": "load_weights", "phase": "begin", "avail_mem_gb": 137.29, "mem_usage_gb": None,
      "rank": "TP5"}),
    # real: sglang-8741-embedding-startup-no-tp-prefix.log
    ("[2025-08-04 10:10:08] Load weight end. type=XLMRobertaModel, dtype=torch.float16, "
     "avail mem=77.66 GB, mem usage=1.18 GB.",
     {"event": "load_weights", "phase": "end", "avail_mem_gb": 77.66, "mem_usage_gb": 1.18}),
    # real: sglang-11716-tp8-kv-cache-allocated-capture-begin.log
    ("[2025-10-16 09:06:22 TP5] Memory pool end. avail mem=11.87 GB",
     {"event": "kv_cache", "phase": "end", "avail_mem_gb": 11.87}),
    ("[2025-06-01 11:58:26 TP0] Allocating 96.00 GB host memory for hierarchical KV cache.",
     {"event": "kv_cache", "hicache_host_gb": 96.0}),
    ("[2026-06-01 11:58:26] Allocating full hierarchical KV host pool: 926000 tokens, 121.38 GB "
     "host memory.",
     {"event": "kv_cache", "hicache_host_gb": 121.38, "hicache_host_tokens": 926000,
      "pool": "full"}),
    ("(EngineCore_DP0 pid=2201) INFO 09-10 12:00:10 [gpu_worker.py:298] Available KV cache "
     "memory: 51.37 GiB", {"event": "kv_cache", "kv_size_gb": 51.37, "rank": "DP0"}),
    # real: vllm-12330-startup-kv-cache-memory-profile.log
    ("INFO 01-13 11:35:23 worker.py:241] model weights take 14.96GiB; non_torch_memory takes "
     "0.10GiB; PyTorch activation peak memory takes 9.37GiB; the rest of the memory reserved for "
     "KV Cache is 11.12GiB.", {"event": "kv_cache", "kv_size_gb": 11.12}),
    ("INFO 03-01 12:00:10 executor_base.py:111] # cuda blocks: 26436, # CPU blocks: 2048",
     {"event": "kv_cache", "gpu_blocks": 26436, "cpu_blocks": 2048}),
    ("(EngineCore pid=2201) INFO 06-01 12:00:10 [kv_cache_utils.py:1147] GPU KV cache size: "
     "420,736 tokens, Maximum concurrency for 131,072 tokens per request: 3.21x",
     {"event": "kv_cache", "max_total_num_tokens": 420736, "context_len": 131072,
      "max_concurrency": 3.21}),
    ("(EngineCore pid=2201) INFO 06-01 12:00:10 [kv_cache_utils.py:1147] XPU KV cache size: "
     "100,000 tokens, Maximum concurrency for 8,192 tokens per request: 12.21x",
     {"max_total_num_tokens": 100000, "max_concurrency": 12.21}),
    ("(Worker_DP1_TP0_EP1 pid=2301) INFO 09-10 12:00:10 [gpu_model_runner.py:3118] Graph "
     "capturing finished in 12 secs, took 0.58 GiB",
     {"event": "cuda_graph", "phase": "end", "mem_usage_gb": 0.58, "rank": "DP1 TP0 EP1"}),
    # real: vllm-12330-startup-kv-cache-memory-profile.log (V0's memory profile)
    ("INFO 01-13 11:35:23 worker.py:241] the current vLLM instance can use total_gpu_memory "
     "(39.50GiB) x gpu_memory_utilization (0.90) = 35.55GiB",
     {"event": "kv_cache", "total_gb": 39.5, "gpu_memory_utilization": 0.9,
      "requested_gb": 35.55}),
    ("Rank 0: max_total_num_token=463000, max_prefill_num_token=16384, context_len=4096, ",
     {"event": "kv_cache", "max_total_num_tokens": 463000, "max_prefill_tokens": 16384,
      "context_len": 4096}),
])
def test_memory_and_capacity_events(line: str, want: dict[str, Any]) -> None:
    rec = parse_line(line, 1)
    assert rec is not None and rec["kind"] == "event", line
    assert {k: rec.get(k) for k in want} == want


def test_the_memory_share_vllm_prints_at_startup_is_a_fact(real_logs: Path) -> None:
    """vLLM#12330's log has no arguments line, only the memory profile: `total_gpu_memory
    (39.50GiB) x gpu_memory_utilization (0.90)`. The server panel said `mem fraction -`, and an
    OOM's fix could not say from what to lower it; 0.10+'s `Desired GPU memory utilization is
    (0.9, ...)` line was read, and its share left out of the facts alike."""
    from dash.core.alerts.rules_server import _oom_fix
    from dash.core.state.server_log import ServerLogTracker

    log = ServerLogTracker()
    text = (real_logs / "vllm-12330-startup-kv-cache-memory-profile.log").read_text()
    log.feed([parse_line(line, i + 1) for i, line in enumerate(text.splitlines())], 1.0)
    facts = log.snapshot(2.0).facts
    assert facts["gpu_memory_utilization"] == 0.9
    assert "--gpu-memory-utilization (now 0.9; try 0.85)" in _oom_fix("vllm", facts)
    newer = ServerLogTracker()
    newer.feed([parse_line("(EngineCore_DP0 pid=1) INFO 09-10 12:00:10 [gpu_worker.py:276] Free "
                           "memory on device (78.66/79.19 GiB) on startup. Desired GPU memory "
                           "utilization is (0.92, 72.85 GiB). Actual usage is 14.08 GiB for "
                           "weight.", 1)], 1.0)
    assert newer.snapshot(2.0).facts["gpu_memory_utilization"] == 0.92
