"""Waking up when a followed file changes: the only module that uses watchfiles.

The parent directories are watched, not the files (a rotated or recreated file keeps its name,
not its inode), filtered to the names being followed. Where inotify is silent (NFS, overlay
filesystems) `poll=True` makes watchfiles poll; and a slow tick wakes the caller anyway, as a
safety net, so that a missed event only delays an update. Whoever wakes reads with inode and
size checks (`FileFollower.poll`), so a spurious wake costs two stats.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import glob
import os
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import watchfiles

DEBOUNCE_MS = 250
"""Changes are batched this long: a log growing 20 lines/s then wakes the reader ~4 times/s."""
SAFETY_POLL_S = 2.0


def _glob_root(pattern: str) -> Path:
    """The deepest directory of a glob that has no wildcard in it."""
    parts = Path(pattern).parts
    literal: list[str] = []
    for part in parts[:-1]:
        if glob.has_magic(part):
            break
        literal.append(part)
    return Path(*literal) if literal else Path(".")


class WatchTargets:
    """The files (by path) and globs to wake up for, and the directories to watch for them."""

    def __init__(self, paths: Iterable[Path], globs: Iterable[str] = ()) -> None:
        self.paths = frozenset(os.path.abspath(p) for p in paths)
        self.globs = tuple(os.path.abspath(g) for g in globs)
        self._dirs = {os.path.dirname(p) for p in self.paths}
        self._recursive_dirs = {os.path.abspath(_glob_root(g)) for g in self.globs}

    def wanted(self, path: str) -> bool:
        """Whether a change at `path` concerns a followed file."""
        p = os.path.abspath(path)
        return p in self.paths or any(fnmatch.fnmatch(p, g) for g in self.globs)

    def existing_dirs(self) -> tuple[tuple[str, ...], bool]:
        """The watchable directories that exist now, and whether any must be watched recursively."""
        dirs = {d for d in self._dirs | self._recursive_dirs if os.path.isdir(d)}
        recursive = any(d in dirs for d in self._recursive_dirs)
        return tuple(sorted(dirs)), recursive


async def watch_changes(
    targets: WatchTargets,
    stop_event: asyncio.Event,
    *,
    poll: bool = False,
    debounce_ms: int = DEBOUNCE_MS,
    safety_poll_s: float = SAFETY_POLL_S,
) -> AsyncIterator[None]:
    """Yield whenever a followed file may have changed, and at least every `safety_poll_s`.

    Runs until `stop_event` is set. A directory that does not exist yet is picked up on a later
    safety tick (the watch restarts when the set of existing directories changes).
    """
    woke = asyncio.Event()
    while not stop_event.is_set():
        dirs, recursive = targets.existing_dirs()
        inner_stop = asyncio.Event()
        task = (
            asyncio.create_task(_pump(dirs, recursive, targets, woke, inner_stop, poll, debounce_ms))
            if dirs else None
        )
        try:
            while not stop_event.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(_first(woke, stop_event), timeout=safety_poll_s)
                if stop_event.is_set():
                    return
                woke.clear()
                yield None
                if targets.existing_dirs()[0] != dirs:
                    break  # a watched directory appeared or vanished: rewatch
        finally:
            inner_stop.set()
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def _first(a: asyncio.Event, b: asyncio.Event) -> None:
    """Return when either event is set."""
    waiters = [asyncio.create_task(a.wait()), asyncio.create_task(b.wait())]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


async def _pump(
    dirs: tuple[str, ...],
    recursive: bool,
    targets: WatchTargets,
    woke: asyncio.Event,
    stop: asyncio.Event,
    poll: bool,
    debounce_ms: int,
) -> None:
    """Set `woke` on each batch of relevant changes; a watch error falls back to the safety tick."""
    try:
        async for _changes in watchfiles.awatch(
            *dirs,
            watch_filter=lambda _change, path: targets.wanted(path),
            debounce=debounce_ms,
            # Each batch costs a thread round trip: a step of half the debounce keeps batches
            # at ~1/debounce on a busy log (a 50 ms step returned every ~100 ms whatever the debounce).
            step=max(min(50, debounce_ms), debounce_ms // 2),
            stop_event=stop,
            force_polling=True if poll else None,
            poll_delay_ms=300,
            recursive=recursive,
            ignore_permission_denied=True,
        ):
            woke.set()
    except (OSError, RuntimeError):
        # inotify limits or a vanished directory: the safety tick keeps things moving.
        return
