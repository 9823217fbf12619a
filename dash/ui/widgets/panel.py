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

from dash.ui.compositor import repaint

SCROLL_BINDINGS = [
    Binding("up", "scroll_up", show=False),
    Binding("down", "scroll_down", show=False),
    Binding("pageup", "page_up", show=False),
    Binding("pagedown", "page_down", show=False),
    Binding("home", "scroll_home", show=False),
    Binding("end", "scroll_end", show=False),
]
"""The keys of a focused scrolling view (the log pane, the full-screen alert views)."""


def line_strips(console: Console, line: Text, width: int, wrap: bool, indent: int = 0) -> list[Strip]:
    """One line of text (no newline in it) as the Strips of its screen rows."""
    rows = line_rows(console, line, width, wrap, indent)
    if rows is None:  # tabs to expand: Rich's whole layout pass
        options = console.options.update(width=width, no_wrap=not wrap, overflow="ellipsis",
                                         highlight=False, markup=False)
        return [Strip(row) for row in console.render_lines(line, options, pad=False,
                                                           new_lines=False)]
    return [_row_strip(console, row, width) for row in rows]


def line_rows(console: Console, line: Text, width: int, wrap: bool,
              indent: int = 0) -> list[Text] | None:
    """One line's screen rows as Texts, each drawn by `_row_strip` (None: a blank line or one
    with tabs, which only Rich's layout pass draws right)."""
    plain = line.plain
    if not plain or "\t" in plain:
        return None
    if line.cell_len <= width or not wrap:
        return [line]
    # Rich divides the line into rows; each is then drawn from its own segments: Rich's layout
    # pass over the rows joined again would wrap them a second time, twice the cost.
    return (_hanging(console, line, width, indent) if 0 < indent < width // 2
            else line.wrap(console, width, overflow=line.overflow or "ellipsis"))


_LAYOUT = str.maketrans(dict.fromkeys(range(0x21, 0x7F), "x"))
"""Printable ASCII but the space, as one letter: wrapping sees only where the spaces are and
how wide each character is, and each of these is one cell."""


def same_layout(old: str, new: str) -> bool:
    """Whether `new` wraps where `old` does: as long, spaces at the same places, and where the
    two differ, printable ASCII on both sides (`(8 s)` and `(9 s)`, `110` and `111`)."""
    return len(old) == len(new) and old.translate(_LAYOUT) == new.translate(_LAYOUT)


def _wraps_alike(old: Text, new: Text) -> bool:
    """Whether `new` is cut into rows where `old` is: the same layout, and the same ways of
    justifying, cutting and wrapping of their own (which Rich's wrap follows)."""
    return (same_layout(old.plain, new.plain) and old.justify == new.justify
            and old.overflow == new.overflow and old.no_wrap == new.no_wrap)


Spans = list[tuple[int, int, int]]
"""Where each row of a wrapped line comes from: (start, end, indent) in the line's text."""


def row_spans(line: Text, rows: list[Text], indent: int) -> Spans | None:
    """The spans `rows` were cut from: pieces of `line` one after the other from its start to
    its end, only the spaces a wrap drops between two and after the last, that give the rows
    back exactly. Else None (a line of the same layout is then wrapped again): a row cut with
    an ellipsis is no piece of the line, though its text can be read further on (thirty x and
    an ellipsis, six cells wide: the row `xxxxx…` reads as the last five x and the ellipsis,
    which a line with another first x still reads; wrapping that line gives `0xxxx…`), and
    a justified line's rows are padded with spaces of no style, not cut from it."""
    if line.justify not in (None, "default"):
        return None
    plain = line.plain
    spans: Spans = []
    at = 0
    for k, row in enumerate(rows):
        pad = indent if k and row.plain[:indent].isspace() and not row.style else 0
        start = plain.find(row.plain[pad:], at)
        if start < 0 or plain[at:start].strip(" "):
            return None
        at = start + len(row.plain) - pad
        spans.append((start, at, pad))
    if plain[at:].strip(" "):
        return None
    again = cut_rows(line, spans)
    if any(a != b or a.style != b.style for a, b in zip(again, rows, strict=True)):
        return None
    return spans


def cut_rows(line: Text, spans: Spans) -> list[Text]:
    """The rows of `line` cut at `spans` (a line of the same layout as the one they came from
    wraps into them: `same_layout`)."""
    return [Text(" " * pad) + line[start:end] if pad else line[start:end]
            for start, end, pad in spans]


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


