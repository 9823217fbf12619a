"""Incidents: alerts that share a cause shown as one, and the line a restart leaves behind.

An OOM brings a crash, an unreachable server and a silent log with it; listed apart, the cause
drowns under its consequences. `group_incidents` folds them under their root, the root first.
After the server restarts, the OOM and the crash clear, and `server_restarted` keeps the story on
screen as one line ("14:02 OOM (mem fraction 0.93, 0.82 GB after CUDA graph) -> restarted 14:05
with 0.88") for at least `incident_show_s`, and after that until acknowledged. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from dash.core.alerts.flags import flags_for, mem_now
from dash.core.alerts.model import Finding, RuleContext, text_of, where
from dash.core.snapshot import SEVERITY_ORDER, Alert, Incident, Record

ROOTS = ("server_oom", "server_crash", "server_down")
"""Alerts that can cause others, the deepest cause first."""
CONSEQUENCES: Mapping[str, tuple[str, ...]] = {
    "server_oom": ("server_crash", "server_down", "server_silent"),
    "server_crash": ("server_down", "server_silent"),
    "server_down": ("server_silent",),
}
_STAMP = re.compile(r"(\d{1,2}):(\d{2})")


def group_incidents(alerts: Sequence[Alert]) -> tuple[Incident, ...]:
    """Active alerts as incidents: consequences under their root; the rest on their own.

    Order: unacknowledged first, then the most severe, then root causes before the rest, then
    the oldest.
    """
    by_id = {a.id: a for a in alerts if a.subject is None}
    taken: set[str] = set()
    incidents: list[Incident] = []
    for root_id in ROOTS:
        root = by_id.get(root_id)
        if root is None or root.key in taken:
            continue
        folded = tuple(by_id[c] for c in CONSEQUENCES[root_id]
                       if c in by_id and by_id[c].key not in taken)
        taken.update(a.key for a in (root, *folded))
        incidents.append(Incident(root, folded))
    incidents += [Incident(a) for a in alerts if a.key not in taken]
    return tuple(sorted(incidents, key=_order))


def _order(inc: Incident) -> tuple[bool, int, int, float, str]:
    rank = ROOTS.index(inc.root.id) if inc.root.id in ROOTS else len(ROOTS)
    return (inc.acknowledged, -SEVERITY_ORDER[inc.severity], rank, inc.root.since, inc.key)


def hhmm(ev: Mapping[str, Any]) -> str:
    """`14:02` from an event's own stamp (or the stamp of the line before it), else ""."""
    text = ev.get("ts") or ev.get("near_ts")
    m = _STAMP.search(text) if isinstance(text, str) else None
    return f"{int(m.group(1)):02d}:{m.group(2)}" if m else ""


def _cause(events: Sequence[Record], restart_at: int) -> Record | None:
    """What ended the server before the restart at `events[restart_at]`: its first OOM, else its
    first crash line (a `Killed` after an OOM is the OOM's doing)."""
    start = max((i for i in range(restart_at) if events[i].get("event") == "restart"), default=-1)
    life = events[start + 1:restart_at]
    return next((e for e in life if e.get("event") == "oom"),
                next((e for e in life if e.get("event") == "crash"), None))


def incident_line(cause: Record, restart: Record, facts: Mapping[str, Any]) -> str:
    """`14:02 OOM (mem fraction 0.93, 0.82 GB after CUDA graph) -> restarted 14:05 with 0.88`."""
    before = restart.get("before") if isinstance(restart.get("before"), Mapping) else {}
    assert isinstance(before, Mapping)
    if cause.get("event") == "oom":
        what = "OOM"
        parts = []
        if before.get("mem_fraction_static") is not None:
            parts.append(f"mem fraction {before['mem_fraction_static']}")
        if before.get("avail_mem_gb") is not None:
            parts.append(f"{before['avail_mem_gb']} GB after CUDA graph")
        if parts:
            what += f" ({', '.join(parts)})"
    else:
        what = f"crash ({cause.get('reason') or 'exception'})"
    line = f"{hhmm(cause)} {what}".strip() + f" -> restarted {hhmm(restart)}".rstrip()
    old, new = before.get("mem_fraction_static"), facts.get("mem_fraction_static")
    if new is not None and new != old:
        line += f" with {new}" if old is not None else f" with mem fraction {new}"
    elif new is not None:
        line += f" with the same mem fraction {new}"
    return line


def rule_restarted(ctx: RuleContext) -> Iterator[Finding]:
    """`server_restarted`: info for `restart_show_s` after a plain restart; after one that
    followed an OOM or crash, a warning that names the cause, kept at least `incident_show_s`
    and after that until acknowledged."""
    events, i = ctx.events.all, ctx.events.last_restart
    if i is None:
        return
    ev = events[i]
    at = ev.get("at")
    if not isinstance(at, (int, float)):
        return
    cause = _cause(events, i)
    age = ctx.now - at
    evidence = f"restart #{ctx.snap.server.restarts} {where(ev)}"
    if cause is None:
        if age <= ctx.cfg.restart_show_s:
            yield Finding("server_restarted", "info", "the server restarted; peak reset",
                          evidence, "Totals are kept; throughput charts start over from the new "
                          "start.", since=at)
        return
    if age > max(ctx.cfg.incident_show_s, ctx.cfg.restart_show_s) \
            and ctx.key("server_restarted") in ctx.acknowledged:
        ctx.resolve("server_restarted")  # seen, and old: put away now
        return
    evidence += f"; before it: {cause.get('event')} {where(cause)}"
    yield Finding("server_restarted", "warn", incident_line(cause, ev, ctx.snap.server.facts),
                  evidence, _restart_hint(cause, ctx.snap.server.facts), line=text_of(cause),
                  since=at)


def _restart_hint(cause: Record, facts: Mapping[str, Any]) -> str:
    keep = "This line stays an hour, and after that until you acknowledge it (a)."
    if cause.get("event") == "oom":
        flags = flags_for(cause.get("engine"))
        mem = mem_now(flags, facts)
        now = f" (now {mem:g})" if mem is not None else ""
        return ("The server came back after an OOM. If it runs out again, lower "
                f"{flags.mem} further{now} or cap {flags.prefill_cap}. " + keep)
    return "The server came back after a crash: read the traceback before it in the log. " + keep
