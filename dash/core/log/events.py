"""Lifecycle and failure lines -> event fields (`event` plus its numbers).

Matched on message text, never on level or prefix: SGLang prints no level, and a WARNING or
ERROR line looks like an INFO line (reference/log-formats.md sections 5 and 8).
"""

from __future__ import annotations

import re
from typing import Any

from dash.core.log.server_args import parse_server_args

Fields = dict[str, Any]

_AVAIL = re.compile(r"avail(?:able)?[ _]mem=([\d.]+) ?GB")
_USAGE = re.compile(r"mem usage=([\d.]+) ?GB")
_GRAPH = re.compile(
    r"Capture (?:([\w -]{1,40}?) )?(?:cuda|CUDA|npu|NPU|cpu|CPU|xpu|XPU|musa|MUSA) graph (begin|end)\b"
)
_RETRACTED = re.compile(r"#retracted_reqs: (\d+)")
_RATIO = re.compile(r"#new_token_ratio: ([\d.]+) -> ([\d.]+)")
_GAINED = re.compile(r"#new_tokens_gained: (\d+)")
_ABORTED = re.compile(r"#aborted_retracted_reqs: (\d+)")
_KV_NUM = re.compile(r"(#tokens|K size|V size|KV size|dtype): ([^,]+)")
_CAPACITY = re.compile(r"(\w+)=([\d.]+)")
_VLLM_BLOCKS = re.compile(r"# ([GC]PU) blocks: (\d+)")
_VLLM_KV_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_VLLM_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
_VLLM_WEIGHTS = re.compile(r"(?:Loading model weights|Model loading) took ([\d.]+) ?Gi?B")
_EXC_LINE = re.compile(r"[A-Za-z_][\w.]{0,200}(?:Error|Exception|Exit|Interrupt)(?::|$)")
_KILLED = re.compile(r"(?:.{0,200}: line \d+: +\d+ )?Killed(?:\s|$)")

_OOM_TEXT = (
    "CUDA out of memory", "OutOfMemoryError", "CUDA error: out of memory", "NPU out of memory",
    "out of memory. Try to lower", "Not enough memory. Please try", "runs out of memory",
)
_RETRACT_TEXT = ("Decode out of memory happened", "Retract requests", "Testing retraction")
_EXCEPTION_TEXT = (
    "Scheduler hit an exception", "Exception in ModelTpServer", "Exception in run_tp_server",
    "Exception in ControllerSingle", "crashed with exit code", "EngineCore encountered a fatal",
    "died unexpectedly",
)
_SHUTDOWN_TEXT = ("SIGTERM received", "Shutting down", "Finished server process")


def _num(m: re.Match[str] | None, group: int = 1) -> float | None:
    return float(m.group(group)) if m else None


def _kv_cache(msg: str) -> Fields:
    out: Fields = {"event": "kv_cache"}
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


def _capacity(msg: str) -> Fields:
    out: Fields = {"event": "kv_cache"}
    keys = {"max_total_num_tokens": "max_total_num_tokens", "max_prefill_tokens":
            "max_prefill_tokens", "max_running_requests": "max_running_requests",
            "context_len": "context_len", "chunked_prefill_size": "chunked_prefill_size",
            "available_gpu_mem": "available_gpu_mem_gb", "available_cpu_mem": "available_cpu_mem_gb"}
    for key, value in _CAPACITY.findall(msg):
        name = keys.get(key)
        if name is not None and value.count(".") <= 1 and value.strip("."):
            out[name] = float(value) if name.endswith("_gb") else int(float(value))
    return out


def _vllm_capacity(msg: str) -> Fields | None:
    blocks = _VLLM_BLOCKS.findall(msg)
    if blocks:
        out: Fields = {"event": "kv_cache"}
        for dev, n in blocks:
            out["gpu_blocks" if dev == "GPU" else "cpu_blocks"] = int(n)
        return out
    m = _VLLM_KV_TOKENS.search(msg)
    if m:
        return {"event": "kv_cache", "max_total_num_tokens": int(m.group(1).replace(",", ""))}
    m = _VLLM_CONCURRENCY.search(msg)
    if m:
        return {"event": "kv_cache", "context_len": int(m.group(1).replace(",", "")),
                "max_concurrency": float(m.group(2))}
    return None


