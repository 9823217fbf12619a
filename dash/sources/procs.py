"""The client processes: command lines matching a pattern, via psutil (blocking; call from a thread).

Zero matches (the client died) and more than one (a stale client from an earlier run writing the
same outputs) both matter, so every match is returned. kdash's own processes are left out: this
one and its ancestors, and any other kdash given the pattern on its command line (a dashboard
and a `kdash serve` with the same `--process`, a `--once` from cron), together with the shells
and wrappers that started them (`bash -c "kdash --process ..."`, `tmux new "kdash ..."`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import psutil

from dash.core.snapshot import ProcessInfo

MAX_CMDLINE = 500


@dataclass(frozen=True, slots=True)
class ProcessError:
    """Listing processes failed (the error, as a value)."""

    reason: str


def is_kdash(argv: list[str]) -> bool:
    """Whether a command line runs kdash with `--process` on it, directly or through a shell,
    tmux, timeout or sudo (the words of `bash -c "..."` are looked at too)."""
    words = [w for arg in argv for w in arg.split()]
    for i, word in enumerate(words):
        runs = os.path.basename(word) == "kdash" or (
            word == "-m" and i + 1 < len(words) and words[i + 1] == "dash")
        if runs and any(w == "--process" or w.startswith("--process=") for w in words[i + 1:]):
            return True
    return False


def _matcher(pattern: str) -> re.Pattern[str]:
    """A regular expression if the pattern is one, else the pattern as literal text."""
    try:
        return re.compile(pattern)
    except re.error:
        return re.compile(re.escape(pattern))


class ProcessSource:
    """Processes whose command line matches `pattern`."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._re = _matcher(pattern)
        self._exclude = self._self_and_ancestors()
        self._seen: set[int] = set()

    @staticmethod
    def _self_and_ancestors() -> frozenset[int]:
        pids = {os.getpid()}
        try:
            pids.update(p.pid for p in psutil.Process().parents())
        except psutil.Error:
            pass
        return frozenset(pids)

    def sample(self) -> tuple[ProcessInfo, ...] | ProcessError:
        """Every matching process, oldest first; never raises."""
        out: list[ProcessInfo] = []
        try:
            procs = list(psutil.process_iter(["pid", "name", "cmdline", "create_time"]))
        except psutil.Error as exc:  # pragma: no cover - /proc unreadable
            return ProcessError(str(exc))
        seen: set[int] = set()
        for proc in procs:
            info = self._match(proc)
            if info is not None:
                out.append(info)
                seen.add(info.pid)
        self._seen = seen
        out.sort(key=lambda p: (p.started_at or 0.0, p.pid))
        return tuple(out)

    def _match(self, proc: psutil.Process) -> ProcessInfo | None:
        info = proc.info
        pid = int(info.get("pid") or proc.pid)
        if pid in self._exclude:
            return None
        argv = list(info.get("cmdline") or [])
        cmd = " ".join(argv)[:MAX_CMDLINE]
        if not cmd or not self._re.search(cmd) or is_kdash(argv):
            return None
        try:
            # cpu_percent(None) compares with this Process object's previous call; the first
            # call has no baseline and says 0.0, which would be a lie.
            cpu: float | None = proc.cpu_percent(None)
        except psutil.Error:
            cpu = None
        if pid not in self._seen:
            cpu = None
        return ProcessInfo(pid=pid, name=str(info.get("name") or ""), cmdline=cmd,
                           started_at=info.get("create_time"), cpu_percent=cpu)
