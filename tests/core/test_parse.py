"""Constructed lines for every SGLang version family (reference/log-formats.md section 4)."""

from __future__ import annotations

from typing import Any

import pytest

from dash.core.log.parse import parse_line

PLAIN = {"running_req": 32, "tokens": 41230, "token_usage": 0.09, "gen_throughput": 2327.27,
         "queue_req": 0}
PREFILL = {"new_seq": 4, "new_token": 2048, "cached_token": 512, "queue_req": 0}


def _one(line: str) -> dict[str, Any]:
    rec = parse_line(line, 7)
    assert rec is not None, line
    assert rec["line"] == 7
    return rec


def _has(rec: dict[str, Any], want: dict[str, Any]) -> None:
    assert {k: rec.get(k) for k in want} == want


def test_sglang_0_2_time_only_prefix_and_mixed_prefill() -> None:
    d = _one("[12:00:05 TP0] Decode batch. #running-req: 32, #token: 41230, token usage: 0.09, gen throughput (token/s): 2327.27, #queue-req: 0")
    _has(d, {"kind": "decode", "ts": "12:00:05", "rank": "TP0", "engine": "sglang", **PLAIN})
    p = _one("[12:00:05 TP0] Prefill batch. #new-seq: 4, #new-token: 2048, #cached-token: 512, cache hit rate: 20.00%, #running-req: 28, #queue-req: 0")
    _has(p, {"kind": "prefill", "cache_hit_rate": 0.2, "running_req": 28, "token_usage": None, **PREFILL})
    m = _one("[12:00:05 TP0] Prefill batch(mixed #running-req: 28). #new-seq: 4, #new-token: 2048, #cached-token: 512, cache hit rate: 20.00%, #queue-req: 0")
    _has(m, {"kind": "prefill", "running_req": 28, **PREFILL})


def test_sglang_0_2_early_no_timestamp_gpu_tag() -> None:
    d = _one("[gpu_id=0] Decode batch. #running-req: 32, #token: 41230, token usage: 0.09, gen throughput (token/s): 2327.27, #queue-req: 0")
    _has(d, {"kind": "decode", "ts": None, "rank": "gpu_id=0", **PLAIN})
    d = _one("[gpu=1] Decode batch. #running-req: 32, #token: 41230, token usage: 0.09, gen throughput (token/s): 2327.27, #queue-req: 0")
    _has(d, {"rank": "gpu=1", **PLAIN})


def test_sglang_0_3() -> None:
    d = _one("[2024-12-01 12:00:05 TP0] Decode batch. #running-req: 32, #token: 41230, token usage: 0.09, gen throughput (token/s): 2327.27, #queue-req: 0")
    _has(d, {"kind": "decode", "ts": "2024-12-01T12:00:05", "rank": "TP0", **PLAIN})
    p = _one("[2024-12-01 12:00:05 TP0] Prefill batch. #new-seq: 4, #new-token: 2048, #cached-token: 512, cache hit rate: 20.00%, token usage: 0.08, #running-req: 28, #queue-req: 0")
    _has(p, {"token_usage": 0.08, "cache_hit_rate": 0.2, "running_req": 28, **PREFILL})


def test_sglang_0_4_3_largest_len_accept_len_trailing_comma() -> None:
    d = _one("[2025-02-20 12:00:05 TP0] Decode batch. #running-req: 32, #token: 41230, token usage: 0.09, gen throughput (token/s): 2327.27, largest-len: 0, #queue-req: 0, ")
    _has(d, {"largest_len": 0, **PLAIN})
    s = _one("[2025-02-20 12:00:05 TP0] Decode batch. #running-req: 32, #token: 41230, token usage: 0.09, accept len: 3.12, gen throughput (token/s): 1950.00, largest-len: 0, #queue-req: 0, ")
    _has(s, {"accept_len": 3.12, "gen_throughput": 1950.0, "queue_req": 0})
    p = _one("[2025-02-20 12:00:05 TP0] Prefill batch. #new-seq: 4, #new-token: 2048, #cached-token: 512, token usage: 0.08, #running-req: 28, #queue-req: 0, ")
    _has(p, {"token_usage": 0.08, "running_req": 28, "cache_hit_rate": None, **PREFILL})


