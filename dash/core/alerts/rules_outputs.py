"""Alert rules about what the samples hold: truncated, invalid, error, empty, no reasoning.

Each reads a partition's `QualitySnapshot` (the recent window, or since start for invalid
lines) and fires per partition. Shares need `outputs_min_samples` recent samples, so the first
few samples of a file cannot fire them; they are window shares, so they fire at once
(`fire_after` 0: `kdash outputs` evaluates a finished file once) and clear with the usual
hysteresis.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from dash.core.alerts.model import Finding, RuleContext
from dash.core.samples.limits import limit_flags, name_limit
from dash.core.samples.snapshot import QualitySnapshot
from dash.core.snapshot import PartitionSnapshot

PartitionRule = Callable[[RuleContext, PartitionSnapshot, QualitySnapshot], Iterator[Finding]]

REASONING_MODELS = re.compile(
    r"(?i)(deepseek-r1|\br1\b|-r1-|qwq|thinking|gpt-oss|reasoner|magistral|seed-oss|phi-4-reasoning)")
"""Model names that reason by default: their samples should carry reasoning."""


def _parts(ctx: RuleContext) -> Iterator[tuple[PartitionSnapshot, QualitySnapshot]]:
    for p in ctx.snap.partitions:
        if p.quality is not None:
            yield p, p.quality


def _model(ctx: RuleContext) -> str:
    return str(ctx.snap.facts.get("model") or "")


def _per_partition(ctx: RuleContext, rule: PartitionRule) -> Iterator[Finding]:
    """`rule`'s findings for each partition. A partition whose figures are the same object as
    at the last tick (they change once a period) gets the findings it got then: a rule reads
    nothing but its figures, its name and path, the thresholds, the client's command lines
    and the model, and those are checked too."""
    memo: dict[str, tuple[QualitySnapshot, str, tuple[Finding, ...]]] = ctx.memory.setdefault(
        "partitions", {})
    shared = (ctx.cfg, tuple(proc.cmdline for proc in ctx.snap.client.processes or ()),
              _model(ctx))
    if ctx.memory.get("shared") != shared:
        memo.clear()
        ctx.memory["shared"] = shared
    seen = set()
    for p, q in _parts(ctx):
        seen.add(p.name)
        got = memo.get(p.name)
        if got is None or got[0] is not q or got[1] != p.path:
            got = memo[p.name] = (q, p.path, tuple(rule(ctx, p, q)))
        yield from got[2]
    for gone in memo.keys() - seen:
        del memo[gone]


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if x >= 0.01 else f"{100 * x:.1f}%"


def _limit(ctx: RuleContext, q: QualitySnapshot) -> str:
    """Where the limit comes from: the records, the client's command line, the config."""
    procs = ctx.snap.client.processes or ()
    flags = tuple(f for proc in procs for f in limit_flags(proc.cmdline))
    record = q.limits[0] if q.limits else None
    named = name_limit(record, flags)
    if record is not None:
        return f"limit {record:,} tokens" + (f" ({named} on the client's command line)"
                                             if named else " (from the records)")
    if named:
        return f"limit {named} (the client's command line)"
    if q.configured_limit is not None:
        return f"limit {q.configured_limit:,} tokens ([outputs] max_tokens)"
    return "limit not in the records (pass it as [outputs] max_tokens)"


def _limit_named(ctx: RuleContext, q: QualitySnapshot) -> str:
    """The limit in a few words for the message (` at the 10,240-token limit`), where known:
    at 80x24 the message and the hint show, the evidence may not."""
    procs = ctx.snap.client.processes or ()
    flags = tuple(f for proc in procs for f in limit_flags(proc.cmdline))
    record = q.limits[0] if q.limits else None
    named = name_limit(record, flags)
    if named:
        return f" at the token limit ({named})"
    limit = record if record is not None else q.configured_limit
    return f" at the {limit:,}-token limit" if limit is not None else " at the token limit"


def rule_outputs_truncated(ctx: RuleContext) -> Iterator[Finding]:
    """`outputs_truncated` (warn): a share of the recent samples stopped at the token limit."""
    return _per_partition(ctx, _truncated)


def _truncated(ctx: RuleContext, p: PartitionSnapshot, q: QualitySnapshot) -> Iterator[Finding]:
    w = q.window
    ratio = w.truncated_ratio
    if w.with_finish < ctx.cfg.outputs_min_samples or ratio is None \
            or ratio < ctx.cfg.truncated_share or not w.truncated:
        return
    tokens = w.tokens
    lengths = "" if not tokens.n else (f"; output tokens median {tokens.median:,.0f}, "
                                       f"max {tokens.max:,.0f}")
    yield Finding(
        "outputs_truncated", "warn",
        f"{p.name}: {w.truncated} of {w.with_finish} recent samples ({_pct(ratio)}) stopped"
        f"{_limit_named(ctx, q)}", f"finish_reason length; {_limit(ctx, q)}{lengths}",
        "Truncated samples end mid-answer (a reasoning model's, before it answers): raise "
        "the client's max tokens if the context length allows, or drop and retry them.",
        subject=p.name)


