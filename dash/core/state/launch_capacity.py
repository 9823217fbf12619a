"""What a server reported about its capacity at startup, as one launch's `capacity` (pure).

KV tokens (the capacity line's `max_total_num_tokens`, else the KV pool's `#tokens`, else vLLM's
`GPU KV cache size`), the KV pool's GB and dtype, the weights' GB, and the GPU memory left after
the weights, after the KV pool and after CUDA graph capture: per rank in the log, so the
smallest is kept (the first GPU to run out). The HiCache host pool's GB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float8_e4m3fn": "fp8_e4m3",
           "float8_e4m3fnuz": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}


def short_dtype(text: str) -> str:
    """`torch.bfloat16` -> `bf16`, `torch.float8_e4m3fn` -> `fp8_e4m3`; others as printed."""
    name = text.strip().removeprefix("torch.")
    return _DTYPES.get(name, name)


def _num(rec: Mapping[str, Any], key: str) -> float | None:
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class Allocations:
    """What one launch allocated on each rank: its KV pools and its weights, summed per rank.

    A model may allocate several pools and load several models on one GPU: a sliding-window
    model's `Full` and `SWA` pools, a speculative draft model's weights and pool after the
    target's (`KV Cache is allocated` printed once for each, as is `Load weight end`). The
    memory they take is the sum; the tokens are the largest pool's but a draft's (the target's,
    or the full layers'). A pool sized after CUDA graph capture (SGLang 0.5.23+) first prints
    its address space's upper bound (`bound`), which the pools allocated after it replace. A
    line the same as one already counted on a rank is another rank's copy where lines name no
    rank.
    """

    def __init__(self) -> None:
        self._pools: dict[str | None, list[tuple[Any, ...]]] = {}
        self._weights: dict[str | None, list[float]] = {}

    def add_pool(self, rec: Mapping[str, Any]) -> bool:
        """Count a pool line (`pool` in the record); False where it sized nothing."""
        size = _num(rec, "kv_size_gb")
        k, v = _num(rec, "k_size_gb"), _num(rec, "v_size_gb")
        if size is None and k is not None and v is not None:
            size = round(k + v, 2)
        if size is None:
            return False
        entry = (rec.get("pool"), rec.get("tokens"), size, bool(rec.get("bound")))
        pools = self._pools.setdefault(rec.get("rank"), [])
        if entry in pools:
            return True
        if not entry[3] and any(p[3] for p in pools):
            pools[:] = [p for p in pools if not p[3]]  # the real pools replace the bound
        pools.append(entry)
        return True

    def add_weights(self, rec: Mapping[str, Any]) -> bool:
        gb = _num(rec, "mem_usage_gb")
        if gb is None:
            return False
        rank = rec.get("rank")
        loaded = self._weights.setdefault(rank, [])
        # ranks that print no rank (vLLM V0's workers) measure their share a few MB apart
        slack = 0.01 if rank is None else 0.0
        if not any(abs(gb - w) <= slack * max(gb, w) for w in loaded):
            loaded.append(gb)
        return True

    def has_pool(self, rank: str | None) -> bool:
        """A KV pool was allocated on `rank` (any rank, where lines name none)."""
        if rank is None:
            return any(self._pools.values())
        return bool(self._pools.get(rank))

    def kv_gb(self) -> float | None:
        """The KV pools' GB on the rank that allocated the most."""
        sums = [sum(p[2] for p in pools) for pools in self._pools.values() if pools]
        return round(max(sums), 2) if sums else None

    def kv_tokens(self) -> int | None:
        """The largest pool's tokens but a draft's: the target's, or a sliding-window model's
        full layers' (0.5.13-0.5.15 print the SWA pool first, neither labelled)."""
        for pools in self._pools.values():
            tokens = [p[1] for p in pools if p[0] != "draft" and isinstance(p[1], int)
                      and not isinstance(p[1], bool)]
            if tokens:
                return max(tokens)
        return None

    def weights_gb(self) -> float | None:
        sums = [sum(w) for w in self._weights.values() if w]
        return round(max(sums), 2) if sums else None


class Capacity:
    """The capacity figures of one launch, from its startup events."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.allocations = Allocations()
        self.graph_seen = False
        """A CUDA graph line gave the memory left after capture (it wins over the capacity
        line's `available_gpu_mem`, which is taken at about the same time)."""

    def apply(self, rec: Mapping[str, Any], event: str) -> None:
        cap = self.values
        if event == "load_weights" and rec.get("phase") != "begin":
            if self.allocations.add_weights(rec):
                cap["weights_gb"] = self.allocations.weights_gb()
            # a model loaded after this rank's KV pool is a speculative draft: what it leaves
            # is what the target's pool left, not what the weights did
            if not self.allocations.has_pool(rec.get("rank")):
                _keep(cap, "weights_avail_gb", _num(rec, "avail_mem_gb"), min)
        elif event == "cuda_graph" and rec.get("phase") == "end":
            avail = _num(rec, "avail_mem_gb")
            if avail is not None:
                if not self.graph_seen:
                    cap.pop("graph_avail_gb", None)  # the capacity line's figure, if first
                self.graph_seen = True
                _keep(cap, "graph_avail_gb", avail, min)
        elif event == "kv_cache":
            self._kv(rec)

    def _kv(self, rec: Mapping[str, Any]) -> None:
        cap = self.values
        tokens = rec.get("max_total_num_tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            cap["max_total_num_tokens"] = tokens  # the capacity line wins over the pool's #tokens
        elif isinstance(rec.get("tokens"), int) and "max_total_num_tokens" not in cap:
            cap["max_total_num_tokens"] = rec["tokens"]
        context = rec.get("context_len")
        if isinstance(context, int) and not isinstance(context, bool) and context > 0:
            cap["context_len"] = context  # what `--max-model-len -1` (auto) came to
        blocks = rec.get("gpu_blocks")
        if isinstance(blocks, int) and not isinstance(blocks, bool):
            if rec.get("kv_final"):
                cap["gpu_blocks"] = blocks  # sized after warmup, or grown: it replaces
            else:
                _keep(cap, "gpu_blocks", blocks, min)
        if "pool" in rec and self.allocations.add_pool(rec):
            cap["kv_size_gb"] = self.allocations.kv_gb()
        else:
            size = _num(rec, "kv_size_gb")
            k, v = _num(rec, "k_size_gb"), _num(rec, "v_size_gb")
            if size is None and k is not None and v is not None:
                size = round(k + v, 2)
            if size is not None and rec.get("kv_final"):
                cap["kv_size_gb"] = size  # sized after warmup: the estimate before is replaced
            elif size is not None:
                cap.setdefault("kv_size_gb", size)
        if isinstance(rec.get("dtype"), str):
            cap["kv_dtype"] = short_dtype(rec["dtype"])
        host = _num(rec, "hicache_host_gb")
        if host is not None:
            cap.setdefault("hicache_host_gb", host)
        if rec.get("phase") == "end":  # `Memory pool end. avail mem=...`
            _keep(cap, "pool_avail_gb", _num(rec, "avail_mem_gb"), min)
        elif "pool" in rec and not rec.get("bound") and _num(rec, "avail_mem_gb") is not None:
            # a pool sized after CUDA graph capture (`Post-capture KV sizing: ... avail
            # mem=0.60 GB`): what it leaves is left after the pool and the graphs both
            left = _num(rec, "avail_mem_gb")
            _keep(cap, "pool_avail_gb", left, min)
            if not self.graph_seen:
                cap.pop("graph_avail_gb", None)
            self.graph_seen = True
            _keep(cap, "graph_avail_gb", left, min)
        if not self.graph_seen:  # the capacity line's figure is taken after graph capture too
            _keep(cap, "graph_avail_gb", _num(rec, "available_gpu_mem_gb"), min)


def _keep(cap: dict[str, Any], key: str, value: float | None,
          pick: Callable[[float, float], float]) -> None:
    """Set `cap[key]`, or keep the smaller (`min`) or larger (`max`) of old and new."""
    if value is not None:
        cap[key] = value if key not in cap else pick(cap[key], value)