def test_sglang_0_4_10_untagged_swa_pd() -> None:
    d = _one("[2025-08-01 12:00:05] Decode batch. #running-req: 32, #token: 41230, token usage: 0.09, cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0, ")
    _has(d, {"rank": None, "cuda_graph": True, **PLAIN})
    swa = _one("[2025-08-01 12:00:05] Decode batch. #running-req: 32, #full token: 12000, full token usage: 0.03, #swa token: 4096, swa token usage: 0.10, cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0, ")
    _has(swa, {"tokens": 12000, "token_usage": 0.03, "swa_tokens": 4096, "swa_token_usage": 0.1})
    pd = _one("[2025-08-01 12:00:05] Decode batch. #running-req: 32, #token: 41230, token usage: 0.09, pre-allocated usage: 0.01, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0, ")
    _has(pd, {"prealloc_usage": 0.01, "retracted_req": 0, **PLAIN})
    pp = _one("[2025-08-01 12:00:05] Prefill batch. #new-seq: 2, #new-token: 8192, #cached-token: 0, token usage: 0.05, #unbootstrapped-req: 1, #queue-req: 3, #transferring-req: 2, input throughput (token/s): 10240.00, ")
    _has(pp, {"new_seq": 2, "running_req": None, "queue_req": 3, "input_throughput": 10240.0,
              "unbootstrapped_req": 1, "transferring_req": 2})


def test_sglang_0_4_9_swa_allocator_fragment() -> None:
    d = _one("[2025-07-01 12:00:05] Decode batch. #running-req: 32, #token: full=12000, swa=4096, token usage: full=0.03, swa=0.10, cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0")
    _has(d, {"tokens": 12000, "token_usage": 0.03, "gen_throughput": 2327.27, "queue_req": 0})


def test_sglang_0_5_4_bracketed_iteration() -> None:
    d = _one("[2025-10-20 12:00:05] Decode batch [1234], #running-req: 32, #token: 41230, token usage: 0.09, accept len: 3.12, accept rate: 0.78, cuda graph: True, gen throughput (token/s): 1950.00, #queue-req: 0, ")
    _has(d, {"accept_len": 3.12, "accept_rate": 0.78, "running_req": 32, "gen_throughput": 1950.0})
    pd = _one("[2025-10-20 12:00:05] Decode batch [1234], #running-req: 32, #token: 41230, token usage: 0.09, pre-allocated usage: 0.01, #prealloc-req: 2, #transfer-req: 1, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0, ")
    _has(pd, {"prealloc_req": 2, "transfer_req": 1, **PLAIN})
    p = _one("[2025-10-20 12:00:05] Prefill batch [1235], #new-seq: 2, #new-token: 8192, #cached-token: 0, token usage: 0.05, #running-req: 0, #queue-req: 3, #prealloc-req: 1, #inflight-req: 2, input throughput (token/s): 10240.00, ")
    _has(p, {"new_token": 8192, "prealloc_req": 1, "inflight_req": 2, "input_throughput": 10240.0})


@pytest.mark.parametrize("stamp", ["2026-03-01 12:00:05", "2026-06-01 12:00:05"])
def test_sglang_0_5_12_and_0_5_23(stamp: str) -> None:
    d = _one(f"[{stamp}] Decode batch, #running-req: 32, #token: 41230, token usage: 0.09, cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0")
    _has(d, {"kind": "decode", **PLAIN})
    mamba = _one(f"[{stamp}] Decode batch, #running-req: 32, #full token: 12000, full token usage: 0.03, mamba num: 8, mamba usage: 0.02, cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0")
    _has(mamba, {"tokens": 12000, "token_usage": 0.03, "mamba_num": 8, "mamba_usage": 0.02})
    p = _one(f"[{stamp}] Prefill batch, #new-seq: 4, #new-token: 2048, #cached-token: 512, token usage: 0.08, #running-req: 28, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 10240.00")
    _has(p, {"pending_token": 0, "cuda_graph": False, "input_throughput": 10240.0, **PREFILL})
    pd = _one(f"[{stamp}] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 0, token usage: 0.05, #running-req: 0, #queue-req: 3, #pending-token: 12000, #bootstrap-req: 1, #inflight-req: 2, #optimistic-req: 0, cuda graph: False, input throughput (token/s): 40960.00")
    _has(pd, {"bootstrap_req": 1, "optimistic_req": 0, "pending_token": 12000})


