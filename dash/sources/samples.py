"""Reading the samples in the partitions' output files as they arrive (read-only, bounded).

Each output file has a `SampleReader`: at first sight (and after a truncation or a replacement)
it reads only the last `TAIL_LINES` lines, from the end, so a 2 GB file costs what a small one
does; then only the bytes appended since, up to the last complete line (a partial last line is
read again once its newline is there). The bytes read so far are vouched for by a
`dash.core.mark.Mark`, as the line counter's are: a file rewritten in place starts the figures
again. `SampleSource` reads every partition within one budget per read (`MAX_READ_PER_POLL`,
as the followed logs): a burst is read over several reads (`more`), and one far behind skips
ahead to the file's end rather than parse gigabytes.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from dash.core.mark import Mark
from dash.core.samples.fields import Extractor
from dash.core.samples.fieldspec import OutputFields
from dash.core.samples.lines import LineSink
from dash.core.samples.model import SampleBatch
from dash.core.state.partitions import OutputCount
from dash.sources.files import MAX_READ_PER_POLL, read_spans

TAIL_LINES = 300
"""Lines read from the end of a file at first sight."""
TAIL_BYTES = MAX_READ_PER_POLL
"""...within this many bytes of its end."""
MAX_SAMPLE_BYTES = 4 * 1024 * 1024
"""A longer line is skipped (counted as oversized); the line counter still counts it."""
SKIP_BEHIND = 32 * 1024 * 1024
"""A reader this far behind the file's end jumps to its tail instead of reading it all."""


@dataclass(frozen=True, slots=True)
class _Read:
    batch: SampleBatch | None
    used: int
    more: bool


class SampleReader:
    """The samples of one output file, read incrementally."""

    def __init__(self, name: str, path: str, spec: OutputFields) -> None:
        self.name = name
        self.path = path
        self._sink = LineSink(name, path, Extractor(spec))
        self._ident: tuple[int, int] | None = None
        self.offset = 0
        self._line: int | None = None
        """Complete lines before `offset`, when known."""
        self._mark = Mark()
        self._skipping = False
        self._oversized = 0

    def read(self, budget: int, *, reset: bool = False,
             counted: tuple[int, int] | None = None) -> _Read:
        """What is new, reading at most about `budget` bytes; `reset`: the counter saw the file
        rewritten; `counted`: the counter's (lines, offset), which gives line numbers."""
        try:
            st = os.stat(self.path)
        except OSError:
            self._ident = None  # gone or unreadable: the counter says why; read afresh later
            return _Read(None, 0, False)
        ident = (st.st_dev, st.st_ino)
        if not stat.S_ISREG(st.st_mode) or (ident == self._ident and st.st_size == self.offset
                                            and not reset):
            return _Read(None, 0, False)
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return _Read(None, 0, False)
        try:
            fst = os.fstat(fd)
            if (fst.st_dev, fst.st_ino) != ident:
                return _Read(None, 0, False)  # replaced between stat and open: next read
            size = fst.st_size
            if (reset or ident != self._ident or size < self.offset
                    or not self._mark.holds(*read_spans(fd, self._mark.spans()))):
                return self._tail(fd, ident, size, counted, restart=True)
            if size - self.offset > SKIP_BEHIND:
                return self._tail(fd, ident, size, counted, restart=False)
            return self._follow(fd, size, budget, counted)
        finally:
            os.close(fd)

    def _tail(self, fd: int, ident: tuple[int, int], size: int,
              counted: tuple[int, int] | None, *, restart: bool) -> _Read:
        """Start at the last TAIL_LINES complete lines before `size`."""
        start = max(0, size - TAIL_BYTES)
        data = os.pread(fd, size - start, start)
        end = data.rfind(b"\n") + 1  # after the last complete line (0: none in the window)
        begin = 0 if start == 0 else data.find(b"\n", 0, end) + 1  # a partial first line
        begin = _last_lines(data, begin, end, TAIL_LINES)
        skipped = 0 if restart else max(0, start + begin - self.offset)
        self._ident = ident
        if restart:
            self._oversized = 0
        # A line longer than the window, still being written or not: skip to its end.
        self._skipping = start > 0 and end == 0
        self.offset = start + (end if end else len(data) if self._skipping else 0)
        lines = data.count(b"\n", begin, end)
        first: int | None = None
        if start == 0:
            first = data.count(b"\n", 0, begin) + 1
            self._line = first - 1 + lines
        elif counted is not None and counted[1] == size:
            self._line = counted[0]  # the counter counted every newline before `size`
            first = self._line - lines + 1
        else:
            self._line = None
        self._sink.add_block(data[begin:end], start + begin, first)
        self._mark = Mark(self.offset, *read_spans(fd, Mark.spans_at(self.offset)))
        return _Read(self._sink.take(restart=restart, backfill=True, skipped_bytes=skipped),
                     len(data), False)

    def _follow(self, fd: int, size: int, budget: int, counted: tuple[int, int] | None) -> _Read:
        """Read the complete lines appended since the last read."""
        pending = size - self.offset
        want = min(pending, max(budget, 0))
        if want <= 0:
            return _Read(None, 0, True)
        data = os.pread(fd, want, self.offset)
        used = len(data)
        if self._skipping:
            data = self._skip(data)
            if self._skipping:
                return _Read(self._batch(), used, want < pending)
        end = data.rfind(b"\n") + 1
        if not end and want < pending:
            # No newline within the budget: one long line. Read it whole if it is a sample.
            data = os.pread(fd, min(size - self.offset, MAX_SAMPLE_BYTES + 1), self.offset)
            used += len(data)
            end = data.find(b"\n") + 1
        if not end:
            if len(data) > MAX_SAMPLE_BYTES:
                self._skipping = True
                self._advance(data)
                return _Read(self._batch(), used, True)
            return _Read(self._batch(), used, False)  # a partial last line: wait for its end
        block = data[:end]
        self._sink.add_block(block, self.offset, None if self._line is None else self._line + 1)
        self._advance(block)
        if counted is not None and counted[1] == self.offset:
            self._line = counted[0]
        return _Read(self._batch(), used, self.offset < size and want < pending)

    def _skip(self, data: bytes) -> bytes:
        """In an oversized line: drop bytes up to its newline; what follows it."""
        nl = data.find(b"\n")
        if nl < 0:
            self._advance(data)
            return b""
        self._advance(data[:nl + 1])
        self._skipping = False
        self._oversized += 1
        return data[nl + 1:]

    def _advance(self, block: bytes) -> None:
        self.offset += len(block)
        self._mark.advance(block)
        if self._line is not None:
            self._line += block.count(b"\n")

    def _batch(self) -> SampleBatch | None:
        oversized, self._oversized = self._oversized, 0
        batch = self._sink.take(oversized=oversized)
        if not (batch.lines or batch.oversized or any(f.hits or f.misses for f in batch.fields)):
            return None
        return batch


