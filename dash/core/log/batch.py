"""What the bulk reader makes of one block: each shape's rows as columns, the other records.

The block's rows are taken a shape at a time, one `re` split of the text per shape
(`dash.core.log.passes`). A pass takes out each row's text from its literal on and leaves
the line's prefix and its newline, so every text after a pass keeps every line break of the
block: a row's line number is the newlines before it in the text its pass split, an other
line's the newlines before it in `other_text`, each counted only when asked for, and records
are put in file order by their line numbers. What is left of a row in `other_text` (its
prefix alone) holds no record (`BlockReader` checks any that a keyword is found in).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from operator import add, floordiv, mod, mul
from typing import Any

from dash.core.log.convert import read_plain
from dash.core.log.parser import Record
from dash.core.log.passes import Layout, Pass
from dash.core.log.timestamps import normalise_ts


def newlines(text: bytes) -> int:
    """How many newlines `text` holds: deleting them finds each with `memchr`, where
    `bytes.count` compares byte by byte (twice as slow on log text)."""
    return len(text) - len(text.replace(b"\n", b""))


def stamp_text(stamp: bytes, cache: dict[bytes, str]) -> str:
    ts = cache.get(stamp)
    if ts is None:
        ts = cache[stamp] = normalise_ts(stamp.decode("ascii"))
    return ts


class Batch:
    """The records of one block: shape rows by columns, and `others` (parser records).
    Valid until the reader reads the next block (a shape's rows read whole again are read
    from the reader's buffer)."""

    def __init__(self, layout: Layout, passes: list[Pass], other_text: bytes, first_line: int,
                 source: Callable[[int], tuple[bytes | bytearray, int]]) -> None:
        self.shapes = list(layout.shapes)
        self.first_line = first_line
        self.other_text = other_text
        """The block without its rows' text after their prefixes: every line break is kept."""
        self.others: list[Record] = []
        self._layout = layout
        self._passes = passes
        self._source = source  # the text pass s split, and where it ends in that buffer
        self._full: dict[int, list[tuple[bytes, ...]]] = {}
        self._stamps: dict[int, tuple[list[bytes], list[bytes]]] = {}
        self._newlines: int | None = None
        self._at = self._seen = 0  # newlines in other_text[:_at]
        self.rows_total = sum(p.count for p in passes)

    @property
    def lines(self) -> int:
        """How many lines the block has."""
        return self._total() - 1

    def _total(self) -> int:
        if self._newlines is None:
            self._newlines = newlines(self.other_text)
        return self._newlines

    # -- rows ----------------------------------------------------------------------------

    def count(self, s: int) -> int:
        """How many rows shape s has."""
        return self._passes[s].count

    def _prefix_cols(self, s: int) -> tuple[list[bytes], list[bytes]]:
        got = self._stamps.get(s)
        if got is None:
            p = self._passes[s]
            stamp, tags = p.heads
            got = self._stamps[s] = (list(map(stamp.__getitem__, p.prefixes())),
                                     list(map(tags.__getitem__, p.prefixes())))
        return got

    def stamps(self, s: int) -> list[bytes]:
        """Shape s's stamps (bracket form)."""
        return self._prefix_cols(s)[0]

    def tags(self, s: int) -> list[bytes]:
        """Shape s's rank tags as printed (bracket form; empty where none)."""
        return self._prefix_cols(s)[1]

    def columns(self, s: int) -> list[list[bytes]]:
        """Shape s's columns: stamp and tags (bracket form), then one per value."""
        if self._layout.full[s] is not None:  # not every value taken: read the rows whole
            return [list(c) for c in zip(*self.rows(s), strict=True)]
        p = self._passes[s]
        head = list(self._prefix_cols(s)) if p.widths else []
        return [*head, *(p.column(i) for i in range(len(self.shapes[s].kinds)))]

    def column(self, s: int, key: str) -> list[bytes] | None:
        """The column shape s reads a record key from, or None (not read, or null).
        The key's values must be taken (`BlockReader(keep=...)`)."""
        shape = self.shapes[s]
        if key not in shape.keys:
            return None
        col = shape.cols[shape.keys.index(key)]
        if col is None:
            return None
        return self._passes[s].column(self._layout.captured[s].index(col))

    def numbers(self, s: int, key: str) -> list[Any] | None:
        """The values of `column(s, key)` as the record holds them (a percent as its
        fraction), or None."""
        texts = self.column(s, key)
        if texts is None:
            return None
        shape = self.shapes[s]
        kind = shape.kinds[shape.cols[shape.keys.index(key)]]  # type: ignore[index]
        return read_plain(kind, texts)

    def rows(self, s: int) -> list[tuple[bytes, ...]]:
        """Shape s's rows: stamp and tags (bracket form), then every value."""
        if not self.count(s):
            return []
        if self._layout.full[s] is None:
            return list(zip(*self.columns(s), strict=True))
        got = self._full.get(s)
        if got is None:
            full = self._layout.full[s]
            assert full is not None
            text, end = self._source(s)
            with memoryview(text) as view, view[:end] as block:
                p = Pass(full, self._passes[s].widths, block, self._layout.vouch,
                         self._passes[s].heads)
            assert p.count == self.count(s)  # the same matches, with every value a group
            head = list(self._prefix_cols(s)) if p.widths else []
            cols = [*head, *(p.column(i) for i in range(len(self.shapes[s].kinds)))]
            got = self._full[s] = list(zip(*cols, strict=True))
        return got

    def row_of(self, s: int, j: int) -> tuple[bytes, ...]:
        """Row j of shape s, as `rows` gives it."""
        if self._layout.full[s] is not None:
            got = self._full.get(s)
            if got is None and j in (0, self.count(s) - 1):
                one = self._end_row(s, j)
                if one is not None:
                    return one
            return self.rows(s)[j]
        p = self._passes[s]
        head: tuple[bytes, ...] = ()
        if p.widths:
            prefix = p.prefixes()[j]
            head = (p.heads[0][prefix], p.heads[1][prefix])
        at = j * p.step + 1 + p.widths
        return (*head, *p.split[at:at + len(self.shapes[s].kinds)])  # type: ignore[arg-type]

    def _end_row(self, s: int, j: int) -> tuple[bytes, ...] | None:
        """The first or last row of shape s whole, matched alone where its pass found it:
        reading every row whole again is a second split of the block (a summary asks for a
        prefill shape's first and last row in every block); None where the match is not
        the pass's row."""
        full = self._layout.full[s]
        assert full is not None
        p = self._passes[s]
        text, end = self._source(s)
        stop = None
        if j == 0:
            at = len(p.split[0])  # type: ignore[arg-type]  # the gap before the first row
        else:
            stop = end - len(p.split[-1])  # type: ignore[arg-type]  # the last row's end
            at = text.rfind(b"\n", 0, stop) + 1 + (len(p.prefixes()[j]) if p.widths else 0)
        m = full.match(text, at, end)
        if m is None or (stop is not None and m.end() != stop):
            return None
        groups = m.groups()
        values = groups[p.widths:p.widths + len(self.shapes[s].kinds)]
        taken = p.split[j * p.step + 1 + p.widths:(j + 1) * p.step]
        if any(values[c] != got for c, got in zip(self._layout.captured[s], taken, strict=True)):
            return None
        head: tuple[bytes, ...] = ()
        if p.widths:
            prefix = p.prefixes()[j]
            if next(filter(None, groups[:p.widths])) != prefix:
                return None
            head = (p.heads[0][prefix], p.heads[1][prefix])
        return (*head, *values)

    def stamp_of(self, s: int, j: int) -> bytes:
        """Row j's stamp (bracket form)."""
        p = self._passes[s]
        return p.heads[0][p.prefixes()[j]]

    # -- line numbers --------------------------------------------------------------------

    def shape_lines(self, s: int) -> list[int]:
        """The line numbers of shape s's rows."""
        p = self._passes[s]
        if p.lines is None:
            self._newlines = p.count_lines(self.first_line)
        assert p.lines is not None
        return p.lines

    def row_line(self, s: int, j: int) -> int:
        """The line number of shape s's row j (0 or -1 without counting the others)."""
        p = self._passes[s]
        if p.lines is not None:
            return p.lines[j]
        gaps = p.split[0::p.step]
        if j == 0:
            return self.first_line - 1 + gaps[0].count(b"\n")  # type: ignore[union-attr]
        if j in (-1, p.count - 1):
            return self.first_line - 1 + self._total() - gaps[-1].count(b"\n")  # type: ignore[union-attr]
        return self.shape_lines(s)[j]

    def row_line_set(self) -> set[int]:
        """Every row's line number."""
        return {n for s in range(len(self.shapes)) if self.count(s) for n in self.shape_lines(s)}

    def locate(self, starts: list[int]) -> list[int]:
        """The line numbers of lines of `other_text` at these offsets (ascending)."""
        out = []
        for start in starts:
            if start < self._at:
                self._at = self._seen = 0
            self._seen += newlines(self.other_text[self._at:start])
            self._at = start
            out.append(self.first_line - 1 + self._seen)
        return out

    # -- the other records and file order ----------------------------------------------------

    def add_other(self, rec: Record) -> None:
        self.others.append(rec)

    def _keys(self) -> tuple[list[int], int] | None:
        """Every record's line number times `n`, plus its source (a shape, or `n - 1` for an
        other record), in file order; None when the rows of one shape are all there is."""
        n = len(self.shapes) + 1
        sources = [s for s in range(len(self.shapes)) if self.count(s)]
        if not self.others and len(sources) <= 1:
            return None
        keys: list[int] = []
        for s in sources:
            keys.extend(map(add, map(mul, self.shape_lines(s), repeat(n)), repeat(s)))
        keys.extend(r["line"] * n + n - 1 for r in self.others)
        keys.sort()
        return keys, n

    def order(self) -> list[int]:
        """Per record in file order: its shape, or -1 for the next of `others`."""
        got = self._keys()
        if got is None:
            only = [s for s in range(len(self.shapes)) if self.count(s)]
            return [only[0]] * self.rows_total if only else []
        keys, n = got
        codes = [*range(n - 1), -1]
        return list(map(codes.__getitem__, map(mod, keys, repeat(n))))

    def line_no(self) -> list[int]:
        """Per record in file order: its line number."""
        got = self._keys()
        if got is None:
            only = [s for s in range(len(self.shapes)) if self.count(s)]
            return list(self.shape_lines(only[0])) if only else []
        keys, n = got
        return list(map(floordiv, keys, repeat(n)))
