"""Reading followed files: read-only descriptors, byte offsets, stat and fstat.

`FileFollower` follows one path by name (`dash.core.follow` decides what a stat means). Files
are opened `O_RDONLY` and only ever `pread`: kdash never writes, locks, truncates or touches the
mtime of a file it watches. A poll of an unchanged file is two stats, whatever its size.
Errors (permission denied, a directory where a file was expected) become a status value.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from dash.core.follow import MAX_LINE_BYTES, Decision, FileId, FollowState
from dash.core.partitions import OutputCount, partition_name

CHUNK = 64 * 1024
"""Bytes per read."""

MAX_READ_PER_POLL = 16 * 1024 * 1024
"""A burst larger than this is read over several polls (`FollowRead.more`), so one poll of a
file that jumped by gigabytes never blocks for long."""


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


def _stat_path(path: Path) -> FileId | None:
    st = os.stat(path)
    if not _is_regular(st.st_mode):
        raise IsADirectoryError(f"{path} is not a regular file")
    return FileId(st.st_dev, st.st_ino, st.st_size)


def _is_regular(mode: int) -> bool:
    import stat as _stat

    return _stat.S_ISREG(mode)


@dataclass(slots=True)
class _Reading:
    lines: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    bytes_read: int = 0
    more: bool = False


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

    def poll(self) -> FollowRead:
        """Read whatever is new; never raises for a file-system problem."""
        r = _Reading()
        try:
            size = self._poll(r)
        except OSError as exc:
            self._drop_fd()
            reason = exc.strerror or str(exc)
            return FollowRead(str(self.path), tuple(r.lines), "error", f"{self.path}: {reason}",
                              None, tuple(r.events))
        if size is None:
            return FollowRead(str(self.path), tuple(r.lines), "waiting",
                              f"{self.path}: not there yet", None, tuple(r.events))
        return FollowRead(str(self.path), tuple(r.lines), "ok", None, size, tuple(r.events),
                          self.state.splitter.partial, r.more, r.bytes_read, self.state.offset)

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
            at_path = _stat_path(self.path)
        except FileNotFoundError:
            at_path = None
        self._reattach(at_path, r)
        decision = self.state.decide(at_path, self._sig_now(at_path))
        if decision is Decision.REPLACED:
            self._drain_and_close(r, "rotated" if at_path is not None else "deleted")
            decision = self.state.decide(at_path)
        if decision is Decision.ABSENT or at_path is None:
            # Following has started: a file created from now on is read from its start.
            self.state.seen_before = True
            return None
        if decision is Decision.OPEN:
            if not self._open(at_path, r):
                return None
        elif decision is Decision.TRUNCATED:
            r.events.append("truncated")
            r.lines.extend(self.state.truncated())
        elif decision is Decision.IDLE:
            return at_path.size
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        self._read_to(size, r)
        return size

    def _sig_now(self, at_path: FileId | None) -> bytes | None:
        """The bytes before the offset as they are now, when the same file grew."""
        st = self.state
        rng = st.sig_range()
        if (self._fd is None or rng is None or at_path is None or st.ident is None
                or not st.ident.same_file(at_path) or at_path.size < st.offset):
            return None
        return os.pread(self._fd, rng[1], rng[0])

    def _open(self, at_path: FileId, r: _Reading) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return False  # gone between stat and open: next poll
        st = os.fstat(fd)
        if not _is_regular(st.st_mode):
            os.close(fd)
            raise IsADirectoryError(f"{self.path} is not a regular file")
        self._fd = fd
        self.state.opened(FileId(st.st_dev, st.st_ino, st.st_size))
        r.events.append("opened")
        return True

    def _drain_and_close(self, r: _Reading, why: str) -> None:
        """The old file left the path: read what it still holds, then let it go."""
        assert self._fd is not None
        st = os.fstat(self._fd)
        own = FileId(st.st_dev, st.st_ino, st.st_size)
        if self.state.decide(own, self._sig_now(own)) is Decision.TRUNCATED:
            r.events.append("truncated")
            r.lines.extend(self.state.truncated())
        self._read_to(own.size, r, bounded=False)
        os.close(self._fd)
        self._fd = None
        r.lines.extend(self.state.closed())
        r.events.append(why)

    def _read_to(self, size: int, r: _Reading, *, bounded: bool = True) -> None:
        assert self._fd is not None
        st = self.state
        budget = self._max_read if bounded else None
        while st.offset < size:
            want = min(CHUNK, size - st.offset)
            if budget is not None:
                if budget <= 0:
                    r.more = True
                    return
                want = min(want, budget)
            data = os.pread(self._fd, want, st.offset)
            if not data:
                return  # shrank under us: the next poll sees the truncation
            r.bytes_read += len(data)
            if budget is not None:
                budget -= len(data)
            r.lines.extend(st.feed(data))


# ---------------------------------------------------------------------------------------------
# Counting the lines of output files
# ---------------------------------------------------------------------------------------------

BIG_COUNT = 32 * 1024 * 1024
"""New bytes above this are counted in the background (the first count of a big file)."""

COUNT_CHUNK = 1024 * 1024


def count_newlines(fd: int, start: int, end: int, job: _CountJob | None = None) -> tuple[int, int]:
    """Newlines in [start, end) of fd, and where reading stopped (big reads + bytes.count)."""
    n = 0
    pos = start
    while pos < end:
        data = os.pread(fd, min(COUNT_CHUNK, end - pos), pos)
        if not data:
            break
        n += data.count(b"\n")
        pos += len(data)
        if job is not None:
            if job.cancelled:
                break
            job.pos = pos
    return n, pos


class _CountJob:
    """A first count running in a thread: `wc -l` reading our descriptor, else Python."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pos = 0
        self.result: tuple[int, int] | None = None
        self.error: str | None = None
        self.cancelled = False
        self.finished = threading.Event()
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def progress(self) -> float:
        with self._lock:
            if self._fd is not None and self._proc is not None:
                try:
                    # wc shares our open file description: its offset is its progress.
                    self.pos = os.lseek(self._fd, 0, os.SEEK_CUR)
                except OSError:
                    pass
        return min(1.0, self.pos / self.size) if self.size else 1.0

    def cancel(self) -> None:
        self.cancelled = True
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()

    def run(self, path: Path, ident: tuple[int, int]) -> None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            self.finished.set()
            return
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != ident:
                self.error = "replaced while counting"
            else:
                with self._lock:
                    self._fd = fd
                self.result = self._wc(fd) or count_newlines(fd, 0, self.size, self)
        except (OSError, ValueError) as exc:
            self.error = str(exc)
        finally:
            with self._lock:
                self._fd = None
                self._proc = None
                os.close(fd)
            self.finished.set()

    def _wc(self, fd: int) -> tuple[int, int] | None:
        """`wc -l` on our descriptor: it counts at memory speed; where it stopped is exact."""
        wc = shutil.which("wc")
        if wc is None or self.cancelled:
            return None
        with self._lock:
            # Niced: a first count must not slow the reads the screen waits for.
            nice = shutil.which("nice")
            argv = [nice, "-n", "10", wc, "-l"] if nice else [wc, "-l"]
            self._proc = subprocess.Popen(
                argv, stdin=fd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "")},
            )
            proc = self._proc
        out, _ = proc.communicate()
        with self._lock:
            self._proc = None
        if proc.returncode != 0 or self.cancelled:
            os.lseek(fd, 0, os.SEEK_SET)
            return None
        return int(out.split()[0]), os.lseek(fd, 0, os.SEEK_CUR)


