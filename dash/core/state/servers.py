"""Several server logs in one run: a prefill and a decode server, several nodes, several servers.

Each log is a server of its own (`ServerLogTracker`), named by what tells its path apart from
the others' (`prefill`, `decode`, `node1/server`). The first configured is the primary: what
`RunSnapshot.server` has always been. A glob stands for the servers it matches: until a file
matches it, one server waits under the glob's name; the first file that matches takes that
place, the next ones come after it. Figures that add up across servers (throughput, running
and queued requests) are summed by `combine`; token usage is the highest server's.

A server whose log went quiet (no stats line within the liveness window), crashed or is gone
keeps its last figures on its own row but counts in no sum while another server is live: its
last `182 running` are not running now. As with DP ranks, a run where every server went quiet
(idle, finished) keeps all their last figures rather than none; they are shown old.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import PurePath

from dash.core.snapshot import Liveness, ServerLogSnapshot, ServerNow
from dash.core.state.server_log import ServerLogTracker

STEM_EXTS = (".log", ".txt", ".out", ".gz")


def _stem(part: str) -> str:
    for ext in STEM_EXTS:
        if part.endswith(ext) and len(part) > len(ext):
            return part[: -len(ext)]
    return part


def server_names(paths: Sequence[str]) -> list[str]:
    """The shortest path tails that tell the paths apart, without a log's extension:
    `prefill`, `decode`; `node0/server`, `node1/server`."""
    parts = [PurePath(p).parts or (p,) for p in paths]
    depth = 1
    while True:
        names = ["/".join((*ps[-depth:-1], _stem(ps[-1]))) for ps in parts]
        if len(set(names)) == len(names):
            return names
        if depth >= max((len(ps) for ps in parts), default=1):
            return [str(p) for p in paths]  # `a.log` and `a.txt`: only the whole name differs
        depth += 1


class Servers:
    """The run's server-log trackers, in the order configured."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._trackers: dict[str, ServerLogTracker] = {}
        self._claimed: set[str] = set()
        """Globs a file has matched: their placeholder became that file's server."""
        for p in paths:
            self._trackers.setdefault(p, ServerLogTracker(p))
        self._name()

    def __len__(self) -> int:
        return len(self._trackers)

    @property
    def primary(self) -> ServerLogTracker | None:
        return next(iter(self._trackers.values()), None)

    def all(self) -> list[ServerLogTracker]:
        return list(self._trackers.values())

    def get(self, path: str, pattern: str | None = None) -> ServerLogTracker:
        """The tracker of `path`, made when a log first appears (a glob's new file)."""
        tracker = self._trackers.get(path)
        if tracker is not None:
            return tracker
        if pattern is not None and pattern in self._trackers and pattern not in self._claimed:
            self._claimed.add(pattern)  # the glob's first file takes the glob's place
            items = [(path if k == pattern else k, v) for k, v in self._trackers.items()]
            self._trackers = dict(items)
            tracker = self._trackers[path]
            tracker.path = path
        else:
            tracker = self._trackers[path] = ServerLogTracker(path)
        self._name()
        return tracker

    def _name(self) -> None:
        trackers = list(self._trackers.values())
        if len(trackers) < 2:
            for t in trackers:
                t.name = None
            return
        names = server_names([os.path.normpath(k) for k in self._trackers])
        for t, name in zip(trackers, names, strict=True):
            t.name = name


def summed(servers: Sequence[ServerLogSnapshot], lives: Sequence[Liveness]) -> tuple[int, ...]:
    """Indexes of the servers the run's figures sum: those with figures whose log is live
    (`lives`: each server's liveness at the same `now`); all with figures when none is."""
    known = [i for i, s in enumerate(servers) if s.now is not None]
    live = [i for i in known if i < len(lives) and lives[i].log == "live"]
    return tuple(live or known)


def combine(servers: Sequence[ServerLogSnapshot], indexes: Sequence[int]) -> ServerNow | None:
    """The run's figures over several servers: the sums of the figures their rows show
    (`ServerLogSnapshot.figures`) over those at `indexes` (`summed`), and the highest token
    usage; None for one server (its own figures are the run's)."""
    chosen = [servers[i] for i in indexes if servers[i].now is not None]
    if len(servers) < 2 or not chosen:
        return None
    figures = [s.figures for s in chosen]

    def known(name: str) -> list[float]:
        return [float(v) for f in figures
                if isinstance(v := f.get(name), (int, float)) and not isinstance(v, bool)]

    def total(name: str) -> float | None:
        values = known(name)
        return sum(values) if values else None

    usage = known("token_usage")
    means = [m for s in chosen if s.now is not None and (m := s.now.token_usage_mean) is not None]
    return ServerNow(at=max((s.now.at for s in chosen if s.now is not None and s.now.at is not None),
                            default=None),
                     gen_throughput=total("gen_throughput"), running_req=total("running_req"),
                     queue_req=total("queue_req"), token_usage=max(usage) if usage else None,
                     token_usage_mean=sum(means) / len(means) if means else None,
                     tokens=total("tokens"))
