"""`kdash outputs`: finished output files' statistics, as text or JSON, with the alerts.

The alert rules see what the dashboard, `--once`, `check` and Prometheus see: the shares of each
file's last samples (the recent window) and its invalid lines since the start, so every view of
the same files raises the same alerts. The text and the JSON carry both the recent window and
the whole file (`total`), with the keys of `--once --json`'s `partitions[].quality`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from dash.core.alerts.engine import AlertEngine
from dash.core.alerts.model import alert_to_json
from dash.core.alerts.rules_outputs import OUTPUT_RULES
from dash.core.config import AlertConfig
from dash.core.samples.dist import Dist
from dash.core.samples.snapshot import QualitySnapshot
from dash.core.samples.stats import QualityFigures
from dash.core.snapshot import Alert, PartitionSnapshot, RunSnapshot
from dash.core.views.quality_json import quality_json


@dataclasses.dataclass(frozen=True, slots=True)
class FileFigures:
    """One scanned file: its partition name, path, lines, partial tail and figures."""

    name: str
    path: str
    lines: int
    partial_bytes: int
    quality: QualitySnapshot | None
    error: str | None = None


def alerts_for(files: Sequence[FileFigures], alerts: AlertConfig, now: float) -> tuple[Alert, ...]:
    """The output alerts the files raise, as the dashboard's rules see them."""
    parts = tuple(
        PartitionSnapshot(f.name, f.path, f.lines, None, f.lines, None, None, status="idle",
                          quality=f.quality)
        for f in files if f.quality is not None)
    engine = AlertEngine(alerts, rules=OUTPUT_RULES)
    return engine.evaluate(RunSnapshot(now=now, partitions=parts), now).new


def to_json(files: Sequence[FileFigures], alerts: Sequence[Alert]) -> dict[str, Any]:
    return {
        "files": [{"name": f.name, "path": f.path, "lines": f.lines,
                   "partial_last_line_bytes": f.partial_bytes, "error": f.error,
                   "quality": None if f.quality is None else quality_json(f.quality)}
                  for f in files],
        "alerts": [alert_to_json(a) for a in alerts],
    }


def _dist(label: str, d: Dist) -> str:
    if not d.n:
        return f"{label} -"
    return f"{label} median {d.median:,.0f} p95 {d.p95:,.0f} max {d.max:,.0f}"


def _share(n: int, of: int) -> str:
    return f"{n:,} ({100 * n / of:.1f}%)" if of else f"{n:,}"


def figures_text(t: QualityFigures) -> list[str]:
    """A few lines for one span's figures (also the dashboard's words for them)."""
    finish = " · ".join(f"{k} {_share(n, t.with_finish)}" for k, n in t.finish) or "-"
    if t.finish and t.with_finish < t.samples:  # the shares are of those that name one
        finish = f"({t.with_finish:,} name one) {finish}"
    length = _dist("output tokens", t.tokens) if t.tokens.n else _dist("output chars", t.chars)
    reasoning = "-" if t.reasoning_ratio is None else f"{100 * t.reasoning_ratio:.0f}%"
    return [f"samples {t.samples:,}  finish {finish}",
            f"{length} · {_dist('prompt tokens', t.prompt_tokens)}",
            f"errors {t.errors:,} · invalid lines {t.invalid:,} · unrecognised {t.unknown:,} · "
            f"empty {t.empty:,} · reasoning {reasoning}"]


def _spans(q: QualitySnapshot) -> list[str]:
    """The recent window's figures (what the alerts judge), then the whole file's; one span
    when the window holds the whole file."""
    spans = ([("whole file", q.total)] if q.window.lines == q.total.lines
             else [("recent", q.window), ("whole file", q.total)])
    out: list[str] = []
    for label, figures in spans:
        head, *rest = figures_text(figures)
        out += [f"  {label}: {head}"] + [f"    {line}" for line in rest]
    return out


def to_text(files: Sequence[FileFigures], alerts: Sequence[Alert]) -> str:
    out: list[str] = []
    for f in files:
        out.append(f"{f.name}  {f.path}")
        if f.error:
            out.append(f"  cannot read: {f.error}")
            continue
        partial = (f" (+ a partial last line of {f.partial_bytes:,} bytes, not counted)"
                   if f.partial_bytes else "")
        shape = f.quality.shape if f.quality is not None and f.quality.shape else "-"
        out.append(f"  lines {f.lines:,}{partial}  shape {shape}")
        if f.quality is not None:
            out += _spans(f.quality)
            bad = f.quality.last_invalid
            if bad is not None:
                at = f"line {bad.line:,}" if bad.line is not None else f"byte {bad.offset:,}"
                out.append(f"  last invalid line: {at}, {bad.reason}: {bad.head[:60]!r}")
            out += [f"  [outputs] {u.field} = {u.path!r} matched none of {u.misses:,} records"
                    for u in f.quality.unmatched]
    out.append("alerts      none" if not alerts else "")
    out += [f"ALERT {a.severity:<4} {a.id} [{a.subject}]: {a.message}\n      {a.evidence}\n"
            f"      {a.hint}" for a in alerts]
    return "\n".join(line for line in out if line) + "\n"
