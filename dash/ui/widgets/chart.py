"""A small braille line chart: cheap enough to redraw three times a second on a laptop core.

plotext re-plots through a global figure and builds a full ANSI string on every call (3 charts cost
4-7% of a core at 1 Hz); this widget draws straight into braille cells (2x4 dots per cell), caches
the rendered strips, and rebuilds them only when the data, the window or the size changed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from dash.core.series import SeriesView
from dash.ui.compositor import repaint

GUTTER = 7
"""Width of the y-axis labels and the axis line."""
MAX_GAP_COLUMNS = 4
"""Consecutive samples further apart than this many dot columns are not joined (a gap in data)."""
_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
"""Braille dot bits by (row within cell, column within cell)."""


@dataclass(frozen=True, slots=True)
class TitlePart:
    """A piece of a chart's title: (text, style) spans that stay or go together (a label and
    its figure). When the title is wider than the chart, the parts of least `keep` go first (a
    name is cut with an ellipsis before it goes); `keep` 10 always stays: a cut that leaves
    `gen tok/s 47` for 4779 reads as another number."""

    spans: tuple[tuple[str, str], ...]
    keep: int = 10
    shrink: bool = False

    @property
    def width(self) -> int:
        return sum(len(text) for text, _ in self.spans)


def part(*spans: tuple[str, str], keep: int = 10, shrink: bool = False) -> TitlePart:
    return TitlePart(spans, keep, shrink)


SHRUNK_MIN = 8
"""A name shrinks to this many cells (its ellipsis included) before it is dropped."""


def fit_title(parts: tuple[TitlePart, ...], width: int) -> Text:
    """The title in at most `width` cells, giving up the least important parts first."""
    live = list(parts)
    over = sum(p.width for p in live) - width
    while over > 0:
        candidates = [i for i, p in enumerate(live) if p.keep < 10]
        if not candidates:
            break
        i = min(candidates, key=lambda k: live[k].keep)
        p = live[i]
        if p.shrink and len(p.spans) == 1 and p.width - over >= SHRUNK_MIN:
            text, style = p.spans[0]
            tail = ":" if text.endswith(":") else ""  # `name:` still reads as whose figures
            body = text[:len(text) - len(tail)]
            live[i] = TitlePart(((body[:len(body) - over - 1] + "…" + tail, style),), p.keep)
            over = 0
        else:
            del live[i]
            over -= p.width
    title = Text()
    for p in live:
        for text, style in p.spans:
            title.append(text, style)
    title.truncate(width)
    return title


@dataclass(frozen=True, slots=True)
class ChartData:
    """What one chart shows: up to two series over [start, end], and an optional peak."""

    title: tuple[TitlePart, ...]
    series: tuple[SeriesView, ...]
    start: float
    end: float
    fmt: Callable[[float], str]
    ymax: float | None = None
    """A fixed top of the y axis (memory total, 100 %); None scales to the data."""
    peak: tuple[float, float] | None = None
    """(time, value) of the peak to mark, drawn as a reference line and a marker."""
    window_label: str = ""
    end_label: str = "now"
    """The right end of the time axis: "now", or "last line" for a log's history."""


def nice_ceiling(value: float) -> float:
    """The smallest round number (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) at or above `value`."""
    if value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for step in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        top = step * 10**exp
        if top >= value * 0.999:
            return top
    return 10.0 ** (exp + 1)


def column_values(series: SeriesView, start: float, end: float, cols: int) -> list[float | None]:
    """The maximum of each of `cols` equal time buckets over [start, end] (None where empty).

    Max rather than mean so that a short spike survives on a narrow chart.
    """
    out: list[float | None] = [None] * cols
    if cols > 0 and end > start and series:
        _fold(out, series.window(start), 0, start, end)
    return out


def _fold(out: list[float | None], view: SeriesView, first: int, start: float, end: float) -> None:
    """Fold `view`'s points from index `first` on into the column maxima `out`."""
    cols = len(out)
    scale = cols / (end - start)
    for t, v in zip(view.t[first:], view.v[first:], strict=True):
        if t > end or v != v:  # beyond the window, or NaN
            continue
        c = min(cols - 1, int((t - start) * scale))
        cur = out[c]
        if cur is None or v > cur:
            out[c] = v


class ColumnCache:
    """`column_values` of one series, carried over from the last call while the window stays
    put and the series only grew at its end.

    A chart's window moves by whole dot columns (see `BrailleChart.set_data`), so between two
    steps each refresh brings a few new points to the same columns: folding in only those costs
    nothing next to going through the whole window (900 points at 1 Hz over 15 min) for every
    chart on every refresh. Anything else (another window, another series, points dropped or
    changed) computes the columns afresh. The check compares the points already folded in with
    the new view's first points: the views of one series share their float objects, so that is
    a pointer comparison per point.
    """

    __slots__ = ("_key", "_out", "_t", "_v")

    def __init__(self) -> None:
        self._key: tuple[float, float, int] | None = None
        self._out: list[float | None] = []
        self._t: tuple[float, ...] = ()
        self._v: tuple[float, ...] = ()

    def values(self, series: SeriesView, start: float, end: float, cols: int) -> list[float | None]:
        out: list[float | None] = [None] * cols
        if cols <= 0 or end <= start or not series:
            self._key, self._t, self._v = None, (), ()
            return out
        view = series.window(start)
        n_old = len(self._t)
        if (self._key == (start, end, cols) and 0 < n_old <= len(view)
                and view.t[:n_old] == self._t and view.v[:n_old] == self._v):
            out = list(self._out)
            _fold(out, view, n_old, start, end)
        else:
            _fold(out, view, 0, start, end)
        self._key, self._out, self._t, self._v = (start, end, cols), out, view.t, view.v
        return list(out)


