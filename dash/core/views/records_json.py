"""`kdash export`'s JSON lines of a `Batch`, byte for byte what `json.dumps` gives a record.

A record's text is cut at its line number: a head (`{"kind":"decode","line":`), the number,
and a tail; a process that reads a piece of the log counts its lines from 1, and whoever
stitches the pieces adds the lines before (`stitch`). Shape rows are written with a template
per shape (`Shape.json_tail`): the values are plain, so an int is its own text, a float is its
`repr` (as `json` writes it) and a bool `true`/`false`; the other records go through `json`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import chain, compress, repeat
from operator import add
from typing import Any

from dash.core.log.batch import Batch, stamp_text
from dash.core.log.parser import Record
from dash.core.log.shapes import Shape

Cut = tuple[list[bytes], list[int], list[bytes]]
"""Heads, line numbers and tails, one each per record."""

_BOOL = {b"True": b"true", b"False": b"false"}
_JSON: dict[str, Callable[[list[bytes]], Any]] = {
    # a plain int is its own JSON; the template prints a float with `%r`, as json does
    "int": lambda col: col,
    "float": lambda col: list(map(float, col)),
    "bool": lambda col: list(map(_BOOL.__getitem__, col)),
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


def _record_cut(rec: Record) -> tuple[bytes, bytes]:
    text = dumps(rec).encode()
    h = head(rec["kind"])
    if not text.startswith(h):  # never: every record starts with its kind and line
        raise ValueError(f"a record that does not start with kind and line: {text[:80]!r}")
    line = str(rec["line"]).encode()
    return h, text[len(h) + len(line):] + b"\n"


class ShapeWriter:
    """The tails of one shape's rows, a column at a time."""

    def __init__(self, shape: Shape) -> None:
        self.template = shape.json_tail()
        self.head = head(shape.family.kind)
        self.base = shape.prefix_groups
        self.kinds = shape.kinds
        self.key_cols = [c for c in shape.cols if c is not None]  # a fallback repeats a column
        self.ts: dict[bytes, bytes] = {}
        self.ranks: dict[bytes, bytes] = {}

    def _stamps(self, col: list[bytes], stamps: dict[bytes, str]) -> list[bytes]:
        for stamp in set(col).difference(self.ts):
            self.ts[stamp] = json_text(stamp_text(stamp, stamps))
        if len(self.ts) > _MAX_STAMPS:
            self.ts.clear()  # a log's stamps move on: keep the recent ones only
        return list(map(self.ts.__getitem__, col))

    def _ranks(self, col: list[bytes]) -> list[bytes]:
        for tags in set(col).difference(self.ranks):
            self.ranks[tags] = json.dumps(tags.decode("ascii").strip() or None).encode()
        return list(map(self.ranks.__getitem__, col))

    def tails(self, cols: list[list[bytes]], stamps: dict[bytes, str]) -> list[bytes]:
        """The tails of a shape's rows, from its columns (`Batch.columns`)."""
        if not cols or not cols[0]:
            return []
        if self.base:
            ts, rank = self._stamps(cols[0], stamps), self._ranks(cols[1])
        else:
            ts = rank = [b"null"] * len(cols[0])
        values = [_JSON[k](col) for k, col in zip(self.kinds, cols[self.base:], strict=True)]
        args = [values[c] for c in self.key_cols]
        return list(map(self.template.__mod__, zip(ts, rank, *args, strict=True)))


def cut(batch: Batch, stamps: dict[bytes, str], writers: dict[bytes, ShapeWriter],
        kinds: tuple[str, ...] = ("decode", "prefill", "event")) -> Cut:
    """The batch's records of `kinds`, as heads, line numbers and tails, in file order."""
    ws = [writers.setdefault(s.pattern, ShapeWriter(s)) for s in batch.shapes]
    per_shape = [w.tails(batch.columns(i), stamps) if batch.count(i) else []
                 for i, w in enumerate(ws)]
    other_cuts = [_record_cut(rec) if rec["kind"] in kinds else None for rec in batch.others]
    heads_of = [w.head for w in ws]
    order, line_no = batch.order(), batch.line_no()
    if not batch.others and len(per_shape) == 1:
        return [heads_of[0]] * len(order), line_no, per_shape[0]
    # per record in file order, the next head and tail of its shape (the others' last)
    kept = [c for c in other_cuts if c is not None]
    heads_from = [*(repeat(h) for h in heads_of), iter([h for h, _ in kept])]
    tails_from = [*(iter(t) for t in per_shape), iter([t for _, t in kept])]
    if len(kept) < len(other_cuts):  # unparsed records are left out
        flags = iter([c is not None for c in other_cuts])
        keep = [s >= 0 or next(flags) for s in order]
        order, line_no = list(compress(order, keep)), list(compress(line_no, keep))
    heads = list(map(next, map(heads_from.__getitem__, order)))
    tails = list(map(next, map(tails_from.__getitem__, order)))
    return heads, line_no, tails


def stitch(piece: Cut, offset: int) -> bytes:
    """The text of a cut piece whose line numbers count from `offset + 1`."""
    heads, lines, tails = piece
    numbers = (b"%d" % n for n in map(add, lines, repeat(offset)))
    return b"".join(chain.from_iterable(zip(heads, numbers, tails, strict=True)))
