"""A table row whose count moved draws that cell alone; the row reads as one drawn whole."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from rich.text import Text

from dash.ui.app import DashApp
from dash.ui.widgets.gpus import GpuTable
from dash.ui.widgets.keyed_table import KeyedTable
from dash.ui.widgets.partitions import PartitionTable
from ui.fake_run import FrozenState

SIZE = (160, 45)
MakeApp = Callable[..., DashApp]


def _drawn_whole(table: KeyedTable, index: int) -> list:  # type: ignore[type-arg]
    """The row's segments as drawn in one piece (every cell rendered again)."""
    key = table.row_key_at(index)
    assert key is not None
    cells = table._cells[key]
    texts = [cell if isinstance(cell, Text) else Text(cell)
             for cell in (cells.get(k, "") for k, _, _ in table.columns_now)]
    base = table._style("")
    over = None
    if index == table.cursor_row:
        base = over = base + table._style("keyedtable--cursor")
    return list(table._strip(texts, table.size.width, base, over=over))


async def test_rows_drawn_from_kept_cells_read_as_rows_drawn_whole(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for table in (app.query_one(PartitionTable), app.query_one(GpuTable)):
            assert table.row_count >= 2
            for i in range(table.row_count):
                assert list(table.render_line(i + 1)) == _drawn_whole(table, i)
        # The cursor moves: both rows change their style, and still read as drawn whole.
        table = app.query_one(PartitionTable)
        table.move_cursor(row=2)
        await pilot.pause()
        for i in (0, 2):
            assert list(table.render_line(i + 1)) == _drawn_whole(table, i)


async def test_a_moved_count_draws_its_cells_only(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(PartitionTable)
        for i in range(table.row_count):
            table.render_line(i + 1)
        before = table.cells_drawn
        parts = list(state.snap.partitions)
        parts[3] = dataclasses.replace(parts[3], done=parts[3].done + 1)
        state.snap = dataclasses.replace(state.snap, partitions=tuple(parts))
        app.refresh_state()
        await pilot.pause()
        for i in range(table.row_count):
            table.render_line(i + 1)
        drawn = table.cells_drawn - before
        assert 1 <= drawn <= 3  # the count, and the bar where it moved a cell
        assert list(table.render_line(4)) == _drawn_whole(table, 3)
        assert f"{parts[3].done}/" in table.render_line(4).text