def _respell(strip: Strip, old: str, new: str) -> Strip | None:
    """`strip` (which reads `old`) reading `new` instead, each segment keeping its style: `new`
    has the same layout as `old` and the same styles at the same places (None: the strip does
    not read `old`: a row cut with an ellipsis)."""
    segments = list(strip)
    if "".join(seg.text for seg in segments) != old or any(seg.control for seg in segments):
        return None
    out: list[Segment] = []
    at = 0
    for seg in segments:
        out.append(Segment(new[at:at + len(seg.text)], seg.style))
        at += len(seg.text)
    return Strip(out, strip.cell_length)


def changed_rows(old: list[Strip], new: list[Strip]) -> list[int]:
    """Indexes of the rows that differ between two renders (a row present in one only counts)."""
    return [y for y in range(max(len(old), len(new)))
            if y >= len(old) or y >= len(new) or old[y] != new[y]]


class LineBuilder:
    """Lines of text made by appending pieces, a newline in one starting the next line: what
    appending them to one Text and splitting it at its newlines gives (`Panel.show_lines`
    takes them), without building the whole and cutting it again."""

    __slots__ = ("lines",)

    def __init__(self) -> None:
        self.lines: list[Text] = [_new_line()]

    def append(self, text: str, style: Style | str | None = None) -> None:
        first, *rest = text.split("\n")
        if first:
            self.lines[-1].append(first, style)
        for part in rest:
            self.lines.append(_new_line())
            if part:
                self.lines[-1].append(part, style)

    def add_lines(self, lines: list[Text]) -> None:
        """Whole lines (kept, not copied: a panel compares a line it showed by identity
        first), where a line starts."""
        assert not self.lines[-1].plain, "add_lines where a line starts"
        self.lines[-1:] = [*lines, _new_line()]


def _new_line() -> Text:
    return Text(overflow="ellipsis")  # what a line split from a panel's Text is


class _Line:
    """One line of a panel's text as drawn: its rows' strips and, for a wrapped line, its rows
    and where they were cut."""

    __slots__ = ("rows", "spans", "strips", "text")

    def __init__(self, text: Text, strips: list[Strip], rows: list[Text | None],
                 spans: Spans | None) -> None:
        self.text, self.strips, self.rows, self.spans = text, strips, rows, spans


