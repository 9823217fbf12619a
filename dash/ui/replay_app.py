"""The dashboard on a finished log: `ReplayApp` shows the frames of a `ReplayRun`.

One thread of the app's own (a Textual thread worker) reads the log
(`dash.sources.replay_read.load_timeline`), then owns the replay (`dash.core.state.replay_run`):
it feeds the run state, evaluates the alerts on the log clock, saves states to go back to,
and posts a frozen `ReplayFrame` after each move. The event loop only sends it commands (the
real time that passed, space, left/right, acknowledge, reset peak) and renders the frames it
gets, so reading, feeding and saving never hold up the screen. Space stops the log clock,
left/right move it a minute. A log that cannot be read ends the app with its one-line error
(exit 2).
"""

from __future__ import annotations

import asyncio
import queue
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from dash.core.alerts.model import AlertChanges
from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.log.grammar import GRAMMAR
from dash.core.log.syntax import Grammar
from dash.core.snapshot import RunSnapshot
from dash.core.state.partitions import OutputCount
from dash.core.state.replay_run import Command, ReplayFrame, ReplayRun, obey, status_lines
from dash.core.state.run import RunState
from dash.core.state.timeline import Checkpoints, ReplayCursor, Timeline
from dash.ui.app import DashApp
from dash.ui.widgets.help import HelpScreen, help_text
from dash.ui.widgets.log_pane import LogPane
from dash.ui.widgets.server import ServerPanel

if TYPE_CHECKING:
    from dash.sources.replay_read import Pieces

JUMP_S = 60.0
REPLAY_KEYS: tuple[tuple[str, str], ...] = (
    ("space", "replay: pause / resume the log clock"),
    ("← →", "replay: one minute back / forward (the log pane's long lines are cut here)"),
)


class ReplayFramed(Message):
    """The replay thread moved the log clock (or read the log, or failed to)."""

    def __init__(self, frame: ReplayFrame | None, done: int, error: str | None = None) -> None:
        super().__init__()
        self.frame = frame
        self.done = done  # commands handled so far
        self.error = error


class _Closing(Exception):
    """The app closed while its log was being read."""


class ReplayHelpScreen(HelpScreen):
    """The dashboard's keys, and the replay's."""

    def text(self) -> Table:
        return help_text(("replay keys", REPLAY_KEYS))


class _Shown(RunState):
    """The app's view of the replay's state: the newest frame's snapshot (before the first,
    this empty state's own). Keys that change the state are sent to the replay thread, the
    state's only owner; nothing is fed to this one."""

    def __init__(self, app: ReplayApp, cfg: Config) -> None:
        super().__init__(cfg)
        self.app = app
        self.snap = super().snapshot(0.0)
        self.changes = AlertChanges()

    def tick_and_snapshot(self, now: float) -> tuple[AlertChanges, RunSnapshot]:
        changes, self.changes = self.changes, AlertChanges()
        return changes, self.snap

    def snapshot(self, now: float) -> RunSnapshot:
        return self.snap

    def acknowledge(self, key: str) -> bool:
        self.app.send("ack", key)
        return True

    def reset_peak(self) -> None:
        self.app.send("reset_peak")


