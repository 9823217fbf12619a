"""The server flags a fix names, by engine: a vLLM user told to pass an SGLang flag has been
told nothing. One table, so every hint that trades KV cache for headroom or concurrency speaks
the flags of the server that printed the log."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class EngineFlags:
    mem: str
    """The share of GPU memory the server takes for weights and KV cache."""
    mem_fact: str
    """The server-args fact that holds that share's value."""
    prefill_cap: str
    """The flag that caps how many tokens one prefill step takes."""
    batch_caps: str
    """The flags that cap a batch (tokens / requests)."""
    requests_cap: str
    """The flag that caps the requests running at once."""
    fp8_kv: str
    host_cache: str
    """KV cache kept in host memory too."""
    tp: str
    """The tensor-parallel size: how many GPUs share the weights."""


SGLANG = EngineFlags(
    mem="--mem-fraction-static", mem_fact="mem_fraction_static",
    prefill_cap="--chunked-prefill-size",
    batch_caps="--chunked-prefill-size / --max-running-requests",
    requests_cap="--max-running-requests",
    fp8_kv="--kv-cache-dtype fp8_e5m2", host_cache="--enable-hierarchical-cache", tp="--tp-size")
VLLM = EngineFlags(
    mem="--gpu-memory-utilization", mem_fact="gpu_memory_utilization",
    prefill_cap="--max-num-batched-tokens",
    batch_caps="--max-num-batched-tokens / --max-num-seqs",
    requests_cap="--max-num-seqs",
    fp8_kv="--kv-cache-dtype fp8", host_cache="--kv-offloading-size",
    tp="--tensor-parallel-size")

_BY_ENGINE = {"sglang": SGLANG, "vllm": VLLM}


def flags_for(engine: str | None) -> EngineFlags:
    """The engine's flags; SGLang's where the log has not said which engine it is."""
    return _BY_ENGINE.get(engine or "", SGLANG)


def mem_now(flags: EngineFlags, facts: Mapping[str, Any]) -> float | None:
    """The memory share the server runs with, where its arguments line gave it."""
    value = facts.get(flags.mem_fact)
    return float(value) if isinstance(value, (int, float)) else None
