"""Prometheus text from `/metrics` -> a few normalised numbers kdash shows.

SGLang has spelt its names `sglang:x` (colon, the exposition) and `sglang_x` (`/v1/loads
?format=prometheus`); vLLM renamed several gauges between engines (`gpu_cache_usage_perc` ->
`kv_cache_usage_perc`). Every spelling maps to one kdash name here, so nothing downstream cares
which server or version answered.

A full SGLang 0.5.23 exposition has ~170 families, most of them histograms kdash never shows.
Lines of families kdash does not use are dropped before the parser runs (a cheap split on the
name), which keeps a poll cycle cheap; prometheus_client's parser does the real parsing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

# Sample name (prefix already stripped) -> kdash name. Gauges are combined across DP ranks.
_GAUGES: Mapping[str, str] = {
    "num_running_reqs": "running_req",
    "num_requests_running": "running_req",
    "num_queue_reqs": "queue_req",
    "num_requests_waiting": "queue_req",
    "num_requests_swapped": "swapped_req",
    "num_used_tokens": "used_tokens",
    "token_usage": "token_usage",
    "gpu_cache_usage_perc": "token_usage",
    "kv_cache_usage_perc": "token_usage",
    "gen_throughput": "gen_throughput",
    "cache_hit_rate": "cache_hit_rate",
    "gpu_prefix_cache_hit_rate": "cache_hit_rate",
    "max_total_num_tokens": "max_total_num_tokens",
    "num_grammar_queue_reqs": "grammar_queue_req",
    "num_paused_reqs": "paused_req",
    "spec_accept_length": "spec_accept_length",
    "utilization": "utilization",
}
# Fractions (0..1): the worst DP rank is what matters, so these take the max, not the sum.
_FRACTIONS = frozenset({"token_usage", "cache_hit_rate", "utilization", "spec_accept_length"})
# Counters (wire names end in _total) and histogram parts: summed over every series.
_SUMS: Mapping[str, str] = {
    "prompt_tokens_total": "prompt_tokens_total",
    "generation_tokens_total": "generation_tokens_total",
    "cached_tokens_total": "cached_tokens_total",
    "realtime_tokens_total": "realtime_tokens_total",
    "num_requests_total": "requests_total",
    "request_success_total": "requests_total",
    "num_aborted_requests_total": "aborted_total",
    "num_retracted_requests_total": "retracted_total",
    "num_preemptions_total": "retracted_total",
    "prefix_cache_queries_total": "prefix_cache_queries_total",
    "prefix_cache_hits_total": "prefix_cache_hits_total",
    "time_to_first_token_seconds_sum": "ttft_seconds_sum",
    "time_to_first_token_seconds_count": "ttft_seconds_count",
    "e2e_request_latency_seconds_sum": "e2e_seconds_sum",
    "e2e_request_latency_seconds_count": "e2e_seconds_count",
    "inter_token_latency_seconds_sum": "itl_seconds_sum",
    "inter_token_latency_seconds_count": "itl_seconds_count",
}
_PREFIXES = ("sglang:", "sglang_", "vllm:")
_WANTED = frozenset(_GAUGES) | frozenset(_SUMS)


@dataclass(frozen=True, slots=True)
class PromResult:
    """Normalised metrics from one exposition, or why there are none."""

    metrics: Mapping[str, float] = field(default_factory=dict)
    families: int = 0
    """How many `# TYPE` families the text declared (all of them, used or not)."""
    engine: str | None = None
    """"sglang" or "vllm", from the names' prefix."""
    error: str | None = None


def _split_name(name: str) -> tuple[str | None, str]:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return ("vllm" if prefix == "vllm:" else "sglang"), name[len(prefix):]
    return None, name


def _full_names() -> frozenset[str]:
    names = {p + n for p in _PREFIXES for n in _WANTED}
    # A counter's TYPE/HELP line may name it without `_total` (vLLM's code names).
    return frozenset(names | {n[: -len("_total")] for n in names if n.endswith("_total")})


_FULL_NAMES = _full_names()


def filter_lines(text: str) -> tuple[str, int]:
    """Keep only the lines of families kdash uses; return them and the declared family count."""
    kept: list[str] = []
    families = 0
    wanted = _FULL_NAMES
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("TYPE", "HELP"):
                families += parts[1] == "TYPE"
                if parts[2] in wanted:
                    kept.append(line)
            continue
        name = line.partition("{")[0]
        if " " in name or "\t" in name:
            name = name.split(None, 1)[0] if name.strip() else ""
        if name in wanted:
            kept.append(line)
    return "\n".join(kept) + "\n", families


def _combine(values: Iterable[tuple[str, float]], fraction: bool) -> float:
    """Sum over DP ranks; within one rank keep the max (all TP ranks may publish the same)."""
    per_rank: dict[str, float] = {}
    for rank, value in values:
        per_rank[rank] = max(value, per_rank.get(rank, value))
    return max(per_rank.values()) if fraction else sum(per_rank.values())


def parse_metrics(text: str) -> PromResult:
    """Parse an exposition into normalised metrics; garbage gives a PromResult with `error`."""
    kept, families = filter_lines(text)
    gauges: dict[str, list[tuple[str, float]]] = {}
    sums: dict[str, float] = {}
    engine: str | None = None
    ranks: set[str] = set()
    try:
        for family in text_string_to_metric_families(kept):
            for sample in family.samples:
                eng, short = _split_name(sample.name)
                engine = engine or eng
                value = float(sample.value)
                if short in _GAUGES:
                    rank = sample.labels.get("dp_rank", "")
                    ranks.add(rank)
                    gauges.setdefault(_GAUGES[short], []).append((rank, value))
                elif short in _SUMS and _counts_once(short, sample.labels):
                    key = _SUMS[short]
                    sums[key] = sums.get(key, 0.0) + value
    except (ValueError, TypeError, IndexError) as exc:
        return PromResult(families=families, error=f"bad body: {str(exc)[:120]}")
    if families == 0 and text.strip() and not gauges and not sums:
        return PromResult(error="bad body: no metric families")
    metrics: dict[str, float] = dict(sums)
    for key, values in gauges.items():
        metrics[key] = _combine(values, key in _FRACTIONS)
    if ranks - {""}:
        metrics["dp_ranks"] = float(len(ranks))
    return PromResult(metrics=metrics, families=families, engine=engine)


def _counts_once(short: str, labels: Mapping[str, str]) -> bool:
    """`cached_tokens_total` has a `cache_source` label whose "total" series repeats the others."""
    source = labels.get("cache_source")
    return short != "cached_tokens_total" or source is None or source == "total"