class ReplayApp(DashApp):
    """The dashboard driven by a log's own clock instead of live sources."""

    BINDINGS = [
        Binding("space", "replay_pause", "pause replay", priority=True),
        Binding("left", "replay_jump(-1)", "back 1 min", priority=True),
        Binding("right", "replay_jump(1)", "forward 1 min", priority=True),
    ]

    def __init__(self, cfg: Config, *, speed: float = 60.0, timeline: Timeline | None = None,
                 outputs: tuple[OutputCount, ...] = (), grammar: Grammar = GRAMMAR,
                 pacer: Callable[[], float] = time.monotonic, pieces: Pieces | None = None,
                 **kwargs: Any) -> None:
        """`pieces`: the log's reading, started before the app (`start_reading`); else the
        app's thread starts it."""
        self.replay_clock = FakeClock(0.0)
        super().__init__(cfg, state=_Shown(self, cfg), collector=None,
                         clock=self.replay_clock, extra_title="replay: reading log", **kwargs)
        self.speed = speed
        self.grammar = grammar
        self.timeline = timeline
        self._pieces = pieces
        self.run_: ReplayRun | None = None
        """The replay, once the log is read (its thread's: read it only between frames)."""
        self.frame: ReplayFrame | None = None
        self.replay_paused = False
        self.load_error: str | None = None
        self._outputs = outputs
        self._pacer = pacer
        self._commands: queue.Queue[Command] = queue.Queue()
        self._sent = 0
        self._done = 0
        self._keyed = True  # the next frame answers a key (or is the first): all panels
        self._read = 0
        self._closing = False  # the app is closing: a reading under way stops
        self._keys_text = ""

    # Textual calls the `on_mount` / `on_unmount` of every class of the app (this one's
    # first), so these do not call the dashboard's.
    def on_mount(self) -> None:
        for panel in self.query(ServerPanel):  # the compact layout's one too
            panel.http_off = "not replayed"  # no --no-http here
        self.replay()
        self._show_status()

    async def on_unmount(self) -> None:
        self._closing = True
        self._commands.put(("stop",))

    # -- the replay thread --------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="replay")
    def replay(self) -> None:
        """Read the log (and count the outputs), then run the replay on this thread."""
        worker = get_current_worker()
        got = self._load(worker)
        if got is None:
            return
        timeline, outputs = got
        run = ReplayRun(self.cfg, timeline, outputs)
        self.timeline, self.run_ = timeline, run
        if timeline.broke_off:  # the records before the break are replayed; the user is told
            self.notify(timeline.broke_off, title="kdash", severity="warning", timeout=15,
                        markup=False)  # thread-safe; a path is shown as it is
        done, paced, paused = 0, self._pacer(), False
        while True:
            self.post_message(ReplayFramed(run.frame(), done))
            command = self._next(worker)
            while True:
                if command[0] == "stop":
                    return
                paced, paused = obey(run, command, paced, paused, self.speed)
                done += 1
                try:
                    command = self._commands.get_nowait()
                except queue.Empty:
                    break

    def _load(self, worker: Any) -> tuple[Timeline, tuple[OutputCount, ...]] | None:
        """The timeline and the outputs' counts; None when the log cannot be read (the app
        is told) or the app closed meanwhile."""
        from dash.sources.counts import count_outputs
        from dash.sources.logread import LogError
        from dash.sources.replay_read import load_timeline

        if self.timeline is not None:
            return self.timeline, self._outputs
        assert self.cfg.log is not None

        def note(records: int) -> None:
            self._read = records  # an int read by the main thread for the status line
            if self._closing or worker.is_cancelled:
                raise _Closing  # a long log is not read to its end for an app that quit

        try:
            pieces, self._pieces = self._pieces, None
            timeline = load_timeline(self.cfg.log, grammar=self.grammar, progress=note,
                                     pieces=pieces)
        except LogError as exc:
            self.post_message(ReplayFramed(None, 0, str(exc)))
            return None
        except _Closing:
            return None
        return timeline, count_outputs(self.cfg.outputs)

    def _next(self, worker: Any) -> Command:
        while True:
            try:
                return self._commands.get(timeout=0.5)
            except queue.Empty:
                if worker.is_cancelled:
                    return ("stop",)

    def send(self, *command: Any) -> None:
        """Hand a command to the replay thread (answered by the next frame)."""
        self._sent += 1
        self._keyed = self._keyed or command[0] != "pace"
        self._commands.put(command)

    async def settled(self, timeout: float = 30.0) -> None:
        """Wait until the screen shows the answer to every command sent (tests, benchmarks),
        or the app is closing (its replay thread answers nothing more: a tick's "pace" sent
        just before `q` would be waited for in vain)."""
        deadline = time.monotonic() + timeout
        while self.load_error is None and not self._closing and (
                self.frame is None or self._done < self._sent):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replay did not answer: {self.status()}")
            await asyncio.sleep(0.005)

    def on_replay_framed(self, message: ReplayFramed) -> None:
        if message.frame is None:
            self.load_error = message.error or "the log could not be read"
            self.exit(2, return_code=2)
            return
        self._done = message.done
        frame = self.frame = message.frame
        self.replay_clock.set(frame.now)
        pane = self.query_one("#log", LogPane)
        if frame.fresh_pane:
            pane.lines["server"].clear()
            pane.redraw()
        if frame.pane:
            pane.append("server", list(frame.pane))
        shown = self.state
        assert isinstance(shown, _Shown)
        shown.snap = frame.snapshot
        shown.changes = frame.changes
        self._show_status()
        if self._keyed and self._done >= self._sent:
            self._keyed = False
            self._tables_at = float("-inf")  # a key shows at once, tables included
        super().refresh_state()

    # -- the screen's tick ----------------------------------------------------------------------

    def refresh_state(self) -> None:
        """Tell the replay how much real time passed; its frame renders when it comes."""
        if self.run_ is not None:
            self.send("pace", self._pacer())
        try:
            self._show_status()
        except NoMatches:
            return  # the app is shutting down: its panels are gone
        if self.frame is None:
            super().refresh_state()

    @property
    def cursor(self) -> ReplayCursor | None:
        return self.run_.cursor if self.run_ is not None else None

    @property
    def checkpoints(self) -> Checkpoints | None:
        return self.run_.checkpoints if self.run_ is not None else None

    # -- status ------------------------------------------------------------------------------

    def status(self) -> tuple[str, str]:
        """(header title, bottom line) for the replay's position."""
        if self.frame is None or self.timeline is None:
            return "replay: reading log", f" replay: reading the log ({self._read:,} records)"
        return status_lines(self.frame, self.timeline, self.speed, self.replay_paused)

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
        if self.run_ is not None:
            self.send("pause", self._pacer(), self.replay_paused)
        self._show_status()

    def action_replay_jump(self, direction: int) -> None:
        if self.run_ is not None:
            self.send("jump", self._pacer(), JUMP_S * direction)

    def action_help(self) -> None:
        self.push_screen(ReplayHelpScreen())
