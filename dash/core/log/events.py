"""The numbers of event lines: what a `Phrase` of the grammar (`dash.core.log.grammar`) takes
out of a message it matched. Each extractor takes the message and the phrase's match (or None)
and returns the event's fields, or None to pass the line on to the next phrase.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dash.core.log.convert import to_float as _float
from dash.core.log.convert import to_int as _int
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
# `# GPU blocks` (<= 0.6.6), `# cuda blocks` (0.7.3-0.10: the platform's device name), `# TPU ...`
_VLLM_BLOCKS = re.compile(r"# (\w{1,10}) blocks: ([0-9]+)")
_VLLM_KV_TOKENS = re.compile(r"\w{1,10} KV cache size: ([0-9,]+) tokens")
_VLLM_CONCURRENCY = re.compile(r"Maximum concurrency for ([0-9,]+) tokens per request: ([0-9.]+)x")
# `Available KV cache memory: 31.50 GiB`, `... reserved for KV Cache is 4.20GiB`, and with
# --kv-cache-memory-bytes (no profile) `reserved 30.0 GiB memory for KV Cache as specified by ...`
_VLLM_KV_MEMORY = re.compile(r"(?:Available KV cache memory: |reserved for KV Cache is )"
                             r"([0-9.]+) ?GiB|reserved ([0-9.]+) ?GiB memory for KV Cache")
_GRAPH_TOOK = re.compile(r"Graph capturing finished in ([0-9.]+) secs?(?:, took ([0-9.]+) GiB)?")
# HiCache host pool: `Allocating 96.00 GB host memory for hierarchical KV cache.` (<= 0.5.16),
# `Allocating full hierarchical KV host pool: 926000 tokens, 121.38 GB host memory.` (0.5.17+)
_HICACHE = re.compile(r"Allocating (?:([0-9.]+) GB host memory for hierarchical KV cache"
                      r"|(\w{1,20}) hierarchical KV host pool: ([0-9]+) tokens, ([0-9.]+) GB)")

# SGLang's hybrid (Mamba / GDN) state pool: `Mamba Cache is allocated. max_mamba_cache_size: 97,
# conv_state size: 0.10GB, ssm_state size: 5.17GB` (with speculative decoding, more `... size:`
# items follow, separated by spaces)
_MAMBA = re.compile(r"max_mamba_cache_size: ([0-9]+)|(conv_state|ssm_state) size: ([0-9.]+) ?GB")
# vLLM's startup memory budget (v1/worker/gpu_worker.py, 0.10.2+): `Free memory on device
# (78.66/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). Actual usage
# is 14.08 GiB for weight, 1.97 GiB for peak activation, 0.07 GiB for non-torch memory, and 0.67
# GiB for CUDAGraph memory. ... Current kv cache memory in use is 59212694937 bytes.` (later
# `... is 50.62 GiB.`, and `15.26 GiB for consumed memory (weights + non-torch)`)
_BUDGET_HEAD = re.compile(r"Free memory on device ?\S* \(([0-9.]+)/([0-9.]+) GiB\) on startup\. "
                          r"Desired GPU memory utilization is \(([0-9.]+), ([0-9.]+) GiB\)")
_SHARE = re.compile(r"total_gpu_memory \(([0-9.]+) ?GiB\) x gpu_memory_utilization "
                    r"\(([0-9.]+)\) = ([0-9.]+) ?GiB")
_BUDGET_PART = re.compile(r"([0-9.]+) GiB for (weight|consumed memory|peak activation|"
                          r"non-torch memory|CUDAGraph memory)")
_BUDGET_KV = re.compile(r"Current kv cache memory in use is ([0-9.]+) ?(GiB|bytes)")
_BUDGET_KEYS = {"weight": "weights_gb", "consumed memory": "weights_gb",
                "peak activation": "activation_gb", "non-torch memory": "non_torch_gb",
                "CUDAGraph memory": "cudagraph_gb"}


def _num(m: re.Match[str] | None, group: int = 1) -> float | None:
    text = m.group(group) if m else None
    return _float(text) if text else None




_POOL = re.compile(r"([\w .+-]{0,80}?) ?KV [Cc]ache (?:is allocated|allocated|(VA upper bound))")


def kv_cache(msg: str, _m: Match = None) -> Fields:
    """A KV pool's line: its tokens, GB (`kv_size_gb`, or K and V apart), dtype; `pool`, the
    pool's label as printed (`Full`, `SWA`, `draft`; "" for none), and `bound` where the line
    is the address space's upper bound of a pool sized later (SGLang 0.5.23+)."""
    out: Fields = {}
    m = _POOL.search(msg)
    if m is not None:
        out["pool"] = m.group(1).strip()
        if m.group(2):
            out["bound"] = True
    names = {"#tokens": "tokens", "K size": "k_size_gb", "V size": "v_size_gb",
             "KV size": "kv_size_gb", "dtype": "dtype"}
    for key, value in _KV_NUM.findall(msg):
        value = value.strip()
        if key == "dtype":
            out["dtype"] = value
        elif key == "#tokens":
            out["tokens"] = _int(value)
        else:
            out[names[key]] = _float(value.split(" ", 1)[0])
    avail = _AVAIL.search(msg)  # a pool sized after CUDA graph capture says what it left
    if avail:
        out["avail_mem_gb"] = _float(avail.group(1))
    return out


