"""Reading a whole server log from disk: the one reader `summary`, `export` and `replay` share.

`Scan` reads the file in large binary blocks of whole lines (a `.gz` through gzip) and hands
each to a `BlockReader` (`dash.core.log.bulk`), which gives the block's records in file order
with the parser the grammar derives. What a command does with a block is a `Job`: summary
parts, the JSON lines of `export`, or the compact columns of a replay. A large plain file is
cut into pieces at line starts and read by several processes (`run_job`) with
`concurrent.futures`; each piece counts its lines from 1 and the pieces are stitched in file
order here (or, for a `numbered` job, each is handed the number of its first line, counted
just before), so the result is the same as one process gives, byte for byte. Memory stays
bounded on a multi-GB log: at most a few pieces' results are in flight.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import threading
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import IO, Any, Generic, Protocol, TypeVar

from dash.core.errors import UsageError
from dash.core.log.batch import Batch, newlines
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
Results = Generator[tuple[int, R], None, None]
"""(lines, result) per piece, in file order."""


class LogError(UsageError):
    """The log cannot be read: printed as one line, exit 2."""


class LogCut(LogError):
    """A compressed log breaks off (cut short while it was written or copied, or damaged)
    after lines that were read: raised once those lines' results are handed out, so that a
    command shows them, then says this in one line (exit 1, as `zcat` does)."""

    def __init__(self, message: str, lines: int) -> None:
        super().__init__(message)
        self.lines = lines
        """The whole lines read before the break."""


def cut_message(path: Path, why: str, lines: int) -> str:
    return (f"{path}: the compressed log breaks off after line {lines:,} ({why}): "
            "what is shown stops there")


class Scan:
    """Batches (or records) of one log in file order; `lines` is the line count once
    iteration ends. `start`/`end` read a byte range of a plain file, `start` at a line start,
    numbering its lines from `first_line`."""

    def __init__(self, path: Path, start: int = 0, end: int | None = None,
                 reader: BlockReader | None = None, first_line: int = 1) -> None:
        self.path = path
        self.start = start
        self.end = end
        self.first_line = first_line
        """The number of the range's first line (1 unless the job asks for the file's)."""
        self.lines = 0
        self.reader = reader if reader is not None else BlockReader(LineParser(GRAMMAR))
        self.cut: str | None = None
        """Why a `.gz` broke off after some lines were read (None: read to its end)."""
        self._got = 0

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
        if not isinstance(fh, gzip.GzipFile):
            return fh.readinto(view)
        # A .gz is read a decompressed run at a time (`readinto1`): where it breaks off (a
        # copy cut short, a file still being compressed) or is damaged, what came before is
        # kept. One `readinto` would lose the block it was filling.
        got = 0
        while got < len(view) and self.cut is None:
            try:
                n = fh.readinto1(view[got:])
            except (OSError, EOFError, zlib.error) as exc:
                if not self._got + got:  # nothing readable at all: not a log
                    raise LogError(f"{self.path}: {exc}") from None
                self.cut = str(exc) or type(exc).__name__
                break
            if not n:
                break
            got += n
        self._got += got
        return got

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
            if have > 1 and self.cut is None:  # a line the break cut in two is not one
                buf[have] = 10
                yield buf, have + 1

    def batches(self) -> Iterator[Batch]:
        """One batch per run of lines, line numbers counted from `first_line`."""
        for buf, end in self.runs():
            batch = self.reader.read(buf, end, self.first_line + self.lines)
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

    @property
    def numbered(self) -> bool:
        """Whether each piece is read with the file's own line numbers (worked out before the
        piece is handed out), so that its result needs no shifting; else from 1."""
        ...

    def piece(self, scan: Scan) -> R_co:
        """Read a whole piece (in whichever process)."""
        ...


@dataclass(frozen=True)
class _Task(Generic[R]):
    """One piece for a worker process: everything it needs travels with it (a grammar other
    than `GRAMMAR` included), so a `spawn`ed process works as a forked one does."""

    job: Job[R]
    grammar: Grammar
    path: Path
    start: int
    end: int | None
    first_line: int = 1

    def __call__(self) -> tuple[int, R]:
        lines, result, _cut = self.read()
        return lines, result

    def __reduce__(self) -> tuple[Any, ...]:
        # The grammar every command reads with travels as a name: a process has its own
        # (forked, the same object; spawned, built by the same code), and a copy of it would
        # cost each piece the pickling and the comparison with the one held (`_reader`).
        grammar = None if self.grammar is GRAMMAR else self.grammar
        return _task, (self.job, grammar, self.path, self.start, self.end, self.first_line)

    def read(self) -> tuple[int, R, str | None]:
        """(lines, result, why a `.gz` broke off or None)."""
        scan = Scan(self.path, self.start, self.end, _reader(self.grammar, self.job.keep),
                    self.first_line)
        result = self.job.piece(scan)
        return scan.lines, result, scan.cut


def _task(job: Job[R], grammar: Grammar | None, path: Path, start: int, end: int | None,
          first_line: int) -> _Task[R]:
    """A `_Task` as it was pickled (`_Task.__reduce__`)."""
    return _Task(job, GRAMMAR if grammar is None else grammar, path, start, end, first_line)


_readers: list[tuple[Grammar, frozenset[str] | None, BlockReader]] = []


def _reader(grammar: Grammar, keep: frozenset[str] | None = None) -> BlockReader:
    """One reader per grammar in a process, so that shapes learned on a piece serve the next.
    A spawned process gets each piece's grammar as a copy of its own: an equal grammar is the
    same one (else every piece would build its parser and learn its shapes again)."""
    for held, kept, reader in _readers:
        if kept == keep and (held is grammar or held == grammar):
            return reader
    if len(_readers) > 4:
        _readers.clear()
    reader = BlockReader(LineParser(grammar), keep)
    _readers.append((grammar, keep, reader))
    return reader


def _run(task: _Task[R]) -> tuple[int, bytes]:
    """A piece read in a worker process, its result pickled here: the thread that reads the
    results unpickles it (`_results`), not the pool's own thread, so that the result's memory
    comes from the reading thread's allocator arena (glibc keeps one per thread), where what
    the result later frees (a replay's value texts, once read into numbers) is used again."""
    lines, result = task()
    return lines, pickle.dumps(result, pickle.HIGHEST_PROTOCOL)


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


def cuts(path: Path, size: int, piece: int | None = None, workers: int = 1) -> list[int]:
    """Piece boundaries of a plain file, each at a line start, about `piece` bytes apart
    (`PIECE`, read when called). For `workers` processes the last pieces get smaller (down
    to a sixteenth of `piece`), so that the processes finish together: a last large piece
    would be read by one of them while the others wait."""
    piece = PIECE if piece is None else piece
    out = [0]
    with path.open("rb") as fh:
        while out[-1] < size:
            step = piece
            if workers > 1:
                step = max(piece // 16, min(piece, (size - out[-1]) // (2 * workers)), 1)
            nxt = _line_start_after(fh, out[-1] + step)
            out.append(min(max(nxt, out[-1] + 1), size))
    return out


def _context() -> Any:
    """How reading processes start: `fork` (quick) in a process that runs no other thread,
    `spawn` where other threads run (a replay app that starts its own reading does so on a
    thread of the app: a forked copy of such a process may inherit locks those threads hold)
    or where fork is unavailable. `KDASH_START` names one."""
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


def newlines_in(path: Path, start: int, end: int) -> int:
    """How many newlines the byte range holds (the lines of a piece cut at line starts)."""
    total = 0
    with path.open("rb") as fh:
        fh.seek(start)
        left = end - start
        while left > 0:
            block = fh.read(min(CHUNK, left))
            if not block:
                break
            left -= len(block)
            total += newlines(block)
    return total


def _numbered(path: Path, tasks: list[_Task[R]]) -> Iterator[_Task[R]]:
    """The tasks with the file's number of each one's first line, counted here just before
    it is handed out (a count runs at memory speed: far ahead of the processes reading)."""
    first = 1
    for before, task in zip([None, *tasks], tasks, strict=False):
        if before is not None and before.end is not None:
            first += newlines_in(path, before.start, before.end)
        yield replace(task, first_line=first)


def _pieces(path: Path, tasks: Iterable[_Task[R]], n: int) -> Results[R]:
    """Run the pieces in `n` processes; results in file order, a bounded number in flight.
    The processes start, and the first pieces are handed out, now (see `start_job`); the
    results come as the iterator is read. A process that cannot start, or dies, is a
    LogError; an error a piece raises is raised as it is."""
    cannot = f"{path}: could not start the processes that read it"
    try:
        pool = ProcessPoolExecutor(n, mp_context=_context())
    except (OSError, ValueError) as exc:
        raise LogError(f"{cannot} ({exc}); KDASH_PROCESSES=1 reads it in one") from None

    def submit(task: _Task[R]) -> Future[tuple[int, bytes]]:
        try:
            return pool.submit(_run, task)
        except (OSError, ValueError) as exc:
            pool.shutdown(cancel_futures=True)
            raise LogError(f"{cannot} ({exc}); KDASH_PROCESSES=1 reads it in one") from None

    todo = iter(tasks)
    window = 2 * n  # results in flight: bounded memory, and no worker waits on the parent
    pending = [submit(task) for task in islice(todo, window)]
    return _results(path, pool, pending, map(submit, todo))


def _results(path: Path, pool: ProcessPoolExecutor, pending: list[Future[tuple[int, bytes]]],
             more: Iterator[Future[tuple[int, bytes]]]) -> Results[R]:
    with pool:
        try:
            while pending:
                lines, data = pending.pop(0).result()
                pending.extend(islice(more, 1))
                yield lines, pickle.loads(data)  # our own workers' bytes
        except BrokenProcessPool as exc:
            raise LogError(f"{path}: a process reading it died ({exc}); KDASH_PROCESSES=1 "
                           "reads it in one") from None


def run_job(path: Path, job: Job[R], grammar: Grammar = GRAMMAR,
            workers: int | None = None) -> Iterator[tuple[int, R]]:
    """(lines, result) per piece of the log in file order; lines count from 1 in each piece.
    A `.gz` is one piece; a small file, or one process, is read here, piece by piece."""
    yield from start_job(path, job, grammar, workers)


def start_job(path: Path, job: Job[R], grammar: Grammar = GRAMMAR,
              workers: int | None = None) -> Results[R]:
    """`run_job`, with the reading processes (where a large plain log has them) started now
    and reading its first pieces while the caller goes on: called before the process starts
    a thread, they are forked then (see `_context`), which spares each the interpreter's
    start and imports a spawned process pays. Read the iterator to the end, or close it."""
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0
    n = processes() if workers is None else workers
    if path.suffix == ".gz" or size == 0:
        return _here(path, job, grammar, [(0, None)])
    if size < PARALLEL_MIN or n < 2:
        bounds = cuts(path, size)
        return _here(path, job, grammar, list(zip(bounds, bounds[1:], strict=False)))
    bounds = cuts(path, size, workers=n)
    tasks = [_Task(job, grammar, path, a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    return _pieces(path, _numbered(path, tasks) if job.numbered else tasks, n)


def _here(path: Path, job: Job[R], grammar: Grammar,
          ranges: list[tuple[int, int | None]]) -> Results[R]:
    """The pieces read in this process, a piece at a time: what is held stays bounded. A
    `.gz` that breaks off raises LogCut once its lines' result is handed out."""
    first = 1
    for start, end in ranges:
        task = _Task(job, grammar, path, start, end, first if job.numbered else 1)
        lines, result, cut = task.read()
        first += lines
        yield lines, result
        if cut is not None:
            raise LogCut(cut_message(path, cut, first - 1), first - 1)


def ref_time(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def fold(path: Path, job: Job[R], each: Callable[[int, R], None],
         grammar: Grammar = GRAMMAR) -> int:
    """Run a job over the log and hand `each(lines before the piece, result)` the pieces in
    file order (a `numbered` job's results count from the file's first line already); the
    log's line count. Raises LogError (LogCut after the pieces read before a `.gz` broke
    off were handed out)."""
    done = 0
    try:
        for lines, result in run_job(path, job, grammar):
            each(done, result)
            done += lines
    except OSError as exc:  # the file went away between the processes' reads
        raise LogError(f"{path}: {exc.strerror or exc}") from None
    return done
