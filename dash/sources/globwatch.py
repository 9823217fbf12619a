"""Whether a glob's matches may have changed since it last ran: a stat of each directory it reads.

A glob re-run every second on a busy run finds the same files every time: its directories are
listed, each entry matched and each match stat'ed, while the files only grow. A file appears in a
glob's matches only where an entry is added to (or removed from, or renamed in) a directory the
glob lists, which moves that directory's mtime. `GlobWatch` keeps the directories a set of
patterns reads (the literal directory a pattern starts from, and every directory its magic parts
matched, down to the one its last part is matched in) with their mtimes as they were just before
the glob last ran, and says the glob is due again when one of them moved, disappeared or
appeared.

Timestamps move in kernel ticks (coarser on NFS), so two changes within the tick of a look leave
a directory's mtime as the look saw it: a directory changed within `RECENT_NS` of the glob's last
run is due again at the next check, however late that comes (a slow glob is re-run seconds
apart), and so on until a run comes after it settled. A slow safety re-run (`SAFETY_S`) covers
what a directory's mtime cannot tell (a file system that does not keep it, an entry replaced by
a rename onto it).
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable

RECENT_NS = 3_000_000_000
"""A directory whose mtime is this recent may change again within the same timestamp tick."""
SAFETY_S = 30.0
"""The glob is re-run at least this often, whatever the directories say."""

Looked = tuple[tuple[str, int | None], ...]
"""(directory, mtime in ns, or None where it does not exist), in walking order."""


def glob_dirs(pattern: str, *, recursive: bool) -> list[str]:
    """The directories `glob.glob(pattern)` lists: where its first magic part is matched, and
    every directory each magic part of its directory matched (all of them below a `**`)."""
    head = os.path.dirname(pattern)
    if recursive and os.path.basename(pattern) == "**":
        # a last part of `**` matches at every depth: every directory below is listed
        return glob_dirs(os.path.join(pattern, ""), recursive=True)
    if not glob.has_magic(head):
        return [head or os.curdir]
    parts = []
    while glob.has_magic(head):
        head, part = os.path.split(head)
        parts.append(part)
    dirs = [head or os.curdir]
    prefix = head
    for part in reversed(parts):
        prefix = os.path.join(prefix, part)
        for path in glob.glob(prefix, recursive=recursive):
            if os.path.isdir(path):
                dirs.append(os.path.normpath(path))  # `**` gives its base as "base/"
    return list(dict.fromkeys(dirs))


class GlobWatch:
    """Say when the globs `patterns` need running again (`due`), from their directories' mtimes.

    `ran()` is called just before each run of the globs: it finds their directories afresh and
    keeps their mtimes. `monotonic` and `wall_ns` are the clocks (injected by tests).
    """

    def __init__(self, patterns: tuple[str, ...], *, recursive: bool,
                 safety_s: float = SAFETY_S, recent_ns: int = RECENT_NS,
                 monotonic: Callable[[], float] = time.monotonic,
                 wall_ns: Callable[[], int] = time.time_ns) -> None:
        self._patterns = patterns
        self._recursive = recursive
        self._safety_s = safety_s
        self._recent_ns = recent_ns
        self._monotonic = monotonic
        self._wall_ns = wall_ns
        self._looked: Looked | None = None
        self._ran_at = float("-inf")
        self._ran_wall_ns = 0
        """The wall clock at the last run: a directory changed within `recent_ns` before it may
        have changed again, unseen, within the same timestamp tick after the listing."""

    def due(self) -> bool:
        """Whether the globs may find something else than at their last run (one stat for each
        directory they read)."""
        looked = self._looked
        if looked is None or self._monotonic() - self._ran_at >= self._safety_s:
            return True
        recent = self._ran_wall_ns - self._recent_ns
        for path, mtime in looked:
            now = _mtime(path)
            if now != mtime or (now is not None and now >= recent):
                return True
        return False

    def ran(self) -> None:
        """The globs are about to run: keep their directories as they are now."""
        self._ran_at = self._monotonic()
        self._ran_wall_ns = self._wall_ns()
        dirs: dict[str, None] = {}
        for pattern in self._patterns:
            for path in glob_dirs(pattern, recursive=self._recursive):
                dirs[path] = None
        self._looked = tuple((path, _mtime(path)) for path in dirs)


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