@dataclass(frozen=True, slots=True)
class Count:
    lines: int | None
    counting: bool = False
    progress: float | None = None
    reset: bool = False
    exists: bool = True


class LineCounter:
    """Complete lines of one file, counted incrementally: only appended bytes are read."""

    def __init__(self, path: Path | str, executor: ThreadPoolExecutor, *, big: int = BIG_COUNT):
        self.path = Path(path)
        self._pool = executor
        self._big = big
        self._ident: tuple[int, int] | None = None
        self.offset = 0
        self.lines = 0
        self._known = False
        self._job: _CountJob | None = None

    @property
    def busy(self) -> bool:
        return self._job is not None and not self._job.finished.is_set()

    def count(self) -> Count:
        """The count now; starts or checks a background count when there is a lot to read."""
        try:
            st = os.stat(self.path)
        except OSError:
            reset = self._ident is not None
            self._restart(None)
            return Count(None, reset=reset, exists=False)
        ident = (st.st_dev, st.st_ino)
        reset = False
        if ident != self._ident or st.st_size < self.offset:
            reset = self._ident is not None
            self._restart(ident)
        if self._job is not None:
            if not self._job.finished.is_set():
                return Count(self.lines if self._known else None, True, self._job.progress(), reset)
            self._take_job()
        if st.st_size - self.offset > self._big:
            self._job = _CountJob(st.st_size)
            self._pool.submit(self._job.run, self.path, ident)
            return Count(self.lines if self._known else None, True, 0.0, reset)
        if st.st_size > self.offset:
            self._read_more(st.st_size)
        self._known = True
        return Count(self.lines, reset=reset)

    def _restart(self, ident: tuple[int, int] | None) -> None:
        if self._job is not None:
            self._job.cancel()
            self._job = None
        self._ident = ident
        self.offset = 0
        self.lines = 0
        self._known = False

    def _take_job(self) -> None:
        job, self._job = self._job, None
        if job is not None and job.result is not None:
            # The job counted from 0 (a first count, or a big growth after a restart).
            self.lines, self.offset = job.result
            self._known = True

    def _read_more(self, size: int) -> None:
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            n, self.offset = count_newlines(fd, self.offset, size)
            self.lines += n
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._job is not None:
            self._job.cancel()


