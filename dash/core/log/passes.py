"""A shape's pass over a block: one `re` split led by the shape's first literal.

`re` looks for a pattern's literal prefix in C without entering its matching engine, so only
the lines that hold the literal cost a match, where a pattern that starts at a line start is
tried at every line. The line's prefix is what precedes the literal: the pattern takes it
whole, as a fixed number of bytes after a newline (one width per prefix form the reader
learned), and a pass's distinct prefixes are then checked at once against the grammar's
bracket (`Layout.vouch`), which also reads their stamps and rank tags. A literal found where it
is no row's (inside another line's text, after a prefix that is no bracket) is put back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import sub

from dash.core.log.shapes import Shape


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


Heads = tuple[dict[bytes, bytes], dict[bytes, bytes]]
"""Per prefix as printed, its stamp and its rank tags (bracket form)."""


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
                 vouch: re.Pattern[bytes], known: Heads | None = None) -> None:
        """`known`: the prefixes other passes over the same block checked already (a second
        shape's rows share their seconds' prefixes with the first's); this pass adds its own
        to them and reads its stamps and tags from them."""
        self.widths = widths
        self.step = pattern.groups + 1
        self.split: list[bytes | None] = pattern.split(text)
        self.count = (len(self.split) - 1) // self.step
        self._prefixes: list[bytes] | None = None
        self.lines: list[int] | None = None
        self.heads: Heads = ({}, {})
        """Per prefix as printed (every one of the pass's, maybe more), its stamp and its rank
        tags (bracket form)."""
        if self.count and widths:
            known = ({}, {}) if known is None else known
            if not self._vouch(vouch, known):
                self._put_back(pattern, text, vouch)
                vouched = self._vouch(vouch, known)
                assert vouched
            self.heads = known

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

    def _vouch(self, vouch: re.Pattern[bytes], known: Heads) -> bool:
        """Add each distinct prefix not `known` yet, with its stamp and tags, all read with one
        split; False (adding none) when one of them is no bracket."""
        stamps, tags = known
        fresh = list(set(self.prefixes()).difference(stamps))
        if not fresh:
            return True
        pieces = vouch.split(b"\n" + b"\n".join(fresh))
        if len(pieces) != 3 * len(fresh) + 1 or any(pieces[0::3]):
            return False
        stamps.update(zip(fresh, pieces[1::3], strict=True))
        tags.update(zip(fresh, pieces[2::3], strict=True))
        return True

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
        """Number each row (`lines`); the newlines of the whole text. A gap's newlines are its
        length less that of the gap without them: deleting them finds each with `memchr`,
        where `bytes.count` compares byte by byte (a third of the time on log text)."""
        gaps = self.gaps
        kept = map(len, map(bytes.replace, gaps, repeat(b"\n"), repeat(b"")))
        counts: list[int] = list(accumulate(map(sub, map(len, gaps), kept),
                                            initial=first_line - 1))
        self.lines = counts[1:-1]
        return counts[-1] - first_line + 1
