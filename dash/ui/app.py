"""The dashboard app: composes the panels, routes keys and messages, renders one snapshot a tick.

All run state lives in a `RunState` owned by the main thread: worker messages are applied to it in
the handlers below, and every `refresh` seconds `state.tick_and_snapshot(now)` evaluates alerts and
gives the frozen snapshot the screen is re-rendered from. Widgets only ever see that snapshot.

The tick rides on the file reader's post: on a busy run the reader reads once a refresh, and the
tick that follows at once shows what it read, so the main thread wakes once a refresh rather than
once for the read and once more for a timer of its own. A timer ticks only when no read came
(quiet files, a read that takes long): `_arm_tick`.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from dash.core.clock import Clock, SystemClock
from dash.core.config import Config
from dash.core.recent import RecentSet
from dash.core.snapshot import RunSnapshot
from dash.core.state.quality import LIVE_PERIOD_S
from dash.core.state.run import RunState
from dash.sources import collector
from dash.sources.launch_store import LaunchKeeper, remembered
from dash.sources.observations import FilesRead, Sources
from dash.ui.compositor import RowScreen
from dash.ui.heap import SETTLE_S, freeze_heap
from dash.ui.messages import (
    FilesObserved,
    GpusSampled,
    HttpSampled,
    ProcessesSampled,
    SourceFailed,
    SourceTrouble,
)
from dash.ui.meter import CpuMeter
from dash.ui.pane_keys import AlertKeys, LogKeys
from dash.ui.widgets.alerts import AlertsPanel
from dash.ui.widgets.chart import BrailleChart
from dash.ui.widgets.charts import WINDOWS, ChartsRow
from dash.ui.widgets.gpus import GpuPanel, GpuTable
from dash.ui.widgets.header import HeaderBar, HeaderState
from dash.ui.widgets.help import HelpScreen
from dash.ui.widgets.keyed_table import KeyedTable
from dash.ui.widgets.launches import LaunchesScreen
from dash.ui.widgets.log_pane import LogPane
from dash.ui.widgets.partitions import PartitionDetails, PartitionTable
from dash.ui.widgets.ranks import RanksScreen
from dash.ui.widgets.server import ServerPanel
from dash.ui.workers import WorkerApp

W = TypeVar("W", bound=Widget)

COMPACT_BELOW = (120, 38)
"""Terminal width or height below which the compact layout is used (80x24 fits)."""
TABLE_PERIOD_S = 2.0
"""How often a timer tick refreshes the partition and GPU tables."""
KEY_HINTS = ("q quit  ? help  tab focus  enter open alert  h history  L launches  R ranks  "
             "s server  1-9 partition  o sample  g/G GPU  l log  c client/server  / filter  "
             "p pause  a ack  +/- window  r reset peak")
COMPACT_KEY_HINTS = ("q quit ? help tab focus enter open h history L launches R ranks v chart "
                     "l log o sample")
"""The key line at 80 columns: the keys that reach what the small screen hides."""
BELL_SEVERITIES = frozenset({"warn", "crit"})
PANE_LINES = 2000
"""At most this many raw lines of one read go to the log pane (a 4 MB backfill is ~40k lines)."""
MAX_ANNOUNCED = 200
"""Notices remembered as shown (each is a toast once); the oldest are forgotten first."""
TICK_AFTER_READ = 0.75
"""A read ticks at once when the last tick, itself after a read, is at least this many refresh
periods old (reads every refresh tick each; a burst's reads, every quarter second, do not).
After a tick of the timer, the next read ticks whenever it comes: reads that come back (the files
busy again) take the beat over from the timer, and what they read shows at once."""
TICK_GRACE = 0.25
"""After a tick that followed a read, the timer waits this much of a refresh period longer than
the period for the next read before it ticks without one."""
QUIT_DELIVERY_S = 1.0
"""How long `q` waits for alerts still being delivered (a history line takes milliseconds)."""
EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
"""Each ends the app normally (the terminal restored) with the exit status 128 + its number."""


class DashApp(LogKeys, AlertKeys, WorkerApp):
    """kdash's screen. `collector=None` runs without sources (the state is fed otherwise: by a
    replay, or by a test)."""

    CSS_PATH = "dash.tcss"
    TITLE = "kdash"
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
        Binding("question_mark", "help", "help"),
        *[Binding(str(n), f"partition({n})", show=False) for n in range(1, 10)],
        Binding("g", "gpu(1)", "next GPU"),
        Binding("G", "gpu(-1)", "previous GPU"),
        Binding("R", "ranks", "ranks"),
        Binding("s", "server", "next server", show=False),
        Binding("l", "toggle_log", "log"),
        Binding("c", "switch_log", "client/server log"),
        Binding("slash", "filter", "filter"),
        Binding("d", "dim_decode", "dim decode lines", show=False),
        Binding("p", "pause", "pause"),
        Binding("a", "acknowledge", "acknowledge"),
        Binding("h", "history", "alert history"),
        Binding("enter", "open_top_alert", "open the top alert", show=False),
        Binding("L", "launches", "launches"),
        Binding("v", "cycle_chart", "next chart (compact)"),
        Binding("plus,equals_sign", "window(1)", "longer window"),
        Binding("minus", "window(-1)", "shorter window"),
        Binding("r", "reset_peak", "reset peak"),
        Binding("o", "open_sample", "last sample"),
        Binding("ctrl+l", "redraw", "redraw", show=False),
        Binding("escape", "close_filter", show=False),
    ]

    def __init__(
        self,
        cfg: Config,
        *,
        state: RunState,
        collector: Sources | None = None,
        clock: Clock | None = None,
        live: bool = True,
        cpu_meter: Callable[[], float | None] | None = None,
        extra_title: str | None = None,
        handle_signals: bool = False,
        launch_keepers: tuple[LaunchKeeper, ...] = (),
    ) -> None:
        super().__init__(cfg, collector, clock or SystemClock(), launch_keepers)
        # The terminal's own ANSI palette, set before anything renders: cell styles are cached.
        self.theme = "ansi-dark"
        self.handle_signals = handle_signals
        self.state = state
        self.live = live
        """False: no refresh timer and no sources (snapshot tests render one frozen frame)."""
        self.cpu_meter = cpu_meter or CpuMeter()
        self.extra_title = extra_title
        self.snap: RunSnapshot | None = None
        """What the screen shows (held while paused)."""
        self._announced: RecentSet[str] = RecentSet(MAX_ANNOUNCED)
        self.latest: RunSnapshot | None = None
        """The newest snapshot, paused or not (what `--metrics-port` exports)."""
        self.paused = False
        self.window = 1
        self.gpu_index: int | None = None
        self.server_index = 0
        """The server the charts and the server panel follow (several logs: `s` steps)."""
        self.partition: str | None = None
        self._auto_partition: str | None = None
        """The partition the table's cursor was put on to follow the one being written; once
        the cursor is moved to another (a key, a click), it stays where the user put it."""
        self._partition_picked = False
        self.compact = False
        self.chart_first = 0
        """The first of the two charts the compact layout shows (`v` moves it)."""
        self.frames = 0
        self._cpu: float | None = None
        self._signals: list[int] = []
        self._tables_at = float("-inf")
        self.table_period = TABLE_PERIOD_S if live else 0.0
        self._tick_handle: asyncio.TimerHandle | None = None
        self._ticked_at = float("-inf")
        """When the last tick ran (monotonic)."""
        self._ticked_by_read = False
        """Whether a read, not the timer, made the last tick."""
        self.ticks = {"read": 0, "timer": 0}
        """Ticks made by a read, and by the timer (no read came in time)."""
        self._widgets: dict[str, Widget] = {}
        """The panels each refresh draws, by selector (`_widget`)."""

    def get_default_screen(self) -> Screen[None]:
        # Each second's few changed rows are rendered alone, not every row between the first
        # and the last (the header's and the bottom panels').
        return RowScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield ChartsRow(id="charts")
        with Horizontal(id="middle"):
            with Vertical(id="parts-box"):
                yield PartitionTable(id="partitions")
                yield PartitionDetails(id="part-details")
            yield ServerPanel(id="server-mid")  # the compact layout's, without outputs
            yield GpuPanel(id="gpus")
        with Horizontal(id="bottom"):
            yield ServerPanel(id="server")
            yield LogPane(id="log")
            yield AlertsPanel(id="alerts")
        yield Static(KEY_HINTS, id="keys")

    def on_mount(self) -> None:
        self.query_one("#log", LogPane).display = False
        self.query_one("#server", ServerPanel).border_title = "server"
        self.query_one("#server-mid", ServerPanel).border_title = "server"
        self.query_one("#gpus", GpuPanel).border_title = "GPUs"
        self.query_one("#parts-box").border_title = "partitions"
        if not self.cfg.outputs:  # the details say so too, but a small screen hides them
            self.query_one("#partitions", PartitionTable).empty_title = (
                "none: --outputs GLOB")
        self.query_one("#alerts", AlertsPanel).border_title = "alerts"
        self.refresh_state()
        # Without output files there is no partition to move through (at 80x24 the table is
        # not even shown): the keys go to the GPUs' table.
        no_outputs = self.snap is not None and not self.snap.partitions and not self.cfg.outputs
        (self.query_one("#gpu-table", GpuTable) if no_outputs
         else self.query_one("#partitions", PartitionTable)).focus()
        if self.handle_signals:
            self.install_signal_handlers()
        if self.live:
            self._arm_tick(self.cfg.refresh)
            self.set_timer(SETTLE_S, freeze_heap, name="freeze heap")
            self.start_sources()

    def install_signal_handlers(self) -> None:
        """SIGTERM, SIGHUP (an SSH drop) and SIGINT end the app normally, restoring the
        terminal, with the status a shell expects of a process a signal ended (128 + signal)."""
        loop = asyncio.get_running_loop()
        for sig in EXIT_SIGNALS:
            loop.add_signal_handler(sig, self.exit, None, 128 + sig)
            self._signals.append(sig)

    async def on_unmount(self) -> None:
        if self._tick_handle is not None:
            self._tick_handle.cancel()
            self._tick_handle = None
        loop = asyncio.get_running_loop()
        for sig in self._signals:
            loop.remove_signal_handler(sig)
        # The terminal is restored by now; this waits for the sources' loops, then closes them.
        await self.close_sources()

    # -- the tick ---------------------------------------------------------------------------

    def _arm_tick(self, delay: float) -> None:
        """Tick after `delay` seconds unless a read ticks first (a plain loop timer: cancelling
        it costs nothing, where a Textual timer is a task that wakes to be reset)."""
        if self._tick_handle is not None:
            self._tick_handle.cancel()
        self._tick_handle = asyncio.get_running_loop().call_later(delay, self._timer_tick)

    def _timer_tick(self) -> None:
        self._tick_handle = None
        if self._exit:
            return
        try:
            self._tick(by_read=False)
        except Exception as exc:  # as a Textual timer's callback would: the app stops with it
            self._handle_exception(exc)

    def _tick(self, *, by_read: bool) -> None:
        self.ticks["read" if by_read else "timer"] += 1
        self._ticked_at = time.monotonic()
        self._ticked_by_read = by_read
        self.refresh_state()
        period = self.cfg.refresh
        self._arm_tick(period * (1 + TICK_GRACE) if by_read else period)

    def _tick_after_read(self) -> None:
        """A read was applied: tick now if the beat is due (see TICK_AFTER_READ)."""
        if not self.live or self._exit:
            return
        if (not self._ticked_by_read
                or time.monotonic() - self._ticked_at >= TICK_AFTER_READ * self.cfg.refresh):
            self._tick(by_read=True)

    def refresh_state(self) -> None:
        """Evaluate alerts and, unless paused, render the current snapshot."""
        gpus, http = self.take_samples()
        for sample in gpus:  # each at its own time
            collector.apply_gpus(self.state, sample.reading, sample.at)
        for reply, at in http:
            collector.apply_http(self.state, reply, at)
        now = self.clock.now()
        changes, fresh = self.state.tick_and_snapshot(now)
        self.latest = fresh
        self._cpu = self.cpu_meter()
        if self.cfg.bell and any(a.severity in BELL_SEVERITIES for a in changes.new):
            self.bell()
        if changes and self.collector is not None:
            self.deliver_alerts(changes, now)
        if self.launch_keepers:
            self.keep_launches(self.state, now)
        self._announce(fresh.notices)
        try:
            if not self.paused or self.snap is None:
                self.snap = fresh
                if self.overlay() is None:
                    self.render_snapshot(tick=True)
            else:
                self._render_header()
        except NoMatches:
            pass  # a tick that lands while the app shuts down finds its panels already gone
        view = self.overlay()
        if view is not None and self.snap is not None:
            view.show(self.snap)

    def render_snapshot(self, tick: bool = False) -> None:
        """Push the current snapshot into every panel (each skips what did not change).

        On a timer tick the GPU table is refreshed every TABLE_PERIOD_S only (its figures move
        every sample, and stand alone); the partitions table every tick, as the details and the
        header beside it show the same counts. A key shows everything at once.
        """
        snap = self.snap
        if snap is None:
            return
        self.frames += 1
        mono = time.monotonic()
        tables = (not tick or mono - self._tables_at >= self.table_period
                  # GPUs found (or lost) show at once: `g` has rows to move through.
                  or self._widget("#gpu-table", GpuTable).row_count != len(snap.gpus.gpus))
        with self.batch_update():
            self._render_header()
            self._widget("#partitions", PartitionTable).show(snap)
            if tables:
                self._tables_at = mono
                self._widget("#gpus", GpuPanel).show(snap)
            if self.gpu_index is None and snap.gpus.gpus:
                self.gpu_index = snap.gpus.gpus[0].index
            self._widget("#charts", ChartsRow).show(snap.for_server(self.server_index),
                                                      self.window, self.gpu_index)
            self._follow_table_selection()
            self._widget("#part-details", PartitionDetails).show(snap, self.partition,
                                                                   self.cfg.outputs)
            self._widget("#server", ServerPanel).show(snap, self.server_index)
            self._widget("#alerts", AlertsPanel).show(snap, compact=self.compact)
            # At 80x24 an alert needs the room for its hint more than the tables need theirs.
            self.screen_stack[0].set_class(self.compact and bool(snap.alerts), "-alerting")
            # Without output files at 80x24, the server's facts take the partitions' place.
            no_outputs = not snap.partitions and not self.cfg.outputs
            main = self.screen_stack[0]
            main.set_class(no_outputs, "-no-outputs")
            if no_outputs and self.compact and not main.has_class("-log-open"):
                # (with the log open, the log has the tables' place)
                self._widget("#server-mid", ServerPanel).show(snap, self.server_index)
        if isinstance(self.screen, RanksScreen):
            self.screen.show(snap)

    def _widget(self, selector: str, kind: type[W]) -> W:
        """`query_one(selector, kind)` for the panels each refresh draws, looked up once (a
        query walks the DOM); NoMatches as a query's once the panel has left the app."""
        widget = self._widgets.get(selector)
        if widget is None:
            widget = self._widgets[selector] = self.query_one(selector, kind)
        elif not widget.is_attached:
            raise NoMatches(f"{selector} has left the app")
        assert isinstance(widget, kind)
        return widget

    def _announce(self, notices: tuple[str, ...]) -> None:
        """Show each non-fatal problem once (an unreadable output file, a failed process list)."""
        for notice in notices:
            if self._announced.add(notice):
                self.notify(notice, title="kdash", severity="warning", timeout=10)

    def _follow_table_selection(self) -> None:
        """Details follow the table's cursor row, also when rows arrived after the first frame
        (the highlight message is only sent when the cursor moves). Until the user moves the
        cursor, it follows the first partition being written: a resumed run's first rows are
        finished ones, and a client taking partitions in turn moves on from one to the next."""
        table = self._widget("#partitions", PartitionTable)
        if not table.row_count:
            return
        if not self._partition_picked and self.snap is not None:
            live = next((p.name for p in self.snap.partitions if p.status == "running"), None)
            keys = [table.row_key_at(i) for i in range(table.row_count)]
            if live is not None and live != self._auto_partition and live in keys:
                self._auto_partition = live
                table.move_cursor(row=keys.index(live), animate=False)
                self.partition = live
        if self.partition is None:
            self.partition = table.row_key_at(table.cursor_row)

    def _render_header(self) -> None:
        if self.snap is None:
            return
        extra = HeaderState(self._cpu, self.paused, WINDOWS[self.window][0], self.extra_title)
        self._widget("#header", HeaderBar).show(self.snap, extra)

    def on_resize(self, event: events.Resize) -> None:
        if self.screen is self.screen_stack[0]:
            # The event's size: this handler runs before Textual's own, which records it.
            self._apply_layout(event.size)  # else when the screen on top closes

    def _apply_layout(self, size: Size | None = None) -> None:
        """Full or compact layout for the terminal's size (`size`: the new one), then a
        render."""
        width, height = size or self.size
        compact = width < COMPACT_BELOW[0] or height < COMPACT_BELOW[1]
        self.compact = compact
        self.screen.set_class(compact, "-compact")
        self.query_one("#charts", ChartsRow).show_charts(compact, self.chart_first)
        self.query_one("#keys", Static).update(COMPACT_KEY_HINTS if compact else KEY_HINTS)
        self.query_one("#partitions", PartitionTable).set_compact(compact)
        self.query_one("#gpu-table", GpuTable).set_compact(compact)
        self.render_snapshot()

    def _back(self, _: object = None) -> None:
        """A screen on top closed: the main screen catches up with the size and the data."""
        if self.screen is self.screen_stack[0]:
            self._apply_layout()

    # -- observations from the workers --------------------------------------------------------

    def on_files_observed(self, message: FilesObserved) -> None:
        collector.apply_files(self.state, message.reading, self.clock.now())
        log = self._widget("#log", LogPane)
        for source, lines in _pane_lines(message.reading):
            log.append(source, lines)
        self._tick_after_read()

    def on_gpus_sampled(self, message: GpusSampled) -> None:
        # Each sample at its own time: ones that waited in the queue keep their place.
        for sample in message.samples:
            collector.apply_gpus(self.state, sample.reading, sample.at)

    def on_http_sampled(self, message: HttpSampled) -> None:
        collector.apply_http(self.state, message.sample, self.clock.now())

    def on_processes_sampled(self, message: ProcessesSampled) -> None:
        collector.apply_processes(self.state, message.processes, self.clock.now())

    def on_source_trouble(self, message: SourceTrouble) -> None:
        self.state.add_notice(message.text)

    def on_source_failed(self, message: SourceFailed) -> None:
        raise message.error  # a bug in a source's worker: stop here, with its traceback

    # -- selection ----------------------------------------------------------------------------

    @on(KeyedTable.RowHighlighted, "#partitions")
    def _partition_moved(self, event: KeyedTable.RowHighlighted) -> None:
        if event.by_user:
            self._partition_picked = True  # the user's choice: no more following
        self.partition = event.key
        if self.snap is not None:
            self.query_one("#part-details", PartitionDetails).show(self.snap, self.partition,
                                                               self.cfg.outputs)

    @on(KeyedTable.RowHighlighted, "#gpu-table")
    def _gpu_moved(self, event: KeyedTable.RowHighlighted) -> None:
        key = event.key
        self.gpu_index = int(key) if key is not None else None
        if self.snap is not None:
            self.query_one("#charts", ChartsRow).show(self.snap.for_server(self.server_index),
                                                      self.window, self.gpu_index)

    # -- actions ------------------------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(HelpScreen(), self._back)

    def action_launches(self) -> None:
        if self.snap is not None and self.overlay() is None:
            self.push_screen(LaunchesScreen(self.snap, self.server_index), self._back)

    def action_ranks(self) -> None:
        if self.snap is not None and not isinstance(self.screen, RanksScreen):
            self.push_screen(RanksScreen(self.snap))

    def action_server(self) -> None:
        if self.snap is not None and len(self.snap.servers) > 1:
            self.server_index = (self.server_index + 1) % len(self.snap.servers)
            self.render_snapshot()

    async def action_quit(self) -> None:
        self.stop_sources()
        await self.alerts_delivered()
        self.exit(0)

    async def alerts_delivered(self, timeout: float = QUIT_DELIVERY_S) -> None:
        """Wait, `timeout` at most, for the deliveries of alerts already raised (their
        history lines, hooks and webhooks): an alert on screen when `q` is pressed is kept."""
        waits = [asyncio.ensure_future(w.wait()) for w in self.workers
                 if w.group == "alerts" and not w.is_finished]
        if not waits:
            return
        done, hung = await asyncio.wait(waits, timeout=timeout)
        for wait in hung:  # a hung hook or webhook: the quit does not wait for it
            wait.cancel()
        for wait in done:  # a delivery that failed says so itself (a notice)
            if not wait.cancelled():
                wait.exception()

    def action_partition(self, n: int) -> None:
        table = self.query_one("#partitions", PartitionTable)
        if n - 1 < table.row_count:
            self._partition_picked = True  # chosen, even the row already under the cursor
            table.move_cursor(row=n - 1, animate=False, by_user=True)

    def action_gpu(self, step: int) -> None:
        table = self.query_one("#gpu-table", GpuTable)
        if table.row_count:
            table.move_cursor(row=(table.cursor_row + step) % table.row_count, animate=False)

    def action_pause(self) -> None:
        self.paused = not self.paused
        if self.paused and self.latest is not None:
            # The frame held is all of one snapshot (a tick may have left a table older).
            self.snap = self.latest
            if self.overlay() is None:
                self.render_snapshot()
        self.refresh_state()

    def action_cycle_chart(self) -> None:
        """Compact layout: show the next pair of charts (all four show in the full one)."""
        if not self.compact:
            self.notify("all four charts are on screen; v cycles them in the compact layout",
                        timeout=3)
            return
        self.chart_first = (self.chart_first + 1) % 4
        self.query_one("#charts", ChartsRow).show_charts(True, self.chart_first)
        self.render_snapshot()

    def action_window(self, step: int) -> None:
        self.window = max(0, min(len(WINDOWS) - 1, self.window + step))
        self.render_snapshot()

    def action_open_sample(self) -> None:
        """The selected partition's last samples, full-screen."""
        snap = self.snap
        table = self.query_one("#partitions", PartitionTable)
        # The row under the cursor now: a `2` typed just before `o` has moved the cursor, but
        # its highlight message may still be queued behind this key.
        name = table.row_key_at(table.cursor_row) if table.row_count else self.partition
        part = next((p for p in snap.partitions if p.name == name), None) if snap else None
        if part is None or part.quality is None or not part.quality.latest:
            name = part.name if part is not None else "this partition"
            self.notify(f"no sample of {name} read yet", title="kdash", timeout=4)
            return
        from dash.ui.sample_view import SampleScreen

        self.push_screen(SampleScreen(part.name, part.quality.latest))

    def action_reset_peak(self) -> None:
        self.state.reset_peak()
        self._rerender()

    def action_redraw(self) -> None:
        for chart in self.query(BrailleChart):
            chart.invalidate()
        self.screen.refresh(repaint=True, layout=True)

    def _rerender(self) -> None:
        """Show the effect of a key at once, even while paused."""
        self.snap = self.state.snapshot(self.clock.now())
        if self.overlay() is None:
            self.render_snapshot()


