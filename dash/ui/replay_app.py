"""The dashboard on a finished log: `ReplayApp` feeds the run state from a replay cursor.

The log is read in a worker thread (`dash.sources.logread.load_timeline`); the main thread then owns the
state as in a live run, but its clock is the log's: every refresh moves a `FakeClock` forward by
`speed` log seconds per real second, feeds the records it passed, and evaluates the alerts every
10 s of log time, so alerts fire when (and with the `since`) they would have. Space stops the log
clock, left/right move it a minute; going back rebuilds the state from the first record.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Iterable
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import Input, Static

from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.log.grammar import GRAMMAR
from dash.core.log.syntax import Grammar
from dash.core.snapshot import Record
from dash.core.state.gpus import UNAVAILABLE_PREFIX, NvmlUnavailable
from dash.core.state.partitions import OutputCount
from dash.core.state.run import RunState
from dash.core.state.timeline import Checkpoints, ReplayCursor, Step, Timeline, runs
from dash.ui.app import DashApp
from dash.ui.widgets.help import HelpScreen, help_text
from dash.ui.widgets.log_pane import LogPane

JUMP_S = 60.0
TICK_S = 10.0
"""Alerts are evaluated every this many seconds of log time (durations are minutes)."""
MAX_PACE_S = 2.0
"""At most this much real time counts per refresh (a stalled frame does not leap the clock)."""
PANE_SCAN = 50_000
"""Records looked at for the log pane's lines after a jump back."""
NO_GPUS = "replay of a log, no live GPUs"
REPLAY_KEYS: tuple[tuple[str, str], ...] = (
    ("space", "replay: pause / resume the log clock"),
    ("left / right", "replay: one minute back / forward"),
)


class ReplayLoaded(Message):
    """The worker read the log (or failed to)."""

    def __init__(self, timeline: Timeline | None, outputs: tuple[OutputCount, ...],
                 error: str | None = None) -> None:
        super().__init__()
        self.timeline = timeline
        self.outputs = outputs
        self.error = error


class ReplayHelpScreen(HelpScreen):
    """The dashboard's keys, and the replay's."""

    def compose(self) -> ComposeResult:
        text = help_text()
        text.append("\n\nreplay keys\n", "bold")
        for key, what in REPLAY_KEYS:
            text.append(f"  {key:<12}", "bold")
            text.append(f"{what}\n")
        with Vertical(id="help-box"):
            yield Static(text, id="help-text")