def mamba_cache(msg: str, _m: Match = None) -> Fields | None:
    """The slots of SGLang's Mamba state pool and the GB of its conv and SSM states."""
    out: Fields = {}
    for slots, state, gb in _MAMBA.findall(msg):
        if slots:
            out.setdefault("mamba_slots", _int(slots))
        else:
            out.setdefault(f"mamba_{state.removesuffix('_state')}_gb", _float(gb))
    return out or None


def capacity(msg: str, _m: Match = None) -> Fields:
    out: Fields = {}
    keys = {"max_total_num_tokens": "max_total_num_tokens", "max_prefill_tokens":
            "max_prefill_tokens", "max_running_requests": "max_running_requests",
            # SGLang 0.1.3-0.1.16 `Rank 0: max_total_num_token=463000, max_prefill_num_token=...`
            "max_total_num_token": "max_total_num_tokens",
            "max_prefill_num_token": "max_prefill_tokens",
            "context_len": "context_len", "chunked_prefill_size": "chunked_prefill_size",
            "available_gpu_mem": "available_gpu_mem_gb", "available_cpu_mem": "available_cpu_mem_gb"}
    for key, value in _CAPACITY.findall(msg):
        name = keys.get(key)
        num = _float(value) if name is not None else None
        if name is not None and num is not None and name not in out:
            out[name] = num if name.endswith("_gb") else int(num)
    return out


def vllm_capacity(msg: str, _m: Match = None) -> Fields | None:
    """vLLM's KV capacity: blocks, tokens, the concurrency they allow (0.30+ prints the last
    two on one line), or the memory the KV cache got."""
    out: Fields = {}
    for dev, n in _VLLM_BLOCKS.findall(msg):
        # `# CPU blocks` is the swap space's; the device's own are `# cuda blocks`, `# GPU
        # blocks`, and on the CPU backend `# cpu blocks` (lowercase, like `cuda`)
        out["cpu_blocks" if dev == "CPU" else "gpu_blocks"] = _int(n)
    m = _VLLM_KV_TOKENS.search(msg)
    if m:
        out["max_total_num_tokens"] = _int(m.group(1))
    m = _VLLM_CONCURRENCY.search(msg)
    if m:
        out["context_len"] = _int(m.group(1))
        out["max_concurrency"] = _float(m.group(2))
    m = _VLLM_KV_MEMORY.search(msg)
    if m:
        out["kv_size_gb"] = _float(m.group(1) or m.group(2))
    return out or None


# vLLM 0.34's extensible KV cache, sized after warmup: `Memory after warmup: ...; 2681 KV cache
# blocks (10.47 GiB) fit within the requested 79.19 GiB.`, `Extended KV cache to 2681 blocks
# (10.47 GiB).` (the figure `Available KV cache memory` gave before was an estimate)
_EXTENSIBLE = re.compile(r"([0-9]{1,12}) (?:KV cache )?blocks \(([0-9.]+) GiB\)")
# `--max-model-len auto reduced max_model_len from 40960 to 34816`, `Auto-fit max_model_len:
# reduced from 40960 to 34816`
_AUTO_FIT = re.compile(r"reduced (?:max_model_len )?from [0-9]{1,9} to ([0-9]{1,9})")


def vllm_extensible(msg: str, _m: Match = None) -> Fields | None:
    """The KV cache's final size (`kv_final`: it replaces the estimate printed before)."""
    m = _EXTENSIBLE.search(msg)
    if m is None:
        return None
    return {"gpu_blocks": _int(m.group(1)), "kv_size_gb": _float(m.group(2)), "kv_final": True}


def auto_fit(msg: str, _m: Match = None) -> Fields | None:
    """The context length vLLM chose for `--max-model-len -1` (auto)."""
    m = _AUTO_FIT.search(msg)
    return None if m is None else {"context_len": _int(m.group(1))}


_SHORT_POOL = re.compile(r"holds ([0-9]{1,12}) tokens, fewer than --context-length ([0-9]{1,9})")


def capacity_short(msg: str, _m: Match = None) -> Fields:
    """SGLang's `KV pool holds 30000 tokens, fewer than --context-length 131072`."""
    m = _SHORT_POOL.search(msg)
    return {} if m is None else {"pool_tokens": _int(m.group(1)), "context_length": _int(m.group(2))}


