"""Reading followed files: read-only descriptors, byte offsets, stat and fstat.

`FileFollower` follows one path by name (`dash.core.follow` decides what a stat means). Files
are opened `O_RDONLY` and only ever `pread`: kdash never writes, locks, truncates or touches the
mtime of a file it watches. A poll of an unchanged file is two stats and two reads of at most
4 KB (`dash.core.mark`: what tells a rewrite from the file that was read), whatever its size;
of a settled one (unchanged for a few seconds when last looked at, and with the same stat now),
one stat.
Errors (permission denied, a directory where a file was expected) become a status value.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from dash.core.follow import MAX_LINE_BYTES, Decision, FileId, FollowState
from dash.core.mark import Mark

CHUNK = 64 * 1024
"""Bytes per read."""

SETTLED_NS = 3_000_000_000
"""A file unchanged this long before a look has timestamps a later write must move: file
timestamps move in kernel ticks (coarser on NFS), so a rewrite within the tick of the last look
leaves them as they were, and then only the bytes tell (`dash.core.mark`)."""

MAX_READ_PER_POLL = 2 * 1024 * 1024
"""A burst larger than this is read over several polls (`FollowRead.more`), so one poll of a
file that jumped by gigabytes never blocks for long, and what one read hands over (its lines and
their records, some 15k of each) stays a few MB: a burst waits in the file, not in memory."""


@dataclass(frozen=True, slots=True)
class FollowRead:
    """What one poll of a followed file found (immutable: it crosses threads)."""

    path: str
    lines: tuple[str, ...] = ()
    status: str = "ok"
    """"ok", "waiting" (the file does not exist yet), or "error"."""
    message: str | None = None
    size: int | None = None
    """The file's size now, or None when absent."""
    events: tuple[str, ...] = ()
    """What happened to the file: "opened", "truncated", "rotated", "deleted"."""
    partial: str = ""
    """The held partial line (with `\\r` breaks: the progress bar being drawn)."""
    more: bool = False
    """True when bytes were left for the next poll (a very large burst)."""
    bytes_read: int = 0
    offset: int = 0
    starts: tuple[tuple[int, int], ...] = ()
    """(index in `lines`, byte offset) wherever reading (re)started in this poll: a file opened
    (at its start, or inside it for the backfill) or read again from 0 after a truncation.
    Lines before an index belong to the reading before it (`dash.core.linenums`)."""
    mtime: float | None = None
    """When the file was last written (wall clock, from fstat), when lines were read."""


Looked = tuple[int, int, int, int, int]
"""(device, inode, size, mtime, ctime) of one stat: a settled file's, to compare the next with."""


def _stat_path(path: Path) -> os.stat_result:
    st = os.stat(path)
    if not _is_regular(st.st_mode):
        raise IsADirectoryError("not a regular file")
    return st


def _is_regular(mode: int) -> bool:
    return stat.S_ISREG(mode)


def read_spans(fd: int, spans: tuple[tuple[int, int], tuple[int, int]]) -> tuple[bytes, bytes]:
    """The bytes of a mark's two ranges as they are now (shorter where the file is)."""
    (h_at, h_len), (t_at, t_len) = spans
    return (os.pread(fd, h_len, h_at) if h_len else b"",
            os.pread(fd, t_len, t_at) if t_len else b"")


@dataclass(slots=True)
class _Reading:
    lines: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    starts: list[tuple[int, int]] = field(default_factory=list)
    bytes_read: int = 0
    more: bool = False
    mtime: float | None = None
    budget: int = MAX_READ_PER_POLL
    """Bytes this poll may still read, the rotated file's remainder and the new file together."""


