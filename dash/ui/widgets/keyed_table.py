"""A DataTable updated by row key, cell by cell: never cleared and rebuilt on a tick.

Rebuilding (`clear()` + `add_rows`) resets the cursor and repaints every row; here a refresh
compares each row with what is on screen, calls `update_cell` only where a value changed, and adds
or removes rows only when the set of keys changes. The column set can switch between a full and a
compact layout (a rare event, on resize), which is the only time the table is rebuilt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.widgets import DataTable

Cell = str | Text
Columns = Sequence[tuple[str, str, int | None]]
"""(key, label, width or None for auto) per column."""


class KeyedTable(DataTable[Cell]):
    """Rows keyed by a stable id, cells updated in place."""

    FULL_COLUMNS: Columns = ()
    COMPACT_COLUMNS: Columns = ()

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self._compact: bool | None = None
        self._shown: dict[str, dict[str, Cell]] = {}
        self._last_rows: Mapping[str, Mapping[str, Cell]] = {}
        self.cell_updates = 0
        """Cells written since mount (tests check that an unchanged snapshot writes none)."""

    @property
    def columns_now(self) -> Columns:
        return self.COMPACT_COLUMNS if self._compact else self.FULL_COLUMNS

    def set_compact(self, compact: bool) -> None:
        """Switch column sets; keeps the cursor row."""
        if compact == self._compact:
            return
        cursor = self.cursor_row
        self._compact = compact
        self.clear(columns=True)
        self._shown.clear()
        for key, label, width in self.columns_now:
            self.add_column(label, key=key, width=width)
        self.sync(self._last_rows)
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1), animate=False)

    def sync(self, rows: Mapping[str, Mapping[str, Cell]]) -> None:
        """Make the table show `rows` (key -> column key -> cell), in the given order."""
        self._last_rows = rows
        if self._compact is None:
            self.set_compact(False)
            return
        keys = [k for k, _, _ in self.columns_now]
        with self.app.batch_update():
            for gone in [k for k in self._shown if k not in rows]:
                self.remove_row(gone)
                del self._shown[gone]
            for row_key, cells in rows.items():
                shown = self._shown.get(row_key)
                if shown is None:
                    values = {k: cells.get(k, "") for k in keys}
                    self.add_row(*values.values(), key=row_key)
                    self._shown[row_key] = values
                    self.cell_updates += len(values)
                    continue
                for k in keys:
                    value = cells.get(k, "")
                    if shown.get(k) != value:
                        self.update_cell(row_key, k, value)
                        shown[k] = value
                        self.cell_updates += 1

    def row_key_at(self, row: int) -> str | None:
        """The key of the row at index `row`, or None."""
        if not 0 <= row < self.row_count:
            return None
        key = self.coordinate_to_cell_key((row, 0)).row_key.value
        return key
