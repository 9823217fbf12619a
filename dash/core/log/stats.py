"""Periodic stats lines: SGLang `Decode batch` / `Prefill batch`, and vLLM's throughput line.

Parsed by fields, never by position: the text after the head is split on `", "`, each item on
its first `": "`, and the keys are looked up in a table. Unknown keys are ignored, so fields
that versions insert, drop or reorder (`cuda graph`, `accept len`, `largest-len`, PD queues,
`#pending-token`, a trailing `", "` or not) never break a line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Fields = dict[str, Any]
_Conv = Callable[[str], Any]


def _int(v: str) -> int | None:
    try:
        return int(v)  # the common case, at C speed
    except ValueError:
        pass
    v = v.strip()
    if v.startswith("full="):  # 0.4.9 SWA form `#token: full=N, swa=M`
        v = v[5:]
    v = v.replace(",", "")
    return int(v) if v.isdigit() else None


def _float(v: str) -> float | None:
    try:
        f = float(v)  # the common case, at C speed
        return f if f - f == 0 else None  # not nan / inf
    except ValueError:
        pass
    v = v.strip().split(" ", 1)[0]  # `41.7 tokens/s`, `10 reqs`, `53.31 GB`
    v = v.rstrip(".%x").replace(",", "")
    if v.startswith("full="):
        v = v[5:]
    try:
        f = float(v)
    except ValueError:
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def _count(v: str) -> int | None:
    f = _float(v)
    return int(f) if f is not None and f == int(f) else None


def _bool(v: str) -> bool | None:
    v = v.strip()
    return True if v == "True" else False if v == "False" else None


def _fraction_of_percent(v: str) -> float | None:
    f = _float(v)
    return None if f is None else round(f / 100.0, 6)


# printed key -> (record key, converter); the first key listed for a record key wins
_DECODE: dict[str, tuple[str, _Conv]] = {
    "#running-req": ("running_req", _int),
    "#token": ("tokens", _int),
    "token usage": ("token_usage", _float),
    "gen throughput (token/s)": ("gen_throughput", _float),
    "#queue-req": ("queue_req", _int),
    "#full token": ("full_tokens", _int),
    "full token usage": ("full_token_usage", _float),
    "#swa token": ("swa_tokens", _int),
    "swa token usage": ("swa_token_usage", _float),
    "#gpu token": ("gpu_tokens", _int),
    "gpu token usage": ("gpu_token_usage", _float),
    "#cpu token": ("cpu_tokens", _int),
    "cpu token usage": ("cpu_token_usage", _float),
    "mamba num": ("mamba_num", _int),
    "mamba usage": ("mamba_usage", _float),
    "accept len": ("accept_len", _float),
    "accept rate": ("accept_rate", _float),
    "cap len": ("cap_len", _float),
    "block accept len": ("block_accept_len", _float),
    "largest-len": ("largest_len", _int),
    "pre-allocated usage": ("prealloc_usage", _float),
    "#prealloc-req": ("prealloc_req", _int),
    "#transfer-req": ("transfer_req", _int),
    "#retracted-req": ("retracted_req", _int),
    "#host-receive-req": ("host_receive_req", _int),
    "waiting-image-req": ("waiting_image_req", _int),
    "cuda graph": ("cuda_graph", _bool),
    "npu graph": ("cuda_graph", _bool),
    "cpu graph": ("cuda_graph", _bool),
    "musa graph": ("cuda_graph", _bool),
    "timestamp": ("timestamp", _float),
    "#cache_miss": ("cache_miss", _int),
    "fwd occupancy": ("fwd_occupancy", _float),
}
_PREFILL: dict[str, tuple[str, _Conv]] = {
    "#new-seq": ("new_seq", _int),
    "#new-token": ("new_token", _int),
    "#cached-token": ("cached_token", _int),
    "cache hit rate": ("cache_hit_rate", _float),
    "token usage": ("token_usage", _float),
    "#running-req": ("running_req", _int),
    "#queue-req": ("queue_req", _int),
    "#pending-token": ("pending_token", _int),
    "input throughput (token/s)": ("input_throughput", _float),
    "#token": ("tokens", _int),
    "full token usage": ("full_token_usage", _float),
    "swa token usage": ("swa_token_usage", _float),
    "mamba usage": ("mamba_usage", _float),
    "#replay-token": ("replay_token", _int),
    "#unbootstrapped-req": ("unbootstrapped_req", _int),
    "#transferring-req": ("transferring_req", _int),
    "#prealloc-req": ("prealloc_req", _int),
    "#inflight-req": ("inflight_req", _int),
    "#bootstrap-req": ("bootstrap_req", _int),
    "#optimistic-req": ("optimistic_req", _int),
    "waiting-image-req": ("waiting_image_req", _int),
    "cuda graph": ("cuda_graph", _bool),
    "npu graph": ("cuda_graph", _bool),
    "cpu graph": ("cuda_graph", _bool),
    "musa graph": ("cuda_graph", _bool),
    "fwd occupancy": ("fwd_occupancy", _float),
}
_VLLM: dict[str, tuple[str, _Conv]] = {
    "Avg prompt throughput": ("prefill_throughput", _float),
    "Avg generation throughput": ("gen_throughput", _float),
    "Running": ("running_req", _count),
    "Waiting": ("queue_req", _count),
    "Pending": ("queue_req", _count),
    "Swapped": ("swapped_req", _count),
    "Deferred": ("deferred_req", _count),
    "Preemptions": ("preemptions", _count),
    "GPU KV cache usage": ("token_usage", _fraction_of_percent),
    "CPU KV cache usage": ("cpu_kv_usage", _fraction_of_percent),
    "Prefix cache hit rate": ("prefix_hit_rate", _float),
    "External prefix cache hit rate": ("external_prefix_hit_rate", _float),
    "MM cache hit rate": ("mm_cache_hit_rate", _float),
    "Corrupted": ("corrupted_req", _count),
}

DECODE_REQUIRED = ("running_req", "queue_req", "tokens", "token_usage", "gen_throughput")
PREFILL_REQUIRED = ("new_seq", "new_token", "cached_token", "token_usage", "running_req", "queue_req")

_DECODE_HEAD = re.compile(r"Decode batch(?: ?\[\d+\])?[.,]? ?")
_PREFILL_HEAD = re.compile(
    r"Prefill batch(?:\(mixed #running-req: (\d+)\))?(?: ?\[\d+\])?[.,]? ?"
)
_VLLM_HEAD = re.compile(r"(?:Engine (\d+): |(\d+) Engines Aggregated: )?(?=Avg prompt throughput: )")


# `key: value` items separated by `", "`; an item without `": "` (the `swa=M` continuation of
# the 0.4.9 SWA form, stray text) is skipped
_PAIR = re.compile(r"(?:^|, )([^,]+?): ([^,]*)")


def _fields(body: str, table: dict[str, tuple[str, _Conv]]) -> Fields:
    out: Fields = {}
    for key, value in _PAIR.findall(body):
        spec = table.get(key)
        if spec is None:
            if key.endswith(" KV cache usage") and "GPU KV cache usage" not in out:
                spec = ("token_usage", _fraction_of_percent)  # `XPU KV cache usage` (vLLM 0.33)
            else:
                continue
        name, conv = spec
        if name not in out:
            out[name] = conv(value)
    return out


def _fill(rec: Fields, required: tuple[str, ...]) -> Fields:
    for k in required:
        rec.setdefault(k, None)
    return rec


def parse_decode(msg: str) -> Fields | None:
    """Fields of a decode stats message (with or without the `Decode batch` head), or None."""
    m = _DECODE_HEAD.search(msg)
    body = msg[m.end():] if m else msg
    rec = _fields(body, _DECODE)
    # hybrid models print `#full token` / `full token usage` instead of `#token` / `token usage`
    for main, alt in (("tokens", "full_tokens"), ("tokens", "gpu_tokens"),
                      ("token_usage", "full_token_usage"), ("token_usage", "gpu_token_usage")):
        if rec.get(main) is None and rec.get(alt) is not None:
            rec[main] = rec[alt]
    if rec.get("running_req") is None or (rec.get("tokens") is None and rec.get("token_usage") is None):
        return None
    return _fill(rec, DECODE_REQUIRED)


def parse_prefill(msg: str) -> Fields | None:
    """Fields of a `Prefill batch` message, or None when its core fields are missing."""
    m = _PREFILL_HEAD.search(msg)
    if m is None:
        return None
    rec = _fields(msg[m.end():], _PREFILL)
    if m.group(1) is not None and rec.get("running_req") is None:
        rec["running_req"] = int(m.group(1))
    if rec.get("token_usage") is None and rec.get("full_token_usage") is not None:
        rec["token_usage"] = rec["full_token_usage"]
    if rec.get("new_seq") is None or rec.get("new_token") is None:
        return None
    return _fill(rec, PREFILL_REQUIRED)


def parse_vllm_stats(msg: str) -> Fields | None:
    """vLLM's periodic `Avg prompt throughput: ...` line (V0, V1, `Engine 000:` prefixed)."""
    m = _VLLM_HEAD.search(msg)
    if m is None:
        return None
    rec = _fields(msg[m.end():], _VLLM)
    if m.group(1) is not None:
        rec["engine_index"] = int(m.group(1))
    elif m.group(2) is not None:
        rec["engines"] = int(m.group(2))
    if rec.get("gen_throughput") is None and rec.get("running_req") is None:
        return None
    return _fill(rec, DECODE_REQUIRED)
