"""The main screen's partial updates: the rows they write are the ones Textual's own would write,
rendered without the widgets and containers that have nothing to give to them."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable

from rich.cells import cell_len
from rich.console import Console
from rich.segment import ControlType
from rich.style import Style
from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.widget import Widget

from dash.ui.app import DashApp
from dash.ui.compositor import RowCompositor
from ui.fake_run import FrozenState

SIZE = (160, 45)
MakeApp = Callable[..., DashApp]


def _cells(update: ChopsUpdate | None) -> dict[tuple[int, int], tuple[str, Style | None]]:
    """The terminal cells an update writes: each (x, y) with its character and style."""
    assert update is not None
    console = Console(width=SIZE[0], height=SIZE[1], file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", legacy_windows=False)
    cells: dict[tuple[int, int], tuple[str, Style | None]] = {}
    x = y = 0
    for seg in update.__rich_console__(console, console.options):
        if seg.control:
            for control in seg.control:
                if control[0] == ControlType.CURSOR_MOVE_TO:
                    x, y = control[1], control[2]
            continue
        if seg.text == "\n":
            continue  # every row's first piece moves the cursor to its place
        for ch in seg.text:
            cells[x, y] = (ch, seg.style)
            x += cell_len(ch)
    return cells


def _change(state: FrozenState) -> None:
    """A tick's worth of changes, from the first row (the header) to the last panels."""
    snap = state.snap
    parts = list(snap.partitions)
    parts[1] = dataclasses.replace(parts[1], done=parts[1].done + 7)
    server = dataclasses.replace(snap.server, lines=snap.server.lines + 31)
    totals = dataclasses.replace(snap.totals, done=snap.totals.done + 7)
    state.snap = dataclasses.replace(snap, partitions=tuple(parts), server=server, totals=totals)


async def test_a_partial_update_writes_what_textuals_own_writes(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        compositor = screen._compositor
        assert isinstance(compositor, RowCompositor)
        _change(state)
        app.cpu_meter = lambda: 3.7  # the header's second row too
        app.refresh_state()
        # What the screen's update timer hands over, taken here before it runs.
        compositor.update_widgets(set(screen.walk_children()))
        marked = set(compositor._dirty_regions)
        rows = {y for region in marked for y in region.line_range}
        assert min(rows) <= 1 and max(rows) > SIZE[1] // 2  # the header to the bottom panels

        rendered: list[tuple[str, int]] = []
        original = Widget.render_lines

        def counting(widget: Widget, crop: Region) -> list:  # type: ignore[type-arg]
            rendered.append((widget.id or type(widget).__name__, crop.height))
            return original(widget, crop)

        Widget.render_lines = counting  # type: ignore[method-assign]
        try:
            theirs = _cells(Compositor.render_partial_update(compositor))
            their_rows = sum(h for _, h in rendered)
            rendered.clear()
            compositor._dirty_regions.update(marked)
            ours = _cells(compositor.render_partial_update())
        finally:
            Widget.render_lines = original  # type: ignore[method-assign]
        assert ours == theirs
        our_rows = sum(h for _, h in rendered)
        assert our_rows < their_rows / 3
        assert "_default" not in {name for name, _ in rendered}  # the screen is all covered
        await pilot.pause()


async def test_nothing_marked_writes_nothing(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        compositor._dirty_regions.clear()
        assert compositor.render_partial_update() is None


async def test_a_changed_row_reaches_the_terminal_in_the_next_update(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        updates: list[ChopsUpdate] = []
        display = app._display

        def keep(screen: object, update: object) -> None:
            if isinstance(update, ChopsUpdate):
                updates.append(update)
            display(screen, update)  # type: ignore[arg-type]

        app._display = keep  # type: ignore[method-assign]
        _change(state)
        app.cpu_meter = lambda: 3.7
        app.refresh_state()
        await pilot.pause()
        await pilot.pause()
        rows: dict[int, str] = {}
        for update in updates:
            for (_x, y), (ch, _) in sorted(_cells(update).items(), key=lambda c: c[0][::-1]):
                rows[y] = rows.get(y, "") + ch
        snap = state.snap
        assert "kdash CPU 3.7%" in rows[1]  # the header's second row, and nothing whole
        assert any(f"{snap.server.lines:,} lines" in row for row in rows.values())
        assert any(f"{snap.partitions[1].done:,}/" in row or f"{snap.partitions[1].done}/" in row
                   for row in rows.values())
        assert len(rows) < SIZE[1] // 2
