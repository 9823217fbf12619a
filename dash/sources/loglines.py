"""The server log's new lines as records numbered as in the file, also past the backfill window.

A long log is read from its last few MB; how many lines come before them is counted in the
background (`dash.sources.bgcount`, `wc -l` on our own descriptor of the same file), and until
that count is in, records say that their number is not known yet (`dash.core.linenums`).
"""

from __future__ import annotations

import threading
from pathlib import Path

from dash.core.linenums import LineNumbers, WindowCounted
from dash.core.log.parse import PARSER, LineParser
from dash.core.snapshot import Record
from dash.sources.bgcount import CountJob
from dash.sources.files import FileFollower, FollowRead


class LogLines:
    """Parses what a follower read and numbers it; counts the lines before a backfill window."""

    def __init__(self, follower: FileFollower, parser: LineParser = PARSER) -> None:
        self._follower = follower
        self._parser = parser
        self._numbers = LineNumbers()
        self._job: CountJob | None = None
        self._lost = False
        """A count was dropped because reading restarted: its window's records get no number."""

    @property
    def counting(self) -> bool:
        """Whether the lines before the backfill window are still being counted (a finished
        count is adopted by the next `counted`: a caller waiting for this must not wait on that)."""
        return self._job is not None and not self._job.finished.is_set()

    def parse(self, read: FollowRead) -> tuple[Record | None, ...]:
        """The records of `read.lines` in order (None: a line of no interest), numbered."""
        starts = dict(read.starts)
        out: list[Record | None] = []
        for i, text in enumerate(read.lines):
            if i in starts:
                self._restart(starts.pop(i))
            out.append(self._numbers.stamp(self._parser.parse(text)))
        for start in starts.values():  # a restart after the last line
            self._restart(start)
        return tuple(out)

    def counted(self) -> WindowCounted | None:
        """The window's base once its preceding lines are counted (said once), else None."""
        if self._lost:
            self._lost = False
            return WindowCounted(None)
        job = self._job
        if job is None or not job.finished.is_set():
            return None
        self._job = None
        if job.result is None:
            return WindowCounted(None)  # the file changed under the count: no number to give
        return self._numbers.counted(job.result[0])

    def _restart(self, start: int) -> None:
        self._lost |= self._numbers.pending
        self.close()
        self._numbers.restart(start)
        ident = self._follower.state.ident
        if start and ident is not None:
            self._job = CountJob(start, exact=True)
            # A thread of its own: it mostly waits for `wc`, and is over in seconds.
            threading.Thread(target=self._job.run, name="kdash-linecount", daemon=True,
                             args=(Path(self._follower.path), (ident.dev, ident.ino))).start()

    def close(self) -> None:
        """Stop a count still running (its `wc` is killed)."""
        if self._job is not None:
            self._job.cancel()
            self._job = None
