"""A finished run replayed on its log's own clock: the run state, a cursor and saved states.

`ReplayRun` owns a `RunState` and feeds it the records of a `Timeline` as a `ReplayCursor`
moves over their times, evaluating the alerts every `TICK_S` of log time so that they fire
when (and with the `since`) they would have live. Going back restores the last state saved
before the target (`Checkpoints`) and feeds on from there. After each move, `frame()` is the
frozen picture to show: the snapshot and what the log pane gains. Pure: no I/O, no clock (the
caller says how far the log clock moves), no Textual; the replay app runs it on a thread of
its own, so that none of this work happens on the screen's event loop.

Saved states are the state pickled (`pickle.dumps` of a `RunState` with full 4096-point
histories takes about 1 ms and 0.6 MB, `copy.deepcopy` 12 ms; one is taken per 5 minutes of
log time, and at most `MAX_CHECKPOINTS` are kept, thinned as the log goes on).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dash.core.alerts.model import AlertChanges
from dash.core.config import Config
from dash.core.snapshot import Record, RunSnapshot
from dash.core.state.gpus import UNAVAILABLE_PREFIX, NvmlUnavailable
from dash.core.state.partitions import OutputCount
from dash.core.state.run import RunState
from dash.core.state.timeline import Checkpoints, ReplayCursor, Step, Timeline, runs

TICK_S = 10.0
"""Alerts are evaluated every this many seconds of log time (durations are minutes)."""
PANE_SCAN = 50_000
"""Records looked at for the log pane's lines after a jump back."""
PANE_KEEP = 2000
"""Log-pane lines handed on per move, at most."""
NO_GPUS = "replay of a log, no live GPUs"
MAX_PACE_S = 2.0
"""At most this much real time counts per pace (a stalled frame does not leap the clock)."""
Command = tuple[Any, ...]
"""What the screen asks of the replay (`obey`)."""


def pane_lines(records: Iterable[Record]) -> list[str]:
    """Log-pane lines for the records that carry their line's text (events, unparsed lines)."""
    out = []
    for rec in records:
        text = rec.get("message") if rec.get("kind") == "event" else rec.get("text")
        if isinstance(text, str) and text:
            ts = rec.get("ts")
            out.append(f"[{ts}] {text}" if isinstance(ts, str) else text)
    return out


@dataclass(frozen=True)
class ReplayFrame:
    """What the screen shows after a move: the snapshot, the alerts that changed, the log
    pane's new lines (`fresh_pane`: the pane starts over), and where the log clock is."""

    snapshot: RunSnapshot
    changes: AlertChanges
    pane: tuple[str, ...]
    fresh_pane: bool
    now: float
    fraction: float
    at_end: bool


def _lines(chunk: Sequence[Record], before: Record | None) -> int | None:
    """The log's lines from after `before` through the chunk's last record (the lines of no
    interest between them too, as a follower counts); None where records carry no line."""
    last = chunk[-1].get("line")
    first = 0 if before is None else before.get("line")
    return last - first if isinstance(last, int) and isinstance(first, int) else None