def test_sglang_0_5_suffixes_and_extra_fields() -> None:
    d = _one("[2026-03-01 12:00:05.417 PP1 TP0] Decode batch [9], #running-req: 32, #token: 41230, token usage: 0.09, cuda graph: True, gen throughput (token/s): 2327.27, #queue-req: 0, est. decode TFLOPS/s (per GPU): 12.50, est. read BW (GB/s per GPU): 900.00, est. write BW (GB/s per GPU): 10.00, fwd occupancy: 87.50%, fwd+idle occupancy: 99.00%")
    _has(d, {"ts": "2026-03-01T12:00:05.417", "rank": "PP1 TP0", "fwd_occupancy": 0.875, **PLAIN})
    t = _one("[2026-03-01 12:00:05] Decode batch, timestamp: 1767225605.12, #running-req: 32, #cache_miss: 3, #token: 41230, token usage: 0.09, gen throughput (token/s): 2327.27, #queue-req: 0")
    _has(t, {"timestamp": 1767225605.12, "cache_miss": 3, **PLAIN})


def test_reordered_fields_parse_by_key() -> None:
    d = _one("[2026-03-01 12:00:05] Decode batch, #queue-req: 5, gen throughput (token/s): 10.50, token usage: 0.50, #token: 100, #running-req: 3")
    _has(d, {"running_req": 3, "tokens": 100, "token_usage": 0.5, "gen_throughput": 10.5, "queue_req": 5})


def test_2024_form_without_head_or_throughput() -> None:
    d = _one("#running-req: 7, #token: 5000, token usage: 0.12, #queue-req: 2")
    _has(d, {"kind": "decode", "running_req": 7, "tokens": 5000, "gen_throughput": None, "queue_req": 2})


def test_vllm_stats_lines() -> None:
    v0 = _one("INFO 03-01 12:00:10 metrics.py:455] Avg prompt throughput: 1523.4 tokens/s, Avg generation throughput: 812.7 tokens/s, Running: 24 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 37.5%, CPU KV cache usage: 0.0%.")
    _has(v0, {"kind": "decode", "engine": "vllm", "ts": "03-01T12:00:10", "prefill_throughput": 1523.4,
              "gen_throughput": 812.7, "running_req": 24, "queue_req": 3, "token_usage": 0.375, "tokens": None})
    v1 = _one("(APIServer pid=4021) INFO 06-01 12:00:10 [loggers.py:335] Engine 000: Avg prompt throughput: 1523.4 tokens/s, Avg generation throughput: 812.7 tokens/s, Running: 64 reqs, Waiting: 12 reqs, Deferred: 2 reqs, Preemptions: 5, GPU KV cache usage: 99.2%, Prefix cache hit rate: 42.1%")
    _has(v1, {"engine": "vllm", "running_req": 64, "queue_req": 12, "deferred_req": 2, "preemptions": 5,
              "token_usage": 0.992, "prefix_hit_rate": 0.421, "engine_index": 0})
    agg = _one("(APIServer pid=4021) INFO 06-01 12:00:10 [loggers.py:335] 2 Engines Aggregated: Avg prompt throughput: 3046.8 tokens/s, Avg generation throughput: 1625.4 tokens/s, Running: 48 reqs, Waiting: 6 reqs, XPU KV cache usage: 37.5%")
    _has(agg, {"engines": 2, "gen_throughput": 1625.4, "token_usage": 0.375})
    # V0's own line of the prefix cache's hit rate, after its stats line
    v0 = parse_line("INFO 03-01 12:00:10 metrics.py:471] Prefix cache hit rate: GPU: 42.10%, CPU: 0.00%")
    assert v0 is not None and v0["kind"] == "cache"
    _has(v0, {"engine": "vllm", "prefix_hit_rate": 0.421, "cpu_prefix_hit_rate": 0.0})


@pytest.mark.parametrize("line", [
    "[2026-03-01 12:00:05] Decode batch, garbage",
    "[2026-03-01 12:00:05] Prefill batch, #new-seq: x, #new-token: y",
    "INFO 03-01 12:00:10 metrics.py:455] Avg prompt throughput: n/a",
])
def test_stats_looking_lines_that_fail_are_unparsed(line: str) -> None:
    rec = _one(line)
    assert rec["kind"] == "unparsed"
    assert "batch" in rec["text"] or "throughput" in rec["text"]


@pytest.mark.parametrize("line", [
    "", "\n", "[2026-06-01 12:00:01] INFO:     127.0.0.1:51234 - \"GET /metrics HTTP/1.1\" 200 OK",
    "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  1.6it/s]",
    "[2025-09-11 10:25:44 TP0] Capture cuda graph bs [1, 2, 4, 8]",
])
def test_lines_of_no_interest(line: str) -> None:
    assert parse_line(line) is None


def test_long_line_is_capped_before_parsing() -> None:
    line = "[2026-03-01 12:00:05] Decode batch, #running-req: 3, #token: 9, " + "x: 1, " * 200_000
    rec = parse_line(line)
    assert rec is not None and rec["kind"] == "decode" and rec["running_req"] == 3
