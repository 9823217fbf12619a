"""What the bulk reader makes of one block: shape rows as columns, the other records parsed.

A `Batch` holds the block split by the reader's pattern (`re.Pattern.split`): the text
between rows (`gaps`) and, for every row, the groups of the pattern, so that a column of a
shape is a slice of that list taken at C speed. Rows and the other records are in file order;
line numbers are counted from the gaps (a row holds exactly one newline, the one before it)
only when asked for, all of them or a few.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, compress, repeat
from operator import add

from dash.core.log.parser import Record
from dash.core.log.shapes import Shape
from dash.core.log.timestamps import normalise_ts

Groups = tuple[int, tuple[int, ...]]
"""A shape's group in the reader's pattern, and its columns' groups (prefix, then values)."""


def newlines(text: bytes) -> int:
    """How many newlines `text` holds: deleting them finds each with `memchr`, where
    `bytes.count` compares byte by byte (twice as slow on log text)."""
    return len(text) - len(text.replace(b"\n", b""))


def stamp_text(stamp: bytes, cache: dict[bytes, str]) -> str:
    ts = cache.get(stamp)
    if ts is None:
        ts = cache[stamp] = normalise_ts(stamp.decode("ascii"))
    return ts


@dataclass(frozen=True)
class Layout:
    """The reader's pattern: its shapes in the order of their alternatives, their groups,
    and which of each shape's values are taken (`captured`, indexes into its `kinds`)."""

    shapes: tuple[Shape, ...]
    groups: tuple[Groups, ...]
    ngroups: int
    captured: tuple[tuple[int, ...], ...]

    @cached_property
    def whole(self) -> tuple[re.Pattern[bytes] | None, ...]:
        """Per shape its own pattern where some values are not taken (to read a row whole)."""
        return tuple(None if len(cap) == len(s.kinds) else re.compile(s.body)
                     for s, cap in zip(self.shapes, self.captured, strict=True))


