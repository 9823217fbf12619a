"""Output quality as plain JSON: `partitions[].quality` of `--once --json`, and `kdash outputs`.

One function for both, so a script reads the same keys from either: `shape`, `window` and
`total` (each: `lines`, `samples`, `invalid_lines`, `errors`, `empty`, `finish` {reason: n},
`truncated`, `truncated_ratio`, `output_tokens` {`n`, `median`, `p95`, `max`, `sum`},
`output_chars`, `prompt_tokens`, `reasoning` {present, empty, open, absent}, `reasoning_ratio`),
`limits`, `last_error`, `last_invalid`, `fields`, `tokens_per_s`.
"""

from __future__ import annotations

from typing import Any

from dash.core.samples.dist import Dist
from dash.core.samples.snapshot import QualitySnapshot
from dash.core.samples.stats import QualityFigures


def dist_json(d: Dist) -> dict[str, Any]:
    return {"n": d.n, "median": d.median, "p95": d.p95, "max": d.max, "sum": d.total}


def figures_json(f: QualityFigures) -> dict[str, Any]:
    return {
        "lines": f.lines, "samples": f.samples, "invalid_lines": f.invalid,
        "unrecognised": f.unknown, "errors": f.errors, "empty": f.empty,
        "finish": dict(f.finish), "truncated": f.truncated, "truncated_ratio": f.truncated_ratio,
        "error_ratio": f.error_ratio, "empty_ratio": f.empty_ratio,
        "output_tokens": dist_json(f.tokens), "output_chars": dist_json(f.chars),
        "prompt_tokens": dist_json(f.prompt_tokens), "reasoning": dict(f.reasoning),
        "reasoning_ratio": f.reasoning_ratio,
    }


def quality_json(q: QualitySnapshot) -> dict[str, Any]:
    bad = q.last_invalid
    return {
        "shape": q.shape,
        "truncated_ratio": q.window.truncated_ratio,
        "window": figures_json(q.window),
        "total": figures_json(q.total),
        "limits": list(q.limits),
        "last_error": q.last_error,
        "last_invalid": None if bad is None else {"line": bad.line, "offset": bad.offset,
                                                  "head": bad.head, "reason": bad.reason},
        "oversized_lines": q.oversized,
        "skipped_bytes": q.skipped_bytes,
        "tokens_per_s": q.tokens_per_s,
        "reasoning_expected": q.reasoning_expected,
        "fields": [{"field": f.field, "path": f.path, "hits": f.hits, "misses": f.misses}
                   for f in q.fields],
    }
