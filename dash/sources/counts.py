"""Counting the complete lines of the partitions' output (and input) files, incrementally.

Only appended bytes are read, after checking that the bytes already counted are still there
(`dash.core.mark`: a file truncated and rewritten larger between two polls would otherwise keep
its old count plus the bytes past the old offset). A first count of a big file runs in the
background (`dash.sources.bgcount`) and reports its progress, so the first frame never waits for
it. `OutputsSource` finds the files by glob.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import glob
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from dash.core.mark import Mark
from dash.core.state.globs import partition_name
from dash.core.state.partitions import OutputCount
from dash.sources.bgcount import CountJob, count_newlines
from dash.sources.files import SETTLED_NS, read_spans
from dash.sources.globwatch import GlobWatch

BIG_COUNT = 32 * 1024 * 1024
"""New bytes above this are counted in the background (the first count of a big file)."""
RESCAN_COST_FACTOR = 20.0
"""Globs are re-run no sooner than this many times the time their last run took."""


@dataclass(frozen=True, slots=True)
class Count:
    """One file's count at one poll."""

    lines: int | None
    counting: bool = False
    progress: float | None = None
    reset: bool = False
    exists: bool = True
    error: str | None = None
    """Why the file could not be read (permission denied, not a regular file), or None."""
    mtime: float | None = None
    """The file's modification time (wall clock) at this poll."""


class LineCounter:
    """Complete lines of one file, counted incrementally: only appended bytes are read."""

    def __init__(self, path: Path | str, executor: ThreadPoolExecutor, *, big: int = BIG_COUNT):
        self.path = Path(path)
        self._pool = executor
        self._big = big
        self._ident: tuple[int, int] | None = None
        self.offset = 0
        self.lines = 0
        self._mark = Mark()
        self._settled: tuple[int, int, int] | None = None
        """(size, mtime, ctime) of the last look, when the file had not changed for a while."""
        self._known = False
        self._job: CountJob | None = None
        self._failed: tuple[tuple[tuple[int, int], int], str] | None = None

    @property
    def busy(self) -> bool:
        return self._job is not None and not self._job.finished.is_set()

    @property
    def known(self) -> bool:
        """Whether `lines` is the count of the newlines before `offset` (not still counting)."""
        return self._known and self._job is None

    def count(self) -> Count:
        """The count now; starts or checks a background count when there is a lot to read.

        Never raises for a file-system problem: it becomes `exists=False` (and `error`).
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self._gone(None)
        except OSError as exc:
            return self._gone(_reason(exc))
        if not stat.S_ISREG(st.st_mode):
            return self._gone("not a regular file")
        ident = (st.st_dev, st.st_ino)
        if self._failed is not None and self._failed[0] == (ident, st.st_size):
            # A background count of this very file failed: say so again, do not retry unchanged.
            return Count(None, exists=False, error=self._failed[1])
        self._failed = None
        try:
            return dataclasses.replace(self._count(ident, st), mtime=st.st_mtime)
        except FileNotFoundError:
            return self._gone(None)  # gone between stat and open
        except OSError as exc:
            return self._gone(_reason(exc))

    def _count(self, ident: tuple[int, int], st: os.stat_result) -> Count:
        size, reset = st.st_size, False
        looked = (size, st.st_mtime_ns, st.st_ctime_ns)
        if ident != self._ident or size < self.offset or self._rewritten(ident, looked):
            reset = self._ident is not None
            self._restart(ident)
        if self._job is not None:
            if not self._job.finished.is_set():
                return Count(self.lines if self._known else None, True, self._job.progress(), reset)
            failed = self._take_job()
            if failed is not None:
                self._failed = ((ident, size), failed)
                return self._gone(failed)
        if size - self.offset > self._big:
            self._job = CountJob(size)
            self._pool.submit(self._job.run, self.path, ident)
            return Count(self.lines if self._known else None, True, 0.0, reset)
        if size > self.offset and not self._read_more(ident, size):
            # Replaced between stat and open: the next poll counts the new file.
            return Count(self.lines if self._known else None, reset=reset)
        self._known = True
        # Settled: the file's last change was long enough ago that any later write moves its
        # ctime on; until the stat changes, the bytes counted need not be read back.
        self._settled = looked if time.time_ns() - st.st_ctime_ns > SETTLED_NS else None
        return Count(self.lines, reset=reset)

    def _rewritten(self, ident: tuple[int, int], looked: tuple[int, int, int]) -> bool:
        """Whether the bytes counted so far are no longer in the file (truncated and rewritten
        to the same size or larger since the last poll)."""
        if not self.offset or self._job is not None or looked == self._settled:
            return False
        with _open_regular(self.path) as fd:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != ident:
                return False  # replaced since the stat: the next poll sees the new file
            return not self._mark.holds(*read_spans(fd, self._mark.spans()))

    def _gone(self, error: str | None) -> Count:
        """The file cannot be counted now: forget it (a later poll counts it afresh)."""
        reset = self._ident is not None
        self._restart(None)
        return Count(None, reset=reset, exists=False, error=error)

    def _restart(self, ident: tuple[int, int] | None) -> None:
        if self._job is not None:
            self._job.cancel()
            self._job = None
        self._ident = ident
        self.offset = 0
        self.lines = 0
        self._mark = Mark()
        self._settled = None
        self._known = False

    def _take_job(self) -> str | None:
        """Adopt a finished background count; its error, if it failed."""
        job, self._job = self._job, None
        if job is not None and job.result is not None and job.mark is not None:
            # The job counted from 0 (a first count, or a big growth after a restart).
            self.lines, self.offset = job.result
            self._mark = job.mark
            self._known = True
        return job.error if job is not None and job.result is None else None

    def _read_more(self, ident: tuple[int, int], size: int) -> bool:
        """Count [offset, size) of the file `ident`; False when another file is at the path."""
        with _open_regular(self.path) as fd:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != ident:
                return False
            n, self.offset = count_newlines(fd, self.offset, size)
            self.lines += n
            self._mark = Mark(self.offset, *read_spans(fd, Mark.spans_at(self.offset)))
            return True

    def close(self) -> None:
        if self._job is not None:
            self._job.cancel()


class OutputsSource:
    """The partitions' output files (and optional input files, for totals), found by globs.

    Globs are re-run at most every `rescan_s`, so a partition whose file appears later joins;
    a glob over a large tree (`**`) that takes long to run is re-run less often, so that it
    costs at most a twentieth of the time. Even then a glob is re-run only when a directory it
    reads has changed, or every half minute (`dash.sources.globwatch`): the stat of each of its
    directories instead of listing them. `monotonic` times the globs (injected by tests).
    """

    def __init__(self, outputs: tuple[str, ...], inputs: tuple[str, ...] = (), *,
                 big: int | None = None, rescan_s: float = 1.0,
                 rescan_cost_factor: float = RESCAN_COST_FACTOR,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._outputs = outputs
        self._inputs = inputs
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kdash-count")
        self._big = BIG_COUNT if big is None else big
        self._rescan_s = rescan_s
        self._rescan_cost_factor = rescan_cost_factor
        self._monotonic = monotonic
        self._dirs = GlobWatch((*outputs, *inputs), recursive=True, monotonic=monotonic)
        self._out: dict[str, tuple[str, LineCounter, bool]] = {}
        self._in: dict[str, tuple[str, LineCounter]] = {}
        self._scanned_at: float | None = None
        self._next_scan = 0.0
        self.last_read_counting = False
        """Whether the last `read` left a count unfinished (read again after `busy` clears)."""
        self.last_read_errors: tuple[str, ...] = ()
        """One short "path: why" per output or input file the last `read` could not count."""

    def _scan(self) -> None:
        now = self._monotonic()
        if self._scanned_at is not None and (now < self._next_scan or not self._dirs.due()):
            return
        first = self._scanned_at is None
        self._scanned_at = now
        self._dirs.ran()  # before the globs: a file added while they run is seen next time
        known = {path: name for path, (name, _, _) in self._out.items()}
        for path, name in _matches(self._outputs, known):
            if path not in self._out:
                self._out[path] = (name, LineCounter(path, self._pool, big=self._big), not first)
        for path, name in _matches(self._inputs, {p: n for p, (n, _) in self._in.items()}):
            if path not in self._in:
                self._in[path] = (name, LineCounter(path, self._pool, big=self._big))
        took = self._monotonic() - now
        self._next_scan = now + max(self._rescan_s, self._rescan_cost_factor * took)

    def read(self) -> tuple[tuple[OutputCount, ...], dict[str, int]]:
        """Counts of every output file, and the totals counted from input files by name."""
        self._scan()
        counts = []
        errors: list[str] = []
        for path, (name, counter, later) in self._out.items():
            c = counter.count()
            counts.append(OutputCount(name, path, c.lines, c.counting, c.progress, c.reset, later,
                                      c.mtime))
            if c.error:
                errors.append(f"{path}: {c.error}")
        totals: dict[str, int] = {}
        self.last_read_counting = any(c.counting for c in counts)
        for path, (name, counter) in self._in.items():
            c = counter.count()
            self.last_read_counting |= c.counting
            if c.lines is not None:
                totals[name] = c.lines
            if c.error:
                errors.append(f"{path}: {c.error}")
        self.last_read_errors = tuple(errors)
        return tuple(counts), totals

    def positions(self) -> dict[str, tuple[int, int]]:
        """(complete lines, bytes counted) of each output file whose count is known."""
        return {path: (c.lines, c.offset) for path, (_, c, _) in self._out.items() if c.known}

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


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


@contextlib.contextmanager
def _open_regular(path: Path) -> Iterator[int]:
    """A read-only descriptor of the regular file at `path`, closed after use."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file")
        yield fd
    finally:
        os.close(fd)


