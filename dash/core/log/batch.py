"""What the bulk reader makes of one block: each shape's rows as columns, the other records.

The block's rows are taken a shape at a time, one `re` split of the text per shape (a
`Pass`), with a pattern that starts at the shape's first literal (`Layout`): `re` looks for
a pattern's literal prefix in C without entering its matching engine, so only the lines that
hold the literal cost a match, where a pattern that starts at a line start is tried at every
line. The line's prefix is what precedes the literal: the pattern takes it whole, as a fixed
number of bytes after a newline (one width per prefix form the reader learned), and all of a
pass's prefixes are then checked at once against the grammar's bracket (`vouch`), which
also reads their stamps and rank tags when they are asked for. A literal found where it is no
row's (inside another line's text, after a prefix that is no bracket) is put back.

A pass takes out each row's text from its literal on and leaves the line's prefix and its
newline, so every text after a pass keeps every line break of the block: a row's line number
is the newlines before it in the text its pass split, an other line's the newlines before it
in `other_text`, each counted only when asked for, and records are put in file order by
their line numbers. What is left of a row in `other_text` (its prefix alone) holds no record
(`BlockReader` checks any that a keyword is found in).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import add, floordiv, mod, mul

from dash.core.log.parser import Record
from dash.core.log.shapes import Shape
from dash.core.log.timestamps import normalise_ts


def newlines(text: bytes) -> int:
    """How many newlines `text` holds: deleting them finds each with `memchr`, where
    `bytes.count` compares byte by byte (twice as slow on log text)."""
    return len(text) - len(text.replace(b"\n", b""))


def stamp_text(stamp: bytes, cache: dict[bytes, str]) -> str:
    ts = cache.get(stamp)
    if ts is None:
        ts = cache[stamp] = normalise_ts(stamp.decode("ascii"))
    return ts


@dataclass(frozen=True)
class Layout:
    """The reader's passes: per shape its pattern (`captured`: which of its values it takes,
    indexes into its `kinds`), the pattern that takes them all where that one does not
    (None: it does), and how many prefix widths it reads (0: the bare form, at a line start).
    `vouch`: a newline and the grammar's bracket, its stamp and tags as groups."""

    shapes: tuple[Shape, ...]
    patterns: tuple[re.Pattern[bytes], ...]
    full: tuple[re.Pattern[bytes] | None, ...]
    widths: tuple[int, ...]
    captured: tuple[tuple[int, ...], ...]
    vouch: re.Pattern[bytes]


class Pass:
    """One shape's split of a text: `split[0::step]` the gaps between its rows, then per row
    its prefix groups (`widths` of them, one set) and its values taken."""

    def __init__(self, pattern: re.Pattern[bytes], widths: int, text: bytes | memoryview,
                 vouch: re.Pattern[bytes]) -> None:
        self.widths = widths
        self.step = pattern.groups + 1
        self.split: list[bytes | None] = pattern.split(text)
        self.count = (len(self.split) - 1) // self.step
        self._prefixes: list[bytes] | None = None
        self.lines: list[int] | None = None
        self.heads: tuple[dict[bytes, bytes], dict[bytes, bytes]] = ({}, {})
        """Per prefix as printed, its stamp and its rank tags (bracket form)."""
        if self.count and widths:
            heads = self._vouch(vouch)
            if heads is None:
                self._put_back(pattern, text, vouch)
                heads = self._vouch(vouch)
                assert heads is not None
            self.heads = heads

    @property
    def gaps(self) -> list[bytes]:
        return self.split[0::self.step]  # type: ignore[return-value]

    def remainder(self) -> bytes:
        """The text without the rows' text (the input itself where there were none)."""
        return b"".join(self.gaps)

    def prefixes(self) -> list[bytes]:
        """Each row's prefix, as printed (bracket form)."""
        if self._prefixes is None:
            cols = [self.split[1 + i::self.step] for i in range(self.widths)]
            self._prefixes = (cols[0] if len(cols) == 1  # type: ignore[assignment]
                              else [next(filter(None, row)) for row in zip(*cols, strict=True)])
        return self._prefixes  # type: ignore[return-value]

    def _vouch(self, vouch: re.Pattern[bytes]
               ) -> tuple[dict[bytes, bytes], dict[bytes, bytes]] | None:
        """Each distinct prefix's stamp and tags, all read with one split; None when one of
        them is no bracket."""
        distinct = list(dict.fromkeys(self.prefixes()))
        if not distinct:
            return {}, {}
        pieces = vouch.split(b"\n" + b"\n".join(distinct))
        if len(pieces) != 3 * len(distinct) + 1 or any(pieces[0::3]):
            return None
        stamps: list[bytes] = pieces[1::3]
        tags: list[bytes] = pieces[2::3]
        return dict(zip(distinct, stamps, strict=True)), dict(zip(distinct, tags, strict=True))

    def _put_back(self, pattern: re.Pattern[bytes], text: bytes | memoryview,
                  vouch: re.Pattern[bytes]) -> None:
        """Rows whose prefix is no bracket are no rows: their text goes back to the gap."""
        whole = re.compile(b"(" + pattern.pattern + b")")
        res = whole.split(text)
        k, w = whole.groups + 1, self.widths
        out: list[bytes | None] = [res[0]]
        for i in range(1, len(res), k):
            body, groups, gap = res[i], res[i + 1:i + k - 1], res[i + k - 1]
            prefix = next(filter(None, groups[:w]))
            if vouch.fullmatch(b"\n" + prefix):
                out.extend(groups)
                out.append(gap)
            else:
                out[-1] = out[-1] + body + gap  # type: ignore[operator]  # its prefix is there
        self.split = out
        self.count = (len(out) - 1) // self.step
        self._prefixes = None

    def column(self, group: int) -> list[bytes]:
        """Values of group `group` (0: the first value taken) of every row."""
        return self.split[1 + self.widths + group::self.step]  # type: ignore[return-value]

    def count_lines(self, first_line: int) -> int:
        """Number each row (`lines`); the newlines of the whole text."""
        counts = list(accumulate(map(bytes.count, self.gaps, repeat(b"\n")),
                                 initial=first_line - 1))
        self.lines = counts[1:-1]
        return counts[-1] - first_line + 1


