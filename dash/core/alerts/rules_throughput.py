"""Alert rules about throughput and the KV cache: `throughput_plateau` and `kv_saturated`.

Both read medians over a window of decode lines, never single lines: SGLang's per-line throughput
jumps by tens of percent from one line to the next, and a rule on raw lines would flap. Windows
end at the series' last point (the log's own time), so a log stamped in another time zone still
reads right. The series are the whole server's (its DP ranks summed, usage the highest rank's);
KV capacity is per rank, so the concurrency estimate counts the ranks.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Iterator
from typing import Any

from dash.core.alerts.flags import flags_for
from dash.core.alerts.model import Finding, RuleContext, fmt_duration
from dash.core.series import SeriesView
from dash.core.snapshot import RunSnapshot, ServerLogSnapshot


def window_median(view: SeriesView, window: float, min_points: int = 1,
                  end: float | None = None) -> float | None:
    """Median of the points in the last `window` seconds before `end` (default: the last point)."""
    if not view.t:
        return None
    end = view.t[-1] if end is None else end
    w = view.window(end - window)
    values = [v for t, v in zip(w.t, w.v, strict=True) if t <= end]
    if len(values) < max(1, min_points):
        return None
    return float(statistics.median(values))


def _gpu_util(snap: RunSnapshot, window: float) -> float | None:
    medians = [m for h in snap.gpus.util_history.values()
               if (m := window_median(h, window)) is not None]
    return sum(medians) / len(medians) if medians else None


def _start_over(mem: dict[str, Any], snap: RunSnapshot, restarted: bool) -> None:
    """Forget the peak and the fall at a restart (they were the old launch's) or when the user
    reset the peak; `launch_ended`'s own count stays, so it sees the next restart."""
    s = snap.server
    peak = mem.get("peak")
    user_reset = peak is not None and (s.peak is None or s.peak.gen_throughput < peak["value"])
    if restarted or user_reset:
        restarts = mem["launch_restarts"]
        mem.clear()
        mem["launch_restarts"] = restarts
        # After the user's reset the peak starts from now; after a restart the lines already
        # read since it may hold one.
        mem["history_read"] = user_reset


def window_medians(view: SeriesView, window: float,
                   min_points: int) -> Iterator[tuple[float, float]]:
    """(end, median over the `window` seconds before it) at each point of the series.

    A dashboard started after the peak (its backfill holds the peak and the fall) must judge
    the fall from the lines it read, not from the first window it happens to evaluate. One pass
    with a sorted window (bisect: the window holds a few hundred points at most)."""
    t, v = view.t, view.v
    ordered: list[float] = []
    lo = 0
    for hi in range(len(t)):
        bisect.insort(ordered, v[hi])
        while t[lo] < t[hi] - window:
            del ordered[bisect.bisect_left(ordered, v[lo])]
            lo += 1
        n = len(ordered)
        if n >= max(1, min_points):
            yield t[hi], (ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2)


def rule_plateau(ctx: RuleContext) -> Iterator[Finding]:
    """`throughput_plateau` (warn): the windowed median fell `plateau_drop` below its peak."""
    cfg, snap, mem = ctx.cfg, ctx.snap, ctx.memory
    _start_over(mem, snap, ctx.launch_ended("throughput_plateau"))
    s = snap.server
    cur = window_median(s.gen_throughput, cfg.plateau_window_s, cfg.plateau_min_points)
    if cur is None:
        return
    end = s.gen_throughput.t[-1]
    running = window_median(s.running_req, cfg.plateau_window_s, end=end)
    queue = window_median(s.queue_req, cfg.plateau_window_s, end=end)
    usage = window_median(s.token_usage, cfg.plateau_window_s, end=end)
    util = _gpu_util(snap, cfg.plateau_window_s)
    if not mem.get("history_read"):
        mem["history_read"] = True
        _peak_from_history(mem, s, cfg.plateau_window_s, cfg.plateau_min_points,
                           cfg.plateau_drop, _started(ctx))
    peak = mem.get("peak")
    if peak is None or cur > peak["value"]:
        mem["peak"] = {"value": cur, "at": end, "running": running, "util": util}
        mem["high_at"] = end
        return
    if cur >= 0.95 * peak["value"]:
        mem["high_at"] = end  # still at the peak: the fall starts after this
    # Hysteresis: once fired, it stays until throughput is back within (drop - 10 points).
    drop = cfg.plateau_drop - (0.10 if ctx.is_active("throughput_plateau") else 0.0)
    if peak["value"] < cfg.plateau_min_peak or cur > peak["value"] * (1 - drop):
        mem.pop("low", None)
        return
    if "low" not in mem:
        mem["fell_at"] = end  # below the drop since: how long the fall has held
    if "low" not in mem or cur < 0.97 * mem["low"]:
        mem["low"], mem["low_at"] = cur, end  # still falling: the plateau starts later
    if running is not None and running <= 0:
        return  # idle, not slow: nothing is running
    held = end - mem["fell_at"]
    if (held < cfg.plateau_after_s and ctx.now - end > cfg.log_live_s
            and not ctx.is_active("throughput_plateau")):
        return  # the lines stopped before the plateau lasted: nothing says it stayed there
    cause, why, hint = _cause(ctx, peak, running, queue, usage, util)
    # Decided on medians; told with the peak the screen shows (the highest line), as users read it.
    shown = max(peak["value"], s.peak.gen_throughput if s.peak else 0.0)
    fall = (cur - shown) / shown
    message = (f"fell from peak {shown:.0f} to plateau {cur:.0f} tok/s ({fall:+.0%}) "
               f"over {fmt_duration(mem['low_at'] - mem['high_at'])}; likely {cause}")
    evidence = (f"median over {fmt_duration(cfg.plateau_window_s)}: {cur:.0f} tok/s (peak median "
                f"{peak['value']:.0f}), running "
                f"{_g(running)} (peak {_g(peak['running'])}), queue {_g(queue)}, token usage "
                f"{_g(usage, '.2f')}; {why}")
    yield Finding("throughput_plateau", "warn", message, evidence, hint,
                  fire_after=cfg.plateau_after_s, held_s=held)


def _started(ctx: RuleContext) -> float | None:
    """Clock time of the server's last restart: the series run on across it, its peak not."""
    i = ctx.events.last_restart
    at = ctx.events.all[i].get("at") if i is not None else None
    return float(at) if isinstance(at, (int, float)) else None


def _peak_from_history(mem: dict[str, Any], s: ServerLogSnapshot, window: float,
                       min_points: int, drop: float, started: float | None) -> None:
    """Seed the peak, the fall's start and its low from the series already read since the
    server last started, as the rule would have found them had it evaluated at each line."""
    view = s.gen_throughput if started is None else s.gen_throughput.window(started)
    medians = list(window_medians(view, window, min_points))[:-1]  # the last: now
    if not medians:
        return
    at, value = max(medians, key=lambda m: m[1])
    mem["peak"] = {"value": value, "at": at, "running": window_median(s.running_req, window, end=at),
                   "util": None}  # GPU utilization is not kept for that long
    mem["high_at"] = at
    for end, median in medians:
        if end <= at:
            continue
        if median >= 0.95 * value:
            mem["high_at"] = end
        if median > value * (1 - drop):
            mem.pop("low", None)
        else:
            if "low" not in mem:
                mem["fell_at"] = end
            if "low" not in mem or median < 0.97 * mem["low"]:
                mem["low"], mem["low_at"] = median, end


def _g(value: float | None, spec: str = ".0f") -> str:
    return "?" if value is None else format(value, spec)


def _cause(ctx: RuleContext, peak: dict[str, Any], running: float | None,
           queue: float | None, usage: float | None,
           util: float | None) -> tuple[str, str, str]:
    """(cause, why, hint): KV-bound, draining, client-bound, GPU, or unclear."""
    cfg, snap = ctx.cfg, ctx.snap
    if usage is not None and usage >= cfg.kv_bound_usage and queue:
        return ("KV-bound", f"the KV cache at or over {cfg.kv_bound_usage:.2f} with requests queued",
                "The KV cache is full, so requests wait in the queue: " + kv_hint(snap))
    near_end = [p.name for p in snap.partitions
                if p.status != "done" and (p.percent or 0.0) >= 95.0]
    if not queue and near_end:
        return ("draining", f"partition {near_end[0]} is near its end",
                "The run is finishing: throughput falls as the last requests complete.")
    peak_running = peak.get("running")
    if not queue and running is not None and peak_running and running < 0.8 * peak_running:
        return ("client-bound", f"queue empty and running fell from {peak_running:.0f}",
                "The server waits on the client: raise the client's concurrency "
                "(more parallel requests or workers).")
    peak_util = peak.get("util")
    if util is not None and peak_util is not None and util < peak_util - 20:
        return ("GPU", f"GPU utilization fell from {peak_util:.0f}% to {util:.0f}%",
                "Check GPU clocks, temperature and power throttling, and other processes.")
    return ("unclear", "no KV, queue or GPU signal explains it",
            "Compare prompt lengths and output lengths now with those at the peak.")


def _ranks(snap: RunSnapshot) -> int:
    """The DP ranks whose KV pools the server's figures add up (1 without DP)."""
    now = snap.server.now
    return now.live_ranks if now is not None and now.multi else 1


def kv_hint(snap: RunSnapshot) -> str:
    """Max concurrency ~ max_total_num_tokens / tokens per request, and the ways to raise it."""
    facts = snap.server.facts
    total = facts.get("max_total_num_tokens")  # per rank: each DP rank has a pool of its own
    figures = snap.server.figures
    tokens, running = figures.get("tokens"), figures.get("running_req")
    ranks = _ranks(snap)
    estimate = ""
    if isinstance(tokens, (int, float)) and isinstance(running, (int, float)) and running > 0:
        per_req = tokens / running
        estimate = f" ({tokens:g} tokens / {running:g} running = {per_req:.0f} per request"
        if isinstance(total, (int, float)) and per_req > 0:
            if ranks > 1:
                estimate += (f"; {ranks} ranks x {total:g} / {per_req:.0f} = "
                             f"~{ranks * total / per_req:.0f} requests")
            else:
                estimate += f"; {total:g} / {per_req:.0f} = ~{total / per_req:.0f} requests"
        estimate += ")"
    flags = flags_for(snap.server.engine)
    return ("max concurrency ~ max_total_num_tokens / tokens per request" + estimate +
            f". To fit more: fp8 KV cache ({flags.fp8_kv}), host KV cache ({flags.host_cache}), "
            f"a higher {flags.mem} if there is headroom, or shorter outputs.")


def rule_kv_saturated(ctx: RuleContext) -> Iterator[Finding]:
    """`kv_saturated` (warn): token usage >= `kv_usage` with the queue growing."""
    cfg, s = ctx.cfg, ctx.snap.server
    ctx.launch_ended("kv_saturated")
    usage_view = s.token_usage
    if len(usage_view) < 3 or len(s.queue_req) < 3:
        return
    active = ctx.is_active("kv_saturated")
    usage = window_median(usage_view, cfg.kv_window_s, min_points=3)
    threshold = cfg.kv_usage - (0.03 if active else 0.0)
    if usage is None or usage < threshold:
        return
    q = s.queue_req.window(s.queue_req.t[-1] - cfg.kv_window_s).v
    third = max(1, len(q) // 3)
    q0, q1 = statistics.median(q[:third]), statistics.median(q[-third:])
    # The queue is the sum over the DP ranks that share it: it grows when it gains at least a
    # request per rank. 1 -> 3 on 8 ranks is their interleaved lines' noise, not a trend, and a
    # sample of seconds (`--once`) fires what holds at once, so the noise must not count.
    ranks = _ranks(ctx.snap)
    growing = q1 > q0 if ranks == 1 else q1 - q0 >= ranks
    if not (growing or (active and q1 > 0)):
        return
    window = fmt_duration(cfg.kv_window_s)
    # Held while it clears, the queue may be shrinking: say so rather than "grew 128 -> 92".
    trend = (f"the queue grew {q0:.0f} -> {q1:.0f} in {window}" if q1 > q0
             else f"{q1:.0f} queued ({q0:.0f} {window} before)")
    yield Finding("kv_saturated", "warn", f"KV cache {usage:.0%} full and {trend}",
                  f"median token usage {usage:.2f}"
                  + (f" (the highest of {_ranks(ctx.snap)} ranks)" if _ranks(ctx.snap) > 1 else "")
                  + f"; max_total_num_tokens {s.facts.get('max_total_num_tokens', '?')}"
                  + (" per rank" if _ranks(ctx.snap) > 1 else ""),
                  kv_hint(ctx.snap)[0].upper() + kv_hint(ctx.snap)[1:],
                  fire_after=cfg.kv_after_s)


THROUGHPUT_RULES = (rule_plateau, rule_kv_saturated)
