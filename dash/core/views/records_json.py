"""`kdash export`'s JSON lines of a `Batch`, byte for byte what `json.dumps` gives a record.

A process that reads a piece of the log is handed the file's number of the piece's first
line, so each block's text is final where it is made. Shape rows are written with one `%`
template per shape (its head, the line number, then `Shape.json_tail`): the values are plain,
so an int is its own text, a float is its `repr` (as `json` writes it) and a bool
`true`/`false`; the other records go through `json`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from dash.core.log.batch import Batch, stamp_text
from dash.core.log.convert import PCT, read_plain
from dash.core.log.parser import Record
from dash.core.log.shapes import Shape
from dash.core.log.timestamps import normalised_joined

_BOOL = {b"True": b"true", b"False": b"false"}
_JSON: dict[str, Callable[[list[bytes]], Any]] = {
    # a plain int is its own JSON; the template prints a float with `%r`, as json does
    "int": lambda col: col,
    "float": lambda col: list(map(float, col)),
    "bool": lambda col: list(map(_BOOL.__getitem__, col)),
    **{kind: partial(read_plain, kind) for kind in PCT},  # a percent: its fraction, a float
}


_MAX_STAMPS = 8192


def json_text(text: str) -> bytes:
    """`json.dumps(text)`, quicker for the printable ASCII a stamp is."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return b'"%s"' % text.encode("ascii")
    return json.dumps(text).encode()


def head(kind: str) -> bytes:
    return b'{"kind":' + json.dumps(kind).encode() + b',"line":'


def dumps(rec: Record) -> str:
    return json.dumps(rec, separators=(",", ":"))


class ShapeWriter:
    """The JSON lines of one shape's rows, a column at a time."""

    def __init__(self, shape: Shape) -> None:
        self.template = head(shape.family.kind).replace(b"%", b"%%") + b"%d" + shape.json_tail()
        self.base = shape.prefix_groups
        self.kinds = shape.kinds
        self.key_cols = [c for c in shape.cols if c is not None]  # a fallback repeats a column
        self.ts: dict[bytes, bytes] = {}
        self.ranks: dict[bytes, bytes] = {}

    def _stamps(self, col: list[bytes], stamps: dict[bytes, str]) -> list[bytes]:
        if len(self.ts) > _MAX_STAMPS:
            self.ts.clear()  # a log's stamps move on: keep the recent ones only (never
            # between filling and reading: this block's stamps are all looked up below)
        fresh = list(set(col).difference(self.ts))
        joined = normalised_joined(fresh) if fresh else None
        if joined is not None:  # plain stamps: printable ASCII, their JSON is their quoted text
            texts = (b'"' + joined.replace(b"\n", b'"\n"') + b'"').split(b"\n")
            self.ts.update(zip(fresh, texts, strict=True))
        else:
            for stamp in fresh:
                self.ts[stamp] = json_text(stamp_text(stamp, stamps))
        return list(map(self.ts.__getitem__, col))

    def _ranks(self, col: list[bytes]) -> list[bytes]:
        for tags in set(col).difference(self.ranks):
            self.ranks[tags] = json.dumps(tags.decode("ascii").strip() or None).encode()
        return list(map(self.ranks.__getitem__, col))

    def rows(self, cols: list[list[bytes]], lines: list[int], stamps: dict[bytes, str]
             ) -> list[bytes]:
        """The JSON lines of a shape's rows, from their line numbers and their columns
        (`Batch.columns`)."""
        if not cols or not cols[0]:
            return []
        if self.base:
            ts, rank = self._stamps(cols[0], stamps), self._ranks(cols[1])
        else:
            ts = rank = [b"null"] * len(cols[0])
        values = [_JSON[k](col) for k, col in zip(self.kinds, cols[self.base:], strict=True)]
        args = [values[c] for c in self.key_cols]
        return list(map(self.template.__mod__, zip(lines, ts, rank, *args, strict=True)))


def text(batch: Batch, stamps: dict[bytes, str], writers: dict[bytes, ShapeWriter],
         kinds: tuple[str, ...] = ("decode", "prefill", "event")) -> bytes:
    """The JSON lines of the batch's records of `kinds`, in file order, with the line numbers
    the batch has (the file's own when the reader was handed its first line's)."""
    ws = [writers.setdefault(s.pattern, ShapeWriter(s)) for s in batch.shapes]
    per_shape = [w.rows(batch.columns(i), batch.shape_lines(i), stamps) if batch.count(i) else []
                 for i, w in enumerate(ws)]
    if not batch.others and sum(map(bool, per_shape)) <= 1:
        return b"".join(next(filter(None, per_shape), []))
    # unparsed records are left out: an empty text in their place
    others = [dumps(rec).encode() + b"\n" if rec["kind"] in kinds else b""
              for rec in batch.others]
    sources = [*(iter(t) for t in per_shape), iter(others)]
    return b"".join(map(next, map(sources.__getitem__, batch.order())))
