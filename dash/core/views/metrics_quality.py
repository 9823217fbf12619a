"""The Prometheus families of output quality: truncation, output lengths, invalid lines, rates.

Ratios are over the recent window of samples (`dash.core.samples.stats.WINDOW`); counters count
since kdash started reading the file (they restart with it when it is rewritten). Output tokens
are a summary: its quantiles over the recent window, its `_sum` and `_count` since start.
A partition whose samples have not been read exports none of these.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dash.core.samples.dist import Dist
from dash.core.snapshot import RunSnapshot
from dash.core.views.family import Family

QUANTILES = (("0.5", "median"), ("0.95", "p95"))


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


def _gauge(name: str, doc: str, rows: Iterable[tuple[str, Any]],
           kind: str = "gauge") -> list[Family]:
    samples = tuple(((p,), v) for p, value in rows if (v := _num(value)) is not None)
    if not samples:
        return []
    return [Family(name, doc, "counter" if kind == "counter" else "gauge", ("partition",),
                   samples)]


def _summary(name: str, doc: str, rows: Iterable[tuple[str, Dist, Dist]]) -> list[Family]:
    """Quantiles from `window`, `_sum` and `_count` from `total`, per partition."""
    quantiles: list[tuple[tuple[str, ...], float]] = []
    extra: list[tuple[str, tuple[str, ...], float]] = []
    for p, window, total in rows:
        if not total.n:
            continue
        for q, attr in QUANTILES:
            value = getattr(window, attr)
            if value is not None:
                quantiles.append(((p, q), float(value)))
        extra += [("_sum", (p,), float(total.total)), ("_count", (p,), float(total.n))]
    if not extra:
        return []
    return [Family(name, doc, "summary", ("partition", "quantile"), tuple(quantiles),
                   tuple(extra))]


def quality_families(snap: RunSnapshot) -> list[Family]:
    """Every output-quality family of one snapshot."""
    parts = [(p.name, p.quality) for p in snap.partitions if p.quality is not None]
    if not parts:
        return []
    out: list[Family] = []
    out += _gauge("kdash_partition_truncated_ratio",
                  "Share of the recent samples that stopped at the token limit (finish length).",
                  [(n, q.window.truncated_ratio) for n, q in parts])
    out += _summary("kdash_partition_output_tokens",
                    "Completion tokens per sample: quantiles over the recent samples; sum and "
                    "count since kdash started reading.",
                    [(n, q.window.tokens, q.total.tokens) for n, q in parts])
    out += _gauge("kdash_partition_invalid_lines",
                  "Complete lines of the output file that are not JSON.",
                  [(n, q.total.invalid) for n, q in parts], "counter")
    out += _gauge("kdash_partition_error_records",
                  "Records that carry an error instead of a sample.",
                  [(n, q.total.errors) for n, q in parts], "counter")
    out += _gauge("kdash_partition_samples_read",
                  "Samples read from the output file since kdash started.",
                  [(n, q.total.samples) for n, q in parts], "counter")
    out += _gauge("kdash_partition_empty_ratio",
                  "Share of the recent samples with no answer.",
                  [(n, q.window.empty_ratio) for n, q in parts])
    out += _gauge("kdash_partition_reasoning_ratio",
                  "Share of the recent samples that carry reasoning (a field or think markers).",
                  [(n, q.window.reasoning_ratio) for n, q in parts])
    out += _gauge("kdash_partition_output_tokens_per_second",
                  "Output tokens arriving in the partition's samples per second (client side).",
                  [(n, q.tokens_per_s) for n, q in parts])
    rate = _num(snap.totals.output_tokens_per_s)
    if rate is not None:
            out.append(Family("kdash_run_output_tokens_per_second",
                          "Output tokens arriving in the samples per second, all partitions "
                          "(compare with kdash_gen_throughput_tokens_per_second).",
                          "gauge", (), (((), rate),)))
    return out
