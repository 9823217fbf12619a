"""One run's state: every tracker, the alert engine, and the `RunSnapshot` they compose.

Trackers are mutated on one thread only (the UI's main thread or the serve loop); workers produce
observations and hand them over. `tick(now)` evaluates the alert rules and returns what changed,
for delivery; `snapshot(now)` is the frozen picture everything renders from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from dash.config import Config
from dash.core.alerts import AlertChanges, AlertConfig, AlertEngine
from dash.core.server_log import ServerLogTracker
from dash.core.snapshot import (
    Alert,
    ClientSnapshot,
    GpusSnapshot,
    HttpSnapshot,
    PartitionSnapshot,
    Record,
    RunSnapshot,
    RunTotals,
)
from dash.core.timestamps import ts_to_epoch

# The other trackers live in their own modules; a run without one (a partial install, or a
# module not written yet) still composes, with that part of the snapshot left at its default.
try:
    from dash.core.http_state import HttpTracker
except ImportError:  # pragma: no cover
    HttpTracker = None  # type: ignore[assignment,misc]
try:
    from dash.core.gpus import GpuTracker
except ImportError:  # pragma: no cover
    GpuTracker = None  # type: ignore[assignment,misc]
try:
    from dash.core.partitions import STALL_AFTER_S, PartitionsTracker
except ImportError:  # pragma: no cover
    PartitionsTracker = None  # type: ignore[assignment,misc]
    STALL_AFTER_S = 300.0
try:
    from dash.core.client import ClientTracker
except ImportError:  # pragma: no cover
    ClientTracker = None  # type: ignore[assignment,misc]


class RunState:
    """Composes the trackers and the alert engine for one Config."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.server_log = ServerLogTracker(str(cfg.log) if cfg.log else None)
        self.http: Any = HttpTracker(cfg.url or None) if HttpTracker is not None else None
        self.gpus: Any = GpuTracker() if GpuTracker is not None else None
        self.partitions: Any = _make_partitions(cfg)
        self.client: Any = _make_client(cfg)
        self.alerts = AlertEngine(AlertConfig.from_mapping(cfg.alerts))
        self.notices: list[str] = []

    def feed_server_log(self, records: Iterable[Record | None], now: float,
                        lines: int | None = None) -> None:
        """Feed server-log records; a server restart also restarts the partitions' rates."""
        before = self.server_log.restarts
        self.server_log.feed(records, now, lines)
        if self.server_log.restarts != before and self.partitions is not None:
            self.partitions.note_restart(now)

    def tick(self, now: float) -> AlertChanges:
        """Evaluate the alert rules on the current state: what fired and what cleared."""
        return self.alerts.evaluate(self._compose(now), now)

    def tick_and_snapshot(self, now: float) -> tuple[AlertChanges, RunSnapshot]:
        """`tick(now)` then `snapshot(now)`, composing the state once instead of twice."""
        composed = self._compose(now)
        changes = self.alerts.evaluate(composed, now)
        return changes, dataclasses.replace(composed, alerts=self.alerts.active())

    def acknowledge(self, key: str) -> bool:
        """Mark an active alert seen (by `Alert.key`)."""
        return self.alerts.acknowledge(key)

    def snapshot(self, now: float) -> RunSnapshot:
        """Everything at `now`, with the active alerts."""
        return dataclasses.replace(self._compose(now), alerts=self.alerts.active())

    def _compose(self, now: float) -> RunSnapshot:
        server = self.server_log.snapshot(now)
        http = HttpSnapshot(url=self.cfg.url or None)
        if self.http is not None:
            http = self.http.snapshot(now, server.last_decode,
                                      last_decode_at=server.last_record_at)
        parts, totals = _partitions_view(self.partitions, now)
        client = self.client.snapshot(now) if self.client is not None else ClientSnapshot()
        gpus = self.gpus.snapshot() if self.gpus is not None else GpusSnapshot()
        return RunSnapshot(now=now, server=server, http=http, partitions=parts, totals=totals,
                           client=client, gpus=gpus, notices=tuple(self.notices[-20:]))


def _make_partitions(cfg: Config) -> Any:
    if PartitionsTracker is None:
        return None
    # A partition shows "stalled" no later than the output_stalled alert (which needs it) fires.
    stall = min(STALL_AFTER_S, AlertConfig.from_mapping(cfg.alerts).stalled_after_s)
    return PartitionsTracker(cfg.expect, outputs=cfg.outputs, stall_after_s=stall)


def _make_client(cfg: Config) -> Any:
    if ClientTracker is None:
        return None
    return ClientTracker(cfg)  # type: ignore[call-arg]


def _partitions_view(tracker: Any, now: float) -> tuple[tuple[PartitionSnapshot, ...], RunTotals]:
    if tracker is None:
        return (), RunTotals()
    result = tracker.snapshot(now)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], RunTotals):
        return tuple(result[0]), result[1]
    totals = tracker.totals(now) if hasattr(tracker, "totals") else RunTotals()
    return tuple(result), totals


def replay_alerts(records: Iterable[Record | None], cfg: Config | None = None, *,
                  tick_s: float = 10.0) -> list[Alert]:
    """Every alert that fires over a log, with the log's own timestamps as the clock.

    Records without a timestamp keep the last time seen; the clock never goes back. Rules are
    evaluated whenever the clock has moved `tick_s` (alert durations are minutes; an event's
    alert takes its `since` from the event itself), and once more at the end.
    """
    cfg = dataclasses.replace(cfg or Config(), url="")
    state = RunState(cfg)
    fired: list[Alert] = []
    clock: float | None = None
    last_tick: float | None = None
    batch: list[Record | None] = []
    for rec in records:
        t = _record_time(rec, clock)
        if t is not None:
            clock = t if clock is None else max(clock, t)
        if clock is None:
            batch.append(rec)  # nothing timed yet: hold until the first timestamp
            continue
        batch.append(rec)
        state.feed_server_log(batch, clock)
        batch.clear()
        if last_tick is None or clock - last_tick >= tick_s:
            fired.extend(state.tick(clock).new)
            last_tick = clock
    end = 0.0 if clock is None else clock  # a log with no timestamp at all still gets read
    state.feed_server_log(batch, end)
    fired.extend(state.tick(end).new)
    return fired


def _record_time(rec: Record | None, ref: float | None) -> float | None:
    if not rec or not isinstance(rec.get("ts"), str):
        return None
    try:
        # 0.0 as a reference gives a date-less stamp some date; only differences matter here.
        return ts_to_epoch(rec["ts"], ref=ref if ref is not None else 0.0)
    except (ValueError, TypeError, OverflowError):
        return None
