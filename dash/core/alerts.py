"""Alerts: rules that name the problem, fired after a duration and cleared with hysteresis.

A rule is a pure function of a `RunSnapshot` and `now` that returns `Finding`s (a condition that
holds right now). `AlertEngine` turns findings into `Alert`s: a finding must hold for its
`fire_after` seconds before it fires, and an active alert clears only after its finding has been
absent for `clear_after` seconds, so a value hovering at a threshold does not flap. Nothing here
reads a clock or does I/O; delivery (command, webhook, history) is `dash.sources.alert_sinks`.

Rule ids are a contract (scripts, `--json`): server_oom, server_crash, server_down,
server_restarted, server_silent, client_log_buffered, throughput_plateau, kv_saturated,
retractions, gpu_headroom_low, output_stalled, client_missing, client_duplicate, partition_done.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dash.config import ConfigError
from dash.core.snapshot import SEVERITY_ORDER, Alert, Record, RunSnapshot, Severity

RULE_IDS = (
    "server_oom", "server_crash", "server_down", "server_restarted", "server_silent",
    "client_log_buffered", "throughput_plateau", "kv_saturated", "retractions",
    "gpu_headroom_low", "output_stalled", "client_missing", "client_duplicate", "partition_done",
)


@dataclass(frozen=True, slots=True)
class AlertConfig:
    """Every alert threshold; set any of them in TOML under `[alerts]` by the same name."""

    clear_after_s: float = 60.0
    """An active alert clears only after its condition has been false this long (hysteresis)."""
    down_polls: int = 3
    """`server_down`: consecutive failed HTTP polls before the server counts as down."""
    silent_after_s: float = 300.0
    """`server_silent`: no decode/prefill line for this long while requests were running."""
    restart_show_s: float = 900.0
    """`server_restarted`: how long the info alert stays up after a restart."""
    buffered_after_s: float = 120.0
    """`client_log_buffered`: the client log has not grown for this long while an output grew."""
    buffered_min_lines: int = 5
    """`client_log_buffered`: lines an output must gain (since kdash started) to count as growing."""
    plateau_drop: float = 0.30
    """`throughput_plateau`: fractional fall from the peak that counts (0.30 = 30 % below peak)."""
    plateau_after_s: float = 600.0
    """`throughput_plateau`: how long the fall must hold before the alert fires."""
    plateau_window_s: float = 120.0
    """`throughput_plateau`: medians are taken over this window, so single lines cannot fire it."""
    plateau_min_peak: float = 50.0
    """`throughput_plateau`: peaks below this (tok/s) are too small to compare against."""
    plateau_min_points: int = 5
    """`throughput_plateau`: decode lines a window needs before its median counts."""
    kv_bound_usage: float = 0.85
    """`throughput_plateau`: token usage at or above this, with a queue, reads as KV-bound."""
    kv_usage: float = 0.90
    """`kv_saturated`: token usage at or above this (median over `kv_window_s`)."""
    kv_after_s: float = 300.0
    """`kv_saturated`: how long saturation with a growing queue must hold."""
    kv_window_s: float = 120.0
    """`kv_saturated`: window for the usage median and the queue trend."""
    retract_window_s: float = 600.0
    """`retractions`: the window retraction events are counted over."""
    retract_min_events: int = 3
    """`retractions`: events in the window that fire the alert."""
    gpu_free_min_gb: float = 1.0
    """`gpu_headroom_low`: free memory (NVML) below this on any GPU."""
    cuda_graph_min_gb: float = 1.0
    """`gpu_headroom_low`: avail mem after CUDA graph capture (server log) below this."""
    gpu_after_s: float = 30.0
    """`gpu_headroom_low`: how long low free memory must hold."""
    stalled_after_s: float = 600.0
    """`output_stalled`: a running partition's output has not grown for this long."""
    client_after_s: float = 30.0
    """`client_missing` / `client_duplicate`: how long the process count must be wrong."""
    done_show_s: float = 1800.0
    """`partition_done`: how long the info alert stays up after the partition finished."""

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "alerts") -> AlertConfig:
        """Build from `Config.alerts`; an unknown name or a bad value is a one-line ConfigError."""
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}
        out: dict[str, Any] = {}
        for name, value in values.items():
            if name not in kinds:
                raise ConfigError(f"{where}: unknown alert setting {name!r}")
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not math.isfinite(value)):
                raise ConfigError(f"{where}: {name} must be a number, got {value!r}")
            if value < 0:
                raise ConfigError(f"{where}: {name} must be >= 0, got {value!r}")
            if kinds[name] in (int, "int"):
                if int(value) != value:
                    raise ConfigError(f"{where}: {name} must be a whole number, got {value!r}")
                value = int(value)
            out[name] = float(value) if kinds[name] in (float, "float") else value
        return cls(**out)


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

    @property
    def key(self) -> str:
        return f"{self.id}:{self.subject}" if self.subject else self.id


