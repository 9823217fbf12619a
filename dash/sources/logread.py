"""Reading a whole server log from disk: the one reader `summary`, `export` and `replay` share.

`Scan` reads the file in large binary blocks of whole lines (a `.gz` through gzip) and hands
each to a `BlockReader` (`dash.core.log.bulk`), which gives the block's records in file order
with the parser the grammar derives. What a command does with a block is a `Job`: summary
parts, the JSON lines of `export`, or the compact columns of a replay. A large plain file is
cut into pieces at line starts and read by several processes (`run_job`) with
`concurrent.futures`; each piece counts its lines from 1, and the pieces are stitched in file
order here, so the result is the same as one process gives, byte for byte. Memory stays
bounded on a multi-GB log: at most a few pieces' results are in flight.
"""

from __future__ import annotations

import gzip
import io
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, Protocol, TypeVar

from dash.core.errors import UsageError
from dash.core.log.batch import Batch
from dash.core.log.bulk import BlockReader, records
from dash.core.log.grammar import GRAMMAR
from dash.core.log.parser import MAX_LINE_CHARS, LineParser, Record
from dash.core.log.syntax import Grammar

CHUNK = 1 << 20  # a block that stays in cache across the few passes over it
PARALLEL_MIN = 64 << 20  # a plain file at least this big is read by several processes
MAX_PROCESSES = 8  # a summary need not take every core of a box that is serving a model
PIECE = 16 << 20  # what one process reads at a time
_MAX_LINE_BYTES = MAX_LINE_CHARS * 4

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class LogError(UsageError):
    """The log cannot be read: printed as one line, exit 2."""


class Scan:
    """Batches (or records) of one log in file order; `lines` is the line count once
    iteration ends. `start`/`end` read a byte range of a plain file, `start` at a line start,
    counting its lines from 1."""

    def __init__(self, path: Path, start: int = 0, end: int | None = None,
                 reader: BlockReader | None = None) -> None:
        self.path = path
        self.start = start
        self.end = end
        self.lines = 0
        self.reader = reader if reader is not None else BlockReader(LineParser(GRAMMAR))

    def _open(self) -> io.BufferedIOBase:
        if self.path.is_dir():
            raise LogError(f"{self.path}: is a directory")
        try:
            if self.path.suffix == ".gz":
                return gzip.GzipFile(self.path, "rb")
            fh = self.path.open("rb")
        except FileNotFoundError:
            raise LogError(f"{self.path}: no such file") from None
        except OSError as exc:
            raise LogError(f"{self.path}: {exc.strerror or exc}") from None
        fh.seek(self.start)
        return fh

    def _read(self, fh: io.BufferedIOBase, view: memoryview) -> int:
        try:
            return fh.readinto(view)
        except (OSError, EOFError) as exc:  # a corrupt or truncated .gz
            raise LogError(f"{self.path}: {exc}") from None

    def runs(self) -> Iterator[tuple[bytearray, int]]:
        """(buffer, end) for each run of whole lines: `buffer[0]` is a newline and the lines are
        `buffer[1:end]` (the last line of the file given its missing newline). The buffer is
        reused: use it before the next step. An overlong line is cut to a bounded head."""
        buf = bytearray(1 + _MAX_LINE_BYTES + CHUNK)
        buf[0] = 10
        view = memoryview(buf)
        with self._open() as fh:
            have = 1  # buf[1:have] is the carried partial line
            left = None if self.end is None else self.end - self.start
            while left is None or left > 0:
                want = CHUNK if left is None else min(CHUNK, left)
                got = self._read(fh, view[have:have + want])
                if not got:
                    break
                if left is not None:
                    left -= got
                have += got
                cut = buf.rfind(b"\n", 1, have) + 1
                if cut == 0:
                    # no newline yet: keep a bounded head of the overlong line
                    have = min(have, 1 + _MAX_LINE_BYTES)
                    continue
                yield buf, cut
                rest = min(have - cut, _MAX_LINE_BYTES)
                buf[1:1 + rest] = buf[cut:cut + rest]
                have = 1 + rest
            if have > 1:
                buf[have] = 10
                yield buf, have + 1

    def batches(self) -> Iterator[Batch]:
        """One batch per run of lines, line numbers counted from this scan's start."""
        for buf, end in self.runs():
            batch = self.reader.read(buf, end, self.lines + 1)
            self.lines += batch.lines
            yield batch

    def __iter__(self) -> Iterator[Record]:
        for batch in self.batches():
            yield from records(batch, self.reader.stamps)


class Job(Protocol[R_co]):
    """What a command makes of a log: one result per piece, folded in file order."""

    @property
    def keep(self) -> frozenset[str] | None:
        """The record keys whose values it takes by column (`BlockReader`; None: all)."""
        ...

    def piece(self, scan: Scan) -> R_co:
        """Read a whole piece (in whichever process)."""
        ...


@dataclass(frozen=True)
class _Task(Generic[R]):
    """One piece for a worker process: everything it needs travels with it (the grammar
    included), so a `spawn`ed process works as a forked one does."""

    job: Job[R]
    grammar: Grammar
    path: Path
    start: int
    end: int | None

    def __call__(self) -> tuple[int, R]:
        scan = Scan(self.path, self.start, self.end, _reader(self.grammar, self.job.keep))
        result = self.job.piece(scan)
        return scan.lines, result


