"""Blocks of log bytes -> records, in one regex pass at C speed; the same records as the parser.

`BlockReader(parser).read(buf, end, first_line)` reads the whole lines `buf[1:end]` (`buf[0]`
is a newline) into a `Batch`: the rows of each learned `Shape` (`dash.core.log.shapes`) as
tuples of their bytes, and every other record as the parser gives it, all with line numbers
and in file order. One compiled pattern, tried at every line start, skips the lines the
grammar says are no records, matches the learned shapes, and hands every other line to the
parser. The lines skipped unread are the HTTP server's own (`Prefixes.foreign`, after a
bracket prefix or none): the parser reads those only for a foreign phrase (shutdown), so a
block holding one of that phrase's texts, or bytes that make the parser rewrite a line (colour
codes, carriage returns), is read without skipping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import accumulate, compress, repeat
from operator import add, attrgetter, eq, methodcaller
from typing import Any

from dash.core.log.convert import BOOLS
from dash.core.log.parser import MAX_LINE_CHARS, LineParser, Record
from dash.core.log.shapes import Shape, learn
from dash.core.log.timestamps import normalise_ts

MAX_LINE_BYTES = MAX_LINE_CHARS * 4
MAX_SHAPES = 8
_LEARN_TRIES = 3  # per block: a log whose stats lines have no shape costs little


def _noisy(buf: Buffer, end: int) -> bool:
    """Bytes that make the parser rewrite a line: carriage returns, colour codes and their
    caret residue (`^[`; searched for `^` first, which `find` scans for far quicker)."""
    if buf.find(b"\r", 0, end) >= 0 or buf.find(b"\x1b", 0, end) >= 0:
        return True
    return buf.find(b"^", 0, end) >= 0 and buf.find(b"^[", 0, end) >= 0
_lastindex = attrgetter("lastindex")
_start = methodcaller("start")
Buffer = bytes | bytearray


@dataclass
class Batch:
    """The records of one block, in file order: `order[i]` is the shape (an index into
    `shapes`) of record i, or -1 for the next of `others`; `rows[s]`: shape s's rows."""

    lines: int
    shapes: list[Shape]
    order: list[int] = field(default_factory=list)
    line_no: list[int] = field(default_factory=list)
    rows: list[list[tuple[bytes, ...]]] = field(default_factory=list)
    others: list[Record] = field(default_factory=list)


def stamp_text(stamp: bytes, cache: dict[bytes, str]) -> str:
    ts = cache.get(stamp)
    if ts is None:
        ts = cache[stamp] = normalise_ts(stamp.decode("ascii"))
    return ts


_VALUE: dict[str, Any] = {"int": int, "float": float, "bool": BOOLS.__getitem__}


def shape_record(shape: Shape, line: int, row: tuple[bytes, ...],
                 stamps: dict[bytes, str]) -> Record:
    """The record of one shape row (what the parser gives for its line)."""
    fam = shape.family
    ts = rank = None
    if shape.prefix_groups:
        ts = stamp_text(row[0], stamps)
        rank = row[1].decode("ascii").strip() or None
    rec: Record = {"kind": fam.kind, "line": line, "ts": ts, "rank": rank, "engine": fam.engine}
    base = shape.prefix_groups
    vals = [_VALUE[k](row[base + i]) for i, k in enumerate(shape.kinds)]
    for key, col in zip(shape.keys, shape.cols, strict=True):
        rec[key] = None if col is None else vals[col]
    return rec


