"""A small table of rows keyed by a stable id, drawn line by line: a changed row repaints alone.

Textual's DataTable repaints every row whenever any cell changes (its render caches are keyed on
one table-wide update counter), which at one refresh a second was the largest cost of a frame.
Here each row is rendered once to a cached `Strip`; `sync` compares every cell with what is on
screen, drops the cache of a row only when one of its cells changed, and marks only that row's
screen line for repaint. The cursor (a highlighted row), up/down/home/end, a click and a
`RowHighlighted` message when the row under the cursor changes work as in a DataTable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from dash.ui.compositor import repaint

Cell = str | Text
Columns = Sequence[tuple[str, str, int | None]]
"""(key, label, width or None for the label's width) per column."""
PAD = 1
"""Blank cells on each side of a column."""


class _Piece:
    """One cell as drawn: its value, the row's styles it was drawn under, its segments."""

    __slots__ = ("base", "over", "segments", "value")

    def __init__(self, value: Cell, base: Style, over: Style | None,
                 segments: list[Segment]) -> None:
        self.value, self.base, self.over, self.segments = value, base, over, segments

    def draws(self, value: Cell, base: Style, over: Style | None) -> bool:
        """Whether these segments are what `value` under these styles draws."""
        if self.base != base or self.over != over or type(value) is not type(self.value):
            return False
        if isinstance(value, Text):
            old = self.value
            assert isinstance(old, Text)
            return (value.plain == old.plain and value.spans == old.spans
                    and value.style == old.style and value.justify == old.justify
                    and value.overflow == old.overflow)
        return value == self.value


class KeyedTable(Widget, can_focus=True):
    """Rows keyed by a stable id, cells compared in place; a header row on top."""

    BINDINGS = [
        Binding("up", "cursor(-1)", "up", show=False),
        Binding("down", "cursor(1)", "down", show=False),
        Binding("home", "cursor_to(0)", show=False),
        Binding("end", "cursor_to(-1)", show=False),
    ]
    COMPONENT_CLASSES = {"keyedtable--header", "keyedtable--cursor"}
    FULL_COLUMNS: Columns = ()
    COMPACT_COLUMNS: Columns = ()
    BOX_TITLE: tuple[str, str] | None = None
    """(the parent box's title, the keys that scroll the table), or None: title left alone."""
    empty_title = ""
    """What the box's title adds while the table has no rows (what to do to fill it)."""

    class RowHighlighted(Message):
        """The row under the cursor is now `key` (None: the table is empty); `by_user`: a
        key or a click moved it, not the app."""

        def __init__(self, table: KeyedTable, key: str | None, by_user: bool = False) -> None:
            super().__init__()
            self.table = table
            self.key = key
            self.by_user = by_user

        @property
        def control(self) -> KeyedTable:
            return self.table

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._compact: bool | None = None
        self._keys: list[str] = []
        self._cells: dict[str, dict[str, Cell]] = {}
        self._strips: dict[str, Strip] = {}
        self._pieces: dict[str, dict[str, _Piece]] = {}
        """Each row's cells as drawn (by row key, then column key): a changed row draws again
        only the cells that changed."""
        self.cells_drawn = 0
        """Cells drawn since mount (tests check that a changed cell draws alone)."""
        self._header: Strip | None = None
        self._last_rows: Mapping[str, Mapping[str, Cell]] = {}
        self._top = 0
        self._highlighted: str | None = None
        self._styles: dict[str, Style] = {}
        self.cursor_row = 0
        self.cell_updates = 0
        """Cells written since mount (tests check that an unchanged snapshot writes none)."""
        self.rows_repainted = 0
        """Rows marked for repaint one by one since mount."""

    # -- contents -----------------------------------------------------------------------------

    @property
    def columns_now(self) -> Columns:
        return self.COMPACT_COLUMNS if self._compact else self.FULL_COLUMNS

    @property
    def row_count(self) -> int:
        return len(self._keys)

    def set_compact(self, compact: bool) -> None:
        """Switch column sets (a resize across the compact threshold); keeps the cursor row."""
        if compact == self._compact:
            return
        self._compact = compact
        self._cells.clear()
        self._keys.clear()
        self._forget()
        self.sync(self._last_rows)

    def sync(self, rows: Mapping[str, Mapping[str, Cell]]) -> None:
        """Make the table show `rows` (key -> column key -> cell), in the given order."""
        self._last_rows = rows
        if self._compact is None:
            self.set_compact(False)
            return
        columns = [k for k, _, _ in self.columns_now]
        order = list(rows)
        if order != self._keys:  # rows came, went or moved: every line below may shift
            for gone in set(self._keys) - set(order):
                self._cells.pop(gone, None)
                self._strips.pop(gone, None)
                self._pieces.pop(gone, None)
            self._keys = order
            self.refresh()
        for index, key in enumerate(order):
            cells = rows[key]
            shown = self._cells.setdefault(key, {})
            changed = 0
            for col in columns:
                value = cells.get(col, "")
                if col not in shown or shown[col] != value:
                    shown[col] = value
                    changed += 1
            if changed:
                self.cell_updates += changed
                self._strips.pop(key, None)
                self._refresh_row(index)
        self._set_cursor(min(self.cursor_row, max(0, len(order) - 1)))

    def row_key_at(self, row: int) -> str | None:
        """The key of the row at index `row`, or None."""
        return self._keys[row] if 0 <= row < len(self._keys) else None

    # -- cursor -------------------------------------------------------------------------------

    def move_cursor(self, *, row: int, animate: bool = False, by_user: bool = False) -> None:
        """Put the cursor on row `row` (clamped to the table); `by_user`: for a key or click."""
        if self._keys:
            self._set_cursor(max(0, min(row, len(self._keys) - 1)), by_user)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(row=self.cursor_row + step, by_user=True)

    def action_cursor_to(self, row: int) -> None:
        self.move_cursor(row=row if row >= 0 else len(self._keys) - 1, by_user=True)

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            self.move_cursor(row=self._top + event.y - 1, by_user=True)

    def _set_cursor(self, row: int, by_user: bool = False) -> None:
        old = self.cursor_row
        self.cursor_row = row
        if row != old:
            for index in (old, row):
                if 0 <= index < len(self._keys):
                    self._strips.pop(self._keys[index], None)
                    self._refresh_row(index)
        self._scroll_to_cursor()
        key = self.row_key_at(row)
        if key != self._highlighted:
            self._highlighted = key
            self.post_message(self.RowHighlighted(self, key, by_user))

    def _scroll_to_cursor(self) -> None:
        if self.size.height <= 1:  # not laid out yet: the resize that lays it out scrolls
            self.view_changed()
            return
        visible = self.size.height - 1
        top = min(self._top, self.cursor_row)
        top = max(top, self.cursor_row - visible + 1)
        # no empty rows below the last while rows above are off screen: a cursor moved before
        # the first layout (one row high) must not leave the first row hidden once all fit
        top = max(0, min(top, len(self._keys) - visible))
        if top != self._top:
            self._top = top
            self.refresh()
        self.view_changed()

    def shown_rows(self) -> tuple[int, int]:
        """The rows on screen, first and last (0-based; (0, -1) before the first layout)."""
        if not self._keys or self.size.height <= 1:
            return 0, -1
        return self._top, min(len(self._keys), self._top + self.size.height - 1) - 1

    def view_changed(self) -> None:
        """The box's title (`BOX_TITLE`) says when rows are off screen: with 11 partitions and
        room for 7, or 8 GPUs and room for 3, nothing told that more were there."""
        box = self.parent
        if self.BOX_TITLE is None or not isinstance(box, Widget):
            return
        name, keys = self.BOX_TITLE
        first, last = self.shown_rows()
        n = self.row_count
        if n == 0 and self.empty_title:
            title = f"{name}  {self.empty_title}"
        else:
            title = (name if last < 0 or (first == 0 and last >= n - 1)
                     else f"{name}  {first + 1}-{last + 1} of {n}  ({keys})")
        if box.border_title != title:  # setting it, even unchanged, repaints the whole box
            box.border_title = title

    # -- drawing ------------------------------------------------------------------------------

    def on_resize(self) -> None:
        self._forget()
        self._scroll_to_cursor()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget()  # focus, theme or class change: colours are baked into the strips

    def on_focus(self) -> None:
        self._refresh_row(self.cursor_row)

    def on_blur(self) -> None:
        self._refresh_row(self.cursor_row)

    def _style(self, name: str, partial: bool = False) -> Style:
        """A component style ("" = the widget's own), resolved once per style change."""
        style = self._styles.get(name)
        if style is None:
            style = self.get_component_rich_style(name, partial=partial) if name else self.rich_style
            self._styles[name] = style
        return style

    def part_style(self, name: str) -> Style:
        """The component class `name`'s own style (partial), resolved once per style change."""
        return self._style(name, partial=True)

    def _forget(self) -> None:
        self._styles.clear()
        self._strips.clear()
        self._pieces.clear()
        self._header = None
        self.refresh()

    def _refresh_row(self, index: int) -> None:
        y = index - self._top + 1
        if 1 <= y < self.size.height:
            repaint(self, Region(0, y, self.size.width, 1))
            self.rows_repainted += 1

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            if self._header is None:
                style = self._style("keyedtable--header", partial=True)
                self._header = self._strip([Text(label, style) for _, label, _ in self.columns_now],
                                           width, self._style(""))
            return self._header
        index = self._top + y - 1
        if index >= len(self._keys):
            return Strip.blank(width, self._style(""))
        key = self._keys[index]
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._row_strip(key, index, width)
        return strip

    def _row_strip(self, key: str, index: int, width: int) -> Strip:
        cells = self._cells.get(key, {})
        base = self._style("")
        over: Style | None = None
        if index == self.cursor_row:
            base = over = base + self._style("keyedtable--cursor")
        columns = self.columns_now
        if sum((w or len(label)) + 2 * PAD for _, label, w in columns) > width:
            texts = [cell if isinstance(cell, Text) else Text(cell)
                     for cell in (cells.get(k, "") for k, _, _ in columns)]
            return self._strip(texts, width, base, over=over)  # cut at the edge: drawn whole
        # Each cell's segments kept with what they were drawn from: a row whose count moved
        # draws that cell alone, the others as they were (their segments are the ones `_strip`
        # gives: each cell's own, under the row's style).
        pieces = self._pieces.setdefault(key, {})
        segments: list[Segment] = []
        for col, label, col_width in columns:
            value = cells.get(col, "")
            piece = pieces.get(col)
            if piece is None or not piece.draws(value, base, over):
                text = value if isinstance(value, Text) else Text(value)
                drawn = Segment.apply_style(self._cell(text, col_width or len(label), over), base)
                piece = pieces[col] = _Piece(value, base, over, list(drawn))
                self.cells_drawn += 1
            segments.extend(piece.segments)
        used = sum(seg.cell_length for seg in segments)
        if used > width:  # wide characters cut: the whole row, cut at the edge
            texts = [cell if isinstance(cell, Text) else Text(cell)
                     for cell in (cells.get(k, "") for k, _, _ in columns)]
            return self._strip(texts, width, base, over=over)
        if used < width:
            segments.append(Segment(" " * (width - used), base + over if over else base))
        return Strip(segments, width)

    def _cell(self, cell: Text, width: int, over: Style | None) -> list[Segment]:
        """One cell cut or padded to `width`, a blank on each side (before the row's style)."""
        console = self.app.console
        cell = cell.copy()
        cell.truncate(width, overflow="ellipsis", pad=True)
        if over is not None:
            cell.stylize(over)
        # Text.render leaves out the Text's own base style: apply it under the spans.
        return [Segment(" " * PAD, over),
                *Segment.apply_style(cell.render(console), console.get_style(cell.style)),
                Segment(" " * PAD, over)]

    def _strip(self, texts: list[Text], width: int, base: Style, over: Style | None = None) -> Strip:
        # One run of segments per cell, so that an SVG export places every column at its cell.
        segments: list[Segment] = []
        for (_, label, col_width), cell in zip(self.columns_now, texts, strict=True):
            segments.extend(self._cell(cell, col_width or len(label), over))
        strip = Strip(segments).crop(0, width).extend_cell_length(width, over)
        return strip.apply_style(base)
