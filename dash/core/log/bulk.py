"""Blocks of log bytes -> records, a regex pass per shape at C speed; the parser's records.

`BlockReader(parser).read(buf, end, first_line)` reads the whole lines `buf[1:end]` (`buf[0]`
is a newline) into a `Batch` (`dash.core.log.batch`). The rows of each learned shape
(`dash.core.log.shapes`) are taken by one split of the block per shape, led by the shape's
first literal and reading the line's prefix as printed before it (one width per prefix form
seen: a prefix of another width is learned from the line the parser reads), every value a
column; what is left is the block's other lines. Those are never records unless they hold one
of the parser's keywords (its own prefilter, derived from the grammar: a line without one is
no record), so the reader looks for the keywords in that text alone and hands only the lines
that hold one to the parser. Whether a keyword is there at all is mostly settled by looking
for one of its bytes that the text lacks (`bytes.find` of one byte runs at memory speed); a
keyword none of whose bytes is missing is searched for in full.
"""

from __future__ import annotations

import re
from typing import Any

from dash.core.log.batch import Batch, Layout, Pass, stamp_text
from dash.core.log.convert import BOOLS
from dash.core.log.parser import MAX_LINE_CHARS, LineParser, Record
from dash.core.log.shapes import Shape, learn
from dash.core.log.syntax import keyword_pattern

MAX_LINE_BYTES = MAX_LINE_CHARS * 4
MAX_SHAPES = 8
MAX_WIDTHS = 4  # prefix widths read per shape (a log's stamps and rank tags: a few)
_LEARN_TRIES = 3  # per block: a log whose stats lines have no shape costs little
_RELEARN_LINES = 200  # a block that taught a shape with this many lines parsed is read again
_WARM_BYTES = 1 << 16  # a reader's first block: its first lines are read first, to learn
_WARM_TRIES = 24
_MAX_STAMPS = 8192

_VALUE: dict[str, Any] = {"int": int, "float": float, "bool": BOOLS.__getitem__}


def literal_keywords(parser: LineParser) -> tuple[bytes, ...] | None:
    """What the parser's prefilter looks for, as byte strings, when the prefilter is what the
    parser runs (`keyword_pattern` of `interest_words`: a plain, case-sensitive search for any
    of them, their outer spaces left out); None otherwise, and every other line is parsed."""
    interest = parser.interest
    words = getattr(parser, "interest_words", parser.keywords)
    if interest.pattern != keyword_pattern(words) or interest.flags != re.UNICODE:
        return None
    texts = [w.strip() for w in words if w.strip()]
    try:
        coded = tuple(t.encode("utf-8") for t in texts)
    except UnicodeEncodeError:
        return None
    if not coded or any(b"\n" in w or "\ufffd" in t for w, t in zip(coded, texts, strict=True)):
        return None
    return coded


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


