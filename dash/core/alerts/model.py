"""What alert rules are made of: findings, the context a rule sees, and the alert's JSON.

A rule is a pure function of a `RuleContext` (a `RunSnapshot`, the time, the thresholds) that
yields `Finding`s; `dash.core.alerts.engine.AlertEngine` turns them into alerts. Rule ids are a
contract (scripts, `--json`).
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dash.core.config import AlertConfig
from dash.core.linenums import line_text
from dash.core.snapshot import Alert, Record, RunSnapshot, Severity

RULE_IDS = (
    "server_oom", "server_crash", "server_down", "http_unreachable", "http_auth", "http_errors",
    "server_restarted", "server_silent",
    "client_log_buffered", "throughput_plateau", "kv_saturated", "retractions", "rank_imbalance",
    "rank_silent",
    "gpu_headroom_low", "output_stalled", "client_missing", "client_duplicate",
    "client_errors", "partition_done",
    "outputs_truncated", "outputs_invalid", "outputs_errors", "outputs_empty", "reasoning_missing",
)


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule's condition holding right now; the engine decides when it becomes an Alert."""

    id: str
    severity: Severity
    message: str
    evidence: str
    hint: str
    subject: str | None = None
    line: str | None = None
    fire_after: float = 0.0
    since: float | None = None
    """When the condition really began (an event's time); default: when first seen."""
    held_s: float | None = None
    """How long the log itself shows the condition holding (None: it cannot say). A sample
    of seconds (`immediate`) fires a finding with a hold only once the lines show that hold:
    a fall seen over one second of a log is no plateau."""
    per_event: bool = False
    """The finding stands for one event (a restart) and `since` is that event's time: a new
    `since` under the same key is the next event, so the alert fired for the one before clears
    and a new one fires (its own `since`, its own line in the history, not yet acknowledged)."""

    @property
    def key(self) -> str:
        return f"{self.id}:{self.subject}" if self.subject else self.id


class ServerEvents:
    """The server log's recent events as the rules ask for them, worked out once per list
    (snapshots share the list until an event arrives; rules run every tick)."""

    __slots__ = ("all", "restarts", "last_restart", "since_start", "_kinds", "_retracts", "_retract_at",
                 "_in_order")

    def __init__(self, events: tuple[Record, ...]) -> None:
        self.all = events
        restarts = [i for i, e in enumerate(events) if e.get("event") == "restart"]
        self.restarts = tuple(restarts)
        """Indexes in `all` of the restarts, oldest first."""
        self.last_restart: int | None = restarts[-1] if restarts else None
        """Index in `all` of the most recent restart."""
        self.since_start = events if self.last_restart is None else events[self.last_restart + 1:]
        """Events after the most recent restart: what still describes the running server."""
        self._kinds: set[str] | None = None
        self._retracts = [e for e in events if e.get("event") == "retract"
                          and isinstance(e.get("at"), (int, float))]
        self._retract_at = [e["at"] for e in self._retracts]
        self._in_order = all(map(operator.le, self._retract_at, self._retract_at[1:]))

    def since_start_of(self, *kinds: str) -> list[Record]:
        """Events of these kinds since the most recent restart, oldest first."""
        if self._kinds is None:
            self._kinds = {str(e.get("event")) for e in self.since_start}
        if self._kinds.isdisjoint(kinds):
            return []
        return [e for e in self.since_start if e.get("event") in kinds]

    def retracts_within(self, now: float, window: float) -> list[Record]:
        """Retraction events at most `window` seconds before `now`, oldest first."""
        recent = self._retracts
        if self._in_order:  # skip the old ones; a second's slack keeps the test below exact
            recent = recent[bisect.bisect_left(self._retract_at, now - window - 1.0):]
        return [e for e in recent if now - e["at"] <= window]