class ServerEvents:
    """The server log's recent events as the rules ask for them, worked out once per list
    (snapshots share the list until an event arrives; rules run every tick)."""

    __slots__ = ("all", "last_restart", "since_start", "_kinds", "_retracts", "_retract_at",
                 "_in_order")

    def __init__(self, events: tuple[Record, ...]) -> None:
        self.all = events
        restarts = [i for i, e in enumerate(events) if e.get("event") == "restart"]
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

    def __post_init__(self) -> None:
        if self.events is None or self.events.all is not self.snap.server.events:
            self.events = ServerEvents(self.snap.server.events)


Rule = Callable[[RuleContext], Iterable[Finding]]


@dataclass(frozen=True, slots=True)
class AlertChanges:
    """What one evaluation changed: alerts that fired and alerts that cleared (for delivery)."""

    new: tuple[Alert, ...] = ()
    cleared: tuple[Alert, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.new or self.cleared)


@dataclass
class _Track:
    first_seen: float
    alert: Alert | None = None
    absent_since: float | None = None


@dataclass
class AlertEngine:
    """Runs the rules, applies durations and hysteresis, and keeps the active alerts."""

    config: AlertConfig = field(default_factory=AlertConfig)
    rules: tuple[Rule, ...] | None = None
    _tracks: dict[str, _Track] = field(default_factory=dict)
    _memory: dict[int, dict[str, Any]] = field(default_factory=dict)
    _events: ServerEvents | None = None

    def __post_init__(self) -> None:
        if self.rules is None:
            self.rules = default_rules()

    def evaluate(self, snap: RunSnapshot, now: float) -> AlertChanges:
        """Evaluate every rule on `snap` at `now`; return what fired and what cleared."""
        active = frozenset(k for k, t in self._tracks.items() if t.alert is not None)
        events = snap.server.events
        if self._events is None or self._events.all is not events:
            self._events = ServerEvents(events)
        findings: dict[str, Finding] = {}
        for i, rule in enumerate(self.rules or ()):
            ctx = RuleContext(snap, now, self.config, active, self._memory.setdefault(i, {}),
                              self._events)
            for f in rule(ctx):
                findings.setdefault(f.key, f)
        new = [a for f in findings.values() if (a := self._present(f, now)) is not None]
        cleared = [a for k in list(self._tracks) if k not in findings
                   if (a := self._absent(k, now)) is not None]
        return AlertChanges(tuple(new), tuple(cleared))

    def _present(self, f: Finding, now: float) -> Alert | None:
        track = self._tracks.get(f.key)
        if track is None:
            track = self._tracks[f.key] = _Track(first_seen=now)
        track.absent_since = None
        since = f.since if f.since is not None else track.first_seen
        if track.alert is not None:
            # Keep `since` and the acknowledgement; refresh the numbers.
            track.alert = _alert(f, track.alert.since, track.alert.acknowledged)
            return None
        if now - track.first_seen < f.fire_after:
            return None
        track.alert = _alert(f, since, False)
        return track.alert

    def _absent(self, key: str, now: float) -> Alert | None:
        track = self._tracks[key]
        if track.alert is None:
            del self._tracks[key]  # a pending condition that went away restarts its duration
            return None
        if track.absent_since is None:
            track.absent_since = now
        if now - track.absent_since < self.config.clear_after_s:
            return None
        del self._tracks[key]
        return track.alert

    def active(self) -> tuple[Alert, ...]:
        """Active alerts, most severe first, then oldest first."""
        alerts = [t.alert for t in self._tracks.values() if t.alert is not None]
        return tuple(sorted(alerts, key=lambda a: (-SEVERITY_ORDER[a.severity], a.since, a.key)))

    def acknowledge(self, key: str) -> bool:
        """Mark an active alert seen (the UI dims it); False when no such alert is active."""
        track = self._tracks.get(key)
        if track is None or track.alert is None:
            return False
        track.alert = dataclasses.replace(track.alert, acknowledged=True)
        return True


def default_rules() -> tuple[Rule, ...]:
    """Every rule, server first (imported here: the rule modules import this one)."""
    from dash.core.rules_run import RUN_RULES
    from dash.core.rules_server import SERVER_RULES
    from dash.core.rules_throughput import THROUGHPUT_RULES

    return SERVER_RULES + THROUGHPUT_RULES + RUN_RULES


def _alert(f: Finding, since: float, acknowledged: bool) -> Alert:
    return Alert(id=f.id, severity=f.severity, since=since, message=f.message,
                 evidence=f.evidence, hint=f.hint, subject=f.subject, line=f.line,
                 acknowledged=acknowledged)


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