_readers: dict[tuple[int, frozenset[str] | None], tuple[Grammar, BlockReader]] = {}


def _reader(grammar: Grammar, keep: frozenset[str] | None = None) -> BlockReader:
    """One reader per grammar in a process, so that shapes learned on a piece serve the next."""
    held = _readers.get((id(grammar), keep))
    if held is None or held[0] is not grammar:
        if held is not None or len(_readers) > 4:
            _readers.clear()
        held = _readers[(id(grammar), keep)] = (grammar, BlockReader(LineParser(grammar), keep))
    return held[1]


def _run(task: _Task[R]) -> tuple[int, R]:
    return task()


def processes() -> int:
    """How many processes a large log is read with: one per core, at most `MAX_PROCESSES`;
    `KDASH_PROCESSES=N` asks for N (1 keeps it to one)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        wanted = int(os.environ.get("KDASH_PROCESSES", str(cores or 1)))
    except ValueError:
        wanted = cores or 1
    return max(1, min(wanted, MAX_PROCESSES))


def _line_start_after(fh: IO[bytes], pos: int) -> int:
    """The offset of the first line start at or after `pos`."""
    fh.seek(max(0, pos - 1))
    while True:
        piece = fh.read(1 << 16)
        if not piece:
            return fh.tell()
        nl = piece.find(b"\n")
        if nl >= 0:
            return fh.tell() - len(piece) + nl + 1


def cuts(path: Path, size: int, piece: int = PIECE) -> list[int]:
    """Piece boundaries of a plain file, each at a line start."""
    out = [0]
    with path.open("rb") as fh:
        while out[-1] < size:
            nxt = _line_start_after(fh, out[-1] + piece)
            out.append(min(max(nxt, out[-1] + 1), size))
    return out


def _context() -> Any:
    """How reading processes start: `fork` (quick) in a process that runs no other thread,
    `spawn` where other threads run (the replay reads its log on a thread of its screen's
    app: a forked copy of such a process may inherit locks those threads hold) or where fork
    is unavailable. `KDASH_START` names one."""
    import multiprocessing

    wanted = os.environ.get("KDASH_START")
    if wanted:
        return multiprocessing.get_context(wanted)
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def prepare_processes(path: Path) -> None:
    """Call before a Textual app takes over the terminal when the app will read `path`.

    A start method other than fork needs multiprocessing's resource tracker, a process of
    its own that is handed this process's standard error at its start; Textual's stand-in for
    `sys.stderr` says its descriptor is -1, and the tracker then fails to start (`bad
    value(s) in fds_to_keep`). Started here, before the app, it gets the real one."""
    if path.suffix == ".gz" or processes() < 2:
        return
    try:
        if path.stat().st_size < PARALLEL_MIN:
            return
    except OSError:
        return
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()


def _pieces(path: Path, tasks: list[_Task[R]], n: int) -> Iterator[tuple[int, R]]:
    """Run the pieces in `n` processes; results in file order, a bounded number in flight.
    A process that cannot start, or dies, is a LogError; an error a piece raises is raised
    as it is."""
    cannot = f"{path}: could not start the processes that read it"
    try:
        pool = ProcessPoolExecutor(n, mp_context=_context())
    except (OSError, ValueError) as exc:
        raise LogError(f"{cannot} ({exc}); KDASH_PROCESSES=1 reads it in one") from None
    with pool:
        window = 2 * n  # results in flight: bounded memory, and no worker waits on the parent
        pending: list[Future[tuple[int, R]]] = []
        try:
            for task in tasks:
                try:
                    pending.append(pool.submit(_run, task))
                except (OSError, ValueError) as exc:
                    raise LogError(f"{cannot} ({exc}); KDASH_PROCESSES=1 reads it in one"
                                   ) from None
                if len(pending) >= window:
                    yield pending.pop(0).result()
            for fut in pending:
                yield fut.result()
        except BrokenProcessPool as exc:
            raise LogError(f"{path}: a process reading it died ({exc}); KDASH_PROCESSES=1 "
                           "reads it in one") from None


def run_job(path: Path, job: Job[R], grammar: Grammar = GRAMMAR,
            workers: int | None = None) -> Iterator[tuple[int, R]]:
    """(lines, result) per piece of the log in file order; lines count from 1 in each piece.
    A `.gz` is one piece; a small file, or one process, is read here, piece by piece."""
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0
    n = processes() if workers is None else workers
    if path.suffix == ".gz" or size == 0:
        yield _Task(job, grammar, path, 0, None)()
        return
    bounds = cuts(path, size)
    tasks = [_Task(job, grammar, path, a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    if size < PARALLEL_MIN or n < 2:
        for task in tasks:  # here, a piece at a time: what is held stays bounded
            yield task()
        return
    yield from _pieces(path, tasks, n)


def ref_time(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def fold(path: Path, job: Job[R], each: Callable[[int, R], None],
         grammar: Grammar = GRAMMAR) -> int:
    """Run a job over the log and hand `each(lines before the piece, result)` the pieces in
    file order; the log's line count. Raises LogError."""
    done = 0
    try:
        for lines, result in run_job(path, job, grammar):
            each(done, result)
            done += lines
    except OSError as exc:  # the file went away between the processes' reads
        raise LogError(f"{path}: {exc.strerror or exc}") from None
    return done
