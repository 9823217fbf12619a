"""The launches view (`L`): every server start of the log side by side, what changed between
them, how each ended and what it achieved, and what the comparison says.

Full screen, drawn from the snapshot the app renders (`show`, at every refresh, so the current
launch's figures move). A changed argument is highlighted and marked `*` (the mark shows without
colour). Columns that do not fit the width are left out from the oldest; left/right shift them.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen

from dash.core.launch import Launch
from dash.core.snapshot import RunSnapshot
from dash.core.views.launch_advice import advice
from dash.core.views.launch_table import Row, table
from dash.core.views.launch_text import (
    LABEL_W,
    SECTIONS,
    Layout,
    cell_text,
    header,
    label_text,
    layout,
    legend,
)
from dash.ui import fmt
from dash.ui.widgets.alert_screen import CLOSE_KEYS
from dash.ui.widgets.panel import SCROLL_BINDINGS, Panel

OUTCOME_LEVEL = {"oom": "crit", "crash": "crit", "running": "ok", "shutdown": "dim",
                 "stopped": "warn", "log_ended": "dim"}
TITLE = "launches  (esc back  ←→ older/newer  ↑↓ scroll)"


class LaunchTableView(Panel, can_focus=True):
    """The table and the advice, scrolling vertically when they do not fit."""

    WRAP = True
    INDENT = 2
    COMPONENT_CLASSES = {"launch--changed", "launch--crit", "launch--warn", "launch--ok",
                         "launch--dim", "launch--head", "launch--section"}
    BINDINGS = SCROLL_BINDINGS

    def st(self, name: str) -> Style:
        return self.part_style(f"launch--{name}")


def _quiet_note(snap: RunSnapshot, launches: Sequence[Launch]) -> str | None:
    """What to say above a newest launch the log calls running while the log is quiet: the
    table reads the log, which has written no end, and `now` would read as alive."""
    live = snap.liveness
    if not launches or launches[-1].outcome != "running" or live.log != "quiet":
        return None
    age = "" if live.log_age_s is None else f" for {fmt.dur(live.log_age_s)}"
    return (f"The log has been quiet{age}: the newest launch is shown as the log left it "
            "(no end written); the server may have stopped.")


def launches_text(launches: Sequence[Launch], width: int, last: int | None,
                  st: LaunchTableView) -> tuple[Text, Layout | None]:
    """The launches table for `width` cells, its last column `last` (None: the newest), and
    the columns it shows."""
    t = Text()
    if not launches:
        t.append("No server start seen in this log yet: a launch begins at the server's "
                 "arguments line (server_args, vLLM's non-default args) or its first startup "
                 "line.", st.st("dim"))
        return t, None
    rows = table(launches)
    lay = layout(rows, launches, width, last)
    shown = range(lay.first, lay.last + 1)
    line = Text(no_wrap=True)
    line.append(" " * LABEL_W)
    for i in shown:
        line.append(f" {header(i, launches)}".ljust(lay.widths[i]),
                    st.st("head") + Style(meta={"launch": i}))
    t.append_text(line)
    section = "run"
    for row in rows:
        if row.section != section:
            section = row.section
            t.append("\n")
            t.append_text(Text(SECTIONS[section], st.st("section"), no_wrap=True))
        t.append("\n")
        t.append_text(_row(row, shown, lay.widths, launches, st))
    hidden_after = len(launches) - 1 - lay.last
    if lay.first or hidden_after:
        t.append(f"\n{_hidden(lay.first, hidden_after)}", st.st("dim"))
    if key := legend(launches):
        t.append(f"\n{key}", st.st("dim"))
    for sentence in advice(launches):
        t.append(f"\n{fmt.clean(sentence, 600)}")
    return t, lay


def _row(row: Row, shown: range, widths: Sequence[int], launches: Sequence[Launch],
         st: LaunchTableView) -> Text:
    line = Text(fmt.clean(label_text(row), LABEL_W), st.st("dim"), no_wrap=True)
    for i in shown:
        cell = row.cells[i]
        style = st.st("changed") if cell.changed else Style()
        if row.label == "outcome":
            style = st.st(OUTCOME_LEVEL.get(launches[i].outcome, "dim"))
        # A cell of its own: a picture of the screen (SVG) then places each column by its cell
        # offset, not by the widths of a proportional fallback font.
        style += Style(meta={"launch": i})
        line.append(fmt.clean(cell_text(cell.text, cell.changed, widths[i]), widths[i]), style)
    return line


def _hidden(before: int, after: int) -> str:
    parts = []
    if before:
        parts.append(("#1" if before == 1 else f"#1-#{before}") + " older (←)")
    if after:
        parts.append(f"{after} newer (→)")
    return "not shown: " + ", ".join(parts)


class LaunchesScreen(Screen[None]):
    """The launches, full-screen; escape, q or L goes back."""

    BINDINGS = [Binding(CLOSE_KEYS + ",L", "close", "back"),
                Binding("left", "shift(-1)", "older", show=False),
                Binding("right", "shift(1)", "newer", show=False)]

    def __init__(self, snap: RunSnapshot, server: int = 0) -> None:
        super().__init__()
        self._snap = snap
        self.server = server
        """The server whose launches are shown (of several: the one selected with `s`)."""
        self.last: int | None = None
        """The last launch column shown (None: the newest, following new starts)."""
        self.shown: Layout | None = None

    def compose(self) -> ComposeResult:
        yield LaunchTableView(id="launches")

    def on_mount(self) -> None:
        view = self.query_one(LaunchTableView)
        servers = self._snap.servers
        name = servers[self.server % len(servers)].name if len(servers) > 1 else None
        view.border_title = f"{TITLE}  {fmt.clean(name, 40)}" if name else TITLE
        view.focus()
        self.show(self._snap)

    def on_resize(self) -> None:
        self.show(self._snap)

    def show(self, snap: RunSnapshot) -> None:
        """Render the launches of `snap`."""
        self._snap = snap
        view = self.query_one(LaunchTableView)
        width = (view.scrollable_content_region.width or self.app.size.width - 4) - 1
        served = snap.for_server(self.server)
        launches = served.launches
        text, self.shown = launches_text(launches, max(LABEL_W + 10, width), self.last, view)
        quiet = _quiet_note(served, launches)
        if quiet is not None:
            text = Text(quiet + "\n", view.st("warn")) + text
        view.show_text(text)

    def action_shift(self, step: int) -> None:
        """Show older (-1) or newer (1) launches, when some do not fit."""
        n, lay = len(self._snap.for_server(self.server).launches), self.shown
        if lay is None or (step < 0 and lay.first == 0) or (step > 0 and lay.last >= n - 1):
            return
        last = lay.last + step
        self.last = None if last >= n - 1 else max(0, last)
        self.show(self._snap)

    def action_close(self) -> None:
        self.dismiss(None)
