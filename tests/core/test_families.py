"""Stats families beyond Decode/Prefill/vLLM's stats line, and what `unparsed` and `incomplete`
see. Lines are real where real-logs has them, else built from the format strings quoted in the
log-shapes notes (sections 4, 6, 7); values read off by hand."""

from __future__ import annotations

from typing import Any

import pytest

from dash.core.log.parse import parse_line

API = "(APIServer pid=1) INFO 09-10 12:00:10 [metrics.py:96] "


def _rec(line: str) -> dict[str, Any]:
    rec = parse_line(line, 5)
    assert rec is not None, line
    return rec


def _has(rec: dict[str, Any], want: dict[str, Any]) -> None:
    assert {k: rec.get(k) for k in want} == want


def test_sglang_0_1_new_fill_batch_is_a_prefill_record() -> None:
    rec = _rec("new fill batch. #seq: 2. #cached_token: 512. #new_token: 40. #remaining_req: 6. "
               "#running_req: 3. tree_cache_hit_rate: 71.20%.")
    _has(rec, {"kind": "prefill", "new_seq": 2, "cached_token": 512, "new_token": 40,
               "queue_req": 6, "running_req": 3, "cache_hit_rate": 0.712, "token_usage": None})
    assert "incomplete" not in rec
    early = _rec("new fill batch. #seq: 1. #cached_token: 0. #new_token: 17. #remaining_req: 0. "
                 "#running_req: 0")  # 0.1.3-0.1.10: no hit rate, no final period
    _has(early, {"new_seq": 1, "new_token": 17, "running_req": 0, "cache_hit_rate": None})
    assert "incomplete" not in early


def test_sglang_0_1_decode_and_the_0_1_17_spellings() -> None:
    d = _rec("#running-req: 3, #token: 4096, token usage: 0.05, gen throughput (token/s): 120.55, "
             "#queue-req: 6")
    _has(d, {"kind": "decode", "running_req": 3, "tokens": 4096, "token_usage": 0.05,
             "gen_throughput": 120.55, "queue_req": 6})
    p = _rec("[gpu_id=0] Prefil batch. #new-seq: 2, #new-token: 40, #cached-token: 512, "
             "cache hit rate: 71.20%, #running-req: 3, #queue-req: 6")
    _has(p, {"kind": "prefill", "rank": "gpu_id=0", "new_seq": 2, "new_token": 40,
             "cached_token": 512, "cache_hit_rate": 0.712, "running_req": 3, "queue_req": 6})


def test_sglang_accept_len_and_rate_on_decode_lines() -> None:
    # real: sglang-11948-eagle3-decode-accept-len.log, line 2
    rec = _rec("[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, #token: 108, token usage: "
               "0.00, accept len: 2.17, accept rate: 0.54, cuda graph: True, gen throughput "
               "(token/s): 0.39, #queue-req: 0, ")
    _has(rec, {"kind": "decode", "accept_len": 2.17, "accept_rate": 0.54})


