"""Following a file by name: the pure state machine (no I/O).

The I/O side (`dash.sources.files.FileFollower`) stats the path and the open descriptor, asks
`FollowState.decide` what happened, reads bytes and hands them to `FollowState.feed`. Everything
that can go wrong with a followed file is decided here, testable without a disk:

- truncation (size < offset, or the bytes that vouch for what was read changed: a restart
  rewrote the file to the same size or larger; `dash.core.mark`),
- replacement (the path names another inode: rotation or delete-and-recreate),
- deletion (the path is gone), late creation (it was never there),
- partial lines (held until their newline), overlong lines (capped, rest skipped, not buffered).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from dash.core.mark import Mark, Span

MAX_LINE_BYTES = 64 * 1024
"""Longer lines are cut to this length; the rest of the line is skipped, never buffered."""


@dataclass(frozen=True, slots=True)
class FileId:
    """What identifies a file across renames: device and inode, plus its size now."""

    dev: int
    ino: int
    size: int

    def same_file(self, other: FileId | None) -> bool:
        return other is not None and (self.dev, self.ino) == (other.dev, other.ino)


class Decision(Enum):
    """What a poll found, and so what the reader must do next."""

    ABSENT = "absent"
    """Nothing at the path and nothing open: wait for it."""
    OPEN = "open"
    """A file appeared at the path (first sight, creation, or after a replacement): open it."""
    IDLE = "idle"
    """Same file, no new bytes."""
    READ = "read"
    """Same file, new bytes after the offset."""
    TRUNCATED = "truncated"
    """Same file, but shorter than the offset or rewritten: start again at 0."""
    REPLACED = "replaced"
    """The open file is no longer at the path (rotated or deleted): drain it, then close it."""


class LineSplitter:
    """Bytes in, complete lines out; holds the partial last line, caps line length.

    With `cr_breaks`, a carriage return also ends a line (tqdm redraws its bar with `\\r` into a
    redirected stderr), and of a run of `\\r`-ended segments only the last is kept.
    """

    __slots__ = ("_buf", "_cr", "_max", "_skipping")

    def __init__(self, *, cr_breaks: bool = False, max_line: int = MAX_LINE_BYTES) -> None:
        self._buf = bytearray()
        self._cr = cr_breaks
        self._max = max_line
        self._skipping = False

    @property
    def cr_breaks(self) -> bool:
        """Whether a carriage return ends a line."""
        return self._cr

    @property
    def partial(self) -> str:
        """The held partial line, decoded (a tqdm bar still being drawn)."""
        return self._buf.decode("utf-8", errors="replace")

    def feed(self, data: bytes) -> list[str]:
        """Split `data` after what is held; return the complete lines, decoded."""
        out: list[str] = []
        cr_run: str | None = None
        start = 0
        n = len(data)
        while start < n:
            end, term = self._next_break(data, start)
            if end < 0:
                self._hold(data[start:])
                break
            line = self._take(data[start:end])
            start = end + 1
            if line is None:
                continue
            if term == 13:
                if line:
                    cr_run = line
                continue
            if cr_run is not None:
                out.append(cr_run)
                cr_run = None
            if not (self._cr and line == ""):
                out.append(line)
        if cr_run is not None:
            out.append(cr_run)
        return out

    def flush(self) -> str | None:
        """The held partial line as a final line (its file is finished), or None."""
        if self._skipping or not self._buf:
            self.reset()
            return None
        text = self._buf.decode("utf-8", errors="replace")
        self.reset()
        return text

    def reset(self) -> None:
        self._buf.clear()
        self._skipping = False

    def _next_break(self, data: bytes, start: int) -> tuple[int, int]:
        nl = data.find(b"\n", start)
        if not self._cr:
            return nl, 10
        cr = data.find(b"\r", start, nl if nl >= 0 else len(data))
        if cr >= 0:
            return cr, 13
        return nl, 10

    def _hold(self, piece: bytes) -> None:
        if self._skipping:
            return
        room = self._max - len(self._buf)
        self._buf += piece[:room]
        if len(piece) > room:
            # An overlong line: keep its head, skip the rest until its newline.
            self._skipping = True

    def _take(self, piece: bytes) -> str | None:
        """Finish the current line with `piece`; None if it is the tail of a skipped line."""
        if self._skipping:
            head = bytes(self._buf)
            self.reset()
            return head.decode("utf-8", errors="replace") + " [...]" if head else None
        if self._buf:
            self._buf += piece[: self._max - len(self._buf)]
            raw = bytes(self._buf)
            self._buf.clear()
        else:
            raw = piece[: self._max]
        if len(piece) > self._max:
            return raw.decode("utf-8", errors="replace") + " [...]"
        return raw.decode("utf-8", errors="replace")


def _first_break(data: bytes, *, cr: bool) -> int:
    """Index of the first line break in `data` (a newline, or also a carriage return), or -1."""
    nl = data.find(b"\n")
    if not cr:
        return nl
    r = data.find(b"\r")
    return r if nl < 0 or 0 <= r < nl else nl


class FollowState:
    """Offset, identity and partial line of one followed path."""

    __slots__ = ("backfill", "ident", "left", "mark", "offset", "seen_before", "skipping_head",
                 "splitter")

    def __init__(
        self,
        *,
        backfill: int | None = None,
        cr_breaks: bool = False,
        max_line: int = MAX_LINE_BYTES,
    ) -> None:
        self.backfill = backfill
        """Bytes of the end to read when the file is first seen at start; None reads it all."""
        self.ident: FileId | None = None
        self.offset = 0
        self.seen_before = False
        self.mark = Mark()
        """What vouches for the bytes read so far (its `end` is `offset`)."""
        self.left: Mark | None = None
        """The mark of the file that last left the path: a file that appears there holding the
        same bytes up to that end (the same file moved back, an editor's or rsync's copy that
        replaced it) is read on from there, not again from its start."""
        self.skipping_head = False
        """True while the backfill window's first, partial, line is being skipped."""
        self.splitter = LineSplitter(cr_breaks=cr_breaks, max_line=max_line)

    def decide(self, at_path: FileId | None,
               readback: tuple[bytes, bytes] | None = None) -> Decision:
        """What happened since the last poll, from the stat of the path (None: absent).

        `readback` is what `mark.spans()` hold now (None: not read), compared with what was
        there when they were read: a restart that rewrote the file to the same size or larger
        is seen even though its size never dropped below the offset.
        """
        if self.ident is None:
            return Decision.ABSENT if at_path is None else Decision.OPEN
        if at_path is None or not self.ident.same_file(at_path):
            return Decision.REPLACED
        if at_path.size < self.offset:
            return Decision.TRUNCATED
        if readback is not None and not self.mark.holds(*readback):
            return Decision.TRUNCATED
        if at_path.size == self.offset:
            return Decision.IDLE
        return Decision.READ

    def opened(self, ident: FileId) -> int:
        """A file was opened: the offset to start reading at.

        The first file seen when following starts is read from its end minus the backfill;
        any file that appears later (created, or the new file after a rotation) from 0. Reading
        from inside the file, the I/O side gives `marked` the bytes `Mark.spans_at(offset)` hold.
        """
        self.ident = ident
        self.splitter.reset()
        first = not self.seen_before
        self.seen_before = True
        if first and self.backfill is not None and ident.size > self.backfill:
            self._restart_at(ident.size - self.backfill)
            self.skipping_head = True
            return self.offset
        self._restart_at(0)
        return 0

    def resume_spans(self, ident: FileId) -> tuple[Span, Span] | None:
        """The ranges to read from a file just opened to tell whether it holds the bytes read
        of the one that left (`resume`); None when it cannot (it is shorter, or none left)."""
        left = self.left
        if left is None or not left.end or ident.size < left.end or self.offset:
            return None
        return left.spans()

    def resume(self, head: bytes, tail: bytes) -> int:
        """What `resume_spans` held: the offset to read the new file from (0: it is another)."""
        left, self.left = self.left, None
        if left is None or not left.holds(head, tail):
            return 0
        self.offset, self.mark = left.end, left
        return left.end

    def marked(self, head: bytes, tail: bytes) -> None:
        """The bytes of `Mark.spans_at(offset)`, read when reading starts inside the file."""
        self.mark = Mark(self.offset, head, tail)

    def _restart_at(self, offset: int) -> None:
        self.offset = offset
        self.mark = Mark(offset)
        self.skipping_head = False

    def truncated(self) -> list[str]:
        """The file was cut or rewritten: read again from 0; a held partial line ends here."""
        tail = self.splitter.flush()
        self._restart_at(0)
        return [tail] if tail is not None else []

    def closed(self) -> list[str]:
        """The open file was drained and closed (rotated or deleted)."""
        tail = self.splitter.flush()
        self.ident = None
        self.left = self.mark if tail is None else None  # a cut line: no clean place to go on
        self._restart_at(0)
        return [tail] if tail is not None else []

    def feed(self, data: bytes) -> list[str]:
        """Bytes read at the offset: advance, return the complete lines."""
        self.offset += len(data)
        self.mark.advance(data)
        if self.skipping_head:
            # A backfill window starts mid-line: drop up to the first line break (a tqdm bar
            # redrawn with \r into a redirected stderr may never write a newline at all).
            nl = _first_break(data, cr=self.splitter.cr_breaks)
            if nl < 0:
                return []
            self.skipping_head = False
            data = data[nl + 1 :]
        return self.splitter.feed(data)
