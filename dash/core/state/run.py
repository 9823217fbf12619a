"""One run's state: every tracker, the alert engine, and the `RunSnapshot` they compose.

Trackers are mutated on one thread only (the UI's main thread or the serve loop); workers produce
observations and hand them over. `tick(now)` evaluates the alert rules and returns what changed,
for delivery; `snapshot(now)` is the frozen picture everything renders from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from dash.core.alerts.engine import AlertEngine
from dash.core.alerts.history import AlertHistory
from dash.core.alerts.incidents import group_incidents
from dash.core.alerts.model import AlertChanges
from dash.core.config import AlertConfig, Config
from dash.core.log.timestamps import ts_to_epoch
from dash.core.recent import RecentSet
from dash.core.snapshot import (
    Alert,
    HttpSnapshot,
    Liveness,
    PartitionSnapshot,
    Record,
    RunSnapshot,
    RunTotals,
)
from dash.core.state.client import ClientTracker
from dash.core.state.gpus import GpuTracker
from dash.core.state.http_state import HttpTracker
from dash.core.state.launches import LaunchTracker
from dash.core.state.liveness import liveness
from dash.core.state.partitions import MIN_SPAN_S, STALL_AFTER_S, PartitionsTracker
from dash.core.state.quality import MIN_RATE_SPAN_S, QualityTracker
from dash.core.state.server_log import ServerLogTracker
from dash.core.state.servers import Servers, combine, summed

MAX_NOTICES = 100
"""Distinct notices remembered (so that each is said once); the oldest are forgotten first."""
SHOWN_NOTICES = 20
"""The newest notices a snapshot carries."""


class RunState:
    """Composes the trackers and the alert engine for one Config."""

    def __init__(self, cfg: Config, *, sample_s: float | None = None,
                 quality_period_s: float = 0.0, samples_every_s: float = 0.0) -> None:
        """`sample_s`: the state of a short sample of this many seconds (`--once`, `check`):
        alerts fire as soon as their condition holds, and rates are measured over the sample.
        `quality_period_s`: how long the output-quality figures are kept while samples arrive
        (0: exact). `samples_every_s`: how often the samples are read (the live screen reads
        them once a `dash.core.state.quality.LIVE_PERIOD_S`, and shows each read's figures)."""
        self.cfg = cfg
        self.servers = Servers(str(p) for p in cfg.logs)
        self._no_log = ServerLogTracker(None)
        self.http = HttpTracker(cfg.url or None)
        self.gpus = GpuTracker()
        self.partitions = _make_partitions(cfg, sample_s)
        self.client = ClientTracker(cfg)
        self.quality = QualityTracker(cfg.output_fields,
                                      min_span_s=_sample_span(MIN_RATE_SPAN_S, sample_s, 0.5),
                                      period_s=quality_period_s,
                                      read_every_s=samples_every_s)
        self.alert_config = AlertConfig.from_mapping(cfg.alerts)
        self.alerts = AlertEngine(self.alert_config, immediate=sample_s is not None)
        self.history = AlertHistory()
        self.notices: RecentSet[str] = RecentSet(MAX_NOTICES)
        self._launches: dict[ServerLogTracker, LaunchTracker] = {}
        """Each server log's starts, by its tracker (which keeps its place when a glob's file
        takes it)."""

    @property
    def server_log(self) -> ServerLogTracker:
        """The primary server's tracker: the first log configured (or one without a file)."""
        return self.servers.primary or self._no_log

    def server(self, path: str, pattern: str | None = None) -> ServerLogTracker:
        """The tracker of the server log at `path` (a glob's new file gets one)."""
        return self.servers.get(path, pattern)

    @property
    def launches(self) -> LaunchTracker:
        """The primary server's launches."""
        return self.launches_of(self.server_log)

    def launches_for(self, path: str) -> LaunchTracker:
        """The launches of the server log at `path`."""
        return self.launches_of(self.server(path))

    def launches_of(self, tracker: ServerLogTracker) -> LaunchTracker:
        launches = self._launches.get(tracker)
        if launches is None:
            # Launch figures are judged with the plateau rule's own window
            launches = self._launches[tracker] = LaunchTracker(
                tracker.path, window_s=self.alert_config.plateau_window_s,
                min_points=self.alert_config.plateau_min_points)
        launches.source = tracker.path
        return launches

    def add_notice(self, text: str) -> None:
        """Record a non-fatal problem once: one that persists is not news every poll."""
        self.notices.add(text)

    def reset_peak(self) -> None:
        """Forget the throughput peak (after a deliberate change, e.g. a restart with new flags)."""
        for tracker in self._trackers():
            tracker.reset_peak()

    def _trackers(self) -> list[ServerLogTracker]:
        return self.servers.all() or [self._no_log]

    def feed_server_log(self, records: Sequence[Record | None], now: float,
                        lines: int | None = None, rewritten: Sequence[int] = ()) -> None:
        """Feed the primary server's records; a restart also restarts the partitions' rates.
        `rewritten`: see `feed_server`."""
        self._feed(self.server_log, records, now, lines, None, rewritten=rewritten)

    def feed_server(self, path: str, records: Sequence[Record | None], now: float, *,
                    lines: int | None = None, written_at: float | None = None,
                    pattern: str | None = None, last_stamp: str | None = None,
                    rewritten: Sequence[int] = (), file_at: float | None = None,
                    stamp_last: bool = True) -> None:
        """Feed one server log's records as a follower read them (`written_at`: when the file
        was last written, `last_stamp` the last line's stamp: they teach the log's clock;
        `rewritten`: indexes into `records` where the log was rewritten, truncated or replaced,
        before that record: a start after one ends the launch that was open; `file_at`: the
        file's last write, the time of lines without a stamp; `stamp_last`: `last_stamp` is the
        file's last line's)."""
        self._feed(self.server(path, pattern), records, now, lines, written_at, last_stamp,
                   rewritten, file_at, stamp_last)

    def _feed(self, tracker: ServerLogTracker, records: Sequence[Record | None], now: float,
              lines: int | None, written_at: float | None,
              last_stamp: str | None = None, rewritten: Sequence[int] = (),
              file_at: float | None = None, stamp_last: bool = True) -> None:
        before = tracker.restarts
        tracker.feed(records, now, lines, written_at=written_at, last_stamp=last_stamp,
                     file_at=file_at, stamp_last=stamp_last)
        if tracker.restarts != before:
            self.partitions.note_restart(now)
        launches = self.launches_of(tracker)
        start = 0
        for cut in sorted(rewritten):
            launches.feed(records[start:cut], now)
            launches.log_rewritten()
            start = max(start, cut)
        launches.feed(records[start:], now)

    def tick(self, now: float) -> AlertChanges:
        """Evaluate the alert rules on the current state: what fired and what cleared."""
        changes = self.alerts.evaluate(self._compose(now), now)
        self.history.record(changes, now)
        return changes

    def tick_and_snapshot(self, now: float) -> tuple[AlertChanges, RunSnapshot]:
        """`tick(now)` then `snapshot(now)`, composing the state once instead of twice."""
        composed = self._compose(now)
        changes = self.alerts.evaluate(composed, now)
        self.history.record(changes, now)
        return changes, self._with_alerts(composed)

    def _with_alerts(self, composed: RunSnapshot) -> RunSnapshot:
        active = self.alerts.active()
        return dataclasses.replace(composed, alerts=active, incidents=group_incidents(active),
                                   history=self.history.entries())

    def acknowledge(self, key: str) -> bool:
        """Mark an active alert seen (by `Alert.key`)."""
        return self.alerts.acknowledge(key)

    def snapshot(self, now: float) -> RunSnapshot:
        """Everything at `now`, with the active alerts."""
        return self._with_alerts(self._compose(now))

    def _compose(self, now: float) -> RunSnapshot:
        trackers = self._trackers()
        servers = tuple(t.snapshot(now) for t in trackers)
        launches = tuple(() if s.status == "not_a_log" else self.launches_of(t).launches()
                         for t, s in zip(trackers, servers, strict=True))
        server = servers[0]
        # /metrics speaks for the whole server: compare it with the ranks' sums, not one line.
        figures = server.now.as_record() if server.now is not None and server.now.multi \
            else server.last_decode
        http = self.http.snapshot(now, figures, last_decode_at=server.last_record_at)
        # Each server's own liveness; HTTP is the first's (the one URL).
        lives = tuple(liveness(s, http if i == 0 else HttpSnapshot(), now,
                               live_s=self.alert_config.log_live_s,
                               silent_after_s=self.alert_config.silent_after_s,
                               http_enabled=self.cfg.http_enabled and i == 0)
                      for i, s in enumerate(servers))
        sums = summed(servers, lives) if len(servers) > 1 else ()
        parts = self.partitions.snapshot(now)
        totals = self.partitions.totals(now)
        if all(_gone(live) for live in lives):  # every server the client may be writing for
            since = [live.down_since if live.starting is None else live.starting.get("at")
                     for live in lives]
            known = [t for t in since if isinstance(t, (int, float))]
            parts, totals = _waiting(parts, totals, now,
                                     max(known) if len(known) == len(since) else None)
        if self.quality.names():
            parts = tuple(p if (q := self.quality.snapshot(p.name, now)) is None
                          else dataclasses.replace(p, quality=q) for p in parts)
            totals = dataclasses.replace(totals, output_tokens_per_s=self.quality.tokens_per_s(now))
        return RunSnapshot(now=now, server=server, http=http, partitions=parts,
                           totals=totals, client=self.client.snapshot(now),
                           gpus=self.gpus.snapshot(), notices=self.notices.newest(SHOWN_NOTICES),
                           liveness=lives[0], unmatched_globs=self.partitions.unmatched(),
                           servers=servers, total=combine(servers, sums), total_from=sums,
                           server_liveness=lives if len(servers) > 1 else (),
                           launches=launches[0],
                           server_launches=launches if len(servers) > 1 else ())


IN_FLIGHT_S = 15.0
"""A file that grew this recently while the server is down is being written still: the requests
it finished before it went down, or a client writing its error records (of `outputs_errors`)."""


SAME_READ_S = 2.0
"""Growth seen this soon after the crash line's stamp came in the same reads as that line."""


def _gone(live: Liveness) -> bool:
    """The server is down, as its log says (a crash after its last stats line, or a start
    still loading), or as its URL does that answered before: not a URL that never answered
    (it may just be another)."""
    return live.log == "crashed" or live.starting is not None or (live.down and live.http_ever_up)


def _waiting(parts: tuple[PartitionSnapshot, ...], totals: RunTotals, now: float,
             since: float | None) -> tuple[tuple[PartitionSnapshot, ...], RunTotals]:
    """The server is down (or starting) since `since`: a partition being written waits for it,
    with no ETA (the rate was of a server that served: it would only grow while the server is
    down), unless it grew after that, or in the last IN_FLIGHT_S where `since` cannot say
    (its stamp is on the log's clock, which a log of another clock does not share)."""
    def waits(p: PartitionSnapshot) -> bool:
        if p.status != "running" or p.last_write is None:
            return p.status == "running"
        if since is not None and p.last_write <= since + SAME_READ_S:
            return True  # not grown since the server went down
        return now - p.last_write > IN_FLIGHT_S

    if not any(waits(p) for p in parts):
        return parts, totals
    waiting = tuple(dataclasses.replace(p, status="waiting", eta_s=None, eta_low_s=None,
                                        eta_high_s=None) if waits(p) else p for p in parts)
    # The run's ETA stays: the header says it was measured before the server went down.
    return waiting, dataclasses.replace(totals, last_to_finish=None)


def _make_partitions(cfg: Config, sample_s: float | None) -> PartitionsTracker:
    # A partition shows "stalled" no later than the output_stalled alert (which needs it) fires.
    stall = min(STALL_AFTER_S, AlertConfig.from_mapping(cfg.alerts).stalled_after_s)
    return PartitionsTracker(cfg.expect, outputs=cfg.outputs, stall_after_s=stall,
                             min_span_s=_sample_span(MIN_SPAN_S, sample_s))


def _sample_span(live_s: float, sample_s: float | None, share: float = 0.8) -> float:
    """The shortest span a rate is measured over: `live_s` live; in a short sample, `share` of
    its length (counts span it from its first read; tokens/s from the first growth seen, a
    read or more later); an instant sample (0 s) measures no rate at all: unknown, not noise
    from two reads."""
    if sample_s is None:
        return live_s
    return min(live_s, share * sample_s) if sample_s > 0 else float("inf")


def replay_alerts(records: Iterable[Record | None], cfg: Config | None = None, *,
                  tick_s: float = 10.0, ended: list[float | None] | None = None) -> list[Alert]:
    """Every alert that fires over a log, with the log's own timestamps as the clock; `ended`,
    when given, gets beside each the log time it cleared at (None: still active at the end).

    Records without a timestamp keep the last time seen and are read with the stamped line
    before them, as a follower reads them in one go (an OOM's traceback line is shown at that
    line's time); the clock never goes back. Rules are evaluated whenever the clock has moved
    `tick_s` (alert durations are minutes; an event's alert takes its `since` from the event
    itself), after every event, at the end of a gap in the stamps as long as a silence
    (`silent_after_s`: the dashboard ticked through it), and once more at the end: the next
    stamped line may be the restart that ends an OOM's condition, minutes later on a dead
    server's log, and the dashboard saw the OOM before it.
    """
    cfg = dataclasses.replace(cfg or Config(), url="")
    state = RunState(cfg)
    fired: list[Alert] = []
    until: list[float | None] = [] if ended is None else ended
    open_at: dict[str, int] = {}  # an active alert's key -> its index in `fired`

    def tick(now: float) -> None:
        changes = state.tick(now)
        for alert in changes.cleared:  # before the new: a replaced alert keeps its key
            i = open_at.pop(alert.key, None)
            if i is not None:
                until[i] = now
        for alert in changes.new:
            open_at[alert.key] = len(fired)
            fired.append(alert)
            until.append(None)

    gap_s = max(tick_s, state.alert_config.silent_after_s)
    clock: float | None = None
    last_tick: float | None = None
    batch: list[Record | None] = []
    for rec in records:
        t = _record_time(rec, clock)
        if t is not None and clock is not None and t > clock and batch:
            # lines of one stamp are one moment, read together as a follower reads them (a
            # parent's `Received sigquit` and its child's crash line of the same second)
            state.feed_server_log(batch, clock)
            if last_tick is None or clock - last_tick >= tick_s or any(map(_is_event, batch)):
                tick(clock)
                last_tick = clock
            batch.clear()
            if t - clock >= gap_s:
                # A silence in the stamps: the dashboard went on ticking through it, so the
                # rules look once more at its end, before the next line shows the server again.
                tick(t)
                last_tick = t
        if t is not None:
            clock = t if clock is None else max(clock, t)
        batch.append(rec)  # before the first timestamp: held until it comes
    end = 0.0 if clock is None else clock  # a log with no timestamp at all still gets read
    state.feed_server_log(batch, end)
    tick(end)
    return fired


def _is_event(rec: Record | None) -> bool:
    return rec is not None and rec.get("kind") == "event"


def _record_time(rec: Record | None, ref: float | None) -> float | None:
    if not rec or not isinstance(rec.get("ts"), str):
        return None
    try:
        # 0.0 as a reference gives a date-less stamp some date; only differences matter here.
        return ts_to_epoch(rec["ts"], ref=ref if ref is not None else 0.0)
    except (ValueError, TypeError, OverflowError):
        return None
