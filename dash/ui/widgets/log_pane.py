"""The log pane: the server or client log, shown literally, scrolled back or following the end.

Lines are kept as plain strings in bounded deques, and only the rows on screen are ever turned
into text: a busy log (thousands of lines a second) costs a deque append per line, not a render.
Rows are drawn as `rich.text.Text`, which never interprets markup: `[bold]`, `[/]` and escape
sequences in a log line can neither break nor restyle the screen (escape sequences and control
characters are stripped when a row is drawn).

Keys, once the pane has focus (tab): up/down, page up/down, home/end scroll; left/right scroll
long lines sideways. The pane follows the end until the user scrolls up, and follows again at
the end (`end`); its title says which.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

from dash.ui import fmt
from dash.ui.widgets.panel import SCROLL_BINDINGS, Panel

KEEP_LINES = 10_000
"""Raw lines kept per log: what the pane scrolls back over and a filter searches."""
MAX_LINE = 4 * fmt.MAX_SHOWN
"""Raw characters kept of one line (cleaning then shows at most MAX_SHOWN)."""
DECODE_MARKERS = ("Decode batch", "Avg generation throughput")
"""SGLang's and vLLM's periodic stats lines: frequent, and dimmed so other lines stand out."""
CACHE_ROWS = 400


def is_decode_line(line: str) -> bool:
    """True for a periodic decode-stats line."""
    return any(m in line for m in DECODE_MARKERS)


class LogView(ScrollView, can_focus=True):
    """The rows of one log: renders only what is on screen; follows the end unless scrolled."""

    BINDINGS = [
        *SCROLL_BINDINGS,
        Binding("left", "scroll_left", show=False),
        Binding("right", "scroll_right", show=False),
    ]
    COMPONENT_CLASSES = {"logview--decode"}

    class Moved(Message):
        """The user scrolled: following or not, and how far back (the pane's title says)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: deque[str] = deque(maxlen=KEEP_LINES)
        self.dropped = 0
        """Lines that fell off the front of `lines` (absolute index = dropped + position)."""
        self.shown: list[int] | None = None
        """Absolute indexes of the lines that match the filter; None: every line."""
        self.filter = ""
        self.dim_decode = True
        self.following = True
        self.rows_rendered = 0
        """Rows turned into text since mount (the benchmark and tests count them)."""
        self._widest = 0
        self._moving = False
        self._cache: dict[int, Strip] = {}
        self._decode: Style | None = None

    # -- content ------------------------------------------------------------------------------

    def load(self, lines: deque[str], dropped: int) -> None:
        """Show `lines` (a log's buffer), re-filtered, following the end."""
        self.lines, self.dropped = lines, dropped
        self._cache.clear()
        self._widest = max((len(line) for line in lines), default=0)
        self.shown = None if not self.filter else [
            dropped + i for i, line in enumerate(lines) if self._matches(line)]
        self.following = True
        self._resize()

    def added(self, new: list[str], dropped: int) -> None:
        """`new` lines were appended to `lines` (and `dropped` is the new front count)."""
        gone = dropped - self.dropped
        self.dropped = dropped
        if new:
            self._widest = max(self._widest, max(len(line) for line in new))
        first = dropped + len(self.lines) - len(new)
        shift = gone
        if self.shown is not None:
            cut = 0
            while cut < len(self.shown) and self.shown[cut] < dropped:
                cut += 1
            del self.shown[:cut]
            shift = cut
            self.shown.extend(first + i for i, line in enumerate(new) if self._matches(line))
        if gone > CACHE_ROWS:
            self._cache.clear()
        if not self.following and shift:
            self._move(y=max(0, self.scroll_y - shift))  # the same lines stay on screen
        self._resize()

    def set_filter(self, text: str) -> None:
        self.filter = text
        self.load(self.lines, self.dropped)

    def set_dim(self, dim: bool) -> None:
        self.dim_decode = dim
        self._cache.clear()
        self.refresh()

    @property
    def count(self) -> int:
        """Rows there are to show (matching the filter)."""
        return len(self.lines) if self.shown is None else len(self.shown)

    def row_text(self, row: int) -> str | None:
        """The raw line at `row` of the view, or None past the end."""
        idx = self._index(row)
        return None if idx is None else self.lines[idx - self.dropped]

    def _index(self, row: int) -> int | None:
        if not 0 <= row < self.count:
            return None
        return self.dropped + row if self.shown is None else self.shown[row]

    def _matches(self, line: str) -> bool:
        return not self.filter or self.filter.lower() in line.lower()

    # -- scrolling ----------------------------------------------------------------------------

    def _resize(self) -> None:
        width = min(self._widest, fmt.MAX_SHOWN)
        size = Size(width, self.count)
        if self.virtual_size != size:
            self.virtual_size = size
        if self.following:
            self._move(y=self.max_scroll_y)
        self.refresh()

    def _move(self, x: float | None = None, y: float | None = None) -> None:
        # force: the scrollbars (which allow scrolling) are only worked out at the next layout,
        # and this pane never shows a horizontal one.
        self._moving = True
        try:
            self.scroll_to(x=x, y=y, animate=False, immediate=True, force=True)
        finally:
            self._moving = False

    def _side_step(self) -> int:
        """Half the pane's width, as `less` moves a long line sideways."""
        return max(4, self.size.width // 2)

    def action_scroll_left(self) -> None:
        self.scroll_to(x=self.scroll_x - self._side_step(), animate=False, force=True)

    def action_scroll_right(self) -> None:
        self.scroll_to(x=self.scroll_x + self._side_step(), animate=False, force=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if not self._moving:
            # The user moved: follow again only once back at the end.
            self.following = new_value >= self.max_scroll_y
            if round(old_value) != round(new_value):
                self.post_message(self.Moved())

    def action_scroll_end(self) -> None:
        self.following = True
        self._move(y=self.max_scroll_y)
        self.post_message(self.Moved())

    # -- rendering ----------------------------------------------------------------------------

    def on_resize(self) -> None:
        if self.following:
            self._move(y=self.max_scroll_y)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._decode = None
        self._cache.clear()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        idx = self._index(int(self.scroll_offset.y) + y)
        if idx is None:
            return Strip([Segment(" " * width, self.rich_style)], width)
        strip = self._cache.get(idx)
        if strip is None:
            strip = self._strip(self.lines[idx - self.dropped])
            if len(self._cache) >= CACHE_ROWS:
                self._cache.clear()
            self._cache[idx] = strip
        x = int(self.scroll_offset.x)
        return strip.crop(x, x + width).extend_cell_length(width, self.rich_style)

    def _strip(self, raw: str) -> Strip:
        self.rows_rendered += 1
        line = fmt.clean(raw)
        style = self.rich_style
        if self.dim_decode and is_decode_line(line):
            if self._decode is None:
                self._decode = self.get_component_rich_style("logview--decode", partial=True)
            style = style + self._decode
        segments = list(Text(line, style, no_wrap=True, end="").render(self.app.console))
        return Strip(segments)


class LogPane(Vertical):
    """Hidden until `l`; `c` switches server/client; `/` filters; `d` toggles dim decode lines."""

    COMPONENT_CLASSES = {"logpane--match", "logpane--follow", "logpane--back"}

    def _st(self, name: str) -> Style:
        return self.get_component_rich_style(f"logpane--{name}", partial=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: dict[str, deque[str]] = {
            "server": deque(maxlen=KEEP_LINES),
            "client": deque(maxlen=KEEP_LINES),
        }
        self._dropped = {"server": 0, "client": 0}
        self.source = "server"
        self.filter = ""
        self.dim_decode = True

    def compose(self) -> ComposeResult:
        yield Panel(id="log-title")
        yield LogView(id="log-view")
        yield Input(id="log-filter", placeholder="filter (Enter keeps, Esc clears)")

    def on_mount(self) -> None:
        self.query_one("#log-filter", Input).display = False
        self.redraw()

    @property
    def view(self) -> LogView:
        return self.query_one("#log-view", LogView)

    def append(self, source: str, lines: Iterable[str]) -> None:
        """Keep new raw lines of `source`; the view draws them when they are on screen."""
        store = self.lines[source]
        new = [line[:MAX_LINE] for line in lines]
        over = max(0, len(store) + len(new) - KEEP_LINES)
        store.extend(new)
        self._dropped[source] += over
        if self.display and source == self.source:
            view = self.view
            was = view.following
            view.added(new[-KEEP_LINES:], self._dropped[source])
            if view.following != was or not view.following:
                self._title()

    def set_source(self, source: str) -> None:
        """Show the server or the client log."""
        self.source = source
        self.redraw()

    def set_filter(self, text: str) -> None:
        """Show only lines containing `text` (case-insensitive); empty shows all."""
        self.filter = text
        self.view.filter = text
        self.redraw()

    def toggle_dim(self) -> None:
        self.dim_decode = not self.dim_decode
        self.view.set_dim(self.dim_decode)
        self._title()

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
        """Show the current source from its kept lines (after a source, filter or visibility
        change, or after the kept lines were replaced)."""
        store = self.lines[self.source]
        if not store:
            self._dropped[self.source] = 0
        view = self.view
        view.filter = self.filter
        view.load(store, self._dropped[self.source])
        self._title()

    def on_log_view_moved(self) -> None:
        self._title()

    def _title(self) -> None:
        other = "client" if self.source == "server" else "server"
        view = self.view
        t = Text(f" {self.source} log ", "bold")
        if view.following:
            t.append("● following", self._st("follow"))
        else:
            behind = max(0, view.count - int(view.scroll_y) - view.size.height)
            t.append(f"▲ scrolled back ({behind:,} lines below; end: follow)", self._st("back"))
        if self.filter:  # before the keys: a narrow pane cuts those, not what is filtered
            t.append("  filter: ")
            t.append(self.filter, self._st("match"))
        t.append(f"  (c: {other}  /: filter  d: dim decode {'on' if self.dim_decode else 'off'}"
                 "  ←→: long lines)", "dim")
        self.query_one("#log-title", Panel).show_text(t)