def hms(seconds: float) -> str:
    """`01:02:03` for a duration (the position in a log without timestamps)."""
    s = max(0, int(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def pane_lines(records: Iterable[Record]) -> list[str]:
    """Log-pane lines for the records that carry their line's text (events, unparsed lines)."""
    out = []
    for rec in records:
        text = rec.get("message") if rec.get("kind") == "event" else rec.get("text")
        if isinstance(text, str) and text:
            ts = rec.get("ts")
            out.append(f"[{ts}] {text}" if isinstance(ts, str) else text)
    return out


class ReplayApp(DashApp):
    """The dashboard driven by a log's own clock instead of live sources."""

    BINDINGS = [
        Binding("space", "replay_pause", "pause replay", priority=True),
        Binding("left", "replay_jump(-1)", "back 1 min", priority=True),
        Binding("right", "replay_jump(1)", "forward 1 min", priority=True),
    ]

    def __init__(self, cfg: Config, *, speed: float = 60.0, timeline: Timeline | None = None,
                 outputs: tuple[OutputCount, ...] = (), grammar: Grammar = GRAMMAR,
                 pacer: Callable[[], float] = time.monotonic, **kwargs: Any) -> None:
        self.replay_clock = FakeClock(0.0)
        super().__init__(cfg, state=RunState(cfg), collector=None, clock=self.replay_clock,
                         extra_title="replay: reading log", **kwargs)
        self.speed = speed
        self.grammar = grammar
        self.timeline = timeline
        self.cursor: ReplayCursor | None = None
        self.checkpoints = Checkpoints()
        self.replay_paused = False
        self.load_error: str | None = None
        self._outputs = outputs
        self._pacer = pacer
        self._paced_at: float | None = None
        self._read = 0
        self._keys_text = ""

    def on_mount(self) -> None:
        super().on_mount()
        if self.timeline is not None:
            self._start(self.timeline, self._outputs)
        else:
            self.load_log()
        self._show_status()

    @work(thread=True, exclusive=True, exit_on_error=False, group="replay")
    def load_log(self) -> None:
        """Read the whole log (and count the outputs) off the main thread."""
        from dash.sources.counts import count_outputs
        from dash.sources.logread import LogError, load_timeline

        assert self.cfg.log is not None
        try:
            timeline = load_timeline(self.cfg.log, grammar=self.grammar, progress=self._note_read)
        except LogError as exc:
            self.post_message(ReplayLoaded(None, (), str(exc)))
            return
        self.post_message(ReplayLoaded(timeline, count_outputs(self.cfg.outputs)))

    def _note_read(self, records: int) -> None:
        self._read = records  # an int read by the main thread for the status line

    def on_replay_loaded(self, message: ReplayLoaded) -> None:
        if message.timeline is None:
            self.load_error = message.error or "the log could not be read"
            self.exit(2)
            return
        self._start(message.timeline, message.outputs)

    # -- the log clock -----------------------------------------------------------------------

    def _start(self, timeline: Timeline, outputs: tuple[OutputCount, ...]) -> None:
        self.timeline, self._outputs = timeline, outputs
        self.cursor = ReplayCursor(timeline.times)
        self._fresh_state()
        self._apply(self.cursor.first())
        self._paced_at = self._pacer()
        self._rerender_now()

    def _fresh_state(self, saved: object | None = None, at: float | None = None) -> None:
        """The state saved at `at`, or a new one at the start: no GPUs, the outputs' counts."""
        start = self.cursor.start if self.cursor is not None else 0.0
        if isinstance(saved, bytes):
            self.state = pickle.loads(saved)  # our own bytes, made from this run's state
            start = start if at is None else at
        else:
            state = RunState(self.cfg)
            if state.gpus is not None:
                state.gpus.apply(NvmlUnavailable(UNAVAILABLE_PREFIX + NO_GPUS), start)
            if state.partitions is not None and self._outputs:
                state.partitions.apply(self._outputs, start)
            self.state = state
        self.replay_clock.set(start)
        pane = self.query_one("#log", LogPane)
        pane.lines["server"].clear()
        pane.redraw()

    def _apply(self, step: Step) -> None:
        """Feed the records a cursor move passed, ticking the alerts on the log clock."""
        assert self.timeline is not None
        records, times = self.timeline.records, self.timeline.times
        if step.rebuild:
            step, saved = self.checkpoints.resume(step)
            self._fresh_state(saved, step.since)
        for i, j, t in runs(step, times, TICK_S):
            if j > i:
                self.state.feed_server_log(records[i:j], t)
            self.replay_clock.set(t)
            self.state.tick(t)
            if self.checkpoints.due(t):
                self.checkpoints.add(t, j, pickle.dumps(self.state))
        self.replay_clock.set(step.now)
        first = step.start if not step.rebuild else max(0, step.stop - PANE_SCAN)
        lines = pane_lines(records[first:step.stop])
        if lines:
            self.query_one("#log", LogPane).append("server", lines[-2000:])

    def _advance(self) -> None:
        """Move the log clock by the real time since the last refresh, times the speed."""
        now = self._pacer()
        last, self._paced_at = self._paced_at, now
        cursor = self.cursor
        if cursor is None or last is None or self.replay_paused or cursor.at_end:
            return
        real = min(max(0.0, now - last), MAX_PACE_S)
        if real > 0:
            self._apply(cursor.advance_to(cursor.now + real * self.speed))

    def refresh_state(self) -> None:
        """Advance the replay, then evaluate and render as the live dashboard does."""
        self._advance()
        try:
            self._show_status()
        except NoMatches:
            return  # the app is shutting down: its panels are gone
        super().refresh_state()

    def _rerender_now(self) -> None:
        self._show_status()
        self.snap = self.state.snapshot(self.clock.now())
        self.render_snapshot()

    # -- status ------------------------------------------------------------------------------

    def status(self) -> tuple[str, str]:
        """(header title, bottom line) for the replay's position."""
        cursor, tl = self.cursor, self.timeline
        if cursor is None or tl is None:
            return "replay: reading log", f" replay: reading the log ({self._read:,} records)"
        if not tl.records:
            return "replay: no records", " replay: this log has no server records"
        if tl.timed:
            at = time.strftime("%H:%M:%S", time.localtime(cursor.now))
            span = (f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(cursor.start))} - "
                    f"{time.strftime('%H:%M:%S', time.localtime(cursor.end))}")
        else:
            at = "+" + hms(cursor.now - cursor.start)
            span = "no timestamps: line order at a nominal 1 record/s"
        state = ("end of log" if cursor.at_end else "paused" if self.replay_paused else "")
        pct = f"{100 * cursor.fraction:.0f}%"
        title = f"replay {at} x{self.speed:g} {pct}" + (f" {state}" if state else "")
        if len(title) > 30:
            title = f"replay {at} {pct}" + (" end" if cursor.at_end else " paused" if state else "")
        cut = f"  (first {len(tl.records):,} records only)" if tl.cut else ""
        line = (f" REPLAY {at} (x{self.speed:g}) {pct} {state.upper()}  [{span}]{cut}  "
                "space pause  ←/→ 1 min  q quit  ? help  l log  a ack")
        return title, line

    def _show_status(self) -> None:
        title, line = self.status()
        self.extra_title = title
        if line != self._keys_text:
            self._keys_text = line
            self.query_one("#keys", Static).update(Text(line, no_wrap=True, overflow="ellipsis"))

    # -- keys --------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The replay keys belong to the filter box while it is typed in, and to the help screen.
        if action.startswith("replay_") and (isinstance(self.focused, Input)
                                             or len(self.screen_stack) > 1):
            return False
        return super().check_action(action, parameters)

    def action_replay_pause(self) -> None:
        self.replay_paused = not self.replay_paused
        self._paced_at = self._pacer()
        self._rerender_now()

    def action_replay_jump(self, direction: int) -> None:
        if self.cursor is None:
            return
        self._apply(self.cursor.jump(JUMP_S * direction))
        self._paced_at = self._pacer()
        self._rerender_now()

    def action_help(self) -> None:
        self.push_screen(ReplayHelpScreen())