class _Keywords:
    """Where in a text the parser's keywords are: a keyword one of whose bytes the text lacks
    is not there (`bytes.find` of one byte runs at memory speed); the others are searched for
    together, with one pattern of them all."""

    def __init__(self, words: tuple[bytes, ...]) -> None:
        self.words = words
        # per keyword its distinct bytes, the one that was missing last time first; keywords
        # grouped by that byte, so that one search rules out every keyword of a group
        self.probes = [list(dict.fromkeys(w)) for w in words]
        self._groups: dict[int, list[int]] | None = None
        self._patterns: dict[tuple[bytes, ...], re.Pattern[bytes]] = {}

    def _unruled(self, text: bytes) -> tuple[bytes, ...]:
        """The keywords whose every byte is in `text`."""
        if self._groups is None:
            self._groups = {}
            for i, probes in enumerate(self.probes):
                self._groups.setdefault(probes[0], []).append(i)
        missing: dict[int, bool] = {}
        out, moved = [], False
        for first, group in self._groups.items():
            if text.find(first) < 0:
                continue  # every keyword of the group lacks it
            missing[first] = False
            for i in group:
                probes = self.probes[i]
                for k in range(1, len(probes)):
                    byte = probes[k]
                    gone = missing.get(byte)
                    if gone is None:
                        gone = missing[byte] = text.find(byte) < 0
                    if gone:
                        probes.insert(0, probes.pop(k))
                        moved = True
                        break
                else:
                    out.append(i)
        if moved:
            self._groups = None
        return tuple(self.words[i] for i in sorted(out))

    def lines(self, text: bytes, interest: re.Pattern[bytes]) -> list[int]:
        """Offsets of the lines of `text` that hold a keyword, in order (`interest`: the
        parser's prefilter); every line of `text` follows a newline and ends with one.

        A keyword whose bytes are all there is looked for where one of its bytes is rare in
        the text (the few lines that hold it are tried with the prefilter: an odd line among
        access lines), else with one pattern of all such keywords over the text."""
        words = self._unruled(text)
        if not words:
            return []
        found: dict[int, list[int] | None] = {}
        tried: set[int] = set()
        hard = []
        for word in words:
            for byte in dict.fromkeys(word):
                at = found.get(byte, ...)
                if at is ...:
                    at = found[byte] = _few(text, byte)
                if at is not None:
                    tried.update(text.rfind(b"\n", 0, a) + 1 for a in at)
                    break
            else:
                hard.append(word)
        starts = {a for a in tried if interest.search(text, a, text.find(b"\n", a))}
        if hard:
            starts.update(self._search(text, tuple(hard)))
        return sorted(starts)

    def _search(self, text: bytes, words: tuple[bytes, ...]) -> list[int]:
        pattern = self._patterns.get(words)
        if pattern is None:
            if len(self._patterns) > 64:
                self._patterns.clear()
            pattern = self._patterns[words] = re.compile(
                keyword_pattern(tuple(w.decode("utf-8") for w in words)).encode("utf-8"))
        starts, at = [], 0
        while (m := pattern.search(text, at)) is not None:
            starts.append(text.rfind(b"\n", 0, m.start()) + 1)
            stop = text.find(b"\n", m.end())
            if stop < 0:
                break
            at = stop
        return starts


def _few(text: bytes, byte: int, most: int = 32) -> list[int] | None:
    """Where `byte` is in `text`, if it is there at most `most` times."""
    out: list[int] = []
    at = text.find(byte)
    while at >= 0:
        if len(out) == most:
            return None
        out.append(at)
        at = text.find(byte, at + 1)
    return out


def all_lines(text: bytes) -> list[int]:
    """Offsets of every non-empty line of `text` (when the prefilter is no plain search)."""
    out, at = [], text.find(b"\n")
    while 0 <= at < len(text) - 1:
        if text[at + 1] != 10:
            out.append(at + 1)
        at = text.find(b"\n", at + 1)
    return out




def pass_pattern(shape: Shape, captured: tuple[int, ...], widths: tuple[int, ...]) -> bytes:
    """Shape's pass: its first literal (what `re` looks for in C), the line's prefix checked
    behind it (a newline, then for the bracket form the prefix as printed, one group per
    width), the rest of its body with groups for the values `captured`."""
    body = shape.body_with(frozenset(captured))
    lit = shape.texts[0]
    rest = body[len(lit):]
    if shape.form == "bare":
        return lit + b"(?<=\n" + lit + b")" + rest
    behind = [b"(?<=\n([^\n]{%d})" % w + lit + b")" for w in widths]
    return lit + b"(?:" + b"|".join(behind) + b")" + rest


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
        self._keywords = _Keywords(words) if words is not None else None
        self._interest = re.compile(parser.interest.pattern.encode("utf-8"))
        self._cold = True
        self._widths: list[list[int]] = []  # per shape, the prefix widths its pass reads
        self._version = 0
        bracket = parser.prefixes.bracket
        self._bracket = bracket.pattern.encode() if bracket.groups == 2 else None
        plain = parser.prefixes.bracket_plain.encode()
        self._vouch = re.compile(b"\n" + (self._bracket or b"(?!)()()"))
        self._stub = re.compile(plain) if self._bracket else None
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
        with memoryview(buf) as view, view[:end] as block:
            text: bytes | memoryview = block
            for pattern, widths in zip(layout.patterns, layout.widths, strict=True):
                passes.append(Pass(pattern, widths, text, layout.vouch))
                inputs.append(text if isinstance(text, bytes) else None)
                if passes[-1].count:
                    text = passes[-1].remainder()
            other = text if isinstance(text, bytes) else bytes(text)

        def source(s: int) -> bytes:
            got = inputs[s]
            return bytes(buf[:end]) if got is None else got

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
