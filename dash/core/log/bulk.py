"""Blocks of log bytes -> records, a regex pass per shape at C speed; the parser's records.

`BlockReader(parser).read(buf, end, first_line)` reads the whole lines `buf[1:end]` (`buf[0]`
is a newline) into a `Batch` (`dash.core.log.batch`). The rows of each learned shape
(`dash.core.log.shapes`) are taken by one split of the block per shape
(`dash.core.log.passes`), led by the shape's first literal and reading the line's prefix as
printed before it (one width per prefix form seen: a prefix of another width is learned from
the line the parser reads), every value a column; what is left is the block's other lines,
and only those that hold one of the parser's keywords (`dash.core.log.keywords`) go to the
parser.
"""

from __future__ import annotations

import re

from dash.core.log.batch import Batch, stamp_text
from dash.core.log.convert import FAST
from dash.core.log.keywords import Keywords, all_lines, literal_keywords
from dash.core.log.parser import MAX_LINE_CHARS, LineParser, Record
from dash.core.log.passes import Heads, Layout, Pass, pass_pattern
from dash.core.log.shapes import Shape, learn

MAX_LINE_BYTES = MAX_LINE_CHARS * 4
MAX_SHAPES = 8
MAX_WIDTHS = 4  # prefix widths read per shape (a log's stamps and rank tags: a few)
_LEARN_TRIES = 3  # per block: a log whose stats lines have no shape costs little
_RELEARN_LINES = 200  # a block that taught a shape with this many lines parsed is read again
_WARM_BYTES = 1 << 16  # a reader's first block: its first lines are read first, to learn
_WARM_TRIES = 24
_MAX_STAMPS = 8192


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
    vals = [FAST[k](row[base + i]) for i, k in enumerate(shape.kinds)]
    for key, col in zip(shape.keys, shape.cols, strict=True):
        rec[key] = None if col is None else vals[col]
    return rec


