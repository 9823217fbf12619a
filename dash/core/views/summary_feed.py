"""The records `kdash summary` replays through the alert rules: a bounded, reduced stream.

Every event record, and decode records thinned to the first one of each 10 seconds of log time
(the rules look at windows of minutes). A very long log would still give too many for a quick
replay, so past `MAX_DECODES` the kept decode records are halved (every other one) and the
stride doubles, as a downsampled series does. Fast-path candidates carry their line's bytes and
are parsed only if they survive.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from dash.core.log.bulk import shape_record
from dash.core.log.parse import Record, parse_line
from dash.core.log.shapes import Shape

BUCKET_S = 10.0  # decode records are thinned to the first of each 10 s (`ts_key`)
MAX_DECODES = 1500
MAX_EVENTS = 10_000


def ts_key(ts: str | None) -> str | None:
    """The 10-second bucket of a normalised stamp: the text up to the tens of seconds."""
    if not ts:
        return None
    i = ts.rfind(":")
    return ts[:i + 2] if i >= 0 else ts


Row = tuple[Shape, bytes]
"""A learned shape's row (`BlockReader`), its texts joined by newlines (no text of a line holds
one): its record is `shape_record` of them."""


class Candidate:
    """A decode record that may be replayed: parsed already, its line's bytes, or a shape's
    row. Each DP rank has one per 10 s (`rank`: its key, None without ranks), so the replay
    sums them all."""

    __slots__ = ("line", "key", "payload", "rank")

    def __init__(self, line: int, key: str | None, payload: Record | bytes | Row,
                 rank: str | None = None) -> None:
        self.line = line
        self.key = key
        self.payload = payload
        self.rank = rank

    def __reduce__(self) -> tuple[type, tuple[int, str | None, Record | bytes | Row, str | None]]:
        return Candidate, (self.line, self.key, self.payload, self.rank)  # quicker than slots'


    def shift(self, offset: int) -> None:
        self.line += offset
        # a parsed payload is shifted by its owner (`Part.shift`), which sees every record once

    def record(self) -> Record | None:
        if isinstance(self.payload, bytes):
            return parse_line(self.payload.decode("utf-8", "replace"), self.line)
        if isinstance(self.payload, tuple):
            shape, row = self.payload
            return shape_record(shape, self.line, tuple(row.split(b"\n")), {})
        return self.payload


class AlertFeed:
    """Collects the replay stream across blocks, in file order, within fixed bounds."""

    def __init__(self, max_decodes: int = MAX_DECODES, max_events: int = MAX_EVENTS) -> None:
        self.max_decodes = max_decodes
        self.stride = 1
        self._n = 0  # candidates seen
        self._kept: list[tuple[int, Candidate]] = []
        self._events: deque[Record] = deque(maxlen=max_events)

    def add(self, candidates: Iterable[Candidate], events: Iterable[Record]) -> None:
        kept, stride = self._kept, self.stride
        for cand in candidates:
            if self._n % stride == 0:
                kept.append((self._n, cand))
            self._n += 1
        while len(kept) > self.max_decodes:
            self.stride *= 2
            kept = [(i, c) for i, c in kept if i % self.stride == 0]
        self._kept = kept
        self._events.extend(events)

    def spacing_s(self) -> float:
        """About the longest gap the thinning alone leaves between kept decode records of a
        log that printed them all along: `stride` buckets of 10 s."""
        return BUCKET_S * self.stride

    def records(self) -> list[Record]:
        """Events and kept decode records, in file order."""
        out = list(self._events)
        for _, cand in self._kept:
            rec = cand.record()
            if rec is not None:
                out.append(rec)
        out.sort(key=lambda r: r["line"])
        return out
