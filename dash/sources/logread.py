"""Reading a whole server log from disk: records or summary parts, in file order, streaming.

`Scan` reads the file in large binary blocks of whole lines (a `.gz` through gzip). Export and
replay take every record (uvicorn access lines, the bulk of a busy log, are skipped by one
compiled pattern at C speed); summary takes one `Part` per block, straight from the bytes where
`dash.core.views.fastscan` can vouch for them. A large plain file is summarised by several
processes (`summary_parts`). Memory stays constant on a multi-GB log.
"""

from __future__ import annotations

import gzip
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from dash.core.errors import UsageError
from dash.core.log.parse import MAX_LINE_CHARS, Record, parse_line
from dash.core.state.timeline import MAX_RECORDS, Timeline
from dash.core.views.fastscan import scan_block
from dash.core.views.summary import Part, PartBuilder

CHUNK = 1 << 20  # a block that stays in cache across the few passes over it
PARALLEL_MIN = 64 << 20  # a plain file at least this big is summarised by several processes
SEGMENT = 1 << 30  # bytes read per round by all of them
MAX_PROCESSES = 8  # a summary need not take every core of a box that is serving a model
PIECE = 16 << 20  # what one process takes at a time: small enough that all finish together
_MAX_LINE_BYTES = MAX_LINE_CHARS * 4
# A line start that is neither blank nor a uvicorn access line (`INFO:     127.0.0.1:...`,
# after SGLang's `[ts] ` or vLLM's `(APIServer pid=1) `): parse_line returns None for those.
# `[` and any 19 characters `] ` is the stamp's width, as the fast path reads it (fastscan).
_CANDIDATE = re.compile(
    rb"\n(?!\r?\n|(?:\[[^\]\n]{0,80}\] |\([^)\n]{0,80}\) |\[.{19}\] )?INFO:     \d)"
)


class LogError(UsageError):
    """The log cannot be read: printed as one line, exit 2."""


class Scan:
    """Records (or summary parts) of one log in file order; `lines` is the line count once
    iteration ends. `start`/`end` read a byte range of a plain file, `start` at a line start,
    counting its lines from 1."""

    def __init__(self, path: Path, start: int = 0, end: int | None = None) -> None:
        self.path = path
        self.start = start
        self.end = end
        self.lines = 0

    def _open(self) -> IO[bytes]:
        if self.path.is_dir():
            raise LogError(f"{self.path}: is a directory")
        try:
            if self.path.suffix == ".gz":
                return gzip.open(self.path, "rb")
            fh = self.path.open("rb")
        except FileNotFoundError:
            raise LogError(f"{self.path}: no such file") from None
        except OSError as exc:
            raise LogError(f"{self.path}: {exc.strerror or exc}") from None
        fh.seek(self.start)
        return fh

    def _read(self, fh: IO[bytes], view: memoryview) -> int:
        try:
            return fh.readinto(view)  # type: ignore[attr-defined]
        except (OSError, EOFError) as exc:  # a corrupt or truncated .gz
            raise LogError(f"{self.path}: {exc}") from None

    def runs(self) -> Iterator[tuple[bytearray, int]]:
        """(buffer, end) for each run of whole lines: `buffer[0]` is a newline and the lines are
        `buffer[1:end]` (the last line of the file given its missing newline). The buffer is
        reused: use it before the next step. An overlong line is cut to a bounded head.
        `lines` counts what the caller has been given."""
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

    def blocks(self) -> Iterator[bytes]:
        """Runs of whole lines, as `runs` gives them, each its own bytes."""
        for buf, end in self.runs():
            yield bytes(buf[1:end])

    def __iter__(self) -> Iterator[Record]:
        for block in self.blocks():
            yield from self._block(block)

    def parts(self) -> Iterator[Part]:
        """One summary part per block: the fast path where it vouches, else record by record."""
        for buf, end in self.runs():
            part = scan_block(buf, end, self.lines + 1)
            if part is None:
                base = self.lines
                part = PartBuilder().feed_all(self._block(bytes(buf[1:end])))
                part.lines = self.lines - base
            else:
                self.lines += part.lines
            yield part

    def _block(self, block: bytes) -> Iterator[Record]:
        """Records of a run of complete lines; advances the line count."""
        base = self.lines  # line number of the line before the block
        scan = b"\n" + block
        pos, lineno = 0, base
        for m in _CANDIDATE.finditer(scan, 0, len(scan) - 1):
            start = m.end()
            lineno += scan.count(b"\n", pos, start)
            end = scan.find(b"\n", start)
            pos = start
            text = scan[start:min(end, start + _MAX_LINE_BYTES)].decode("utf-8", "replace")
            rec = parse_line(text, lineno)
            if rec is not None:
                yield rec
        self.lines = base + block.count(b"\n")


