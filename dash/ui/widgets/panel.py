"""Text panels drawn line by line: an update repaints only the rows whose text changed.

A `Static.update` re-renders the whole widget (and by default relayouts the screen); at one
refresh a second, with a line count or an age changing somewhere in most panels, that is most of
what kdash costs. Here the text is rendered to one cached `Strip` per row; a new text is compared
row by row with what is on screen and only the rows that differ are marked for repaint.
"""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

SCROLL_BINDINGS = [
    Binding("up", "scroll_up", show=False),
    Binding("down", "scroll_down", show=False),
    Binding("pageup", "page_up", show=False),
    Binding("pagedown", "page_down", show=False),
    Binding("home", "scroll_home", show=False),
    Binding("end", "scroll_end", show=False),
]
"""The keys of a focused scrolling view (the log pane, the full-screen alert views)."""


def text_strips(console: Console, text: Text, width: int, wrap: bool, indent: int = 0) -> list[Strip]:
    """`text` as one Strip per screen row of `width` cells (wrapped, or cut with an ellipsis).

    Wrapped rows after the first of a line start `indent` cells in (a hanging indent).
    """
    wrap = wrap if text.no_wrap is None else not text.no_wrap
    return [strip for line in text.split("\n", allow_blank=True)
            for strip in line_strips(console, line, width, wrap, indent)]


def line_strips(console: Console, line: Text, width: int, wrap: bool, indent: int = 0) -> list[Strip]:
    """One line of text (no newline in it) as the Strips of its screen rows."""
    plain = line.plain
    if not plain or "\t" in plain:  # tabs to expand: Rich's whole layout pass
        options = console.options.update(width=width, no_wrap=not wrap, overflow="ellipsis",
                                         highlight=False, markup=False)
        return [Strip(row) for row in console.render_lines(line, options, pad=False,
                                                           new_lines=False)]
    if line.cell_len <= width or not wrap:
        return [_row_strip(console, line, width)]
    # Rich divides the line into rows; each is then drawn from its own segments: Rich's layout
    # pass over the rows joined again would wrap them a second time, twice the cost.
    rows = (_hanging(console, line, width, indent) if 0 < indent < width // 2
            else line.wrap(console, width, overflow=line.overflow or "ellipsis"))
    return [_row_strip(console, row, width) for row in rows]


def _row_strip(console: Console, line: Text, width: int) -> Strip:
    """One row: the text's own segments (cut with an ellipsis), without Rich's layout pass,
    which costs several times more and is most of a changed row's cost."""
    if line.cell_len > width:
        line = line.copy()
        line.truncate(width, overflow="ellipsis")
    segments = line.render(console)
    if line.style:  # the line's own style, under its spans' (as Rich's layout applies it)
        segments = Segment.apply_style(segments, console.get_style(line.style))
    return Strip(list(segments))


def _hanging(console: Console, line: Text, width: int, indent: int) -> list[Text]:
    if line.cell_len <= width:
        return [line]
    first = line.wrap(console, width, overflow="fold", no_wrap=False)[0]
    rest = line[len(first.plain):]
    rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")):]
    if not rest.plain:
        return [first]
    pieces = rest.wrap(console, width - indent, overflow="fold", no_wrap=False)
    return [first, *(Text(" " * indent) + piece for piece in pieces)]


def changed_rows(old: list[Strip], new: list[Strip]) -> list[int]:
    """Indexes of the rows that differ between two renders (a row present in one only counts)."""
    return [y for y in range(max(len(old), len(new)))
            if y >= len(old) or y >= len(new) or old[y] != new[y]]


class Panel(ScrollView, can_focus=False):
    """Text content sized by the stylesheet; scrolls when it does not fit (where CSS allows).

    Text without an explicit `no_wrap` is wrapped when `WRAP` is true, else cut with an ellipsis.
    """

    WRAP = False
    INDENT = 0
    """Hanging indent of wrapped rows (when WRAP)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = Text()
        self._strips: list[Strip] = []
        self._width = -1
        self._base: Style | None = None
        self._parts: dict[str, Style] = {}
        self._lines: dict[int, tuple[Text, list[Strip]]] = {}
        self.rows_repainted = 0
        """Rows marked for repaint since mount, each row of a whole repaint counted (tests check
        that an unchanged text marks none)."""

    def show_text(self, text: Text) -> None:
        """Show `text`; only the rows that changed are repainted."""
        if text == self._text and self._width >= 0:
            return
        self._text = text
        self._rebuild(self._width)

    def on_resize(self) -> None:
        self._rebuild(self.scrollable_content_region.width, full=True)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._base = None
        self._parts.clear()
        if self._width >= 0:  # theme or class change: colours are baked into the strips
            self._rebuild(self._width, full=True)

    def _rebuild(self, width: int, full: bool = False) -> None:
        if width < 0:
            return  # not laid out yet: the first resize renders
        new = self._render(width, full) if width else []
        rows = range(max(len(new), len(self._strips))) if full else changed_rows(self._strips, new)
        self._strips, self._width = new, width
        if self.virtual_size != Size(width, len(new)):
            self.virtual_size = Size(width, len(new))
            self.refresh()
            self.rows_repainted += len(new)
            return
        if rows:  # one refresh for all the rows: each call walks the DOM and the scroll offset
            scroll_y = self.scroll_offset.y
            row_width = max(self.virtual_size.width, self.size.width)
            self.refresh(*(Region(0, y - scroll_y, row_width, 1) for y in rows))
        self.rows_repainted += len(rows)

    def _render(self, width: int, full: bool) -> list[Strip]:
        """Every row, re-rendering only the lines of text that changed since the last render."""
        if full or width != self._width:
            self._lines.clear()
        text, base = self._text, self.base_style
        wrap = self.WRAP if text.no_wrap is None else not text.no_wrap
        out: list[Strip] = []
        i = -1
        for i, line in enumerate(text.split("\n", allow_blank=True)):
            cached = self._lines.get(i)
            if cached is None or cached[0] != line or cached[0].style != line.style:
                strips = line_strips(self.app.console, line, max(1, width), wrap, self.INDENT)
                cached = self._lines[i] = (line, [strip.apply_style(base) for strip in strips])
            out.extend(cached[1])
        for gone in [k for k in self._lines if k > i]:
            del self._lines[gone]
        return out

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Rows of the text at `width` (for `height: auto`)."""
        return len(text_strips(self.app.console, self._text, max(1, width), self.WRAP, self.INDENT))

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if width != self._width:  # a scrollbar came or went: wrap to the new width
            self._rebuild(width)
        row = self.scroll_offset.y + y
        if 0 <= row < len(self._strips):
            return self._strips[row].extend_cell_length(width, self.base_style)
        return Strip([Segment(" " * width, self.base_style)], width)

    def part_style(self, name: str) -> Style:
        """The component class `name`'s own style (partial), resolved once per style change."""
        style = self._parts.get(name)
        if style is None:
            style = self._parts[name] = self.get_component_rich_style(name, partial=True)
        return style

    @property
    def base_style(self) -> Style:
        """The widget's own colours (resolved once per style change: it walks the DOM)."""
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def row_of_line(self, index: int) -> int:
        """The screen row (in the scrolled content) where line `index` of the text starts."""
        return sum(len(self._lines[i][1]) for i in range(index) if i in self._lines)

    @property
    def plain(self) -> str:
        """The text shown, without styles."""
        return self._text.plain

    def plain_rows(self) -> list[str]:
        """The rows as laid out at the current width (wrapped or cut), without styles."""
        return [strip.text for strip in self._strips]
