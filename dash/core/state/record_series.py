"""A log's records kept as compact series: a replay holds millions without a dict each.

`RecordSeries` keeps the pieces the reading processes hand back (`dash.core.state.series_piece`)
as they came, and reads as a sequence of records: indexing or slicing it gives the very dicts
the parser gives, built from a piece's columns when asked for.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from threading import Lock
from typing import overload

from dash.core.log.parser import Record
from dash.core.state.series_piece import SeriesPiece


@dataclass
class _Part:
    """Records `start`.. of the series: the first `taken` of a piece, or appended dicts."""

    start: int
    piece: SeriesPiece | None
    offset: int = 0
    taken: int = 0
    dicts: list[Record] = field(default_factory=list)

    def __len__(self) -> int:
        return self.taken if self.piece is not None else len(self.dicts)

    def records(self, lo: int, hi: int, lock: Lock) -> list[Record]:
        piece = self.piece
        if piece is None:
            return self.dicts[lo:hi]
        opened = piece.ready
        if opened is None:
            with lock:
                opened = piece.opened()
        offset, record = self.offset, piece.record
        return [record(k, offset, opened) for k in range(lo, hi)]


_CHUNK = 4096  # records built at a time when iterating


class RecordSeries(Sequence[Record]):
    """Records in file order, most of them as columns; reads as a list of record dicts.
    A reading process's piece is kept as it came (`extend_piece`): taking it costs next to
    nothing, and its values are read into numbers once the replay first reaches it."""

    def __init__(self) -> None:
        self._parts: list[_Part] = []
        self._starts: list[int] = []
        self._len = 0
        self._lock = Lock()  # the replay's thread reads records, and a test's may too

    def __len__(self) -> int:
        return self._len

    def _add(self, part: _Part) -> None:
        self._parts.append(part)
        self._starts.append(part.start)

    def append(self, rec: Record) -> None:
        if not self._parts or self._parts[-1].piece is not None:
            self._add(_Part(self._len, None))
        self._parts[-1].dicts.append(rec)
        self._len += 1

    def extend_piece(self, piece: SeriesPiece, offset: int, room: int) -> int:
        """Append the first `room` records of a piece, its line numbers moved by `offset`;
        how many were taken."""
        taken = max(0, min(room, len(piece.order)))
        if not taken:
            return 0
        for rec in piece.others[:piece.order[:taken].count(-1)]:
            rec["line"] += offset  # the piece is ours: its dicts are moved in place
        self._add(_Part(self._len, piece, offset, taken))
        self._len += taken
        return taken

    def _span(self, lo: int, hi: int) -> Iterator[Record]:
        """The records lo..hi-1 (0 <= lo <= hi <= len), a part at a time."""
        p = bisect_right(self._starts, lo) - 1
        while lo < hi:
            part = self._parts[p]
            stop = min(hi, part.start + len(part))
            yield from part.records(lo - part.start, stop - part.start, self._lock)
            lo, p = stop, p + 1

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            lo, hi, step = i.indices(self._len)
            if step == 1:
                return list(self._span(lo, hi)) if hi > lo else []
            return [self[j] for j in range(lo, hi, step)]
        n = self._len
        if not -n <= i < n:
            raise IndexError(i)
        i %= n
        part = self._parts[bisect_right(self._starts, i) - 1]
        return part.records(i - part.start, i - part.start + 1, self._lock)[0]

    def __iter__(self) -> Iterator[Record]:
        for lo in range(0, self._len, _CHUNK):
            yield from self._span(lo, min(self._len, lo + _CHUNK))