@dataclass(slots=True)
class RuleContext:
    """What a rule sees: the snapshot, the time, thresholds, active keys and its own memory."""

    snap: RunSnapshot
    now: float
    cfg: AlertConfig
    active: frozenset[str]
    memory: dict[str, Any]
    events: ServerEvents = None  # type: ignore[assignment]  # set from `snap` when not given
    """The snapshot's server events, indexed (the engine shares one index across ticks)."""
    acknowledged: frozenset[str] = frozenset()
    """Keys of the active alerts the user acknowledged."""
    resolved: set[str] = field(default_factory=set)
    """Keys a rule saw recover for certain (the server answers again, a stats line arrived):
    the engine clears those at once instead of waiting out the hysteresis."""
    scope: str | None = None
    """The server a per-server rule looks at when kdash watches several (its name); its
    findings get it as their subject."""

    def __post_init__(self) -> None:
        if self.events is None or self.events.all is not self.snap.server.events:
            self.events = ServerEvents(self.snap.server.events)

    def key(self, rule_id: str, subject: str | None = None) -> str:
        """The key this rule's alert has (for this server, and `subject`)."""
        parts = [p for p in (self.scope, subject) if p]
        return f"{rule_id}:{'/'.join(parts)}" if parts else rule_id

    def is_active(self, rule_id: str, subject: str | None = None) -> bool:
        """Whether this rule's alert (for this server, and `subject`) is active: hysteresis."""
        return self.key(rule_id, subject) in self.active

    def launch_ended(self, rule_id: str) -> bool:
        """Whether the server restarted since this rule last looked; if so, `rule_id`'s alert,
        a condition of the launch that ended, is resolved (the restart clears the old server's
        alerts at once). Call once per evaluation, before anything clears the rule's memory."""
        restarts = self.snap.server.restarts
        seen = self.memory.get("launch_restarts", restarts)
        self.memory["launch_restarts"] = restarts
        if seen == restarts:
            return False
        self.resolve(rule_id)
        return True

    def resolve(self, key: str) -> None:
        """Say that `key`'s condition is over for certain (a confirmed recovery); a rule about
        one of several servers resolves that server's alert."""
        if self.scope and ":" not in key:
            key = self.key(key)
        if key in self.active:
            self.resolved.add(key)


Rule = Callable[[RuleContext], Iterable[Finding]]


@dataclass(frozen=True, slots=True)
class AlertChanges:
    """What one evaluation changed: alerts that fired and alerts that cleared (for delivery)."""

    new: tuple[Alert, ...] = ()
    cleared: tuple[Alert, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.new or self.cleared)


def fmt_duration(seconds: float) -> str:
    """`45 s`, `10 min`, `2.5 h`, `3.2 days`: short and human (an old log's OOM is days ago,
    not `1234.5 h`)."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{int(seconds // 60)} min"  # floored, as the screen's ages are (`6m` is 6 min)
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def where(ev: Mapping[str, Any]) -> str:
    """`at 12:10:05 (line 812)` from an event's own timestamp and line number (a line with no
    stamp of its own: `at about 12:10:05`, the stamp of the line before it; `line ?, counting`
    while the lines before a backfill window are counted)."""
    parts = []
    if ev.get("ts"):
        parts.append(f"at {ev['ts']}")
    elif ev.get("near_ts"):
        parts.append(f"at about {ev['near_ts']}")
    line = line_text(ev)
    if line:
        parts.append(f"({line})")
    return " ".join(parts) or "in the log"


def text_of(ev: Mapping[str, Any] | None) -> str | None:
    """An event's log line (its message), capped, for an alert's `line`."""
    if ev is None:
        return None
    msg = ev.get("message")
    if not msg:
        return None
    text = str(msg)
    return text if len(text) <= LINE_CAP else text[:LINE_CAP - 1] + "…"


LINE_CAP = 2000
"""An alert keeps this much of its log line: a vLLM OOM message runs to 700 characters, and its
fix is at the end ("set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid
fragmentation"); the events kept are bounded, so this bounds the memory too."""


def alert_to_json(alert: Alert) -> dict[str, Any]:
    """The alert object of `--json`, the summary, history and delivery (keys are a contract)."""
    return {
        "id": alert.id,
        "key": alert.key,
        "severity": alert.severity,
        "since": alert.since,
        "message": alert.message,
        "evidence": alert.evidence,
        "hint": alert.hint,
        "subject": alert.subject,
        "line": alert.line,
        "acknowledged": alert.acknowledged,
    }


def alert_text(alert: Alert) -> str:
    """One line for a chat message or a notification: severity, id, message."""
    subject = f" [{alert.subject}]" if alert.subject else ""
    return f"kdash {alert.severity.upper()} {alert.id}{subject}: {alert.message}"
