"""The server logs: one follower per log, globs expanded as their files appear, lines parsed.

`--log` may name several logs (a PD prefill and decode server, several nodes, several servers
on one box) and globs of them. A literal path that does not exist yet is waited for, as one
log always was; a glob is expanded at every read, so a log that appears later (a node that
joined) is followed from its start. Each log's records are numbered as in its file
(`dash.sources.loglines`). Parsing happens here, in the reading thread, off the UI's.
"""

from __future__ import annotations

import glob
import os
import time
from dataclasses import dataclass
from pathlib import Path

from dash.core.config import MAX_LOGS
from dash.core.log.parse import LineParser
from dash.core.log.prefix import clean
from dash.sources.files import FileFollower, FollowRead
from dash.sources.globwatch import GlobWatch
from dash.sources.loglines import LogLines
from dash.sources.observations import LogRead

STAMP_LOOKBACK = 64
"""Lines looked back at for the last stamp of a read (a traceback prints none)."""
MAX_STAMP_CHARS = 512
RESCAN_S = 2.0
"""A glob is expanded again at most this often..."""
RESCAN_FACTOR = 20.0
"""...nor sooner than this many times as long as it took (a glob over a big tree is slow)."""


@dataclass
class _Log:
    follower: FileFollower
    lines: LogLines
    """Parses what the follower read, numbered as in the file (past the backfill too)."""
    pattern: str | None


class ServerLogs:
    """Every configured server log, read in the order given."""

    def __init__(self, paths: tuple[Path, ...], parser: LineParser, backfill: int) -> None:
        self._parser = parser
        self._backfill = backfill
        self._patterns = [str(p) for p in paths]
        self._logs: dict[str, _Log] = {}
        self._cut: int | None = None
        self._next_scan = 0.0
        self._waiting: list[LogRead] = []
        self._dirs = GlobWatch(tuple(self.globs), recursive=False)
        for p in self._patterns:
            if not glob.has_magic(p):
                self._add(p, None)

    @property
    def literal_paths(self) -> list[Path]:
        return [Path(p) for p in self._patterns if not glob.has_magic(p)]

    @property
    def primary_path(self) -> str | None:
        """The file of the first log configured (a glob's first file, once there is one)."""
        first = self._patterns[0] if self._patterns else None
        if first is None or not glob.has_magic(first):
            return first
        return next((p for p, log in self._logs.items() if log.pattern == first), None)

    @property
    def globs(self) -> list[str]:
        return [p for p in self._patterns if glob.has_magic(p)]

    def _add(self, path: str, pattern: str | None) -> bool:
        if path in self._logs:
            return True
        if len(self._logs) >= MAX_LOGS:
            return False
        follower = FileFollower(path, backfill=self._backfill)
        self._logs[path] = _Log(follower, LogLines(follower, self._parser), pattern)
        return True

    def _expand(self) -> list[LogRead]:
        """New files of the globs get followers; a glob matching nothing says it waits.

        Globs are expanded again after `RESCAN_S`, and `RESCAN_FACTOR` times what it took, when
        a directory they read has changed (`dash.sources.globwatch`)."""
        began = time.monotonic()
        if not self.globs or began < self._next_scan or not self._dirs.due():
            return list(self._waiting)
        self._dirs.ran()
        waiting: list[LogRead] = []
        for pattern in self.globs:
            matches = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
            if not matches and not any(log.pattern == pattern for log in self._logs.values()):
                follow = FollowRead(pattern, status="waiting",
                                    message=f"{pattern}: no file matches yet")
                waiting.append(LogRead(pattern, follow, pattern=pattern))
            for i, path in enumerate(matches):
                if not self._add(path, pattern):
                    self._cut = len(matches) - i
                    break
        took = time.monotonic() - began
        self._next_scan = began + max(RESCAN_S, RESCAN_FACTOR * took)
        self._waiting = waiting
        return list(waiting)

    def notice(self) -> str | None:
        """Said when a glob matched more logs than kdash follows."""
        if self._cut is None:
            return None
        return f"--log: following the first {MAX_LOGS} server logs; {self._cut} more not followed"

    def read(self) -> tuple[LogRead, ...]:
        """What is new in every log (blocking: call from a worker thread)."""
        out = self._expand()
        for path, log in self._logs.items():
            follow = log.follower.poll()
            records = log.lines.parse(follow)
            ago = None if follow.mtime is None else max(0.0, time.time() - follow.mtime)
            ts, last = self._last_stamp(follow.lines)
            out.append(LogRead(path, follow, records, ago, log.pattern, log.lines.counted(),
                               ts, last and not follow.partial))
        return tuple(out)

    def _last_stamp(self, lines: tuple[str, ...]) -> tuple[str | None, bool]:
        """The newest stamp among the last lines read (a line of no interest, an HTTP access
        line, was written at its stamp as much as a stats line), and whether its line is the
        last one."""
        split = self._parser.prefixes.split
        for back, line in enumerate(reversed(lines[-STAMP_LOOKBACK:])):
            ts = split(clean(line[:MAX_STAMP_CHARS])).ts
            if ts:
                return ts, back == 0
        return None, False

    @property
    def counting(self) -> bool:
        """Whether the lines before a log's backfill window are still being counted."""
        return any(log.lines.counting for log in self._logs.values())

    def close(self) -> None:
        for log in self._logs.values():
            log.lines.close()
            log.follower.close()