def _startup(msg: str) -> Fields | None:
    if "KV Cache is allocated" in msg or "KV Cache VA upper bound" in msg:
        return _kv_cache(msg)
    if "max_total_num_tokens=" in msg:
        return _capacity(msg)
    if "blocks: " in msg or "GPU KV cache size" in msg or "Maximum concurrency" in msg:
        return _vllm_capacity(msg)
    if "Capture " in msg:
        m = _GRAPH.search(msg)
        if m:
            out: Fields = {"event": "cuda_graph", "phase": m.group(2),
                           "avail_mem_gb": _num(_AVAIL.search(msg)),
                           "mem_usage_gb": _num(_USAGE.search(msg))}
            if m.group(1):
                out["graph"] = m.group(1)
            return out
    if "Load weight end" in msg:
        return {"event": "load_weights", "avail_mem_gb": _num(_AVAIL.search(msg)),
                "mem_usage_gb": _num(_USAGE.search(msg))}
    m = _VLLM_WEIGHTS.search(msg)
    if m:
        return {"event": "load_weights", "avail_mem_gb": None, "mem_usage_gb": float(m.group(1))}
    if "ready to roll" in msg or "Starting vLLM API server" in msg:
        return {"event": "ready"}
    return None


def _retract(msg: str) -> Fields:
    out: Fields = {"event": "retract",
                   "retracted_req": int(m.group(1)) if (m := _RETRACTED.search(msg)) else None,
                   "new_token_ratio": None}
    ratio = _RATIO.search(msg)
    if ratio:
        out["new_token_ratio_before"] = float(ratio.group(1))
        out["new_token_ratio"] = float(ratio.group(2))
    if (g := _GAINED.search(msg)) is not None:
        out["new_tokens_gained"] = int(g.group(1))
    if (a := _ABORTED.search(msg)) is not None:
        out["aborted_retracted_req"] = int(a.group(1))
    return out


def _failure(msg: str) -> Fields | None:
    if any(t in msg for t in _RETRACT_TEXT) or (
        "preempted" in msg and "KV cache space" in msg
    ):
        return _retract(msg)
    if any(t in msg for t in _OOM_TEXT):
        return {"event": "oom"}
    if any(t in msg for t in _EXCEPTION_TEXT):
        return {"event": "crash", "reason": "exception"}
    if "atchdog timeout" in msg:
        soft = "soft=True" in msg
        return {"event": "error"} if soft else {"event": "crash", "reason": "watchdog"}
    if "Received sigquit" in msg or "SIGQUIT received" in msg:
        return {"event": "crash", "reason": "sigquit"}
    if _KILLED.match(msg):
        return {"event": "crash", "reason": "killed"}
    return None


def _error(msg: str, level: str | None) -> Fields | None:
    if msg.startswith("Traceback (most recent call last)") or msg.startswith("ERROR:"):
        return {"event": "error"}
    if _EXC_LINE.match(msg) or "Health check failed" in msg:
        return {"event": "error"}
    if level in ("ERROR", "CRITICAL", "FATAL") and msg[:1] not in (" ", "\t", "^", ""):
        return {"event": "error"}
    return None


def parse_event(msg: str, level: str | None = None) -> Fields | None:
    """Event fields for a message, or None when it is no event."""
    if msg.startswith(("INFO:", "WARNING:", "DEBUG:")):  # uvicorn's own lines
        return {"event": "shutdown"} if any(t in msg for t in _SHUTDOWN_TEXT) else None
    if "server_args=" in msg or msg.startswith("ServerArgs(") or "non-default args: {" in msg:
        args = parse_server_args(msg)
        if args is not None:
            return args
    found = _failure(msg) or _startup(msg)
    if found is not None:
        return found
    if any(t in msg for t in _SHUTDOWN_TEXT):
        return {"event": "shutdown"}
    return _error(msg, level)
