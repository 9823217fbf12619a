"""The number in its file of each line a follower reads, also where reading starts inside the file.

Reading from a file's start, the k-th line read is line k. Reading from inside it (the backfill
window at the end of a long log), the lines before the window are unknown until they are counted,
which the I/O side does in the background (`wc -l`, as for output files). Until then a record
says so: its `line` is None and `window_line` is its number within the window; once the count is
in, `resolved` gives it its true `line`. Nothing is ever shown with a number that is not its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dash.core.snapshot import Record

WINDOW_KEY = "window_line"
"""A record's number within a backfill window whose preceding lines are still being counted."""


@dataclass(frozen=True, slots=True)
class WindowCounted:
    """The lines before a backfill window were counted: `base` is the number of the line just
    before the window's first line. None: they never will be (the file was cut or replaced
    first), and the window's records keep no number."""

    base: int | None


class LineNumbers:
    """Numbers the lines of one followed file as they are read, across restarts of reading."""

    __slots__ = ("base", "start", "_n")

    def __init__(self) -> None:
        self.base: int | None = 0
        """The number of the line before the first one read since `start`; None: counting."""
        self.start = 0
        """The byte offset reading (re)started at."""
        self._n = 0

    @property
    def pending(self) -> bool:
        """Whether the lines before the window are still to be counted."""
        return self.base is None

    def restart(self, start: int) -> None:
        """Reading (re)starts at byte `start`: from the file's start (a new file, a truncation)
        the numbers are known; inside it they wait for `counted`."""
        self.start = start
        self.base = 0 if start == 0 else None
        self._n = 0

    def counted(self, newlines: int) -> WindowCounted:
        """`newlines` newlines lie before `start`. Reading began inside the line they end in
        (or at its very start), and that first, partial, line was skipped: the first line read
        is number `newlines + 2`."""
        self.base = newlines + 1
        return WindowCounted(self.base)

    def stamp(self, rec: Record | None) -> Record | None:
        """Number the next line's record in place (None: a line of no interest, still a line)."""
        self._n += 1
        if rec is not None:
            if self.base is None:
                rec["line"] = None
                rec[WINDOW_KEY] = self._n
            else:
                rec["line"] = self.base + self._n
        return rec


def resolved(rec: Record, base: int | None) -> Record:
    """`rec` with its true number once its window's base is known (a copy: frozen snapshots
    share the old one); with `base` None, without the promise of one."""
    k = rec.get(WINDOW_KEY)
    if k is None:
        return rec
    out = {key: value for key, value in rec.items() if key != WINDOW_KEY}
    out["line"] = None if base is None else base + k
    return out


def line_order(rec: Mapping[str, Any]) -> int:
    """A record's place in its file, for telling which of two came first: its line number, or
    its number within a window still being counted (both of one window, or both numbered)."""
    return int(rec.get("line") or rec.get(WINDOW_KEY) or 0)


def line_text(rec: Mapping[str, Any]) -> str | None:
    """`line 812`, `line ?, counting` while its window's preceding lines are counted, or None."""
    if rec.get("line"):
        return f"line {rec['line']}"
    if rec.get(WINDOW_KEY):
        return "line ?, counting"
    return None