@pytest.mark.parametrize(("line", "want"), [
    # vLLM 0.10.2+ (v1/spec_decode/metrics.py): the per-position list holds `, `
    (API + "SpecDecoding metrics: Mean acceptance length: 3.10, Accepted throughput: 142.40 "
     "tokens/s, Drafted throughput: 200.00 tokens/s, Accepted: 1424 tokens, Drafted: 2000 tokens, "
     "Per-position acceptance rate: 0.812, 0.703, 0.621, Avg Draft acceptance rate: 41.0%",
     {"kind": "spec", "engine": "vllm", "accept_len": 3.1, "accepted_throughput": 142.4,
      "drafted_throughput": 200.0, "accepted_tokens": 1424, "drafted_tokens": 2000,
      "accept_rate_per_pos": [0.812, 0.703, 0.621], "accept_rate": 0.41}),
    # builds that print more (timings, rejected tokens), a named item after the list
    (API + "SpecDecoding metrics: Mean acceptance length: 2.42, Accepted throughput: 80.00 "
     "tokens/s, Drafted throughput: 120.00 tokens/s, Accepted: 800 tokens, Drafted: 1200 tokens, "
     "Rejected: 400 tokens, Reverify: 3, Per-position acceptance rate: 0.812, 0.703, Avg Draft "
     "acceptance rate: 66.7%, Draft time/step: 1.234 ms, Verify time/step: 4.567 ms",
     {"kind": "spec", "accept_len": 2.42, "rejected_tokens": 400,
      "accept_rate_per_pos": [0.812, 0.703], "accept_rate": 0.667}),
    # vLLM 0.8.5-0.10.1: the rate first, the list last
    ("INFO 05-01 12:00:10 [metrics.py:87] SpecDecoding metrics: Draft acceptance rate: 71.2%, "
     "Mean acceptance length: 2.14, Accepted: 1424 tokens, Drafted: 2000 tokens, Per-position "
     "acceptance rate: 0.812, 0.703, 0.621",
     {"kind": "spec", "accept_rate": 0.712, "accept_len": 2.14,
      "accept_rate_per_pos": [0.812, 0.703, 0.621]}),
    # vLLM V0 (engine/metrics.py): fractions, and a final period
    ("INFO 03-01 12:00:10 metrics.py:400] Speculative metrics: Draft acceptance rate: 0.712, System "
     "efficiency: 0.650, Number of speculative tokens: 3, Number of accepted tokens: 1424, Number "
     "of draft tokens: 2000, Number of emitted tokens: 1900.",
     {"kind": "spec", "accept_rate": 0.712, "system_efficiency": 0.65, "num_spec_tokens": 3,
      "accepted_tokens": 1424, "drafted_tokens": 2000, "emitted_tokens": 1900,
      "accept_len": None}),
    # V0 before anything was drafted: `nan` rates are no values, the line still a spec record
    ("INFO 11-20 10:00:05 metrics.py:449] Speculative metrics: Draft acceptance rate: nan, System "
     "efficiency: nan, Number of speculative tokens: 5, Number of accepted tokens: 0, Number of "
     "draft tokens: 0, Number of emitted tokens: 0.",
     {"kind": "spec", "accept_rate": None, "system_efficiency": None, "drafted_tokens": 0}),
])
def test_vllm_speculative_decoding_records(line: str, want: dict[str, Any]) -> None:
    rec = _rec(line)
    _has(rec, want)


def test_a_figure_the_server_could_not_measure_is_no_value_and_no_damage() -> None:
    """vLLM 0.34 (v1/spec_decode/metrics.py) prints `num_accepted / num_draft * 100` as
    `nan%` when an interval had no drafts, and the per-position list as `nan`s: the line is
    whole, its rate unknown (a cut line lacking the rate is still damaged)."""
    head = (API + "SpecDecoding metrics: Mean acceptance length: 1.00, Accepted throughput: 0.00 "
            "tokens/s, Drafted throughput: 0.00 tokens/s, Accepted: 0 tokens, Drafted: 0 tokens, "
            "Per-position acceptance rate: nan, nan, nan, ")
    rec = _rec(head + "Avg Draft acceptance rate: nan%")
    _has(rec, {"kind": "spec", "accept_len": 1.0, "accept_rate": None, "drafted_tokens": 0})
    assert "incomplete" not in rec
    cut = _rec(head + "Avg Draft accep")
    assert cut["incomplete"] == ["no accept_rate"]
    assert "incomplete" not in rec


@pytest.mark.parametrize(("line", "want"), [
    (API + "Engine 000: MFU: 312.4 TF/s/GPU 1520.3 GB/s/GPU",
     {"kind": "mfu", "engine_index": 0, "tflops_per_gpu": 312.4, "gbps_per_gpu": 1520.3}),
    (API + "Engine 001: MFU: 88.0 TF/s/device 410.5 GB/s/device",
     {"kind": "mfu", "engine_index": 1, "tflops_per_gpu": 88.0, "gbps_per_gpu": 410.5}),
])
def test_vllm_mfu_records(line: str, want: dict[str, Any]) -> None:
    _has(_rec(line), want)


DECODE = ("[2025-09-03 18:33:19 TP0] Decode batch. #running-req: 1, #token: 137, token usage: 0.00, "
          "cuda graph: True, gen throughput (token/s): 1.06, #queue-req: 0, ")  # real: sglang-10053


@pytest.mark.parametrize(("line", "problem"), [
    (DECODE[:120], "no queue_req"),  # wrapped by a terminal: the rest is on the next line
    (DECODE.rstrip(", ") + "$", "no queue_req"),  # `cat -A`'s line end pasted along
    (DECODE + "$" + DECODE, "two stats lines in one"),  # two lines glued at a `$`
    # a prefix no rule peels (vLLM's VLLM_LOGGING_PREFIX): its stamp is lost
    ("gpu7 INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 "
     "tokens/s, Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, "
     "GPU KV cache usage: 57.9%, Prefix cache hit rate: 40.5%", "text before the head"),
    # real: vllm-19680, wrapped after `Waiting: 4 r`
    ("INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, "
     "Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 r", "no token_usage"),
])
def test_damaged_stats_lines_are_read_and_marked(line: str, problem: str) -> None:
    rec = _rec(line)
    assert rec["kind"] in ("decode", "prefill"), line
    assert problem in rec["incomplete"] and rec["text"] == line