class OutputsSource:
    """The partitions' output files (and optional input files, for totals), found by globs.

    Globs are re-run at most every `rescan_s`, so a partition whose file appears later joins.
    """

    def __init__(self, outputs: tuple[str, ...], inputs: tuple[str, ...] = (), *,
                 big: int | None = None, rescan_s: float = 1.0) -> None:
        self._outputs = outputs
        self._inputs = inputs
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kdash-count")
        self._big = BIG_COUNT if big is None else big
        self._rescan_s = rescan_s
        self._out: dict[str, tuple[str, LineCounter, bool]] = {}
        self._in: dict[str, tuple[str, LineCounter]] = {}
        self._scanned_at: float | None = None
        self.last_read_counting = False
        """Whether the last `read` left a count unfinished (read again after `busy` clears)."""

    def _scan(self) -> None:
        now = time.monotonic()
        if self._scanned_at is not None and now - self._scanned_at < self._rescan_s:
            return
        first = self._scanned_at is None
        self._scanned_at = now
        for path, name in _matches(self._outputs):
            if path not in self._out:
                self._out[path] = (name, LineCounter(path, self._pool, big=self._big), not first)
        for path, name in _matches(self._inputs):
            if path not in self._in:
                self._in[path] = (name, LineCounter(path, self._pool, big=self._big))

    def read(self) -> tuple[tuple[OutputCount, ...], dict[str, int]]:
        """Counts of every output file, and the totals counted from input files by name."""
        self._scan()
        counts = []
        for path, (name, counter, later) in self._out.items():
            c = counter.count()
            counts.append(OutputCount(name, path, c.lines, c.counting, c.progress, c.reset, later))
        totals: dict[str, int] = {}
        self.last_read_counting = any(c.counting for c in counts)
        for name, counter in self._in.values():
            c = counter.count()
            self.last_read_counting |= c.counting
            if c.lines is not None:
                totals[name] = c.lines
        return tuple(counts), totals

    @property
    def busy(self) -> bool:
        """Whether a background count is still running."""
        return any(c.busy for _, c, _ in self._out.values()) or any(
            c.busy for _, c in self._in.values())

    def close(self) -> None:
        for _, c, _ in self._out.values():
            c.close()
        for _, c in self._in.values():
            c.close()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _matches(patterns: tuple[str, ...]) -> list[tuple[str, str]]:
    """(path, partition name) of every regular file the globs match; duplicate names keep paths."""
    out: list[tuple[str, str]] = []
    names: set[str] = set()
    for pattern in patterns:
        for path in sorted(glob.glob(pattern, recursive=True)):
            if not os.path.isfile(path):
                continue
            name = partition_name(pattern, path)
            if name in names:
                name = path
            names.add(name)
            out.append((path, name))
    return out