def vllm_budget(msg: str, _m: Match = None) -> Fields | None:
    """vLLM's account of the GPU memory at startup: what was free, what it was told to use, what
    the weights, activations, non-torch memory and CUDA graphs take, and the KV cache's share."""
    head = _BUDGET_HEAD.search(msg)
    if head is None:
        return None
    out: Fields = {"free_gb": _float(head.group(1)), "total_gb": _float(head.group(2)),
                   "gpu_memory_utilization": _float(head.group(3)),
                   "requested_gb": _float(head.group(4))}
    for gb, part in _BUDGET_PART.findall(msg):
        out.setdefault(_BUDGET_KEYS[part], _float(gb))
    kv = _BUDGET_KV.search(msg)
    if kv is not None:
        size = _float(kv.group(1))
        if size is not None and kv.group(2) == "bytes":
            size = round(size / (1 << 30), 2)
        out["kv_size_gb"] = size
    return out


def vllm_share(msg: str, _m: Match = None) -> Fields | None:
    """vLLM V0's memory profile: `the current vLLM instance can use total_gpu_memory (39.50GiB)
    x gpu_memory_utilization (0.90) = 35.55GiB`: the GPU's memory and the share it was given."""
    m = _SHARE.search(msg)
    if m is None:
        return None
    return {"total_gb": _float(m.group(1)), "gpu_memory_utilization": _float(m.group(2)),
            "requested_gb": _float(m.group(3))}


def graph_pool(_msg: str, m: Match) -> Fields:
    """vLLM 0.20+'s `CUDA graph pool memory: 0.52 GiB (actual), 0.61 GiB (estimated), ...`."""
    return {"phase": "end", "mem_usage_gb": _num(m, 1), "avail_mem_gb": None}


def hicache(msg: str, _m: Match = None) -> Fields | None:
    """SGLang's hierarchical (host) KV cache pool: its size in GB, and tokens (0.5.17+)."""
    m = _HICACHE.search(msg)
    if m is None:
        return None
    if m.group(1) is not None:
        return {"hicache_host_gb": _float(m.group(1))}
    return {"hicache_host_gb": _float(m.group(4)), "hicache_host_tokens": _int(m.group(3)),
            "pool": m.group(2)}


def graph_took(msg: str, _m: Match = None) -> Fields:
    """vLLM's `Graph capturing finished in 12 secs, took 0.58 GiB`."""
    m = _GRAPH_TOOK.search(msg)
    return {"phase": "end", "elapsed_s": _num(m, 1), "mem_usage_gb": _num(m, 2),
            "avail_mem_gb": None}


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


_PROFILED = re.compile(r"max_total_tokens=([0-9]{1,12}) is larger than the profiled value "
                       r"(-?[0-9]{1,12})")


def profiled(msg: str, _m: Match = None) -> Fields | None:
    """SGLang's `max_total_tokens=500000 is larger than the profiled value 463000. Use the
    profiled value instead.`: the pool's tokens are the profile's, not what was asked. A
    profile of no tokens at all (sglang#7691: -561981, the weights taking the whole share) is a
    pool that cannot fit: an `oom` (the negative figure is no count; the message shows it)."""
    m = _PROFILED.search(msg)
    if m is None:
        return None
    asked, got = int(m.group(1)), int(m.group(2))
    if got <= 0:
        return {"event": "oom", "reason": "mem_fraction", "asked_tokens": asked}
    return {"max_total_num_tokens": got, "asked_tokens": asked}


def preempted(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The retraction a stats record reports: vLLM V1 prints no line per preemption, only the
    count of its interval on the stats line (`Preemptions: 3`, printed when not 0), where V0
    and SGLang print a line of their own (`retract` above). As that event, at the stats line
    (None for a record that reports none)."""
    n = rec.get("preemptions")
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return None
    engine = rec.get("engine_index")
    who = f"Engine {engine:03d}: " if isinstance(engine, int) and not isinstance(engine, bool) else ""
    return {"kind": "event", "event": "retract", "line": rec.get("line"), "ts": rec.get("ts"),
            "rank": rec.get("rank"), "engine": rec.get("engine"), "retracted_req": n,
            "message": f"{who}{n} request{'s' if n != 1 else ''} preempted (Preemptions: {n} on "
                       "the stats line)"}


def watchdog(msg: str, _m: Match = None) -> Fields:
    """A soft watchdog (`soft=True`) is an error; any other one kills the server."""
    return {"event": "error"} if "soft=True" in msg else {"reason": "watchdog"}


def server_args(msg: str, _m: Match = None) -> Fields | None:
    args = parse_server_args(msg)
    if args is None:
        return None
    args.pop("event", None)
    return args