def _matches(patterns: tuple[str, ...], known: Mapping[str, str] | None = None
             ) -> list[tuple[str, str]]:
    """(path, partition name) of every regular file the globs match; duplicate names keep paths.

    `known`: the names already given (path -> name), kept as they are: a glob re-run every
    second finds the same files, and naming one is most of the cost of its match."""
    out: list[tuple[str, str]] = []
    names: set[str] = set()
    for pattern in patterns:
        for path in sorted(glob.glob(pattern, recursive=True)):
            if not os.path.isfile(path):
                continue
            name = known.get(path) if known else None
            if name is not None:
                names.add(name)
                out.append((path, name))
                continue
            name = partition_name(pattern, path)
            if name in names:
                name = path
            names.add(name)
            out.append((path, name))
    return out


def matching_files(patterns: tuple[str, ...]) -> list[tuple[str, str]]:
    """(path, partition name) of every regular file the globs match, named as the dashboard
    names its partitions."""
    return _matches(patterns)


COUNT_TIMEOUT_S = 120.0
"""How long `count_outputs` waits for background counts of big files."""


def count_outputs(patterns: tuple[str, ...]) -> tuple[OutputCount, ...]:
    """The final line count of every output file the globs match (blocking; call from a thread)."""
    if not patterns:
        return ()
    source = OutputsSource(patterns)
    try:
        counts, _ = source.read()
        deadline = time.monotonic() + COUNT_TIMEOUT_S
        while source.busy and time.monotonic() < deadline:
            time.sleep(0.05)
            counts, _ = source.read()
        return counts
    finally:
        source.close()