class FileFollower:
    """Follow one file by name across truncation, rotation, deletion and late creation."""

    def __init__(
        self,
        path: Path | str,
        *,
        backfill: int | None = None,
        cr_breaks: bool = False,
        max_line: int = MAX_LINE_BYTES,
        max_read: int = MAX_READ_PER_POLL,
    ) -> None:
        """`backfill`: bytes of the end to read when following starts (None: all of it)."""
        self.path = Path(path)
        self.state = FollowState(backfill=backfill, cr_breaks=cr_breaks, max_line=max_line)
        self._fd: int | None = None
        self._max_read = max_read
        self._settled: Looked | None = None
        """The stat of the last poll, when it found nothing new in a file unchanged for a while:
        until a stat differs, the mark's bytes need not be read back."""

    def poll(self) -> FollowRead:
        """Read whatever is new; never raises for a file-system problem."""
        r = _Reading(budget=self._max_read)
        try:
            size = self._poll(r)
        except OSError as exc:
            self._drop_fd()
            reason = exc.strerror or str(exc)
            return FollowRead(str(self.path), tuple(r.lines), "error", f"{self.path}: {reason}",
                              None, tuple(r.events), starts=tuple(r.starts))
        if size is None:
            return FollowRead(str(self.path), tuple(r.lines), "waiting",
                              f"{self.path}: not there yet", None, tuple(r.events),
                              starts=tuple(r.starts))
        return FollowRead(str(self.path), tuple(r.lines), "ok", None, size, tuple(r.events),
                          self.state.splitter.partial, r.more, r.bytes_read, self.state.offset,
                          tuple(r.starts), r.mtime if r.lines else None)

    def close(self) -> None:
        """Close the descriptor and forget the file (a later poll starts it afresh)."""
        self._drop_fd()
        self.state.closed()

    def _drop_fd(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

    def _reattach(self, at_path: FileId | None, r: _Reading) -> None:
        """An error closed the descriptor: reopen at the same offset if it is the same file."""
        ident = self.state.ident
        if ident is None or self._fd is not None:
            return
        if at_path is not None and ident.same_file(at_path):
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            st = os.fstat(fd)
            if ident.same_file(FileId(st.st_dev, st.st_ino, st.st_size)):
                self._fd = fd
                return
            os.close(fd)
        r.lines.extend(self.state.closed())

    def _poll(self, r: _Reading) -> int | None:
        try:
            st = _stat_path(self.path)
        except FileNotFoundError:
            at_path, looked = None, None
        else:
            at_path = FileId(st.st_dev, st.st_ino, st.st_size)
            looked = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if looked == self._settled and self._fd is not None:
                return st.st_size  # a write since would have moved its ctime
        self._settled = None
        self._reattach(at_path, r)
        decision = self.state.decide(at_path, self._readback(at_path))
        if decision is Decision.REPLACED:
            left = self._drain_and_close(r, "rotated" if at_path is not None else "deleted")
            if left is not None:
                return left  # the old file holds more than this poll reads: it comes first
            decision = self.state.decide(at_path)
        if decision is Decision.ABSENT or at_path is None:
            # Following has started: a file created from now on is read from its start.
            self.state.seen_before = True
            return None
        if decision is Decision.OPEN:
            if not self._open(at_path, r):
                return None
        elif decision is Decision.TRUNCATED:
            self._truncated(r)
        elif decision is Decision.IDLE:
            if looked is not None and time.time_ns() - looked[4] > SETTLED_NS:
                self._settled = looked
            return at_path.size
        assert self._fd is not None
        st = os.fstat(self._fd)
        r.mtime = st.st_mtime  # when the last of the lines read was written
        self._read_to(st.st_size, r)
        return st.st_size

    def _readback(self, at_path: FileId | None) -> tuple[bytes, bytes] | None:
        """What the mark's ranges hold now, when the same file is no shorter than the offset."""
        st = self.state
        if (self._fd is None or at_path is None or st.ident is None
                or not st.ident.same_file(at_path) or at_path.size < st.offset):
            return None
        return read_spans(self._fd, st.mark.spans())

    def _open(self, at_path: FileId, r: _Reading) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return False  # gone between stat and open: next poll
        st = os.fstat(fd)
        if not _is_regular(st.st_mode):
            os.close(fd)
            raise IsADirectoryError("not a regular file")
        self._fd = fd
        ident = FileId(st.st_dev, st.st_ino, st.st_size)
        offset = self.state.opened(ident)
        if offset:
            self.state.marked(*read_spans(fd, Mark.spans_at(offset)))
        spans = self.state.resume_spans(ident)
        if spans is not None and (offset := self.state.resume(*read_spans(fd, spans))):
            # The same bytes as the file that left: the same log (moved back, or copied over
            # by an editor or rsync), read on from where it was; not a rewrite.
            r.events[:] = [e for e in r.events if e not in ("rotated", "deleted")]
        r.events.append("opened")
        r.starts.append((len(r.lines), offset))
        return True

    def _truncated(self, r: _Reading) -> None:
        r.events.append("truncated")
        r.lines.extend(self.state.truncated())
        r.starts.append((len(r.lines), 0))

    def _drain_and_close(self, r: _Reading, why: str) -> int | None:
        """The old file left the path: read what it still holds, then let it go.

        Its remainder is read under the poll's budget; while some is left the descriptor stays
        open and its size is returned (`more` is set), so the next polls go on reading it before
        the new file. None once it is drained and closed.
        """
        assert self._fd is not None
        st = os.fstat(self._fd)
        own = FileId(st.st_dev, st.st_ino, st.st_size)
        if self.state.decide(own, self._readback(own)) is Decision.TRUNCATED:
            self._truncated(r)
        self._read_to(own.size, r)
        if r.more:
            return own.size
        os.close(self._fd)
        self._fd = None
        r.lines.extend(self.state.closed())
        r.events.append(why)
        return None

    def _read_to(self, size: int, r: _Reading) -> None:
        assert self._fd is not None
        st = self.state
        while st.offset < size:
            if r.budget <= 0:
                r.more = True
                return
            want = min(CHUNK, size - st.offset, r.budget)
            data = os.pread(self._fd, want, st.offset)
            if not data:
                return  # shrank under us: the next poll sees the truncation
            r.bytes_read += len(data)
            r.budget -= len(data)
            r.lines.extend(st.feed(data))
