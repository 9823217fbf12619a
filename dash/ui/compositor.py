"""The main screen's compositor: a partial update renders only the rows it writes.

Textual's partial update renders every widget under the box that surrounds all the regions
marked for repaint, every row of it, and then keeps only the rows that were marked. On the live
screen the header (the top rows) and the server and alerts panels (the bottom ones) change every
second, so that box is the whole screen: each frame every widget rendered every row, the
containers behind them too, to write the rows that changed. Here each widget renders only the
rows where a marked span crosses a piece of it that no widget in front of it covers (a container
behind its children: only its borders and gaps); the update writes the cells Textual's own
would write (the same spans, the same strips in them; not the bare cursor move Textual's adds
for a piece that starts where a span ends). Rows to repaint reach the screen without Textual's
messages (`repaint`). Both use Textual's internals of the version pyproject pins (the
compositor's dirty regions, cuts and visible widgets, the screen's dirty widgets and update
timer, a widget's `_set_dirty`): `tests/ui/test_compositor.py` checks what they write.
"""

from __future__ import annotations

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

Spans = list[tuple[int, int]]
"""The marked [x1, x2) spans of one row."""


class RowCompositor(Compositor):
    """`Compositor` whose partial updates render the marked rows only (see the module)."""

    def render_partial_update(self) -> ChopsUpdate | None:
        regions = self._dirty_regions.copy()
        self._dirty_regions.clear()
        if not regions:
            return None
        spans = list(self._regions_to_spans(regions))
        by_row: dict[int, Spans] = {}
        for y, x1, x2 in spans:
            by_row.setdefault(y, []).append((x1, x2))
        return ChopsUpdate(self._render_rows(by_row), spans,
                           [cut_set[1:] for cut_set in self.cuts])

    def _render_rows(self, by_row: dict[int, Spans]) -> list[dict[int, Strip | None]]:
        """The chops of the marked rows: widgets front to back, each rendering the rows where
        it has a piece to give (as `Compositor._render_chops`: the first strip of a cut wins)."""
        cuts = self.cuts
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
        if not by_row:
            return chops
        top, bottom = min(by_row), max(by_row) + 1
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            x, y0, width, height = shown
            if not width or not height or y0 >= bottom or y0 + height <= top:
                continue
            first_cut, last_cut = shown.column_span
            wanted = [y for y in range(max(y0, top), min(y0 + height, bottom))
                      if y in by_row and _needed(chops[y], cuts[y], by_row[y], first_cut,
                                                 last_cut)]
            if not wanted:
                continue
            # One render for the widget's rows from the first wanted to the last: each call
            # costs far more than a row its line cache gives back.
            start, stop = wanted[0], wanted[-1] + 1
            strips = widget.render_lines(
                Region(x - region.x, start - region.y, width, stop - start))
            for y in wanted:
                line = chops[y]
                final = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
                pieces = strips[y - start].divide([c - x for c in final[1:]])
                for cut, piece in zip(final, pieces, strict=False):
                    if line.get(cut) is None:
                        line[cut] = piece
        return chops


def _needed(line: dict[int, Strip | None], cuts: list[int], spans: Spans, first_cut: int,
            last_cut: int) -> bool:
    """Whether a widget over [first_cut, last_cut) has a piece of this row to give: a cut of
    its own that a marked span crosses and that no widget in front of it has filled."""
    for i in range(len(cuts) - 1):
        cut = cuts[i]
        if cut < first_cut or cut >= last_cut or line.get(cut) is not None:
            continue
        end = cuts[i + 1]
        if any(x1 < end and x2 > cut for x1, x2 in spans):
            return True
    return False


class RowScreen(Screen[None]):
    """A screen whose partial updates go through `RowCompositor`, and that takes rows to
    repaint straight from its widgets (`repaint`)."""

    def __init__(self, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compositor = RowCompositor()

    def take_dirty(self, widget: Widget) -> None:
        """`widget` has regions to repaint: into the next update (as the screen's handler of
        the widget's update message does, and its idle handler after it)."""
        if self in self._compositor:
            self._dirty_widgets.add(widget)
            self._update_timer.resume()


def repaint(widget: Widget, *regions: Region) -> None:
    """Repaint these regions of `widget` (rows whose text changed, its size the same).

    `Widget.refresh(*regions)` gets there through the widget's message queue and then the
    screen's: two task wake-ups and four messages for each widget with a changed row, and
    the widget's size and style caches cleared for nothing. On the main screen the regions
    are marked and handed to the screen at once (while a screen is on top of it, they wait
    there for its next frame); on another screen, and for a widget not shown or not mounted
    yet, `refresh` does it.
    """
    screen = widget.screen if widget.is_attached else None
    if (not isinstance(screen, RowScreen) or not regions or not widget.is_mounted
            or not widget.display or widget._closing):
        widget.refresh(*regions)
        return
    widget._set_dirty(*regions)
    screen.take_dirty(widget)
