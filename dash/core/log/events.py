"""The numbers of event lines: what a `Phrase` of the grammar (`dash.core.log.grammar`) takes
out of a message it matched. Each extractor takes the message and the phrase's match (or None)
and returns the event's fields, or None to pass the line on to the next phrase.
"""

from __future__ import annotations

import re
from typing import Any

from dash.core.log.server_args import parse_server_args

Match = re.Match[str] | None

Fields = dict[str, Any]

_AVAIL = re.compile(r"avail(?:able)?[ _]mem=([\d.]+) ?GB")
_USAGE = re.compile(r"mem usage=([\d.]+) ?GB")
_RETRACTED = re.compile(r"#retracted_reqs: (\d+)")
_RATIO = re.compile(r"#new_token_ratio: ([\d.]+) -> ([\d.]+)")
_GAINED = re.compile(r"#new_tokens_gained: (\d+)")
_ABORTED = re.compile(r"#aborted_retracted_reqs: (\d+)")
_KV_NUM = re.compile(r"(#tokens|K size|V size|KV size|dtype): ([^,]+)")
_CAPACITY = re.compile(r"(\w+)=([\d.]+)")
_VLLM_BLOCKS = re.compile(r"# ([GC]PU) blocks: (\d+)")
_VLLM_KV_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_VLLM_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")

def _num(m: re.Match[str] | None, group: int = 1) -> float | None:
    return _float(m.group(group)) if m else None


def _float(text: str) -> float | None:
    """A `[\\d.]+` capture as a number; None for `1.2.3`."""
    try:
        return float(text)
    except ValueError:
        return None


def kv_cache(msg: str, _m: Match = None) -> Fields:
    out: Fields = {}
    names = {"#tokens": "tokens", "K size": "k_size_gb", "V size": "v_size_gb",
             "KV size": "kv_size_gb", "dtype": "dtype"}
    for key, value in _KV_NUM.findall(msg):
        value = value.strip()
        if key == "dtype":
            out["dtype"] = value
        elif key == "#tokens":
            out["tokens"] = int(value) if value.isdigit() else None
        else:
            num = value.split(" ", 1)[0]
            out[names[key]] = float(num) if num.replace(".", "", 1).isdigit() else None
    return out


def capacity(msg: str, _m: Match = None) -> Fields:
    out: Fields = {}
    keys = {"max_total_num_tokens": "max_total_num_tokens", "max_prefill_tokens":
            "max_prefill_tokens", "max_running_requests": "max_running_requests",
            "context_len": "context_len", "chunked_prefill_size": "chunked_prefill_size",
            "available_gpu_mem": "available_gpu_mem_gb", "available_cpu_mem": "available_cpu_mem_gb"}
    for key, value in _CAPACITY.findall(msg):
        name = keys.get(key)
        if name is not None and value.count(".") <= 1 and value.strip("."):
            out[name] = float(value) if name.endswith("_gb") else int(float(value))
    return out


def vllm_capacity(msg: str, _m: Match = None) -> Fields | None:
    blocks = _VLLM_BLOCKS.findall(msg)
    if blocks:
        out: Fields = {}
        for dev, n in blocks:
            out["gpu_blocks" if dev == "GPU" else "cpu_blocks"] = int(n)
        return out
    m = _VLLM_KV_TOKENS.search(msg)
    if m:
        return {"max_total_num_tokens": int(m.group(1).replace(",", ""))}
    m = _VLLM_CONCURRENCY.search(msg)
    if m:
        return {"context_len": int(m.group(1).replace(",", "")),
                "max_concurrency": _float(m.group(2))}
    return None


def graph(msg: str, m: Match) -> Fields:
    """`Capture cuda graph end. ... avail mem=5.59 GB` (the pattern's groups: graph, phase)."""
    assert m is not None
    out: Fields = {"phase": m.group(2), "avail_mem_gb": _num(_AVAIL.search(msg)),
                   "mem_usage_gb": _num(_USAGE.search(msg))}
    if m.group(1):
        out["graph"] = m.group(1)
    return out


def memory(msg: str, _m: Match = None) -> Fields:
    """`avail mem=63.41 GB, mem usage=15.12 GB`."""
    return {"avail_mem_gb": _num(_AVAIL.search(msg)), "mem_usage_gb": _num(_USAGE.search(msg))}


def weights_taken(_msg: str, m: Match) -> Fields:
    """vLLM's `Loading model weights took 14.96 GB` (the pattern's group 1)."""
    assert m is not None
    return {"avail_mem_gb": None, "mem_usage_gb": _float(m.group(1))}


def retract(msg: str, _m: Match = None) -> Fields:
    out: Fields = {"retracted_req": int(m.group(1)) if (m := _RETRACTED.search(msg)) else None,
                   "new_token_ratio": None}
    ratio = _RATIO.search(msg)
    if ratio:
        out["new_token_ratio_before"] = _float(ratio.group(1))
        out["new_token_ratio"] = _float(ratio.group(2))
    if (g := _GAINED.search(msg)) is not None:
        out["new_tokens_gained"] = int(g.group(1))
    if (a := _ABORTED.search(msg)) is not None:
        out["aborted_retracted_req"] = int(a.group(1))
    return out


def watchdog(msg: str, _m: Match = None) -> Fields:
    """A soft watchdog (`soft=True`) is an error; any other one kills the server."""
    return {"event": "error"} if "soft=True" in msg else {"reason": "watchdog"}


def server_args(msg: str, _m: Match = None) -> Fields | None:
    args = parse_server_args(msg)
    if args is None:
        return None
    args.pop("event", None)
    return args
