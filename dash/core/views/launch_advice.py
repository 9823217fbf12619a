"""What the comparison of launches says, in words: per-launch advice, the server panel's one line,
and the launches as JSON (`--once --json`, `kdash launches --json`).

Honest by construction: a figure is compared only with the same figure of the launch before,
and where one of the two has none (a launch too short for a steady figure, no capacity line)
the sentence says so instead of a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash.core.alerts.model import fmt_duration
from dash.core.launch import Launch, launch_to_json
from dash.core.views.launch_table import (
    KEY_ARGS,
    arg_text,
    other_differing,
    outcome_text,
    show_value,
)


def changes(prev: Launch, cur: Launch) -> list[tuple[str, str, str]]:
    """(name, before, after) of every argument that differs between two starts (none when
    either printed no arguments)."""
    if not prev.args or not cur.args:
        return []
    out = []
    for spec in KEY_ARGS:
        a, b = arg_text(prev, spec), arg_text(cur, spec)
        if a != b:
            out.append((spec.short, a, b))
    for name in other_differing((prev, cur)):
        a = show_value(prev.args[name]) if name in prev.args else "-"
        b = show_value(cur.args[name]) if name in cur.args else "-"
        out.append((name, a, b))
    return out


def change_text(prev: Launch, cur: Launch) -> str:
    return ", ".join(f"{name} {a} -> {b}" for name, a, b in changes(prev, cur))


def compact(n: float) -> str:
    """159277 -> `159K`, 2795207 -> `2.8M`; a power-of-two size keeps its binary K (32768 ->
    `32K`, as prefill sizes are spoken of)."""
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    if n >= 1024 and n == int(n) and int(n) % 1024 == 0:
        return f"{int(n) // 1024}K"
    if n >= 1e4:
        return f"{n / 1e3:.0f}K"
    return f"{n:,.0f}"


def _tokens(x: Launch) -> float | None:
    v = x.capacity.get("max_total_num_tokens")
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def _graph(x: Launch) -> float | None:
    v = x.capacity.get("graph_avail_gb")
    return float(v) if isinstance(v, (int, float)) else None


def _death(x: Launch, prev: Launch | None) -> str | None:
    """`left 0.82 GB after CUDA graph capture and died of OOM 4 min in under prefills of up
    to 32K tokens`; None when it did not die."""
    if x.outcome not in ("oom", "crash"):
        return None
    f, dur = x.figures, x.duration_s if x.start_seen else None  # begun before the log
    cause = "; ".join(c for c in (x.exception, x.reason) if c) or "unknown"
    what = "died of OOM" if x.outcome == "oom" else f"crashed ({cause})"
    text = what + (f" {fmt_duration(dur)} in" if dur is not None else "")
    if f.prefill_before_end:
        text += f" under prefills of up to {compact(f.prefill_before_end)} tokens"
    graph = _graph(x)
    if graph is not None:
        was = _graph(prev) if prev is not None else None
        then = f" (was {was:.2f})" if was is not None and was != graph else ""
        text = f"left {graph:.2f} GB after CUDA graph capture{then} and {text}"
    return text


def _steady(x: Launch, prev: Launch | None, n: int) -> str:
    f = x.figures
    if f.steady is None:
        word = "not steady yet" if x.outcome == "running" else "no steady figure"
        return f"{word} ({f.steady_note})" if f.steady_note else word
    if prev is not None and prev.figures.steady is not None:
        a = prev.figures.steady
        return f"steady throughput {(f.steady - a) / a:+.0%} ({a:,.0f} -> {f.steady:,.0f} tok/s)"
    text = f"steady {f.steady:,.0f} tok/s"
    if f.peak is not None and f.peak > 1.1 * f.steady:
        text += f" (peak {f.peak:,.0f})"
    if prev is not None:
        why = prev.figures.steady_note or "none"
        text += f"; #{n - 1} gave no steady figure to compare ({why})"
    return text


def advice(launches: Sequence[Launch], throughput: bool = True) -> list[str]:
    """One sentence per launch: what it changed from the launch before and what that did
    (`throughput` False: its figures are not known, and nothing is said of them)."""
    out = []
    for i, x in enumerate(launches):
        prev = launches[i - 1] if i else None
        head = f"#{i + 1}"
        parts = []
        if prev is not None:
            text = change_text(prev, x)
            head += f" ({text})" if text else " (same arguments)" if x.args and prev.args else ""
            a, b = _tokens(prev), _tokens(x)
            if a is not None and b is not None and abs(b / a - 1) >= 0.005:
                parts.append(f"{b / a:.2f}x KV tokens ({compact(a)} -> {compact(b)})")
        death = _death(x, prev)
        if death is not None:
            parts.append(death)
        elif prev is not None and _graph(x) is not None and _graph(prev) not in (None, _graph(x)):
            parts.append(f"{_graph(x):.2f} GB free after CUDA graph capture "
                         f"(was {_graph(prev):.2f})")
        if throughput:
            parts.append(_steady(x, prev, i + 1))
        out.append(f"{head}: {'; '.join(parts)}" if parts else head)
    return out


def server_line(launches: Sequence[Launch]) -> str | None:
    """`launch 4 of 4; previous: mem 0.88 -> 0.90, kv bf16 -> fp8_e4m3; KV tokens 159K -> 376K;
    steady 606 -> 1,050` (the current launch against the one before); None without launches."""
    if not launches:
        return None
    n = len(launches)
    text = f"launch {n} of {n}"
    if n == 1:
        return text
    prev, cur = launches[-2], launches[-1]
    parts = [f"previous: {change_text(prev, cur) or 'same arguments'}"]
    a, b = _tokens(prev), _tokens(cur)
    if a is not None and b is not None:
        parts.append(f"KV tokens {compact(a)} -> {compact(b)}")
    s0, s1 = prev.figures.steady, cur.figures.steady
    if s0 is not None or s1 is not None:
        left = _steady_cell(prev) if s0 is None else f"{s0:,.0f}"
        right = "not yet" if s1 is None and cur.outcome == "running" else \
            _steady_cell(cur) if s1 is None else f"{s1:,.0f}"
        parts.append(f"steady {left} -> {right}")
    else:
        parts.append(f"previous {outcome_text(prev)}")
    return "; ".join([text, *parts])


def _steady_cell(x: Launch) -> str:
    note = x.figures.steady_note or ""
    return "too short" if note.startswith(("too short", "too few")) else "unsettled"


def launches_json(launches: Sequence[Launch], figures: bool = True) -> list[dict[str, Any]]:
    """Each launch's JSON with its number, what changed from the one before, its outcome in
    words and its advice sentence (`figures` False: the launches were read from a thinned
    stream, so their throughput and prefill figures are not the log's: null, and unsaid)."""
    words = advice(launches, throughput=figures)
    out = []
    for i, x in enumerate(launches):
        doc = launch_to_json(x)
        if not figures:
            doc["figures"] = None
        prev = launches[i - 1] if i else None
        doc["number"] = i + 1
        doc["changed"] = {name: [a, b] for name, a, b in changes(prev, x)} if prev else {}
        doc["outcome_text"] = outcome_text(x)
        doc["advice"] = words[i]
        out.append(doc)
    return out