class Panel(ScrollView, can_focus=False):
    """Text content sized by the stylesheet; scrolls when it does not fit (where CSS allows).

    Text without an explicit `no_wrap` is wrapped when `WRAP` is true, else cut with an ellipsis.
    """

    WRAP = False
    INDENT = 0
    """Hanging indent of wrapped rows (when WRAP)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text: Text | None = Text()
        """The text shown, when it was given whole (`show_text`)."""
        self._given: list[Text] = [Text()]
        """Its lines (`show_lines` gives them without the whole)."""
        self._wrap = self.WRAP
        self._strips: list[Strip] = []
        self._width = -1
        self._base: Style | None = None
        self._parts: dict[str, Style] = {}
        self._lines: dict[int, _Line] = {}
        self.rows_repainted = 0
        """Rows marked for repaint since mount, each row of a whole repaint counted (tests check
        that an unchanged text marks none)."""

    def show_text(self, text: Text) -> None:
        """Show `text`; only the rows that changed are repainted."""
        if self._text is not None and text == self._text and self._width >= 0:
            return
        self._text, self._given = text, list(text.split("\n", allow_blank=True))
        self._wrap = self.WRAP if text.no_wrap is None else not text.no_wrap
        self._rebuild(self._width)

    def show_lines(self, lines: list[Text]) -> None:
        """Show these lines, as `show_text` does them joined by newlines (without the joining,
        and Rich's splitting of the whole again)."""
        if (self._text is None and self._width >= 0 and len(lines) == len(self._given)
                and all(a is b or (a == b and a.style == b.style)
                        for a, b in zip(lines, self._given, strict=True))):
            return
        self._text, self._given, self._wrap = None, list(lines), self.WRAP
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
        size = Size(width, len(new))
        if self.virtual_size != size and not self._resize_in_place(size):
            self.virtual_size = size  # lays the screen out again: the panel's height follows
            self.refresh()
            self.rows_repainted += len(new)
            return
        if rows:  # one refresh for all the rows: each call walks the DOM and the scroll offset
            scroll_y = self.scroll_offset.y
            row_width = max(self.virtual_size.width, self.size.width)
            repaint(self, *(Region(0, y - scroll_y, row_width, 1) for y in rows))
        self.rows_repainted += len(rows)

    def _resize_in_place(self, size: Size) -> bool:
        """Take a new content size without laying the screen out again, where the panel's
        height does not follow its content (the alerts: an evidence a row longer) and its
        scrollbars stay as they are; as Textual itself takes a size that needs no layout."""
        if self.styles.height is None or self.styles.height.is_auto or not self.is_mounted:
            return False
        bars = (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        offset = self.scroll_offset
        self.set_reactive(Panel.virtual_size, size)
        self._scroll_update(size)
        if (self.show_vertical_scrollbar, self.show_horizontal_scrollbar) != bars:
            self.refresh(layout=True)  # a scrollbar came or went: the rows' width changes
            return False
        if self.scroll_offset != offset:  # the end scrolled back into the view
            self.refresh()
            return False
        return True

    def _render(self, width: int, full: bool) -> list[Strip]:
        """Every row, re-rendering only the lines of text that changed since the last render."""
        if full or width != self._width:
            self._lines.clear()
        base, wrap = self.base_style, self._wrap
        out: list[Strip] = []
        i = -1
        for i, line in enumerate(self._given):
            cached = self._lines.get(i)
            if cached is None or (cached.text is not line and (
                    cached.text != line or cached.text.style != line.style)):
                cached = self._lines[i] = self._line(line, max(1, width), wrap, base, cached)
            out.extend(cached.strips)
        for gone in [k for k in self._lines if k > i]:
            del self._lines[gone]
        return out

    def _line(self, line: Text, width: int, wrap: bool, base: Style, old: _Line | None) -> _Line:
        """One changed line's rows. A line that wraps as the one it replaces (an age or a count
        of as many digits) is cut where that one was; with the same styles at the same places,
        a row whose characters did not change keeps its strip, and one whose did takes them
        into its strip's segments (the same cells, the same styles): nothing is drawn again."""
        console = self.app.console
        if old is not None and old.spans is not None and _wraps_alike(old.text, line):
            styled_alike = line.spans == old.text.spans and line.style == old.text.style
            before, now = old.text.plain, line.plain
            rows: list[Text | None] = []
            strips: list[Strip] = []
            for span, was, strip in zip(old.spans, old.rows, old.strips, strict=True):
                start, end, pad = span
                if styled_alike:
                    if before[start:end] != now[start:end]:
                        respelled = _respell(strip, " " * pad + before[start:end],
                                             " " * pad + now[start:end])
                        if respelled is None:
                            was = cut_rows(line, [span])[0]
                            strip = _row_strip(console, was, width).apply_style(base)
                        else:
                            was, strip = None, respelled  # cut from the line when asked
                else:
                    row = cut_rows(line, [span])[0]
                    if was is None:
                        was = cut_rows(old.text, [span])[0]
                    if row != was or row.style != was.style:
                        was, strip = row, _row_strip(console, row, width).apply_style(base)
                rows.append(was)
                strips.append(strip)
            return _Line(line, strips, rows, old.spans)
        laid = line_rows(console, line, width, wrap, self.INDENT)
        if laid is None:
            return _Line(line, [strip.apply_style(base)
                                for strip in line_strips(console, line, width, wrap)], [], None)
        strips = [_row_strip(console, row, width).apply_style(base) for row in laid]
        indent = self.INDENT if 0 < self.INDENT < width // 2 else 0
        return _Line(line, strips, list(laid), row_spans(line, laid, indent))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Rows of the text at `width` (for `height: auto`)."""
        console = self.app.console
        return sum(len(line_strips(console, line, max(1, width), self._wrap, self.INDENT))
                   for line in self._given)

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
        return sum(len(self._lines[i].strips) for i in range(index) if i in self._lines)

    @property
    def plain(self) -> str:
        """The text shown, without styles."""
        return "\n".join(line.plain for line in self._given)

    def plain_rows(self) -> list[str]:
        """The rows as laid out at the current width (wrapped or cut), without styles."""
        return [strip.text for strip in self._strips]