def rule_outputs_invalid(ctx: RuleContext) -> Iterator[Finding]:
    """`outputs_invalid` (warn): complete lines that are not JSON (since kdash started)."""
    return _per_partition(ctx, _invalid)


def _invalid(ctx: RuleContext, p: PartitionSnapshot, q: QualitySnapshot) -> Iterator[Finding]:
    t = q.total
    if t.invalid < max(1, ctx.cfg.invalid_lines):
        return
    bad = q.last_invalid
    where = ""
    if bad is not None:
        at = f"line {bad.line:,}" if bad.line is not None else f"byte {bad.offset:,}"
        where = f"; the last at {at} ({bad.reason}): {bad.head[:60]!r}"
    yield Finding(
        "outputs_invalid", "warn",
        f"{p.name}: {t.invalid} of {t.lines:,} lines are not JSON",
        f"{p.path}{where}",
        "A writer killed mid-line leaves half a line, and two writers on one file interleave "
        "theirs: JSONL loaders stop there. Drop or repair those lines, and make sure one "
        "process writes each file.", subject=p.name)


def rule_outputs_errors(ctx: RuleContext) -> Iterator[Finding]:
    """`outputs_errors` (warn): a share of the recent records are error records."""
    return _per_partition(ctx, _errors)


def _errors(ctx: RuleContext, p: PartitionSnapshot, q: QualitySnapshot) -> Iterator[Finding]:
    w = q.window
    ratio = w.error_ratio
    if w.samples < ctx.cfg.outputs_min_samples or not w.errors or ratio is None \
            or ratio < ctx.cfg.errors_share:
        return
    last = f": {q.last_error[:120]!r}" if q.last_error else ""
    yield Finding(
        "outputs_errors", "warn",
        f"{p.name}: {w.errors} of {w.samples} recent records are errors ({_pct(ratio)})",
        f"last error{last}",
        "An error record has no sample: look at the server log at that time (a prompt over "
        "the context length, an abort, the server restarting) and retry those requests.",
        subject=p.name)


CUT_WHILE_REASONING = "Most were cut off while still reasoning: raise the max tokens."
"""The empty-answer alert's hint when the token limit is why: it is then the truncation
alert's consequence (`dash.core.alerts.incidents` folds it under that one)."""


def rule_outputs_empty(ctx: RuleContext) -> Iterator[Finding]:
    """`outputs_empty` (warn): recent samples with no answer."""
    return _per_partition(ctx, _empty)


def _empty(ctx: RuleContext, p: PartitionSnapshot, q: QualitySnapshot) -> Iterator[Finding]:
    w = q.window
    ratio = w.empty_ratio
    if w.samples < ctx.cfg.outputs_min_samples or not w.empty or ratio is None \
            or ratio < ctx.cfg.empty_share:
        return
    cut = dict(w.reasoning).get("open", 0)
    hint = (CUT_WHILE_REASONING if cut * 2 >= w.empty else
            "No answer after the reasoning: a stop string that matches at once, a reasoning "
            "parser that moved everything out of the content, or a broken chat template; "
            "open one with `o`.")
    yield Finding(
        "outputs_empty", "warn",
        f"{p.name}: {w.empty} of {w.samples - w.errors} recent samples have no answer "
        f"({_pct(ratio)})", f"empty text once the reasoning is taken out; {cut} cut off "
        "inside their reasoning", hint, subject=p.name)


def rule_reasoning_missing(ctx: RuleContext) -> Iterator[Finding]:
    """`reasoning_missing` (warn): records that should carry reasoning and do not."""
    return _per_partition(ctx, _reasoning_missing)


def _reasoning_missing(ctx: RuleContext, p: PartitionSnapshot,
                       q: QualitySnapshot) -> Iterator[Finding]:
    model = _model(ctx)
    by_model = bool(model and REASONING_MODELS.search(model))
    w = q.window
    counts = dict(w.reasoning)
    known = sum(counts.values())
    absent = counts.get("absent", 0)
    if not (q.reasoning_expected or by_model) or known < ctx.cfg.outputs_min_samples \
            or not absent or absent / known < ctx.cfg.reasoning_missing_share:
        return
    if by_model and not q.reasoning_expected:
        why = f"the model {model} reasons"
    elif q.expect_configured:
        why = "configured ([outputs] expect_reasoning)"
    elif q.reasoning_seen_in == p.name:
        why = f"{_pct(q.total.reasoning_ratio or 0.0)} of its samples since start carry it"
    else:
        why = f"the samples of {q.reasoning_seen_in} carry it"
    yield Finding(
        "reasoning_missing", "warn",
        f"{p.name}: {absent} of {known} recent samples have no reasoning",
        f"no reasoning field and no think markers in the text; expected: {why}",
        "The reasoning went missing: a chat template that no longer opens <think> (with "
        "/generate the client applies it), enable_thinking off, or a reasoning parser moving "
        "it into a field the client does not save. Compare an old and a new sample with `o`.",
        subject=p.name)


OUTPUT_RULES = (rule_outputs_truncated, rule_outputs_invalid, rule_outputs_errors,
                rule_outputs_empty, rule_reasoning_missing)
