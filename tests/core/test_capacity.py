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


def test_a_profile_below_the_asked_tokens_is_the_pools_size() -> None:
    rec = parse_line("[2025-07-02 07:41:59 TP0] max_total_tokens=500000 is larger than the "
                     "profiled value 463000. Use the profiled value instead.", 1)
    assert rec is not None and (rec["event"], rec["max_total_num_tokens"], rec["asked_tokens"]) == (
        "kv_cache", 463000, 500000)


def test_vllms_cpu_backend_blocks_are_its_kv_blocks() -> None:
    """`# cpu blocks` (the device's, lowercase as `# cuda blocks`) beside `# CPU blocks` (the
    swap space's): read case-blind, the swap's 0 overwrote the 1170 KV blocks."""
    rec = parse_line("INFO 05-11 12:04:07 [executor_base.py:112] # cpu blocks: 1170, # CPU "
                     "blocks: 0", 1)
    assert rec is not None and (rec["gpu_blocks"], rec["cpu_blocks"]) == (1170, 0)


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


def _startup(lines: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The server panel's facts and the launch's capacity of one start's lines."""
    from dash.core.state.launches import LaunchTracker
    from dash.core.state.server_log import ServerLogTracker

    recs = [parse_line(line, i + 1) for i, line in enumerate(lines)]
    log = ServerLogTracker()
    log.feed(recs, 1.0)
    tracker = LaunchTracker(None)
    tracker.feed([r for r in recs if r is not None], None, ref=0.0)
    tracker.finish()
    return dict(log.snapshot(2.0).facts), dict(tracker.launches()[-1].capacity)


S = "[2026-11-20 10:00:10"
SWA = [  # SGLang 0.5.23 (swa_memory_pool.py): a sliding-window model's two labelled pools
    f"{S}] Load weight end. elapsed=7.80 s, type=GptOssForCausalLM, quant=mxfp4, avail mem=15.41 GB, "
    "mem usage=63.12 GB.",
    f"{S}] Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 463000, K size: 4.26 GB, "
    "V size: 4.26 GB",
    f"{S}] SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 120000, K size: 1.00 GB, "
    "V size: 1.00 GB",
    f"{S}] Memory pool end. avail mem=3.50 GB",
]
SWA_055 = [  # SGLang 0.5.5: the same pools unlabelled, then the pool's own sum
    f"{S}] KV Cache is allocated. #tokens: 463000, K size: 4.26 GB, V size: 4.26 GB",
    f"{S}] KV Cache is allocated. #tokens: 120000, K size: 1.00 GB, V size: 1.00 GB",
    f"{S}] SWAKVPool mem usage: 10.52 GB, swa size: 120000, full size: 463000",
]
EAGLE = [  # a draft model's weights and pool after the target's, on each of two ranks
    *(f"{S} TP{r}] Load weight end. type=DeepseekV3ForCausalLM, avail mem=30.41 GB, mem usage=48.12 GB."
      for r in (0, 1)),
    *(f"{S} TP{r}] Load weight end. type=DeepseekV3ForCausalLMNextN, avail mem=25.23 GB, mem "
      "usage=5.18 GB." for r in (0, 1)),
    *(f"{S} TP{r}] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 800000, KV size: 12.00 GB"
      for r in (0, 1)),
    *(f"{S} TP{r}] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 800000, KV size: 0.85 GB"
      for r in (0, 1)),
]
POST_CAPTURE = [  # SGLang 0.5.23's pool sized after capture: the bound, then the real pools
    f"{S}] KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 900000, KV size: 80.00 GB",
    f"{S}] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 463000, "
    "KV size: 56.52 GB, avail mem=5.60 GB",
    f"{S}] Post-capture KV sizing: draft KV cache allocated. dtype: torch.bfloat16, #tokens: "
    "463000, KV size: 0.52 GB",
]


@pytest.mark.parametrize(("lines", "kv_gb", "tokens", "weights_gb"), [
    (SWA, 10.52, 463000, 63.12),
    (SWA_055, 10.52, 463000, None),
    (EAGLE, 12.85, 800000, 53.3),
    (POST_CAPTURE, 57.04, 463000, None),
    # ranks that name no rank print the same line once each: one pool, not eight
    ([f"{S}] KV Cache is allocated. #tokens: 903439, K size: 13.79 GB, V size: 13.79 GB"] * 8,
     27.58, 903439, None),
])
def test_the_pools_and_models_of_one_gpu_are_summed(lines: list[str], kv_gb: float, tokens: int,
                                                    weights_gb: float | None) -> None:
    """The KV size shown was the last pool line's: a sliding-window model's SWA pool (2 GB of
    10.52) or a speculative draft's (0.85 GB beside 12), its weights the draft's alone."""
    facts, capacity = _startup(lines)
    assert (facts["kv_size_gb"], facts["kv_tokens"], facts.get("weights_mem_gb")) == (
        kv_gb, tokens, weights_gb)
    assert (capacity["kv_size_gb"], capacity.get("weights_gb")) == (kv_gb, weights_gb)


def test_a_restart_counts_its_own_pools_only() -> None:
    first = [f"{S}] server_args=ServerArgs(model_path='m', tp_size=1)", *SWA[1:3],
             "[2026-11-20 10:00:30] The server is fired up and ready to roll!"]
    again = ["[2026-11-20 11:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
             "[2026-11-20 11:00:10] KV Cache is allocated. #tokens: 300000, K size: 3.00 GB, "
             "V size: 3.00 GB"]
    facts, capacity = _startup(first + again)
    assert (facts["kv_size_gb"], facts["kv_tokens"], capacity["kv_size_gb"]) == (6.0, 300000, 6.0)


def test_a_start_that_died_before_it_was_ready_and_its_relaunch_are_not_summed() -> None:
    """The mem-fraction tuning loop: a start runs out of memory before it is ready, the next
    one allocates less. A start that never served is no restart, yet its pools were its own."""
    lines = [f"{S}] server_args=ServerArgs(model_path='m', mem_fraction_static=0.93)",
             f"{S}] KV Cache is allocated. #tokens: 463000, K size: 28.26 GB, V size: 28.26 GB",
             f"{S}] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.",
             "[2026-11-20 10:05:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.88)",
             "[2026-11-20 10:05:10] KV Cache is allocated. #tokens: 400000, K size: 24.40 GB, "
             "V size: 24.40 GB"]
    facts, capacity = _startup(lines)
    assert (facts["kv_size_gb"], facts["kv_tokens"], capacity["kv_size_gb"]) == (48.8, 400000, 48.8)


def test_the_tokens_are_the_full_layers_whichever_pool_comes_first() -> None:
    """SGLang 0.5.13-0.5.15 allocate the SWA pool before the full one, neither labelled."""
    facts, _ = _startup([f"{S}] KV Cache is allocated. #tokens: 80000, K size: 1.00 GB, V size: 1.00 GB",
                         f"{S}] KV Cache is allocated. #tokens: 400000, K size: 4.00 GB, V size: 4.00 GB"])
    assert (facts["kv_tokens"], facts["kv_size_gb"]) == (400000, 10.0)


def test_ranks_that_print_no_rank_load_their_weights_once() -> None:
    """vLLM V0's tensor-parallel workers print `Loading model weights took` without a rank,
    each its own share a few MB apart: one model's weights, not four."""
    lines = [f"(VllmWorkerProcess pid={40 + i}) INFO 11-20 10:00:0{i} model_runner.py:1056] Loading "
             f"model weights took {gb} GB" for i, gb in enumerate(("7.4812", "7.4812", "7.4815", "7.4790"))]
    facts, capacity = _startup(lines)
    assert facts["weights_mem_gb"] == 7.48 and capacity["weights_gb"] == 7.48


def test_a_pool_sized_after_capture_says_what_is_left_after_it_and_the_graphs() -> None:
    """SGLang 0.5.23 with post-capture sizing: the memory-pool and graph lines come before the
    pool is allocated, their `avail mem` before it took its 57 GB."""
    lines = [f"{S} TP0] Load weight end. type=LlamaForCausalLM, avail mem=122.37 GB, mem usage=16.06 GB.",
             f"{S} TP0] KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 900000, KV size: 80.00 GB",
             f"{S} TP0] Memory pool end. avail mem=61.90 GB",
             f"{S} TP0] Capture cuda graph end. Time elapsed: 9.81 s. mem usage=1.30 GB. avail mem=60.60 GB.",
             f"{S} TP0] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: "
             "420000, KV size: 57.68 GB, avail mem=0.60 GB"]
    _, capacity = _startup(lines)
    assert (capacity["kv_size_gb"], capacity["pool_avail_gb"], capacity["graph_avail_gb"]) == (
        57.68, 0.6, 0.6)
    assert capacity["weights_avail_gb"] == 122.37


def test_a_draft_loaded_after_the_targets_pool_keeps_what_the_weights_left() -> None:
    """EAGLE3: the draft's `Load weight end` comes after the target's KV pool; its avail mem is
    what the pool left, not what the target's weights did. Its weights count."""
    lines = [f"{S} TP0] Load weight end. type=LlamaForCausalLM, avail mem=62.10 GB, mem usage=16.06 GB.",
             f"{S} TP0] KV Cache is allocated. #tokens: 400000, K size: 24.40 GB, V size: 24.40 GB",
             f"{S} TP0] Load weight end. type=LlamaForCausalLMEagle3, avail mem=6.10 GB, mem usage=0.95 GB.",
             f"{S} TP0] Capture single-CG draft extend begin. This can take several minutes. "
             "avail mem=4.10 GB",
             f"{S} TP0] Capture single-CG draft extend end. elapsed=3.20 s, mem usage=1.10 GB, "
             "avail mem=3.00 GB."]
    _, capacity = _startup(lines)
    assert (capacity["weights_avail_gb"], capacity["weights_gb"]) == (62.1, 17.01)
    assert capacity["graph_avail_gb"] == 3.0  # a draft's graphs, in their own wording


def test_vllms_kv_size_given_by_bytes_is_read() -> None:
    """--kv-cache-memory-bytes: no profile, the reserved size printed instead."""
    _, capacity = _startup(["(EngineCore_DP0 pid=5) INFO 12-01 10:00:00 [gpu_worker.py:381] "
                            "Initial free memory 78.63 GiB, reserved 30.0 GiB memory for KV Cache "
                            "as specified by kv_cache_memory_bytes config and skipped memory "
                            "profiling. This does not respect the gpu_memory_utilization config."])
    assert capacity["kv_size_gb"] == 30.0


def test_vllms_extensible_kv_cache_is_its_size_after_warmup() -> None:
    """vLLM 0.34: `Available KV cache memory` is an estimate; the cache is sized after warmup."""
    v = "(EngineCore pid=4300) INFO 01-10 10:00:30 "
    _, capacity = _startup([v + "[gpu_worker.py:796] Available KV cache memory: 14.62 GiB",
                            v + "[extensible_kv_cache.py:694] Memory after warmup: 12.31 GiB free, "
                            "0.5 GiB committed to the KV cache; 2681 KV cache blocks (10.47 GiB) "
                            "fit within the requested 79.19 GiB.",
                            v + "[extensible_kv_cache.py:537] Extended KV cache to 2681 blocks "
                            "(10.47 GiB)."])
    assert (capacity["kv_size_gb"], capacity["gpu_blocks"]) == (10.47, 2681)


def test_the_context_length_auto_fit_chose_is_kept() -> None:
    _, capacity = _startup(["(EngineCore pid=4300) INFO 01-10 10:00:31 [kv_cache_planning.py:1494] "
                            "--max-model-len auto reduced max_model_len from 40960 to 34816 (8.41 "
                            "GiB GPU left for the KV cache)."])
    assert capacity["context_len"] == 34816