def _last_lines(data: bytes, begin: int, end: int, n: int) -> int:
    """Where the last `n` of the whole lines in data[begin:end] start."""
    cut = end
    for _ in range(n):
        prev = data.rfind(b"\n", begin, cut - 1) if cut - 1 > begin else -1
        if prev < 0:
            return begin
        cut = prev + 1
    return cut


class SampleSource:
    """The samples of every output file, read within one budget per read."""

    def __init__(self, spec: OutputFields, *, budget: int = MAX_READ_PER_POLL,
                 every_s: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        """`every_s`: read at most this often (0: at every poll); a burst still reads on at
        once. The live screen's figures change once a period
        (`dash.core.state.quality.LIVE_PERIOD_S`): reading the
        samples every second only did the same work in five pieces (a read's bookkeeping, a
        batch for every file, applying each on the main thread)."""
        self._spec = spec
        self._budget = budget
        self._every = every_s
        self._clock = clock
        self._read_at: float | None = None
        self._resets: set[str] = set()
        """Files the counter saw rewritten since they were last read."""
        self._readers: dict[str, SampleReader] = {}
        self._turn = 0
        self.more = False
        """The last read left bytes to read (a burst): read again soon."""

    def read(self, outputs: Iterable[OutputCount],
             counted: Mapping[str, tuple[int, int]] | None = None) -> tuple[SampleBatch, ...]:
        """New samples of each output file counted by this poll (absent ones are skipped);
        none at a poll within `every_s` of the last read."""
        outputs = tuple(outputs)
        self._resets.update(o.path for o in outputs if o.reset)  # kept until the file is read
        if self._every > 0:
            now = self._clock()
            if not self.more and self._read_at is not None and now - self._read_at < self._every:
                return ()
            self._read_at = now
        files = [o for o in outputs if o.lines is not None or o.counting]
        for o in files:
            if o.path not in self._readers:
                self._readers[o.path] = SampleReader(o.name, o.path, self._spec)
        batches: list[SampleBatch] = []
        left = self._budget
        self.more = False
        # Round robin: in a burst, each file gets the budget first in turn.
        order = files[self._turn % len(files):] + files[:self._turn % len(files)] if files else []
        self._turn += 1
        for o in order:
            if left <= 0:
                self.more = True
                break
            reset = o.path in self._resets
            self._resets.discard(o.path)
            got = self._readers[o.path].read(left, reset=reset,
                                             counted=(counted or {}).get(o.path))
            left -= got.used
            self.more |= got.more
            if got.batch is not None:
                batches.append(got.batch)
        return tuple(batches)