def plot_dots(values: Sequence[float | None], rows: int, ymax: float,
              dotted: bool = False) -> list[list[int]]:
    """Braille bit grid (rows//4 cells high, len(values)//2 cells wide) of a joined line.

    `dotted`: only the points of every other dot column, not joined, so that a second series
    reads apart from the first (solid) one without colour.
    """
    cells_h, cells_w = rows // 4, (len(values) + 1) // 2
    grid = [[0] * cells_w for _ in range(cells_h)]

    def level(v: float) -> int:
        frac = max(0.0, min(1.0, v / ymax)) if ymax > 0 else 0.0
        return rows - 1 - round(frac * (rows - 1))

    prev_c, prev_y = -1, -1
    for c, v in enumerate(values):
        if v is None:
            continue
        y = level(v)
        if dotted:
            if c % 2 == 0:
                grid[y // 4][c // 2] |= _BITS[y % 4][0]
            continue
        joined = prev_c >= 0 and c - prev_c <= MAX_GAP_COLUMNS
        for cc in range(prev_c + 1 if joined else c, c + 1):
            # Interpolate across empty columns; fill each column's vertical step from the last.
            y_to = y if not joined else round(prev_y + (y - prev_y) * (cc - prev_c) / (c - prev_c))
            y_from = y_to if not joined else round(
                prev_y + (y - prev_y) * (cc - 1 - prev_c) / (c - prev_c)
            )
            for yy in range(min(y_from, y_to), max(y_from, y_to) + 1):
                grid[yy // 4][cc // 2] |= _BITS[yy % 4][cc % 2]
        prev_c, prev_y = c, y
    return grid


class BrailleChart(Widget):
    """A line chart of one or two series in braille cells, with y labels and a peak marker."""

    COMPONENT_CLASSES = {
        "chart--title",
        "chart--axis",
        "chart--s0",
        "chart--s1",
        "chart--peak",
        "chart--ref",
    }

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._data: ChartData | None = None
        self._key: object = None
        self._strips: list[Strip] = []
        self._built_for: object = None
        self._styles: dict[str, Style] = {}
        self._plot_key: object = None
        self._columns: list[ColumnCache] = []
        self.builds = 0
        """How many times the strips were rebuilt (tests check that idle frames cost nothing)."""
        self.rows_repainted = 0
        """Rows marked for repaint one by one (a full repaint is not counted)."""

    def set_data(self, data: ChartData) -> None:
        """Show `data`; repaints only the rows whose picture changed.

        The window's end is rounded up to a whole dot column, so every point stays in the same
        column until time has moved by one column: between those steps new data changes the title
        and the last columns only, and only the rows those touch are repainted.
        """
        size = self.size  # read once: each read looks the widget up in the screen's map
        data = _quantized(data, max(1, size.width - GUTTER) * 2)
        key = _data_key(data)
        if key == self._key:
            return
        self._data, self._key = data, key
        self._redraw(full=False, size=size)

    def on_resize(self) -> None:
        self._key = None
        if self._data is not None:
            self.set_data(self._data)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._built_for = self._plot_key = None  # colours are baked into the strips
        self._styles.clear()

    def invalidate(self) -> None:
        """Forget the cached strips (after a theme change or a full redraw)."""
        self._built_for = self._plot_key = None
        self._redraw(full=True)

    def _redraw(self, full: bool, size: Size | None = None) -> None:
        size = size or self.size
        if not size.area:
            self.refresh()  # not laid out yet: render_line builds once it is
            return
        old = self._strips
        self._ensure_built(size)
        if full or len(old) != len(self._strips):
            self.refresh()
            return
        width = size.width
        rows = [Region(0, y, width, 1)
                for y, (a, b) in enumerate(zip(old, self._strips, strict=True)) if a != b]
        if rows:
            repaint(self, *rows)
            self.rows_repainted += len(rows)

    def _ensure_built(self, size: Size) -> None:
        want = (self._key, size)
        if want != self._built_for:
            self._strips = self._build(size)
            self._built_for = want
            self.builds += 1

    def render_line(self, y: int) -> Strip:
        size = self.size
        self._ensure_built(size)
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(size.width)

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:  # resolving a component style walks the DOM: once per theme, not per row
            style = self._styles[name] = self.get_component_rich_style(name)
        return style

    def _build(self, size: Size) -> list[Strip]:
        width, height = size.width, size.height
        data = self._data
        if data is None or width <= GUTTER or height < 1:
            return []
        title = fit_title(data.title, width)
        base = self._style("chart--title")
        segments = [Segment(s.text, base + s.style) for s in title.render(self.app.console)]
        strips = [Strip(segments).adjust_cell_length(width)]
        plot_h = height - 2
        if plot_h < 1:
            return strips
        if not any(data.series):
            self._plot_key = None
            blank = Strip.blank(width)
            note = Strip([Segment("no data yet".center(width), self._style("chart--axis"))])
            return strips + [blank] * ((plot_h - 1) // 2) + [note.adjust_cell_length(width)]
        cols = (width - GUTTER) * 2
        caches = self._columns
        while len(caches) < len(data.series):
            caches.append(ColumnCache())
        per_series = [cache.values(s, data.start, data.end, cols)
                      for cache, s in zip(caches, data.series, strict=False)]
        top = data.ymax or nice_ceiling(max(
            [v for vals in per_series for v in vals if v is not None]
            + ([data.peak[1]] if data.peak else [0.0])
        ))
        # A new point usually leaves every column's maximum as it was: then only the title moved.
        plot_key = (tuple(map(tuple, per_series)), top, data.peak, data.start, data.end,
                    data.window_label, size)
        if plot_key == self._plot_key and len(self._strips) == height:
            return strips + self._strips[1:]
        self._plot_key = plot_key
        grids = [plot_dots(vals, plot_h * 4, top, dotted=i > 0)
                 for i, vals in enumerate(per_series)]
        ref = self._peak_cells(data, top, plot_h, cols)
        for row in range(plot_h):
            strips.append(self._plot_row(row, plot_h, grids, ref, top, data.fmt))
        strips.append(self._axis_row(data, width))
        return strips

    def _peak_cells(self, data: ChartData, top: float, plot_h: int, cols: int) -> dict[int, int]:
        """Bits of the dotted peak reference line, by cell column, in its cell row (key -1 = row)."""
        if data.peak is None or top <= 0:
            return {}
        rows = plot_h * 4
        y = rows - 1 - round(min(1.0, data.peak[1] / top) * (rows - 1))
        cells: dict[int, int] = {-1: y // 4}
        for c in range(0, cols, 4):
            cells[c // 2] = cells.get(c // 2, 0) | _BITS[y % 4][c % 2]
        span = data.end - data.start
        if span > 0 and data.start <= data.peak[0] <= data.end:
            cells[-2] = min(cols - 1, int((data.peak[0] - data.start) / span * cols)) // 2
        return cells

    def _plot_row(
        self,
        row: int,
        plot_h: int,
        grids: list[list[list[int]]],
        ref: dict[int, int],
        top: float,
        fmt: Callable[[float], str],
    ) -> Strip:
        axis = self._style("chart--axis")
        label = ""
        if row == 0:
            label = fmt(top)
        elif row == plot_h - 1:
            label = fmt(0.0)
        elif plot_h >= 5 and row == plot_h // 2:
            label = fmt(top * (plot_h - 1 - row + 0.5) / plot_h)
        segments = [Segment(label[: GUTTER - 1].rjust(GUTTER - 1) + "┤", axis)]
        styles = [self._style("chart--s0"), self._style("chart--s1")]
        peak_style, ref_style = self._style("chart--peak"), self._style("chart--ref")
        ref_row = ref.get(-1)
        marker_col = ref.get(-2)
        width = len(grids[0][0]) if grids and grids[0] else 0
        run_style: Style | None = None
        run: list[str] = []
        for c in range(width):
            bits, style = 0, ref_style
            for i, grid in enumerate(grids):
                b = grid[row][c]
                if b:
                    bits |= b
                    style = styles[min(i, 1)]
            if row == ref_row and c in ref and not bits:
                bits = ref[c]
            if c == marker_col and row == ref_row:
                bits, style = bits | ref.get(c, 0), peak_style
            ch = chr(0x2800 + bits) if bits else " "
            if style is not run_style and run:
                segments.append(Segment("".join(run), run_style))
                run = []
            run_style = style
            run.append(ch)
        if run:
            segments.append(Segment("".join(run), run_style))
        return Strip(segments).adjust_cell_length(GUTTER + width)

    def _axis_row(self, data: ChartData, width: int) -> Strip:
        axis = self._style("chart--axis")
        inner = width - GUTTER
        left = data.window_label
        right = data.end_label
        fill = max(0, inner - len(left) - len(right))
        text = " " * (GUTTER - 1) + "└" + (left + "─" * fill + right)[:inner]
        return Strip([Segment(text, axis)]).adjust_cell_length(width)


def _quantized(data: ChartData, cols: int) -> ChartData:
    span = data.end - data.start
    if span <= 0:
        return data
    step = span / cols
    end = math.ceil(data.end / step) * step
    return replace(data, start=end - span, end=end)


def _data_key(data: ChartData) -> object:
    """What decides the picture: the last point of each series, the window, the labels."""
    tails = tuple((len(s), s.t[-1] if s.t else None, s.v[-1] if s.v else None) for s in data.series)
    return (data.title, tails, data.start, data.end, data.ymax, data.peak, data.window_label,
            data.end_label)