class Batch:
    """The records of one block: shape rows by columns, and `others` (parser records).
    Valid until the reader reads the next block (a shape's rows read whole again are read
    from the reader's buffer)."""

    def __init__(self, layout: Layout, passes: list[Pass], other_text: bytes, first_line: int,
                 source: Callable[[int], bytes]) -> None:
        self.shapes = list(layout.shapes)
        self.first_line = first_line
        self.other_text = other_text
        """The block without its rows' text after their prefixes: every line break is kept."""
        self.others: list[Record] = []
        self._layout = layout
        self._passes = passes
        self._source = source  # the text pass s split
        self._full: dict[int, list[tuple[bytes, ...]]] = {}
        self._stamps: dict[int, tuple[list[bytes], list[bytes]]] = {}
        self._newlines: int | None = None
        self._at = self._seen = 0  # newlines in other_text[:_at]
        self.rows_total = sum(p.count for p in passes)

    @property
    def lines(self) -> int:
        """How many lines the block has."""
        return self._total() - 1

    def _total(self) -> int:
        if self._newlines is None:
            self._newlines = newlines(self.other_text)
        return self._newlines

    # -- rows ----------------------------------------------------------------------------

    def count(self, s: int) -> int:
        """How many rows shape s has."""
        return self._passes[s].count

    def _prefix_cols(self, s: int) -> tuple[list[bytes], list[bytes]]:
        got = self._stamps.get(s)
        if got is None:
            p = self._passes[s]
            stamp, tags = p.heads
            got = self._stamps[s] = (list(map(stamp.__getitem__, p.prefixes())),
                                     list(map(tags.__getitem__, p.prefixes())))
        return got

    def stamps(self, s: int) -> list[bytes]:
        """Shape s's stamps (bracket form)."""
        return self._prefix_cols(s)[0]

    def tags(self, s: int) -> list[bytes]:
        """Shape s's rank tags as printed (bracket form; empty where none)."""
        return self._prefix_cols(s)[1]

    def columns(self, s: int) -> list[list[bytes]]:
        """Shape s's columns: stamp and tags (bracket form), then one per value."""
        if self._layout.full[s] is not None:  # not every value taken: read the rows whole
            return [list(c) for c in zip(*self.rows(s), strict=True)]
        p = self._passes[s]
        head = list(self._prefix_cols(s)) if p.widths else []
        return [*head, *(p.column(i) for i in range(len(self.shapes[s].kinds)))]

    def column(self, s: int, key: str) -> list[bytes] | None:
        """The column shape s reads a record key from, or None (not read, or null).
        The key's values must be taken (`BlockReader(keep=...)`)."""
        shape = self.shapes[s]
        if key not in shape.keys:
            return None
        col = shape.cols[shape.keys.index(key)]
        if col is None:
            return None
        return self._passes[s].column(self._layout.captured[s].index(col))

    def rows(self, s: int) -> list[tuple[bytes, ...]]:
        """Shape s's rows: stamp and tags (bracket form), then every value."""
        if not self.count(s):
            return []
        if self._layout.full[s] is None:
            return list(zip(*self.columns(s), strict=True))
        got = self._full.get(s)
        if got is None:
            full = self._layout.full[s]
            assert full is not None
            p = Pass(full, self._passes[s].widths, self._source(s), self._layout.vouch)
            assert p.count == self.count(s)  # the same matches, with every value a group
            head = list(self._prefix_cols(s)) if p.widths else []
            cols = [*head, *(p.column(i) for i in range(len(self.shapes[s].kinds)))]
            got = self._full[s] = list(zip(*cols, strict=True))
        return got

    def row_of(self, s: int, j: int) -> tuple[bytes, ...]:
        """Row j of shape s, as `rows` gives it."""
        if self._layout.full[s] is not None:
            return self.rows(s)[j]
        p = self._passes[s]
        head: tuple[bytes, ...] = ()
        if p.widths:
            prefix = p.prefixes()[j]
            head = (p.heads[0][prefix], p.heads[1][prefix])
        at = j * p.step + 1 + p.widths
        return (*head, *p.split[at:at + len(self.shapes[s].kinds)])  # type: ignore[arg-type]

    def stamp_of(self, s: int, j: int) -> bytes:
        """Row j's stamp (bracket form)."""
        p = self._passes[s]
        return p.heads[0][p.prefixes()[j]]

    # -- line numbers --------------------------------------------------------------------

    def shape_lines(self, s: int) -> list[int]:
        """The line numbers of shape s's rows."""
        p = self._passes[s]
        if p.lines is None:
            self._newlines = p.count_lines(self.first_line)
        assert p.lines is not None
        return p.lines

    def row_line(self, s: int, j: int) -> int:
        """The line number of shape s's row j (0 or -1 without counting the others)."""
        p = self._passes[s]
        if p.lines is not None:
            return p.lines[j]
        gaps = p.split[0::p.step]
        if j == 0:
            return self.first_line - 1 + gaps[0].count(b"\n")  # type: ignore[union-attr]
        if j in (-1, p.count - 1):
            return self.first_line - 1 + self._total() - gaps[-1].count(b"\n")  # type: ignore[union-attr]
        return self.shape_lines(s)[j]

    def row_line_set(self) -> set[int]:
        """Every row's line number."""
        return {n for s in range(len(self.shapes)) if self.count(s) for n in self.shape_lines(s)}

    def locate(self, starts: list[int]) -> list[int]:
        """The line numbers of lines of `other_text` at these offsets (ascending)."""
        out = []
        for start in starts:
            if start < self._at:
                self._at = self._seen = 0
            self._seen += newlines(self.other_text[self._at:start])
            self._at = start
            out.append(self.first_line - 1 + self._seen)
        return out

    # -- the other records and file order ----------------------------------------------------

    def add_other(self, rec: Record) -> None:
        self.others.append(rec)

    def _keys(self) -> tuple[list[int], int] | None:
        """Every record's line number times `n`, plus its source (a shape, or `n - 1` for an
        other record), in file order; None when the rows of one shape are all there is."""
        n = len(self.shapes) + 1
        sources = [s for s in range(len(self.shapes)) if self.count(s)]
        if not self.others and len(sources) <= 1:
            return None
        keys: list[int] = []
        for s in sources:
            keys.extend(map(add, map(mul, self.shape_lines(s), repeat(n)), repeat(s)))
        keys.extend(r["line"] * n + n - 1 for r in self.others)
        keys.sort()
        return keys, n

    def order(self) -> list[int]:
        """Per record in file order: its shape, or -1 for the next of `others`."""
        got = self._keys()
        if got is None:
            only = [s for s in range(len(self.shapes)) if self.count(s)]
            return [only[0]] * self.rows_total if only else []
        keys, n = got
        codes = [*range(n - 1), -1]
        return list(map(codes.__getitem__, map(mod, keys, repeat(n))))

    def line_no(self) -> list[int]:
        """Per record in file order: its line number."""
        got = self._keys()
        if got is None:
            only = [s for s in range(len(self.shapes)) if self.count(s)]
            return list(self.shape_lines(only[0])) if only else []
        keys, n = got
        return list(map(floordiv, keys, repeat(n)))
