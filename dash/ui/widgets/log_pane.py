"""The log pane: the last lines of the server or client log, shown literally, with a live filter.

Lines are kept as plain strings in bounded deques and written as `rich.text.Text` objects, which
never interpret markup: `[bold]`, `[/]` and escape sequences in a log line can neither break nor
restyle the screen (escape sequences and control characters are stripped on the way in).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, RichLog

from dash.ui import fmt
from dash.ui.widgets.panel import Panel

KEEP_LINES = 2000
"""Raw lines kept per log, so that a filter can search back a little."""
SHOWN_LINES = 500
DECODE_MARKERS = ("Decode batch", "Avg generation throughput")
"""SGLang's and vLLM's periodic stats lines: frequent, and dimmed so other lines stand out."""


def is_decode_line(line: str) -> bool:
    """True for a periodic decode-stats line."""
    return any(m in line for m in DECODE_MARKERS)


class LogPane(Vertical):
    """Hidden until `l`; `c` switches server/client; `/` filters; `d` toggles dim decode lines."""

    COMPONENT_CLASSES = {"logpane--decode", "logpane--match"}

    def _st(self, name: str) -> Style:
        return self.get_component_rich_style(f"logpane--{name}", partial=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: dict[str, deque[str]] = {
            "server": deque(maxlen=KEEP_LINES),
            "client": deque(maxlen=KEEP_LINES),
        }
        self.source = "server"
        self.filter = ""
        self.dim_decode = True

    def compose(self) -> ComposeResult:
        yield Panel(id="log-title")
        yield RichLog(id="log-view", max_lines=SHOWN_LINES, wrap=False, markup=False,
                      highlight=False, auto_scroll=True)
        yield Input(id="log-filter", placeholder="filter (Enter keeps, Esc clears)")

    def on_mount(self) -> None:
        self.query_one("#log-filter", Input).display = False
        self._title()

    def append(self, source: str, lines: Iterable[str]) -> None:
        """Keep new raw lines of `source`; draw them now if they are on screen."""
        store = self.lines[source]
        new = [fmt.clean(line) for line in lines]
        store.extend(new)
        if self.display and source == self.source:
            view = self.query_one("#log-view", RichLog)
            for line in new:
                if self._matches(line):
                    view.write(self._text(line))

    def set_source(self, source: str) -> None:
        """Show the server or the client log."""
        self.source = source
        self.redraw()

    def set_filter(self, text: str) -> None:
        """Show only lines containing `text` (case-insensitive); empty shows all."""
        self.filter = text
        self.redraw()

    def toggle_dim(self) -> None:
        self.dim_decode = not self.dim_decode
        self.redraw()

    def open_filter(self) -> None:
        """Show the filter input and focus it."""
        box = self.query_one("#log-filter", Input)
        box.display = True
        box.value = self.filter
        box.focus()

    def close_filter(self, keep: bool) -> None:
        box = self.query_one("#log-filter", Input)
        box.display = False
        if not keep:
            box.value = ""
            self.set_filter("")

    def redraw(self) -> None:
        """Rewrite the view from the kept lines (after a source, filter or visibility change)."""
        self._title()
        if not self.display:
            return
        view = self.query_one("#log-view", RichLog)
        view.clear()
        shown = [line for line in self.lines[self.source] if self._matches(line)]
        for line in shown[-SHOWN_LINES:]:
            view.write(self._text(line))

    def _title(self) -> None:
        other = "client" if self.source == "server" else "server"
        t = Text(f" {self.source} log", "bold")
        t.append(f"  (c: {other}  /: filter  d: dim decode {'on' if self.dim_decode else 'off'})",
                 "dim")
        if self.filter:
            t.append("  filter: ")
            t.append(self.filter, self._st("match"))
        self.query_one("#log-title", Panel).show_text(t)

    def _matches(self, line: str) -> bool:
        return not self.filter or self.filter.lower() in line.lower()

    def _text(self, line: str) -> Text:
        if self.dim_decode and is_decode_line(line):
            return Text(line, self._st("decode"), no_wrap=True)
        return Text(line, no_wrap=True)
