"""A piece of a log's records as compact series, as a reading process hands it back.

The rows of a learned shape (`dash.core.log.shapes`) are kept a column per value, their
stamps as indexes into one byte string of the piece's distinct stamp texts and their rank
tags as indexes into the few distinct tags; every other record stays a dict. A piece comes
with the epoch time of each of its distinct stamps, so that the replay's times are taken a
column at a time, and with its values still as text: they are read into typed arrays (ints in
as few bytes as their largest value needs, floats in 8, bools in 1) when the replay first asks
for the piece's records (`SeriesPiece.opened`). Every step over all the records runs in C
(`map`, `itertools`, `array`), not a Python loop.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate, count, islice, repeat
from math import inf, isnan
from typing import Any

from dash.core.log.batch import Batch
from dash.core.log.convert import PCT, read_plain
from dash.core.log.parser import Record
from dash.core.log.shapes import Shape
from dash.core.log.timestamps import normalise_stamps

_CODES = {"int": "B", "float": "d", "bool": "b", **dict.fromkeys(PCT, "d")}
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


_FIT = ((1 << 8, "B"), (1 << 16, "H"), (1 << 32, "I"))


def read_column(kind: str, text: bytes) -> array[Any]:
    """A column's values read from their text (one a line) into an array of their kind, an
    int one in as few bytes as its largest value needs. The array is made at its size: one
    grown a value at a time leaves its growth behind as holes in the heap."""
    texts = text.split(b"\n")
    values = list(map(_READ[kind], texts)) if kind in _READ else read_plain(kind, texts)
    code = _CODES[kind]
    if code == "B":
        top = max(values)
        code = next((c for limit, c in _FIT if top < limit), "Q")
    return array(code, values)


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


@dataclass
class _Rows:
    """One shape's rows: line numbers, stamp and rank indexes, and per value the texts of its
    values (one per block read, joined into one by `SeriesPiece.finish`), read into a typed
    array when the piece's records are first asked for (`SeriesPiece.opened`)."""

    shape: Shape
    lines: array[int] = field(default_factory=lambda: array("B"))
    ts: array[int] = field(default_factory=lambda: array("B"))
    rank: array[int] = field(default_factory=lambda: array("B"))
    texts: list[list[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.texts:
            self.texts = [[] for _ in self.shape.kinds]

    def __len__(self) -> int:
        return len(self.lines)

    def columns(self) -> list[array[Any]]:
        """Each value's typed column."""
        if not len(self):
            return [array(_CODES[k]) for k in self.shape.kinds]
        return [read_column(k, b"\n".join(t)) for k, t in zip(self.shape.kinds, self.texts,
                                                               strict=True)]


_Opened = tuple["array[int]", list[list["array[Any]"]]]
"""Per record its index in its store (`SeriesPiece.opened`), and per shape its columns."""


@dataclass
class SeriesPiece:
    """The records of a piece in file order: `order[i]` names shape `shapes[order[i]]` or
    -1 for the next of `others`; per shape the columns; stamps as indexes into `stamps`
    (0: none), each other record's too (`other_ts`); rank tags into `ranks`. Line numbers
    count from the piece's first line. `epochs[i]`: the time of stamp i where its date
    is printed (-inf: no time), NaN where it depends on the stamps before (no date).
    What `finish` hands on is compact: the stamps in one byte string, each value column in
    one text.

    A reading process hands the values on as their texts: reading them into numbers (a
    sixth of its time) waits until the replay first asks for the piece's records, so
    that a replay's first frame does not wait for the numbers of the whole log."""

    shapes: list[Shape] = field(default_factory=list)
    rows: list[_Rows] = field(default_factory=list)
    order: array[int] = field(default_factory=lambda: array("b"))
    others: list[Record] = field(default_factory=list)
    other_ts: array[int] = field(default_factory=lambda: array("I"))
    texts: list[str | None] = field(default_factory=lambda: [None])
    """The distinct stamp texts while the piece is read (`stamps` once finished)."""
    stamps: _Texts = field(default_factory=_Texts)
    """The distinct stamp texts in one byte string (`finish`): index 0 is None."""
    ranks: list[str | None] = field(default_factory=lambda: [None])
    epochs: array[float] = field(default_factory=lambda: array("d"))
    times: array[float] = field(default_factory=lambda: array("d"))
    """Per record the latest time of it and the records before it in the piece (-inf: none
    yet), worked out here where every stamp's time is known (`finish`); empty otherwise."""
    _stamp: _Index = field(default_factory=_Index)
    _rank: _Index = field(default_factory=_Index)
    _opened: _Opened | None = None

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
        for texts, col in zip(store.texts, cols[base:], strict=True):
            texts.append(b"\n".join(col))  # a value's text holds no newline

    def finish(self, epoch_of: Any) -> None:
        """Work out the time of each distinct stamp (`epoch_of`: texts -> times), and each
        record's running latest time where none depends on the stamps before it (NaN); keep
        what the piece hands on compact."""
        self.epochs = epochs = array("d", epoch_of(self.texts))
        if len(epochs) == len(self.texts) and not any(map(isnan, epochs)):
            own = map(epochs.__getitem__, piece_stamps(self, len(self.order)))
            self.times = array("d", islice(accumulate(own, max, initial=-inf), 1, None))
        self.stamps.extend(self.texts[1:])  # type: ignore[arg-type]
        self.texts, self._stamp, self._rank = [None], _Index(), _Index()
        for rows in self.rows:
            rows.texts = [[b"\n".join(t)] for t in rows.texts]

    @property
    def ready(self) -> _Opened | None:
        """What `opened` gives, once it has been read (else None)."""
        return self._opened

    def opened(self) -> _Opened:
        """Per record its index in its store, and each shape's values as typed columns: read
        the first time they are asked for, then kept (and the texts dropped). One thread at a
        time the first time (`RecordSeries` asks under its lock)."""
        got = self._opened
        if got is None:
            counters = [*(count() for _ in self.rows), count()]  # the others' last (-1)
            at = array("I", map(next, map(counters.__getitem__, self.order)))
            got = self._opened = (at, [rows.columns() for rows in self.rows])
            for rows in self.rows:
                rows.texts = []
        return got

    def record(self, k: int, offset: int, opened: _Opened) -> Record:
        """The piece's record k, its line number moved by `offset` (the others' already are)."""
        at, columns = opened
        s, i = self.order[k], at[k]
        if s < 0:
            return self.others[i]
        rows = self.rows[s]
        shape = rows.shape
        fam = shape.family
        ts = rank = None
        if shape.prefix_groups:
            ts, rank = self.stamps[rows.ts[i]], self.ranks[rows.rank[i]]
        rec: Record = {"kind": fam.kind, "line": rows.lines[i] + offset, "ts": ts, "rank": rank,
                       "engine": fam.engine}
        vals = [bool(col[i]) if kind == "bool" else col[i]
                for kind, col in zip(shape.kinds, columns[s], strict=True)]
        for key, col in zip(shape.keys, shape.cols, strict=True):
            rec[key] = None if col is None else vals[col]
        return rec


def piece_stamps(piece: SeriesPiece, stop: int) -> Iterator[int]:
    """The stamp index (into `texts` while the piece is read, `stamps` once finished) of
    each of the piece's first `stop` records."""
    feeds = [iter(r.ts) if r.shape.prefix_groups else repeat(0) for r in piece.rows]
    feeds.append(iter(piece.other_ts))
    return map(next, map(feeds.__getitem__, piece.order[:stop]))
