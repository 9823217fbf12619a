"""Alert rules about data-parallel ranks: `rank_imbalance`, `rank_silent`.

The server's figures sum its ranks, and its token usage is the highest rank's; a server whose
load sits on one rank looks full while most of its KV cache is idle. Each rank's usage is a
median over a window of its own lines, never one line, so a rank that briefly spikes does
not fire it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from dash.core.alerts.model import Finding, RuleContext, fmt_duration
from dash.core.alerts.rules_throughput import window_median, window_medians
from dash.core.snapshot import RankNow

_HINT = ("That rank fills first and holds the server back while the others idle. Check the "
         "routing: {routing}; or a few very long requests on that rank.")
# The routing to check, in the terms of the engine that printed the log (a vLLM user told of
# SGLang's flag has been told nothing).
_ROUTING = {
    "sglang": ("SGLang's --load-balance-method (round_robin by default; a queue- or "
               "token-aware one where your version has it), or the router in front"),
    "vllm": ("vLLM's API server sends each request to the engine with the shortest queues; "
             "with --data-parallel-external-lb or --data-parallel-hybrid-lb the router in "
             "front decides: check its policy"),
}


def _median_usage(rank: RankNow, window: float, end: float | None) -> float | None:
    return window_median(rank.token_usage_history, window, min_points=3, end=end)


def _fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def _held_high(rank: RankNow, high: float, window: float, end: float | None) -> float | None:
    """How long the rank's windowed median usage has stayed at `high` or above, back from
    `end` (None: no median up to `end`): a check's one read must not fire what the dashboard
    would wait `rank_imbalance_after_s` for."""
    medians = [(t, m) for t, m in window_medians(rank.token_usage_history, window, 3)
               if end is None or t <= end]
    if not medians:
        return None
    since = medians[-1][0]
    for t, m in reversed(medians):
        if m < high:
            break
        since = t
    return medians[-1][0] - since


def rule_rank_imbalance(ctx: RuleContext) -> Iterator[Finding]:
    """`rank_imbalance` (warn): one rank's KV cache nearly full while the others' is not."""
    cfg, now = ctx.cfg, ctx.snap.server.now
    ctx.launch_ended("rank_imbalance")
    if now is None or not now.multi:
        return
    medians = {r.rank: (r, m) for r in now.ranks if r.live
               if (m := _median_usage(r, cfg.rank_window_s, now.at)) is not None}
    if len(medians) < 2:
        return
    name, (top, usage) = max(medians.items(), key=lambda kv: kv[1][1])
    others = [m for k, (_, m) in medians.items() if k != name]
    rest = statistics.median(others)
    active = ctx.is_active("rank_imbalance")
    high = cfg.rank_imbalance_usage - (0.03 if active else 0.0)
    gap = cfg.rank_imbalance_gap - (0.05 if active else 0.0)
    if usage < high or usage - rest < gap:
        return
    runs = [r.running_req for k, (r, _) in medians.items() if k != name
            if r.running_req is not None]
    n = len(others)
    who = "the other rank sits" if n == 1 else f"the other {n} ranks sit"
    routing = _ROUTING.get(ctx.snap.server.engine or "", _ROUTING["sglang"])
    yield Finding(
        "rank_imbalance", "warn",
        f"{name}'s KV cache is {usage:.0%} full while {who} at {rest:.0%}",
        f"median token usage over {fmt_duration(cfg.rank_window_s)}: {name} {usage:.2f}, the "
        f"others {min(others):.2f}-{max(others):.2f} (median {rest:.2f}); {name} running "
        f"{_fmt(top.running_req)}, queue {_fmt(top.queue_req)}; the others running "
        f"{_fmt(statistics.median(runs) if runs else None)} (median)",
        _HINT.format(routing=routing), fire_after=cfg.rank_imbalance_after_s,
        held_s=_held_high(top, high, cfg.rank_window_s, now.at))


_SILENT_HINT = ("Hung if a rank's requests never finish: `py-spy dump --pid` of its {process} "
                "shows where; restart the server. Idle if it gets none: check {routing}.")
# Short: the whole fix must fit the alerts panel at 80x24.
_PROCESS = {"sglang": "scheduler (`scheduler_DP<n>` in its name)",
            "vllm": "engine (`EngineCore_DP<n>`)"}
_SHORT_ROUTING = {"sglang": "--load-balance-method or the router in front",
                  "vllm": "the router in front (--data-parallel-external-lb)"}


def rule_rank_silent(ctx: RuleContext) -> Iterator[Finding]:
    """`rank_silent` (warn): a rank whose last line had requests running printed nothing for
    `silent_after_s` while the other ranks print with requests queued. Measured against the
    newest line of any rank: a log that stopped altogether is `server_silent`'s. Without a
    queue elsewhere it is the run's tail (ranks finish their last requests at different
    times), not a problem."""
    cfg, now = ctx.cfg, ctx.snap.server.now
    ctx.launch_ended("rank_silent")
    if now is None or not now.multi or now.at is None:
        return
    printing = [r for r in now.ranks if r.live]
    queued = sum(r.queue_req or 0 for r in printing)
    quiet = [r for r in now.ranks if not r.live and r.at is not None
             and (r.running_req or 0) > 0 and now.at - r.at >= cfg.silent_after_s]
    if not printing or not quiet or queued <= 0:
        return
    names = ", ".join(str(r.rank) for r in quiet)
    running = ", ".join(_fmt(r.running_req) for r in quiet)
    gap = fmt_duration(now.at - max(r.at or 0.0 for r in quiet))
    n = len(printing)
    their = "its last line" if len(quiet) == 1 else "their last lines"
    engine = ctx.snap.server.engine or ""
    hint = _SILENT_HINT.format(process=_PROCESS.get(engine, _PROCESS["sglang"]),
                               routing=_SHORT_ROUTING.get(engine, _SHORT_ROUTING["sglang"]))
    yield Finding(
        "rank_silent", "warn",
        f"{names} printed no decode line for {gap} while "
        f"{'the other rank prints' if n == 1 else f'the other {n} ranks print'} with "
        f"{queued:g} queued; {their} had {running} running",
        f"{names}: last line at {', '.join(str(r.ts or '?') for r in quiet)}; the newest line of "
        f"the others at {max((r.ts or '' for r in printing), default='?')}", hint,
        since=max(r.at or 0.0 for r in quiet))


RANK_RULES = (rule_rank_imbalance, rule_rank_silent)
