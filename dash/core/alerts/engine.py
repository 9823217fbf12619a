"""Alerts: rules that name the problem, fired after a duration and cleared with hysteresis.

A rule is a pure function of a `RunSnapshot` and `now` that returns `Finding`s (a condition that
holds right now). `AlertEngine` turns findings into `Alert`s: a finding must hold for its
`fire_after` seconds before it fires, and an active alert clears only after its finding has been
absent for `clear_after` seconds, so a value hovering at a threshold does not flap. Nothing here
reads a clock or does I/O; delivery (command, webhook, history) is `dash.sources.alert_sinks`.

A rule may also say that an alert's condition is over for certain (`RuleContext.resolve`: the
server answers again, a stats line arrived): that alert clears at once, since hysteresis is for
conditions that flap, not for a confirmed recovery. `immediate=True` (for `--once` and `check`,
which sample for seconds) fires every finding at once instead of after its duration, unless the
finding says how long the log shows it holding (`held_s`) and that is shorter.

Rule ids are a contract (scripts, `--json`): server_oom, server_crash, server_down,
http_unreachable, http_auth, http_errors, server_restarted, server_silent, client_log_buffered, throughput_plateau,
kv_saturated, retractions, rank_imbalance, rank_silent, gpu_headroom_low, output_stalled, client_missing,
client_duplicate, client_errors, partition_done, outputs_truncated, outputs_invalid, outputs_errors,
outputs_empty, reasoning_missing.

With several server logs the rules about one server run once per server, each on a snapshot
whose `server` is that one; their alerts name it as their subject (`server_silent:decode`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from dash.core.alerts.model import AlertChanges, Finding, Rule, RuleContext, ServerEvents
from dash.core.alerts.rules_client import CLIENT_RULES
from dash.core.alerts.rules_http import HTTP_RULES
from dash.core.alerts.rules_outputs import OUTPUT_RULES
from dash.core.alerts.rules_ranks import RANK_RULES
from dash.core.alerts.rules_run import RUN_RULES
from dash.core.alerts.rules_server import SERVER_RULES, rule_down, rule_http_unreachable
from dash.core.alerts.rules_throughput import THROUGHPUT_RULES
from dash.core.config import AlertConfig
from dash.core.snapshot import SEVERITY_ORDER, Alert, RunSnapshot

PER_SERVER: frozenset[Rule] = frozenset(
    (*(r for r in SERVER_RULES if r not in (rule_down, rule_http_unreachable)),
     *THROUGHPUT_RULES, *RANK_RULES))
"""Rules about one server's log (HTTP is the one URL's: `server_down` and `http_unreachable`
are the run's)."""


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
    immediate: bool = False
    """Fire a finding as soon as it holds (a short sample, where durations cannot pass)."""
    _tracks: dict[str, _Track] = field(default_factory=dict)
    _memory: dict[tuple[int, str | None], dict[str, Any]] = field(default_factory=dict)
    _events: dict[str | None, ServerEvents] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.rules is None:
            self.rules = default_rules()

    def evaluate(self, snap: RunSnapshot, now: float) -> AlertChanges:
        """Evaluate every rule on `snap` at `now`; return what fired and what cleared."""
        active = frozenset(k for k, t in self._tracks.items() if t.alert is not None)
        acked = frozenset(k for k, t in self._tracks.items()
                          if t.alert is not None and t.alert.acknowledged)
        scopes = _scopes(snap)
        findings: dict[str, Finding] = {}
        resolved: set[str] = set()
        for i, rule in enumerate(self.rules or ()):
            for scope, view in (scopes if rule in PER_SERVER else [(None, snap)]):
                ctx = RuleContext(view, now, self.config, active,
                                  self._memory.setdefault((i, scope), {}),
                                  self._indexed(scope, view), acked, resolved, scope)
                for f in rule(ctx):
                    if scope is not None:  # one of several servers: say which, everywhere
                        f = dataclasses.replace(f, subject="/".join(
                            p for p in (scope, f.subject) if p), message=f"{scope}: {f.message}")
                    findings.setdefault(f.key, f)
        new: list[Alert] = []
        cleared: list[Alert] = []
        for f in findings.values():
            if f.key in resolved:
                # Its condition is over for certain (the launch it was about ended): a finding
                # under the same key is the next launch's, a new alert with a hold of its own,
                # not the old one carried on with the old `since`.
                old = self._tracks.pop(f.key, None)
                if old is not None and old.alert is not None:
                    cleared.append(old.alert)
            fired, replaced = self._present(f, now)
            new += [fired] if fired is not None else []
            cleared += [replaced] if replaced is not None else []
        cleared += [a for k in list(self._tracks) if k not in findings
                    if (a := self._absent(k, now, k in resolved)) is not None]
        return AlertChanges(tuple(new), tuple(cleared))

    def _indexed(self, scope: str | None, view: RunSnapshot) -> ServerEvents:
        """The server's events, indexed once per list (snapshots share it until one arrives)."""
        index = self._events.get(scope)
        if index is None or index.all is not view.server.events:
            index = self._events[scope] = ServerEvents(view.server.events)
        return index

    def _present(self, f: Finding, now: float) -> tuple[Alert | None, Alert | None]:
        """(the alert that fired now, the one a next event replaced), each None when none."""
        track = self._tracks.get(f.key)
        replaced = None
        if track is not None and track.alert is not None and f.per_event \
                and f.since != track.alert.since:
            replaced = track.alert  # the next event: the one before is over
            track = None
        if track is None:
            track = self._tracks[f.key] = _Track(first_seen=now)
        track.absent_since = None
        since = f.since if f.since is not None else track.first_seen
        if track.alert is not None:
            # Keep `since` and the acknowledgement; refresh the numbers.
            track.alert = _alert(f, track.alert.since, track.alert.acknowledged)
            return None, None
        if self.immediate:
            if f.held_s is not None and f.held_s < f.fire_after:
                return None, replaced
        elif now - track.first_seen < f.fire_after:
            return None, replaced
        track.alert = _alert(f, since, False)
        return track.alert, replaced

    def _absent(self, key: str, now: float, resolved: bool = False) -> Alert | None:
        track = self._tracks[key]
        if track.alert is None:
            del self._tracks[key]  # a pending condition that went away restarts its duration
            return None
        if track.absent_since is None:
            track.absent_since = now
        if now - track.absent_since < self.config.clear_after_s and not resolved:
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
    """Every rule, server first."""
    return (SERVER_RULES + HTTP_RULES + THROUGHPUT_RULES + RANK_RULES + RUN_RULES + CLIENT_RULES
            + OUTPUT_RULES)


def _scopes(snap: RunSnapshot) -> list[tuple[str | None, RunSnapshot]]:
    """(server name, the snapshot as that server sees it) for each server; one, unnamed, when
    there is one. HTTP is the first server's (the one URL)."""
    if len(snap.servers) < 2:
        return [(None, snap)]
    return [(s.name or s.path, snap.for_server(i)) for i, s in enumerate(snap.servers)]


def _alert(f: Finding, since: float, acknowledged: bool) -> Alert:
    return Alert(id=f.id, severity=f.severity, since=since, message=f.message,
                 evidence=f.evidence, hint=f.hint, subject=f.subject, line=f.line,
                 acknowledged=acknowledged, hold_s=f.fire_after)