class _Claims:
    """Pieces of a segment handed out from both ends: this process reads from the front (it
    merges as it goes), the forked ones from the back, until they meet; whoever is quicker
    reads more, so a busy core holds nobody up."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared  # multiprocessing.Array('q', 2): next front piece, end of the back

    def reset(self, pieces: int) -> None:
        with self.shared.get_lock():
            self.shared[0], self.shared[1] = 0, pieces

    def take(self, front: bool) -> int | None:
        with self.shared.get_lock():
            lo, hi = self.shared[0], self.shared[1]
            if lo >= hi:
                return None
            if front:
                self.shared[0] = lo + 1
                return lo
            self.shared[1] = hi - 1
            return hi - 1


_worker_claims: _Claims | None = None  # a forked process's view of the claims (pool initializer)


def _init_worker(claims: _Claims) -> None:
    global _worker_claims
    _worker_claims = claims


def _back_piece(path: Path, cuts: list[int]) -> tuple[int, list[Part]] | None:
    """In a forked process: the next piece from the back and its parts (lines counted from 1),
    or None when the pieces have run out. One piece a task, so that each is handed back as
    soon as it is read, not all at the end."""
    assert _worker_claims is not None
    i = _worker_claims.take(front=False)
    return None if i is None else (i, list(Scan(path, cuts[i], cuts[i + 1]).parts()))


def _line_start_after(path: Path, pos: int) -> int:
    """The offset of the first line start at or after `pos`."""
    with path.open("rb") as fh:
        fh.seek(max(0, pos - 1))
        while True:
            piece = fh.read(1 << 16)
            if not piece:
                return fh.tell()
            nl = piece.find(b"\n")
            if nl >= 0:
                return fh.tell() - len(piece) + nl + 1


def processes() -> int:
    """How many processes a large summary uses: one per core, at most `MAX_PROCESSES`;
    `KDASH_PROCESSES=N` asks for N (1 keeps it to one)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        wanted = int(os.environ.get("KDASH_PROCESSES", str(cores or 1)))
    except ValueError:
        wanted = cores or 1
    return max(1, min(wanted, MAX_PROCESSES))


def summary_parts(path: Path) -> Iterator[Part]:
    """Every part of the log in file order. A large plain file is read in segments, each cut
    into pieces at line starts and read by this process and forked ones at once (`_Claims`);
    segments bound what the forked processes hand back."""
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0
    n = processes()
    if path.suffix == ".gz" or size < PARALLEL_MIN or n < 2:
        yield from Scan(path).parts()
        return
    import multiprocessing  # only here: a small log starts quicker without it

    ctx = multiprocessing.get_context("fork")
    claims = _Claims(ctx.Array("q", 2))
    done, start = 0, 0  # lines and bytes before the segment
    with ctx.Pool(n - 1, initializer=_init_worker, initargs=(claims,)) as pool:
        while start < size:
            end = size if size - start < SEGMENT * 3 // 2 else _line_start_after(path, start + SEGMENT)
            count = max(n, -(-(end - start) // PIECE))
            cuts = [start, *(min(end, _line_start_after(path, start + (end - start) * k // count))
                             for k in range(1, count)), end]
            claims.reset(count)
            later = [pool.apply_async(_back_piece, (path, cuts)) for _ in range(count)]
            first = 0  # pieces read here: those before `first`
            while (i := claims.take(front=True)) is not None:
                scan = Scan(path, cuts[i], cuts[i + 1])
                for part in scan.parts():
                    part.shift(done)
                    yield part
                done += scan.lines
                first = i + 1
            back = dict(filter(None, (result.get() for result in later)))
            for i in range(first, count):
                offset = done  # each piece's lines were counted from 1
                for part in back[i]:
                    part.shift(offset)
                    done += part.lines
                    yield part
            start = end



def ref_time(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0



def load_timeline(path: Path, *, cap: int = MAX_RECORDS,
                  progress: Callable[[int], None] | None = None) -> Timeline:
    """Every record of the log (up to `cap`) with its epoch time; raises LogError."""
    try:
        ref = path.stat().st_mtime
    except OSError:
        ref = time.time()
    timeline = Timeline(ref=ref, cap=cap)
    for rec in Scan(path):
        if not timeline.add(rec):
            break
        if progress is not None and len(timeline.records) % 65536 == 0:
            progress(len(timeline.records))
    timeline.finish()
    return timeline