def test_complete_lines_are_not_marked() -> None:
    assert "incomplete" not in _rec(DECODE)
    # a `> ` quote of a whole line is read with its stamp (the bracket is found inside)
    quoted = _rec("> " + DECODE)
    assert quoted["ts"] == "2025-09-03T18:33:19" and "incomplete" not in quoted


@pytest.mark.parametrize("line", [
    # a family kdash has no rule for: several `name: number` items
    (API + "LookaheadDecoding metrics: Committed token throughput: 120.50 tokens/s, Mean "
     "window steps per canvas: 4.20, Mean tokens committed per step: 2.10"),
    # the tail of a terminal-wrapped stats line
    "Waiting: 0 reqs, GPU KV cache usage: 0.3%, Prefix cache hit rate: 68.2%",
    "[2025-09-11 10:25:33 TP0] #all_names: 835, #hit_names: 707, #missing_exclude_scales: 0",
])
def test_lines_that_carry_stats_nobody_reads_are_unparsed(line: str) -> None:
    rec = _rec(line)
    assert rec["kind"] == "unparsed" and rec["text"]


@pytest.mark.parametrize("line", [
    "[2025-11-30 11:18:05] Using default chat sampling params from model generation config: "
    "{'repetition_penalty': 1.05, 'temperature': 1e-06, 'top_k': 50, 'top_p': 1.0}",
    "[2025-09-11 10:25:44 TP0] Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32]",
    '  File "/x/engine.py", line 155, in start',
    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  1.6it/s]",
])
def test_lines_with_numbers_but_no_stats_are_not(line: str) -> None:
    rec = parse_line(line, 1)
    assert rec is None or rec["kind"] != "unparsed", line


def test_vllm_on_the_cpu_backend_reads_its_only_kv_pool_as_the_usage() -> None:
    """vLLM 0.33+ prints the device's name (`%s KV cache usage`): on the CPU backend its one
    pool is `CPU KV cache usage`, which V0 printed beside the GPU's for the swap space. Read
    as V0's alone, every line lacked its usage and was marked incomplete."""
    rec = parse_line("(APIServer pid=1) INFO 06-01 12:00:20 [loggers.py:335] Engine 000: Avg "
                     "prompt throughput: 0.0 tokens/s, Avg generation throughput: 44.0 tokens/s, "
                     "Running: 4 reqs, Waiting: 2 reqs, CPU KV cache usage: 97.0%, Prefix cache "
                     "hit rate: 10.0%", 1)
    assert rec is not None and (rec["token_usage"], rec.get("incomplete")) == (0.97, None)
    v0 = parse_line("INFO 11-20 10:00:05 metrics.py:449] Avg prompt throughput: 0.0 tokens/s, Avg "
                    "generation throughput: 10.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, "
                    "Pending: 0 reqs, GPU KV cache usage: 1.0%, CPU KV cache usage: 30.0%.", 1)
    assert v0 is not None and (v0["token_usage"], v0["cpu_kv_usage"]) == (0.01, 0.3)


@pytest.mark.parametrize("line", [
    # SGLang HiCache's storage backend, per prefetch (sglang#21880)
    "[2026-04-01 20:42:54.342] Prefetch operation b79d7954f863452ea52abbb66e9e4ea4 bytes: 1073.74MB, "
    "alloc time: 0.078026s, io time: 0.167429s, copy time: 0.118728s",
    # LMCache inside vLLM, per request (LMCache#1361)
    "(EngineCore_0 pid=3945189) [2025-08-21 07:17:09,753] LMCache INFO: Reqid: cmpl-e59-0, Total "
    "tokens 8891, LMCache hit tokens: 8704, need to load: 8704 (vllm_v1_adapter.py:1050)",
])
def test_known_lines_of_numbers_that_are_no_server_stats_are_not_unparsed(line: str) -> None:
    """They carry `name: number` items, and a busy server prints one per request: counted as
    unparsed, they made a healthy log look half unread."""
    rec = parse_line(line, 1)
    assert rec is None or rec["kind"] != "unparsed"


def test_vllms_diffusion_decoding_line_is_known_and_not_read() -> None:
    """vLLM 0.34's `DiffusionDecoding metrics:` (a canvas' committed tokens): no server load
    figure, and no format drift to show as unparsed."""
    assert parse_line(API + "DiffusionDecoding metrics: Committed token throughput: 120.00 "
                      "tokens/s, Mean denoising steps per canvas: 8.00, Mean tokens committed per "
                      "denoising step: 2.50, Committed: 1200 tokens, Denoising steps: 480", 5) is None
