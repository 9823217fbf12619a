"""A log's records kept as compact series: a replay holds millions without a dict each.

The rows of a learned shape (`dash.core.log.shapes`) are kept a column per value in typed
arrays (ints in 4 bytes while they fit, floats in 8, bools in 1), their stamps and rank tags
as indexes into the distinct texts; every other record stays a dict. `RecordSeries` reads as
a sequence of records: indexing or slicing it gives the very dicts the parser gives.
`SeriesPiece` is what a reading process hands back for a piece of the log.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import add
from typing import Any, overload

from dash.core.log.batch import Batch, stamp_text
from dash.core.log.parser import Record
from dash.core.log.shapes import Shape

_CODES = {"int": "i", "float": "d", "bool": "b"}
_READ: dict[str, Any] = {"int": int, "float": float, "bool": {b"True": 1, b"False": 0}.__getitem__}


def _widen(col: array[Any], values: Sequence[Any]) -> array[Any]:
    """Append, moving an int column to 8 bytes when a value does not fit in 4."""
    try:
        col.extend(values)
    except OverflowError:
        col = array("q", col)
        col.extend(values)
    return col


def _intern(texts: list[str | None], index: dict[str | None, int], text: str | None) -> int:
    """The index of `text` in `texts`, added once (stamps and rank tags repeat)."""
    i = index.get(text)
    if i is None:
        i = index[text] = len(texts)
        texts.append(text)
    return i


@dataclass
class _Rows:
    """One shape's rows: line numbers, stamp and rank indexes, one array per value."""

    shape: Shape
    lines: array[int] = field(default_factory=lambda: array("I"))
    ts: array[int] = field(default_factory=lambda: array("I"))
    rank: array[int] = field(default_factory=lambda: array("I"))
    values: list[array[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.values:
            self.values = [array(_CODES[k]) for k in self.shape.kinds]


@dataclass
class SeriesPiece:
    """The records of a piece in file order: `order[i]` names shape `shapes[order[i]]` or
    -1 for the next of `others`; per shape the columns; stamps and ranks as indexes into
    `texts` (line numbers count from the piece's first line)."""

    shapes: list[Shape] = field(default_factory=list)
    rows: list[_Rows] = field(default_factory=list)
    order: array[int] = field(default_factory=lambda: array("b"))
    others: list[Record] = field(default_factory=list)
    texts: list[str | None] = field(default_factory=list)
    _index: dict[str | None, int] = field(default_factory=dict)

    def text_id(self, text: str | None) -> int:
        return _intern(self.texts, self._index, text)

    def add(self, batch: Batch, stamps: dict[bytes, str]) -> None:
        slots = {-1: -1, **{s: self._slot(shape) for s, shape in enumerate(batch.shapes)}}
        self.order.extend(map(slots.__getitem__, batch.order()))
        self.others.extend(batch.others)
        lines = batch.row_lines()
        for s in range(len(batch.shapes)):
            if batch.count(s):
                shape_lines = [lines[i] for i in batch.index(s)]
                self._add_rows(self.rows[slots[s]], batch.columns(s), shape_lines, stamps)

    def _slot(self, shape: Shape) -> int:
        for i, s in enumerate(self.shapes):
            if s.pattern == shape.pattern:
                return i
        self.shapes.append(shape)
        self.rows.append(_Rows(shape))
        return len(self.shapes) - 1

    def _add_rows(self, store: _Rows, cols: list[list[bytes]], lines: list[int],
                  stamps: dict[bytes, str]) -> None:
        store.lines.extend(lines)
        base = store.shape.prefix_groups
        if base:
            ids = {b: self.text_id(stamp_text(b, stamps)) for b in set(cols[0])}
            store.ts.extend(map(ids.__getitem__, cols[0]))
            rids = {b: self.text_id(b.decode("ascii").strip() or None) for b in set(cols[1])}
            store.rank.extend(map(rids.__getitem__, cols[1]))
        for i, kind in enumerate(store.shape.kinds):
            store.values[i] = _widen(store.values[i], list(map(_READ[kind], cols[base + i])))


class RecordSeries(Sequence[Record]):
    """Records in file order, most of them as columns; reads as a list of record dicts."""

    def __init__(self) -> None:
        self.texts: list[str | None] = [None]
        self._index: dict[str | None, int] = {None: 0}
        self._shapes: list[_Rows] = []
        self._src = array("b")  # per record: a shape slot, or -1 for a dict in `_dicts`
        self._at = array("I")  # and its index there
        self._dicts: list[Record] = []

    def __len__(self) -> int:
        return len(self._src)

    def append(self, rec: Record) -> None:
        self._src.append(-1)
        self._at.append(len(self._dicts))
        self._dicts.append(rec)

    def _text(self, text: str | None) -> int:
        return _intern(self.texts, self._index, text)

    def _slot(self, shape: Shape) -> int:
        for i, r in enumerate(self._shapes):
            if r.shape.pattern == shape.pattern:
                return i
        self._shapes.append(_Rows(shape))
        return len(self._shapes) - 1

    def extend_piece(self, piece: SeriesPiece, offset: int, room: int) -> int:
        """Append the first `room` records of a piece, its line numbers moved by `offset`;
        how many were taken."""
        order = piece.order[:room]
        remap = [self._text(t) for t in piece.texts]
        slots = [self._slot(r.shape) for r in piece.rows]
        counters = [len(self._shapes[s].lines) for s in slots]
        start = list(counters)
        dicts = len(self._dicts)
        src, at = self._src, self._at
        for s in order:
            if s < 0:
                src.append(-1)
                at.append(dicts)
                dicts += 1
            else:
                src.append(slots[s])
                at.append(counters[s])
                counters[s] += 1
        for rec in piece.others[:dicts - len(self._dicts)]:
            rec["line"] += offset  # the piece is ours: its dicts are moved in place
            self._dicts.append(rec)
        for s, rows in enumerate(piece.rows):
            dst, n = self._shapes[slots[s]], counters[s] - start[s]
            if not n:
                continue
            dst.lines = _widen(dst.lines, list(map(add, rows.lines[:n], repeat(offset))))
            if rows.shape.prefix_groups:
                dst.ts.extend(map(remap.__getitem__, rows.ts[:n]))
                dst.rank.extend(map(remap.__getitem__, rows.rank[:n]))
            for i, col in enumerate(rows.values):
                dst.values[i] = _widen(dst.values[i], col[:n])
        return len(order)

    def _record(self, i: int) -> Record:
        s, k = self._src[i], self._at[i]
        if s < 0:
            return self._dicts[k]
        rows = self._shapes[s]
        shape = rows.shape
        fam = shape.family
        ts = rank = None
        if shape.prefix_groups:
            ts, rank = self.texts[rows.ts[k]], self.texts[rows.rank[k]]
        rec: Record = {"kind": fam.kind, "line": rows.lines[k], "ts": ts, "rank": rank,
                       "engine": fam.engine}
        vals = [bool(col[k]) if kind == "bool" else col[k]
                for kind, col in zip(shape.kinds, rows.values, strict=True)]
        for key, col in zip(shape.keys, shape.cols, strict=True):
            rec[key] = None if col is None else vals[col]
        return rec

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            return [self._record(j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        return self._record(i % n)

    def __iter__(self) -> Iterator[Record]:
        return (self._record(j) for j in range(len(self)))

    def stamps(self, start: int, stop: int) -> list[str | None]:
        """The `ts` of records[start:stop], without building the records."""
        out: list[str | None] = []
        for j in range(start, stop):
            s, k = self._src[j], self._at[j]
            if s < 0:
                ts = self._dicts[k].get("ts")
                out.append(ts if isinstance(ts, str) else None)
            else:
                rows = self._shapes[s]
                out.append(self.texts[rows.ts[k]] if rows.shape.prefix_groups else None)
        return out
