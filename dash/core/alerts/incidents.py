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
from dash.core.alerts.rules_outputs import CUT_WHILE_REASONING
from dash.core.snapshot import SEVERITY_ORDER, Alert, Incident, Record

ROOTS = ("server_oom", "server_crash", "server_down")
"""Alerts that can cause others, the deepest cause first."""
CONSEQUENCES: Mapping[str, tuple[str, ...]] = {
    "server_oom": ("server_crash", "server_down", "server_silent", "client_errors"),
    "server_crash": ("server_down", "server_silent", "client_errors"),
    "server_down": ("server_silent", "client_errors"),
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
    incidents += _partition_incidents([a for a in alerts if a.key not in taken])
    return tuple(sorted(incidents, key=_order))


def _partition_incidents(alerts: Sequence[Alert]) -> list[Incident]:
    """The rest, one incident each, but a partition's answers left empty because the token
    limit cut them off while reasoning: that is its truncation alert's consequence."""
    truncated = {a.subject: a for a in alerts if a.id == "outputs_truncated" and a.subject}
    folded = {a.subject: a for a in alerts if a.id == "outputs_empty" and a.subject in truncated
              and a.hint == CUT_WHILE_REASONING}
    return [Incident(a, (folded[a.subject],) if a.subject in folded and a.id ==
                     "outputs_truncated" else ()) for a in alerts
            if not (a.id == "outputs_empty" and a.subject in folded)]


def _order(inc: Incident) -> tuple[bool, int, int, float, str]:
    rank = ROOTS.index(inc.root.id) if inc.root.id in ROOTS else len(ROOTS)
    return (inc.acknowledged, -SEVERITY_ORDER[inc.severity], rank, inc.root.since, inc.key)


def hhmm(ev: Mapping[str, Any]) -> str:
    """`14:02` from an event's own stamp (or the stamp of the line before it), else ""."""
    text = ev.get("ts") or ev.get("near_ts")
    m = _STAMP.search(text) if isinstance(text, str) else None
    return f"{int(m.group(1)):02d}:{m.group(2)}" if m else ""


def _cause(events: Sequence[Record], restart_at: int, start: int = -1) -> Record | None:
    """What ended the server before the restart at `events[restart_at]` (the one before it at
    `events[start]`, -1 for none): its first OOM, else its first crash line (a `Killed` after
    an OOM is the OOM's doing)."""
    life = events[start + 1:restart_at]
    return next((e for e in life if e.get("event") == "oom"),
                next((e for e in life if e.get("event") == "crash"), None))


def incident_line(cause: Record, restart: Record, facts: Mapping[str, Any],
                  engine: str | None = None) -> str:
    """`14:02 OOM (mem fraction 0.93, 0.82 GB after CUDA graph) -> restarted 14:05 with 0.88`;
    the memory share is the engine's (vLLM's GPU memory utilization)."""
    before = restart.get("before") if isinstance(restart.get("before"), Mapping) else {}
    assert isinstance(before, Mapping)
    mem = flags_for(engine).mem_fact
    if cause.get("event") == "oom":
        what = "OOM"
        parts = []
        if before.get(mem) is not None:
            parts.append(f"mem fraction {before[mem]}")
        if before.get("avail_mem_gb") is not None:
            parts.append(f"{before['avail_mem_gb']} GB after CUDA graph")
        if parts:
            what += f" ({', '.join(parts)})"
    else:
        what = f"crash ({cause.get('reason') or 'exception'})"
    line = f"{hhmm(cause)} {what}".strip() + f" -> restarted {hhmm(restart)}".rstrip()
    old, new = before.get(mem), facts.get(mem)
    if new is not None and new != old:
        line += f" with {new}" if old is not None else f" with mem fraction {new}"
    elif new is not None:
        line += f" with the same mem fraction {new}"
    return line


def rule_restarted(ctx: RuleContext) -> Iterator[Finding]:
    """`server_restarted`: info for `restart_show_s` after the newest restart, when it was a
    plain one; after a restart that followed an OOM or crash, a warning that names the cause,
    kept at least `incident_show_s` and after that until acknowledged, whatever restarts come
    after it. Each restart is its own alert (its `since` is the restart's time). The first one
    shown takes the plain key; one shown beside it is named by its number (`restart #3`), and
    keeps that key while it lasts, so its acknowledgement does not move."""
    events = ctx.events.all
    shown = _shown_restarts(ctx)
    subjects = _subjects(ctx, [events[i]["at"] for i, _ in shown])
    loop = _loop(ctx, sum(cause is not None for _, cause in shown))
    # On the first line shown: the top alert is the one the compact layout shows in full.
    told = next((i for i, cause in shown if cause is not None), None)
    for i, cause in shown:
        ev = events[i]
        subject = subjects[ev["at"]]
        evidence = f"restart #{ev.get('restarts') or ctx.snap.server.restarts} {where(ev)}"
        if cause is None:
            yield Finding("server_restarted", "info", "the server restarted; peak reset",
                          evidence, "Totals are kept; throughput charts start over from the new "
                          "start.", subject=subject, since=ev["at"], per_event=True)
            continue
        after = _launch_facts(ctx, i)
        evidence += f"; before it: {cause.get('event')} {where(cause)}"
        line = (incident_line(cause, ev, after, ctx.snap.server.engine)
                + (loop if i == told else ""))
        hint = _restart_hint(cause, ctx.snap.server.facts, ctx.snap.server.engine)
        yield Finding("server_restarted", "warn", line, evidence, hint, subject=subject,
                      line=text_of(cause), since=ev["at"], per_event=True)


def _loop(ctx: RuleContext, shown: int) -> str:
    """`; 4 restarts after an OOM or crash since 03:55` when more came than the two lines shown
    tell: a crash loop says how long it has gone on."""
    events, restarts = ctx.events.all, ctx.events.restarts
    causes = [c for k, i in enumerate(restarts)
              if (c := _cause(events, i, restarts[k - 1] if k else -1)) is not None]
    if len(causes) <= shown:
        return ""
    first = hhmm(causes[0])
    return f"; {len(causes)} restarts after an OOM or crash" + (f" since {first}" if first else "")


def _shown_restarts(ctx: RuleContext) -> list[tuple[int, Record | None]]:
    """(index, cause) of the restarts whose alert shows now, oldest first: the newest restart
    (a plain one for `restart_show_s`), and the newest incident before it, if any. An incident
    (a restart after an OOM or crash) shows for `incident_show_s` and then until acknowledged;
    once put away, for good. Two at most: a crash loop tells its story in its latest two."""
    events, restarts = ctx.events.all, ctx.events.restarts
    shown: list[tuple[int, Record | None]] = []
    for k in range(len(restarts) - 1, -1, -1):
        i = restarts[k]
        cause = _cause(events, i, restarts[k - 1] if k else -1)
        if i == restarts[-1] or cause is not None:
            if _still_due(ctx, events[i].get("at"), cause, newest=i == restarts[-1]):
                shown.insert(0, (i, cause))
            if i != restarts[-1]:
                break
    return shown


def _still_due(ctx: RuleContext, at: object, cause: Record | None, newest: bool) -> bool:
    done: set[float] = ctx.memory.setdefault("put_away", set())
    subjects: dict[float, str | None] = ctx.memory.setdefault("subjects", {})
    if not isinstance(at, (int, float)) or at in done:
        return False
    if cause is None:
        return newest and ctx.now - at <= ctx.cfg.restart_show_s
    keep = max(ctx.cfg.incident_show_s, ctx.cfg.restart_show_s)
    if ctx.now - at > keep and at in subjects \
            and ctx.key("server_restarted", subjects[at]) in ctx.acknowledged:
        done.add(at)  # seen, and old: put away now
        return False
    return True


def _subjects(ctx: RuleContext, shown: list[float]) -> dict[float, str | None]:
    """The subject of each shown restart's alert (by its time), given once and kept; the keys
    of the restarts no longer shown are resolved at once (their condition is over for sure)."""
    subjects: dict[float, str | None] = ctx.memory.setdefault("subjects", {})
    restarts = [ctx.events.all[i] for i in ctx.events.restarts]
    for at in [a for a in subjects if a not in shown]:
        gone = subjects.pop(at)
        if gone not in (subjects.get(a) for a in shown):
            ctx.resolve(ctx.key("server_restarted", gone))
    taken = {subjects[a] for a in shown if a in subjects}
    for at in shown:
        if at not in subjects:
            number = next((e.get("restarts") for e in restarts if e.get("at") == at), None)
            subjects[at] = None if None not in taken else f"restart #{number}"
            taken.add(subjects[at])
    ctx.memory.setdefault("put_away", set()).intersection_update(e.get("at") for e in restarts)
    return subjects


def _launch_facts(ctx: RuleContext, restart_at: int) -> Mapping[str, Any]:
    """The facts of the launch the restart at `events[restart_at]` began: what the next
    restart saved of it, else (it is the running one) the server's facts now."""
    events = ctx.events.all
    later = next((i for i in ctx.events.restarts if i > restart_at), None)
    before = events[later].get("before") if later is not None else None
    return before if isinstance(before, Mapping) else ctx.snap.server.facts


def _restart_hint(cause: Record, facts: Mapping[str, Any], engine: str | None = None) -> str:
    keep = "This line stays an hour, and after that until you acknowledge it (a)."
    if cause.get("event") == "oom":
        # The server's engine: a traceback's last line, which names the OOM, often has no
        # prefix to tell vLLM's from SGLang's.
        flags = flags_for(engine or cause.get("engine"))
        mem = mem_now(flags, facts)
        now = f" (now {mem:g})" if mem is not None else ""
        if cause.get("reason") == "mem_fraction":  # the pool did not fit: the share was short
            return ("The server came back after its KV pool did not fit. If it fails again, "
                    f"raise {flags.mem} further{now} or make the weights smaller per GPU. " + keep)
        return ("The server came back after an OOM. If it runs out again, lower "
                f"{flags.mem} further{now} or cap {flags.prefill_cap}. " + keep)
    return "The server came back after a crash: read the traceback before it in the log. " + keep