class BlockReader:
    """Reads blocks with one parser, learning shapes as it goes (so: one per process)."""

    def __init__(self, parser: LineParser) -> None:
        self.parser = parser
        self.shapes: list[Shape] = []
        self.stamps: dict[bytes, str] = {}
        pre = parser.prefixes
        foreign = "|".join(re.escape(f) for f in pre.spec.foreign)
        self._skip = (r"(?:" + pre.bracket_plain + "(?:" + foreign + r")|(?:" + foreign
                      + r")[^\n\[]*(?=\n))").encode()
        self._guard = tuple(k.encode() for ph in parser.foreign_phrases for k in ph.keywords())
        self._compile()

    def _compile(self) -> None:
        alts = [b"(" + s.pattern + b")" for s in self.shapes]
        body = b"(?:" + b"|".join([*alts, rb"([^\n]+)"]) + b")"
        self._rows = re.compile(rb"\n(?!" + self._skip + b")" + body)
        self._rows_all = re.compile(rb"\n" + body)
        self._outer: list[int] = []  # group index of each shape's alternative
        g = 1
        for s in self.shapes:
            self._outer.append(g)
            g += 1 + s.groups
        self._other = g
        self._getters = [methodcaller("group", *range(o + 1, o + 1 + s.groups))
                         for o, s in zip(self._outer, self.shapes, strict=True)]

    def read(self, buf: Buffer, end: int, first_line: int) -> Batch:
        """The records of the whole lines `buf[1:end]`, the first numbered `first_line`."""
        skip = not any(buf.find(n, 0, end) >= 0 for n in self._guard) and not _noisy(buf, end)
        pattern = self._rows if skip else self._rows_all
        outer, getters, other = self._outer, self._getters, self._other  # learning renews them
        matches = list(pattern.finditer(buf, 0, end))
        total = end - 1 - len(buf[1:end].replace(b"\n", b""))  # newlines, counted at C speed
        batch = Batch(lines=total, shapes=list(self.shapes))
        if not matches:
            batch.rows = [[] for _ in batch.shapes]
            return batch
        ends = list(map(add, map(_start, matches), repeat(1)))  # just past each row's newline
        gaps = map(buf.count, repeat(b"\n"), [0, *ends[:-1]], ends)
        line_no = list(accumulate(gaps, initial=first_line - 1))[1:]
        which = list(map(_lastindex, matches))
        keep = self._others(batch, matches, which, line_no, other)
        shape_of = {g: i for i, g in enumerate(outer)}
        shape_of[other] = -1
        batch.order = list(map(shape_of.__getitem__, compress(which, keep)))
        batch.line_no = list(compress(line_no, keep))
        for g, getter in zip(outer, getters, strict=True):
            picked = compress(matches, map(eq, which, repeat(g)))
            batch.rows.append(list(map(getter, picked)))
        return batch

    def _others(self, batch: Batch, matches: list[re.Match[bytes]], which: list[int],
                line_no: list[int], other: int) -> list[bool]:
        """Parse the lines no shape read; learn shapes from their stats records."""
        keep = [True] * len(matches)
        tries = _LEARN_TRIES
        parse = self.parser.parse
        for i in compress(range(len(matches)), map(eq, which, repeat(other))):
            text = matches[i].group(other)[:MAX_LINE_BYTES].decode("utf-8", "replace")
            rec = parse(text, line_no[i])
            if rec is None:
                keep[i] = False
                continue
            batch.others.append(rec)
            if tries and rec["kind"] in ("decode", "prefill") and len(self.shapes) < MAX_SHAPES:
                tries -= 1
                self._learn(text, rec)
        return keep

    def _learn(self, text: str, rec: Record) -> None:
        shape = learn(self.parser, text, rec)
        if shape is None or any(s.pattern == shape.pattern for s in self.shapes):
            return
        m = re.match(shape.pattern, text.encode() + b"\n")
        if m is None or shape_record(shape, rec["line"], m.groups(), self.stamps) != rec:
            return  # never: a shape reads its own line back; kept as a guard
        self.shapes.append(shape)
        self._compile()


def records(batch: Batch, stamps: dict[bytes, str]) -> list[Record]:
    """Every record of a batch, in file order, as the parser gives them."""
    out: list[Record] = []
    cursors = [iter(r) for r in batch.rows]
    others = iter(batch.others)
    for s, line in zip(batch.order, batch.line_no, strict=True):
        if s < 0:
            out.append(next(others))
        else:
            out.append(shape_record(batch.shapes[s], line, next(cursors[s]), stamps))
    return out