class Batch:
    """The records of one block, in file order: shape rows and `others` (parser records)."""

    def __init__(self, layout: Layout, split: list[bytes | None], first_line: int) -> None:
        self.shapes = list(layout.shapes)
        self.first_line = first_line
        self._layout = layout
        self._groups = layout.groups
        self._step = layout.ngroups + 1
        self._split = split
        self.gaps: list[bytes] = split[0::self._step]  # type: ignore[assignment]
        self.rows_total = len(self.gaps) - 1
        self.other_text = b"".join(self.gaps)
        """The block without its rows: every line in it follows a newline and ends in one."""
        self.others: list[Record] = []
        self._other_at: list[int] = []  # rows before each other record
        self._counts: list[int] | None = None
        self._index: dict[int, list[int]] | None = None
        self._ends: list[int] | None = None
        self._lines: int | None = None
        self._at = self._seen = 0  # newlines in other_text[:_at]

    @property
    def lines(self) -> int:
        """How many lines the block has."""
        if self._lines is None:
            self._lines = self._newlines(len(self.other_text)) + self.rows_total - 1
        return self._lines

    def _newlines(self, offset: int) -> int:
        """Newlines in `other_text[:offset]`, counted on from the last offset asked."""
        if offset < self._at:
            self._at = self._seen = 0
        self._seen += newlines(self.other_text[self._at:offset])
        self._at = offset
        return self._seen

    # -- rows ----------------------------------------------------------------------------

    def _rows_of(self, s: int) -> list[bytes | None] | None:
        """Per row, shape s's own text where the row is shape s's, else None (None: every
        row is shape s's)."""
        if len(self.shapes) == 1:
            return None
        return self._split[self._groups[s][0]::self._step]

    def count(self, s: int) -> int:
        """How many rows shape s has."""
        if self._counts is None:
            own = [self._rows_of(i) for i in range(len(self.shapes))]
            self._counts = [self.rows_total if o is None else len(o) - o.count(None) for o in own]
        return self._counts[s]

    def _col(self, s: int, group: int, value: bool = True) -> list[bytes]:
        col = self._split[group::self._step]
        own = self._rows_of(s)
        if own is None:
            return col  # type: ignore[return-value]
        if value:  # a value is never empty: a row of another shape has None there
            return list(filter(None, col))
        return list(compress(col, own))  # type: ignore[arg-type]

    def columns(self, s: int) -> list[list[bytes]]:
        """Shape s's columns: stamp and tags (bracket form), then one per value."""
        if self._layout.whole[s] is not None:  # not every value taken: read the rows whole
            return [list(c) for c in zip(*self.rows(s), strict=True)]
        groups, base = self._groups[s][1], self.shapes[s].prefix_groups
        return [self._col(s, g, i >= base) for i, g in enumerate(groups)]

    def column(self, s: int, key: str) -> list[bytes] | None:
        """The column shape s reads a record key from, or None (not read, or null).
        The key's values must be taken (`BlockReader(keep=...)`)."""
        shape = self.shapes[s]
        if key not in shape.keys:
            return None
        col = shape.cols[shape.keys.index(key)]
        if col is None:
            return None
        at = self._layout.captured[s].index(col)
        return self._col(s, self._groups[s][1][shape.prefix_groups + at])

    def stamps(self, s: int) -> list[bytes]:
        """Shape s's stamps (bracket form)."""
        return self._col(s, self._groups[s][1][0], value=False)

    def tags(self, s: int) -> list[bytes]:
        """Shape s's rank tags as printed (bracket form; empty where none)."""
        return self._col(s, self._groups[s][1][1], value=False)

    def rows(self, s: int) -> list[tuple[bytes, ...]]:
        if not self.count(s):
            return []
        if self._layout.whole[s] is not None:
            return [self.row(i) for i in self.index(s)]
        return list(zip(*self.columns(s), strict=True))

    def row(self, i: int) -> tuple[bytes, ...]:
        """Row i (an index among all rows), as `rows` gives it: prefix, then every value."""
        at = i * self._step
        split = self._split
        for s, (g, cols) in enumerate(self._groups):
            text = split[at + g]
            if text is None:
                continue
            whole = self._layout.whole[s]
            if whole is None:
                return tuple(split[at + c] for c in cols)  # type: ignore[misc]
            base = self.shapes[s].prefix_groups
            m = whole.match(text + b"\n")
            assert m is not None  # the same text matched the same pattern, with fewer groups
            head: list[bytes] = [split[at + c] for c in cols[:base]]  # type: ignore[misc]
            return (*head, *m.groups())
        raise IndexError(i)

    def index(self, s: int) -> list[int]:
        """Shape s's rows as indexes among all rows."""
        if self._index is None:
            self._index = {}
        got = self._index.get(s)
        if got is None:
            own = self._rows_of(s)
            got = self._index[s] = (list(range(self.rows_total)) if own is None
                                    else list(compress(range(self.rows_total), own)))
        return got

    def which(self) -> list[int]:
        """Every row's shape."""
        if len(self.shapes) == 1:
            return [0] * self.rows_total
        out = [0] * self.rows_total
        for s in range(1, len(self.shapes)):
            for i in self.index(s):
                out[i] = s
        return out

    # -- line numbers --------------------------------------------------------------------

    def row_lines(self) -> list[int]:
        """Every row's line number."""
        n = self.rows_total
        counts = list(accumulate(map(bytes.count, self.gaps, repeat(b"\n"))))
        self._lines = counts[-1] + n - 1
        return list(map(add, counts[:n], range(self.first_line, self.first_line + n)))

    def lines_of_rows(self, rows: list[int]) -> list[int]:
        """The line numbers of a few rows (indexes among all rows, ascending)."""
        ends = self._gap_ends()
        return [self.first_line + i + self._newlines(ends[i]) for i in rows]

    def locate(self, starts: list[int]) -> list[tuple[int, int]]:
        """(line number, rows before it) of lines of `other_text` at these offsets
        (ascending)."""
        ends = self._gap_ends()
        out = []
        for start in starts:
            rows = bisect_right(ends, start - 1)
            out.append((self.first_line - 1 + rows + self._newlines(start), rows))
        return out

    def _gap_ends(self) -> list[int]:
        if self._ends is None:
            self._ends = list(accumulate(map(len, self.gaps)))
        return self._ends

    # -- the other records ---------------------------------------------------------------

    def add_other(self, rec: Record, rows_before: int) -> None:
        self.others.append(rec)
        self._other_at.append(rows_before)

    def other_positions(self) -> list[int]:
        """Rows before each other record (it comes after those, before the next row)."""
        return self._other_at

    def order(self) -> list[int]:
        """Per record in file order: its shape, or -1 for the next of `others`."""
        return self._merge(self.which(), [-1] * len(self.others))

    def line_no(self) -> list[int]:
        """Per record in file order: its line number."""
        return self._merge(self.row_lines(), [r["line"] for r in self.others])

    def _merge(self, rows: list[int], others: list[int]) -> list[int]:
        if not others:
            return rows
        out: list[int] = []
        done = 0
        for k, item in zip(self._other_at, others, strict=True):
            out.extend(rows[done:k])
            out.append(item)
            done = k
        out.extend(rows[done:])
        return out
