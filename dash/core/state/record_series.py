"""A log's records kept as compact series: a replay holds millions without a dict each.

The rows of a learned shape (`dash.core.log.shapes`) are kept a column per value in typed
arrays (ints in as few bytes as their largest value needs, floats in 8, bools in 1), their
stamps as indexes into one byte string of the distinct stamp texts and their rank tags as
indexes into the few distinct tags; every other record stays a dict. `RecordSeries` reads as
a sequence of records: indexing or slicing it gives the very dicts the parser gives.
`SeriesPiece` is what a reading process hands back for a piece of the log, with the epoch
time of each of its distinct stamps, so that the replay's times are taken a column at a time.
Every step over all the records runs in C (`map`, `itertools`, `array`), not a Python loop.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, count, islice, repeat
from math import inf, isnan
from operator import add
from typing import Any, overload

from dash.core.log.batch import Batch
from dash.core.log.parser import Record
from dash.core.log.shapes import Shape
from dash.core.log.timestamps import normalise_stamps

_CODES = {"int": "B", "float": "d", "bool": "b"}
_READ: dict[str, Any] = {"int": int, "float": float, "bool": {b"True": 1, b"False": 0}.__getitem__}
_WIDER = {"B": "H", "H": "I", "I": "Q"}
_ORDER = "BHIQ"


def extend(col: array[Any], values: Iterable[Any]) -> array[Any]:
    """`col` with `values` appended; an unsigned column whose type a value overflows is first
    moved to the next wider type (a plain int is never negative)."""
    if isinstance(values, array):
        if values.typecode != col.typecode:  # unsigned columns of two widths: the wider
            wide = max(col.typecode, values.typecode, key=_ORDER.index)
            col = col if col.typecode == wide else array(wide, col)
            values = values if values.typecode == wide else array(wide, values)
    elif not isinstance(values, list):
        values = list(values)
    start = len(col)
    while True:
        try:
            col.extend(values)
            return col
        except OverflowError:
            if col.typecode not in _WIDER:
                raise
            del col[start:]  # what was appended before the value that overflowed
            col = array(_WIDER[col.typecode], col)


def extend_read(col: array[Any], texts: list[bytes], read: Any) -> array[Any]:
    """`extend(col, map(read, texts))` without a list in between."""
    start = len(col)
    while True:
        try:
            col.extend(map(read, texts))
            return col
        except OverflowError:
            if col.typecode not in _WIDER:
                raise
            del col[start:]
            col = array(_WIDER[col.typecode], col)


class _Index:
    """Distinct texts and their indexes; index 0 is None."""

    def __init__(self) -> None:
        self.texts: list[str | None] = [None]
        self._at: dict[str | None, int] = {None: 0}

    def __call__(self, text: str | None) -> int:
        i = self._at.get(text)
        if i is None:
            i = self._at[text] = len(self.texts)
            self.texts.append(text)
        return i

    def many(self, texts: list[str | None]) -> list[int]:
        """The index of each of these texts (new ones added in order of first appearance)."""
        at = self._at
        fresh = [t for t in dict.fromkeys(texts) if t not in at]
        at.update(zip(fresh, range(len(self.texts), len(self.texts) + len(fresh)), strict=True))
        self.texts.extend(fresh)
        return list(map(at.__getitem__, texts))


@dataclass
class _Rows:
    """One shape's rows: line numbers, stamp and rank indexes, one array per value."""

    shape: Shape
    lines: array[int] = field(default_factory=lambda: array("B"))
    ts: array[int] = field(default_factory=lambda: array("B"))
    rank: array[int] = field(default_factory=lambda: array("B"))
    values: list[array[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.values:
            self.values = [array(_CODES[k]) for k in self.shape.kinds]

    def __len__(self) -> int:
        return len(self.lines)


@dataclass
class SeriesPiece:
    """The records of a piece in file order: `order[i]` names shape `shapes[order[i]]` or
    -1 for the next of `others`; per shape the columns; stamps as indexes into `texts`
    (0: none), each other record's too (`other_ts`); rank tags into `ranks`. Line numbers
    count from the piece's first line. `epochs[i]`: the time of `texts[i]` where its date
    is printed (-inf: no time), NaN where it depends on the stamps before (no date)."""

    shapes: list[Shape] = field(default_factory=list)
    rows: list[_Rows] = field(default_factory=list)
    order: array[int] = field(default_factory=lambda: array("b"))
    others: list[Record] = field(default_factory=list)
    other_ts: array[int] = field(default_factory=lambda: array("I"))
    texts: list[str | None] = field(default_factory=lambda: [None])
    ranks: list[str | None] = field(default_factory=lambda: [None])
    epochs: array[float] = field(default_factory=lambda: array("d"))
    times: array[float] = field(default_factory=lambda: array("d"))
    """Per record the latest time of it and the records before it in the piece (-inf: none
    yet), worked out here where every stamp's time is known (`finish`); empty otherwise."""
    _stamp: _Index = field(default_factory=_Index)
    _rank: _Index = field(default_factory=_Index)

    def __post_init__(self) -> None:
        self.texts, self.ranks = self._stamp.texts, self._rank.texts

    def add(self, batch: Batch, stamps: dict[bytes, str]) -> None:
        slots = [self._slot(shape) for shape in batch.shapes]
        self.order.extend(map([*slots, -1].__getitem__, batch.order()))
        for rec in batch.others:
            ts = rec.get("ts")
            self.others.append(rec)
            self.other_ts.append(self._stamp(ts if isinstance(ts, str) and ts else None))
        for s, slot in enumerate(slots):
            if batch.count(s):
                self._add_rows(self.rows[slot], batch.columns(s), batch.shape_lines(s), stamps)

    def _slot(self, shape: Shape) -> int:
        for i, s in enumerate(self.shapes):
            if s.pattern == shape.pattern:
                return i
        self.shapes.append(shape)
        self.rows.append(_Rows(shape))
        return len(self.shapes) - 1

    def _add_rows(self, store: _Rows, cols: list[list[bytes]], lines: list[int],
                  stamps: dict[bytes, str]) -> None:
        store.lines = extend(store.lines, lines)
        base = store.shape.prefix_groups
        if base:
            distinct = list(dict.fromkeys(cols[0]))
            fresh = [b for b in distinct if b not in stamps]
            stamps.update(zip(fresh, normalise_stamps(fresh), strict=True))
            ids = dict(zip(distinct, self._stamp.many(list(map(stamps.__getitem__, distinct))),
                           strict=True))
            store.ts = extend(store.ts, list(map(ids.__getitem__, cols[0])))
            rids = {b: self._rank(b.decode("ascii").strip() or None) for b in set(cols[1])}
            store.rank = extend(store.rank, list(map(rids.__getitem__, cols[1])))
        for i, kind in enumerate(store.shape.kinds):
            store.values[i] = extend_read(store.values[i], cols[base + i], _READ[kind])

    def finish(self, epoch_of: Any) -> None:
        """Work out the time of each distinct stamp (`epoch_of`: texts -> times), and each
        record's running latest time where none depends on the stamps before it (NaN)."""
        self.epochs = epochs = array("d", epoch_of(self.texts))
        if len(epochs) == len(self.texts) and not any(map(isnan, epochs)):
            own = map(epochs.__getitem__, piece_stamps(self, len(self.order)))
            self.times = array("d", islice(accumulate(own, max, initial=-inf), 1, None))


class _Texts:
    """Texts kept in one byte string; index 0 is None."""

    def __init__(self) -> None:
        self.blob = bytearray()
        self.ends = array("Q", [0])

    def __len__(self) -> int:
        return len(self.ends)

    def extend(self, texts: Iterable[str]) -> None:
        coded = [t.encode() for t in texts]
        self.blob += b"".join(coded)
        self.ends.extend(islice(accumulate(map(len, coded), initial=self.ends[-1]), 1, None))

    def __getitem__(self, i: int) -> str | None:
        return self.blob[self.ends[i - 1]:self.ends[i]].decode() if i else None


class RecordSeries(Sequence[Record]):
    """Records in file order, most of them as columns; reads as a list of record dicts."""

    def __init__(self) -> None:
        self._stamps = _Texts()
        self._rank = _Index()
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
        slots = [self._slot(r.shape) for r in piece.rows]
        taken = [order.count(s) for s in range(len(slots))]
        others = len(order) - sum(taken)
        # per record its index in its store: a counter per slot, the dicts' last (slot -1)
        counters = [*(count(len(self._shapes[g])) for g in slots), count(len(self._dicts))]
        self._at.extend(map(next, map(counters.__getitem__, order)))
        self._src.extend(map([*slots, -1].__getitem__, order))
        for rec in piece.others[:others]:
            rec["line"] += offset  # the piece is ours: its dicts are moved in place
            self._dicts.append(rec)
        shift = len(self._stamps) - 1  # the piece's stamp i (> 0) is ours shift + i
        self._stamps.extend(piece.texts[1:])  # type: ignore[arg-type]
        ranks = [self._rank(t) for t in piece.ranks]
        for rows, g, n in zip(piece.rows, slots, taken, strict=True):
            if n:
                self._extend_rows(self._shapes[g], rows, n, offset, shift, ranks)
        return len(order)

    @staticmethod
    def _extend_rows(dst: _Rows, rows: _Rows, n: int, offset: int, shift: int,
                     ranks: list[int]) -> None:
        dst.lines = extend(dst.lines, list(map(add, rows.lines[:n], repeat(offset))))
        if rows.shape.prefix_groups:
            dst.ts = extend(dst.ts, list(map(add, rows.ts[:n], repeat(shift))))
            dst.rank = extend(dst.rank, list(map(ranks.__getitem__, rows.rank[:n])))
        for i, col in enumerate(rows.values):
            dst.values[i] = extend(dst.values[i], col[:n])

    def _record(self, i: int) -> Record:
        s, k = self._src[i], self._at[i]
        if s < 0:
            return self._dicts[k]
        rows = self._shapes[s]
        shape = rows.shape
        fam = shape.family
        ts = rank = None
        if shape.prefix_groups:
            ts, rank = self._stamps[rows.ts[k]], self._rank.texts[rows.rank[k]]
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


def piece_stamps(piece: SeriesPiece, stop: int) -> Iterator[int]:
    """The stamp index (into `piece.texts`) of each of the piece's first `stop` records."""
    feeds = [iter(r.ts) if r.shape.prefix_groups else repeat(0) for r in piece.rows]
    feeds.append(iter(piece.other_ts))
    return map(next, map(feeds.__getitem__, piece.order[:stop]))