class BlockReader:
    """Reads blocks with one parser, learning shapes as it goes (so: one per process)."""

    def __init__(self, parser: LineParser, keep: frozenset[str] | None = None) -> None:
        """`keep`: the record keys whose values the batches need as columns (None: all; a
        family's kind: all of its values); the others are matched but not taken (a row's
        whole record is still there)."""
        self.parser = parser
        self.keep = keep
        self.shapes: list[Shape] = []
        self.stamps: dict[bytes, str] = {}
        words = literal_keywords(parser)
        self._keywords = Keywords(words) if words is not None else None
        self._interest = re.compile(parser.interest.pattern.encode("utf-8"))
        self._cold = True
        self._widths: list[list[int]] = []  # per shape, the prefix widths its pass reads
        self._version = 0
        bracket = parser.prefixes.bracket
        self._bracket = bracket.pattern.encode() if bracket.groups == 2 else None
        plain = parser.prefixes.bracket_plain.encode()
        # a grammar whose bracket is not (stamp, tags) has no bracket shapes: its stand-in
        # matches nothing, with the two groups a prefix check reads
        self._vouch = re.compile(b"\n" + (self._bracket or b"(?!)()()"))
        self._stub = re.compile(plain) if self._bracket else None  # a line of a prefix alone
        self._compile()

    def _captured(self, shape: Shape) -> tuple[int, ...]:
        if self.keep is None or shape.family.kind in self.keep:
            return tuple(range(len(shape.kinds)))
        return tuple(sorted({c for k, c in zip(shape.keys, shape.cols, strict=True)
                             if k in self.keep and c is not None}))

    def _compile(self) -> None:
        """The layout: the bracket shapes' passes first, then the bare ones' (learned order)."""
        used = [i for i, s in enumerate(self.shapes) if s.form == "bracket" and self._bracket]
        used += [i for i, s in enumerate(self.shapes) if s.form == "bare"]
        shapes = [self.shapes[i] for i in used]
        widths = [tuple(self._widths[i]) for i in used]
        captured = [self._captured(s) for s in shapes]
        every = [tuple(range(len(s.kinds))) for s in shapes]
        self._layout = Layout(
            tuple(shapes),
            tuple(re.compile(pass_pattern(s, c, w))
                  for s, c, w in zip(shapes, captured, widths, strict=True)),
            tuple(None if c == a else re.compile(pass_pattern(s, a, w))
                  for s, c, a, w in zip(shapes, captured, every, widths, strict=True)),
            tuple(len(w) for w in widths), tuple(captured), self._vouch)
        self._version += 1

    def read(self, buf: bytes | bytearray, end: int, first_line: int) -> Batch:
        """The records of the whole lines `buf[1:end]`, the first numbered `first_line`; the
        batch reads `buf` again when asked for rows whole (use it before the next read)."""
        if self._cold:
            # learn from the block's first lines, so that the rest is read with shapes
            self._cold = False
            cut = buf.rfind(b"\n", 0, min(end, _WARM_BYTES)) + 1
            if 1 < cut < end:
                self._read(buf, cut, first_line, _WARM_TRIES)
        learned = self._version
        batch = self._read(buf, end, first_line, _LEARN_TRIES)
        if self._version != learned and len(batch.others) >= _RELEARN_LINES:
            batch = self._read(buf, end, first_line, _LEARN_TRIES)  # it taught a shape
        return batch

    def _read(self, buf: bytes | bytearray, end: int, first_line: int, tries: int) -> Batch:
        if len(self.stamps) > _MAX_STAMPS:
            self.stamps.clear()  # a log's stamps move on: keep the recent ones only
        layout = self._layout
        passes: list[Pass] = []
        inputs: list[bytes | None] = []  # each pass's text (None: the block itself)
        known: Heads = ({}, {})  # the block's prefixes checked by a pass
        with memoryview(buf) as view, view[:end] as block:
            text: bytes | memoryview = block
            for pattern, widths in zip(layout.patterns, layout.widths, strict=True):
                passes.append(Pass(pattern, widths, text, layout.vouch, known))
                inputs.append(text if isinstance(text, bytes) else None)
                if passes[-1].count:
                    text = passes[-1].remainder()
            other = text if isinstance(text, bytes) else bytes(text)

        def source(s: int) -> tuple[bytes | bytearray, int]:
            got = inputs[s]
            return (buf, end) if got is None else (got, len(got))

        batch = Batch(layout, passes, other, first_line, source)
        if self._keywords is None:
            starts = all_lines(other)
        else:
            starts = self._keywords.lines(other, self._interest)
        if starts:
            self._others(batch, other, starts, tries)
        return batch

    def _others(self, batch: Batch, text: bytes, starts: list[int], tries: int) -> None:
        """Parse the other lines that may be records; learn shapes from their stats records."""
        parse = self.parser.parse
        rows: set[int] | None = None
        for start, line in zip(starts, batch.locate(starts), strict=True):
            stop = text.find(b"\n", start)
            raw = text[start:min(stop if stop >= 0 else len(text), start + MAX_LINE_BYTES)]
            if self._stub is not None and self._stub.fullmatch(raw):
                # a line of a prefix alone: what a row leaves, or a line of the log
                rows = batch.row_line_set() if rows is None else rows
                if line in rows:
                    continue
            decoded = raw.decode("utf-8", "replace")
            rec = parse(decoded, line)
            if rec is None:
                continue
            batch.add_other(rec)
            if tries and rec["kind"] in ("decode", "prefill"):
                tries -= 1
                self._learn(decoded, raw, rec)

    def _learn(self, text: str, raw: bytes, rec: Record) -> None:
        shape = learn(self.parser, text, rec)
        if shape is None:
            return
        width: list[int] = []
        if shape.form == "bracket":
            m = self._vouch.match(b"\n" + raw)
            if m is None:
                return
            width = [m.end() - 1]
        known = next((i for i, s in enumerate(self.shapes) if s.pattern == shape.pattern), None)
        if known is not None:
            widths = self._widths[known]
            if width and width[0] not in widths and len(widths) < MAX_WIDTHS:
                self._try(known, raw, [*widths, *width])
            return
        if len(self.shapes) >= MAX_SHAPES:
            return
        m = re.match(shape.pattern, raw + b"\n")
        if m is None or shape_record(shape, rec["line"], m.groups(), self.stamps) != rec:
            return  # never: a shape reads its own line back; kept as a guard
        self.shapes.append(shape)
        self._widths.append([])
        if not self._try(len(self.shapes) - 1, raw, width):
            self.shapes.pop()
            self._widths.pop()

    def _try(self, i: int, raw: bytes, widths: list[int]) -> bool:
        """Give shape i these prefix widths if its pass then reads the line it came from."""
        shape = self.shapes[i]
        pattern = re.compile(pass_pattern(shape, self._captured(shape), tuple(widths)))
        if Pass(pattern, len(widths), b"\n" + raw + b"\n", self._vouch).count != 1:
            return False  # never: the width is the prefix's; kept as a guard
        self._widths[i] = widths
        self._compile()
        return True


def records(batch: Batch, stamps: dict[bytes, str]) -> list[Record]:
    """Every record of a batch, in file order, as the parser gives them."""
    out: list[Record] = []
    rows = [iter(batch.rows(s)) for s in range(len(batch.shapes))]
    lines = [iter(batch.shape_lines(s) if batch.count(s) else ()) for s in range(len(batch.shapes))]
    others = iter(batch.others)
    for s in batch.order():
        if s < 0:
            out.append(next(others))
        else:
            out.append(shape_record(batch.shapes[s], next(lines[s]), next(rows[s]), stamps))
    return out
