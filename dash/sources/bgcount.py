"""Counting newlines in the background: `wc -l` on our own read-only descriptor, niced.

`wc -l` counts at memory speed without holding the GIL (a count in Python would stall the screen
for as long as it runs); Python's `bytes` methods count where there is no `wc`. A job shares its
open file description with `wc`, so the descriptor's offset is the count's progress.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

from dash.core.mark import Mark
from dash.sources.files import read_spans

COUNT_CHUNK = 1024 * 1024


def count_newlines(fd: int, start: int, end: int, job: CountJob | None = None) -> tuple[int, int]:
    """Newlines in [start, end) of fd, and where reading stopped (big reads, newlines deleted
    and the lengths compared: `replace` jumps between them with `memchr`)."""
    n = 0
    pos = start
    while pos < end:
        data = os.pread(fd, min(COUNT_CHUNK, end - pos), pos)
        if not data:
            break
        n += len(data) - len(data.replace(b"\n", b""))  # twice as quick as bytes.count
        pos += len(data)
        if job is not None:
            if job.cancelled:
                break
            job.pos = pos
    return n, pos


class CountJob:
    """A count from 0 running in a thread: `wc -l` reading our descriptor, else Python.

    `size` is what the progress is measured against. `exact`: count [0, size) only (the lines
    before a log's backfill window); otherwise to wherever the file ends when the count gets
    there (a first count of a growing output file), `result` saying where that was.
    """

    def __init__(self, size: int, *, exact: bool = False) -> None:
        self.size = size
        self.exact = exact
        self.pos = 0
        self.result: tuple[int, int] | None = None
        self.mark: Mark | None = None
        """What vouches for the counted bytes, read once the count is done."""
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
        except FileNotFoundError:
            self.finished.set()  # gone since the stat: the next poll sees it absent
            return
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            self.finished.set()
            return
        try:
            st = os.fstat(fd)
            # Replaced while counting: no result and no error; the next poll counts the new file.
            if (st.st_dev, st.st_ino) == ident:
                with self._lock:
                    self._fd = fd
                self._count(fd)
        except (OSError, ValueError) as exc:
            self.error = str(exc)
        finally:
            with self._lock:
                self._fd = None
                self._proc = None
                os.close(fd)
            self.finished.set()

    def _count(self, fd: int) -> None:
        """Count from 0; a file rewritten meanwhile (its head changed) gives no result."""
        (h_at, h_len), _ = Mark.spans_at(self.size)
        head = os.pread(fd, h_len, h_at)
        lines, end = self._wc(fd) or count_newlines(fd, 0, self.size, self)
        if self.exact:
            if end < self.size:
                return  # cut short under the count: no number it gives would be right
            lines -= count_newlines(fd, self.size, end)[0]  # wc reads on to the file's end
            end = self.size
        mark = Mark(end, *read_spans(fd, Mark.spans_at(end)))
        if mark.head[:len(head)] == head:
            self.result, self.mark = (lines, end), mark

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