def _state_with_history(cfg: Config, notices: tuple[str, ...]) -> RunState:
    """A RunState that knows the earlier sessions' alerts (the history file's end) and the
    notices found while loading the config."""
    from dash.core.alerts.history import entries_from_lines
    from dash.sources.alert_sinks import history_path, read_history, watch_key

    state = RunState(cfg, samples_every_s=LIVE_PERIOD_S)
    for text in notices:
        state.add_notice(text)
    if cfg.alert_history:
        lines, error = read_history(history_path(cfg))  # bounded: the file's last 512 KB
        state.history.load_earlier(entries_from_lines(lines, watch_key(cfg)))
        if error:
            state.add_notice(error)
    return state


def _pane_lines(read: FilesRead) -> Iterator[tuple[str, tuple[str, ...]]]:
    """The new raw lines of the server and client logs in one read, for the log pane."""
    for source, follow in (("server", read.server), ("client", read.client)):
        if follow is not None and follow.lines:
            yield source, follow.lines[-PANE_LINES:]


def run_dashboard(
    cfg: Config,
    *,
    nvml_module: object | None = None,
    clock: Clock | None = None,
    extra_title: str | None = None,
    notices: tuple[str, ...] = (),
) -> int:
    """Run the dashboard in this terminal until `q` or Ctrl+C (exit 0), or SIGTERM, SIGHUP or
    SIGINT (128 + the signal); the exit code."""
    from dash.sources.collector import Collector

    collector = Collector(cfg, nvml_module=nvml_module, sample_every_s=LIVE_PERIOD_S)
    state = _state_with_history(cfg, notices)
    # Read before the screen starts (like the config files): the earlier launches of the log
    keepers = remembered(state, cfg)
    app = DashApp(cfg, state=state, collector=collector, clock=clock, extra_title=extra_title,
                  handle_signals=True, launch_keepers=keepers)
    exporter = None
    if cfg.metrics_port is not None:
        from dash.sources.prom_export import start_exporter

        # Bound before the screen starts, so a busy port is a one-line error (exit 2). The
        # exporter's thread only reads `app.latest`, the newest frozen snapshot.
        exporter = start_exporter(cfg, lambda: app.latest)
    try:
        result = app.run()
    finally:
        app.stop_sources()
        if exporter is not None:
            exporter.close()
    return result if isinstance(result, int) else (app.return_code or 0)