class ReplayRun:
    """The replay of one timeline with one config; `outputs` are the final counts."""

    def __init__(self, cfg: Config, timeline: Timeline,
                 outputs: tuple[OutputCount, ...] = ()) -> None:
        self.cfg = cfg
        self.timeline = timeline
        self.outputs = outputs
        self.cursor = ReplayCursor(timeline.times)
        self.checkpoints = Checkpoints()
        self.state = self._fresh(self.cursor.start)
        self._pane: list[str] = []
        self._fresh_pane = True
        self._apply(self.cursor.first())

    def _fresh(self, start: float, saved: bytes | None = None) -> RunState:
        """The state saved, or a new one at the start: no GPUs, the outputs' counts."""
        if saved is not None:
            state: RunState = pickle.loads(saved)  # our own bytes, made from this run's state
            return state
        state = RunState(self.cfg)
        state.gpus.apply(NvmlUnavailable(UNAVAILABLE_PREFIX + NO_GPUS), start)
        if self.outputs:
            state.partitions.apply(self.outputs, start)
        return state

    # -- moving the log clock -------------------------------------------------------------

    def advance(self, log_s: float) -> None:
        """Move the log clock forward by `log_s` seconds (clamped to the log's end)."""
        if log_s > 0 and not self.cursor.at_end:
            self._apply(self.cursor.advance_to(self.cursor.now + log_s))

    def jump(self, log_s: float) -> None:
        """Move the log clock by `log_s` seconds either way (back: a rebuild)."""
        self._apply(self.cursor.jump(log_s))

    def _apply(self, step: Step) -> None:
        """Feed the records a cursor move passed, ticking the alerts on the log clock."""
        records, times = self.timeline.records, self.timeline.times
        if step.rebuild:
            step, saved = self.checkpoints.resume(step)
            self.state = self._fresh(step.since, saved if isinstance(saved, bytes) else None)
            self._pane, self._fresh_pane = [], True
        for i, j, t in runs(step, times, TICK_S):
            if j > i:
                chunk = records[i:j]
                lines = _lines(chunk, records[i - 1] if i else None)
                if j == len(records) and lines is not None and self.timeline.lines is not None:
                    # The last record is not the last line (an access line, a blank one).
                    lines += max(0, self.timeline.lines - int(chunk[-1].get("line") or 0))
                self.state.feed_server_log(chunk, t, lines)
            self.state.tick(t)
            if self.checkpoints.due(t):
                self.checkpoints.add(t, j, pickle.dumps(self.state, pickle.HIGHEST_PROTOCOL))
        first = step.start if not step.rebuild else max(0, step.stop - PANE_SCAN)
        self._pane = (self._pane + pane_lines(records[first:step.stop]))[-PANE_KEEP:]

    # -- keys -----------------------------------------------------------------------------

    def acknowledge(self, key: str) -> None:
        self.state.acknowledge(key)

    def reset_peak(self) -> None:
        self.state.server_log.reset_peak()

    # -- what to show ---------------------------------------------------------------------

    def frame(self) -> ReplayFrame:
        """The picture at the log clock, and the pane lines since the last frame."""
        now = self.cursor.now
        changes, snap = self.state.tick_and_snapshot(now)
        frame = ReplayFrame(snap, changes, tuple(self._pane), self._fresh_pane, now,
                            self.cursor.fraction, self.cursor.at_end)
        self._pane, self._fresh_pane = [], False
        return frame


def hms(seconds: float) -> str:
    """`01:02:03` for a duration (the position in a log without timestamps)."""
    s = max(0, int(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def status_lines(frame: ReplayFrame, timeline: Timeline, speed: float,
                 paused: bool) -> tuple[str, str]:
    """(header title, bottom line) for a replay's position, in local time."""
    if not timeline.records:
        return "replay: no records", " replay: this log has no server records"
    start, end = timeline.times[0], timeline.times[-1]
    if timeline.timed:
        at = time.strftime("%H:%M:%S", time.localtime(frame.now))
        span = (f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(start))} - "
                f"{time.strftime('%H:%M:%S', time.localtime(end))}")
    else:
        at = "+" + hms(frame.now - start)
        span = "no timestamps: line order at a nominal 1 record/s"
    # Paused at the end is said too: space there must show that it did something (the clock
    # stays put after a jump back).
    state = ", ".join(s for s, on in (("end of log", frame.at_end), ("paused", paused)) if on)
    pct = f"{100 * frame.fraction:.0f}%"
    title = f"replay {at} x{speed:g} {pct}" + (f" {state}" if state else "")
    if len(title) > 30:
        short = " ".join(w for w, on in (("end", frame.at_end), ("paused", paused)) if on)
        title = f"replay {at} {pct}" + (f" {short}" if short else "")
    cut = f"  (first {len(timeline.records):,} records only)" if timeline.cut else ""
    if timeline.broke_off:
        cut += f"  (the log breaks off after line {timeline.lines or 0:,})"
    line = (f" REPLAY {at} (x{speed:g}) {pct} {state.upper()}  [{span}]{cut}  "
            "space pause  ←/→ 1 min  q quit  ? help  l log  a ack")
    return title, line


def obey(run: ReplayRun, command: Command, paced: float, paused: bool,
          speed: float) -> tuple[float, bool]:
    """Carry out one command of the screen's on the replay: ("pace", real now) moves the
    log clock by the real time since the last, times `speed` (none while paused); ("pause",
    real now, paused), ("jump", real now, log seconds), ("ack", key), ("reset_peak",).
    (the real time paced from, paused) after it."""
    kind = command[0]
    if kind == "pace":
        now = command[1]
        if not paused:
            run.advance(min(max(0.0, now - paced), MAX_PACE_S) * speed)
        return now, paused
    if kind == "pause":
        return command[1], command[2]
    if kind == "jump":
        run.jump(command[2])
        return command[1], paused
    if kind == "ack":
        run.acknowledge(command[1])
    elif kind == "reset_peak":
        run.reset_peak()
    return paced, paused
