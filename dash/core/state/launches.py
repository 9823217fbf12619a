"""The server starts of one log, as launches (`dash.core.launch.Launch`): `LaunchTracker`.

Fed the same records as the server-log tracker, in file order. A launch begins at a
`server_args` line, or at a startup line (weights, KV pool, CUDA graphs) when no launch is open
or the open one has served already; a log whose start came before what was read begins with a
launch whose start was not seen. It ends at the next start, at an OOM or a crash (the lines of
one death, an OOM traceback then `Killed`, tell one end: the OOM wins), at a clean shutdown, or
where the log ends. A rewritten log (`nohup ... > server.log` truncates it) ends the open launch
only if a start follows: a copytruncate rotation leaves the server writing on.

Launches remembered from an earlier kdash (`remember`) come first; one that this kdash reads
again (the same start stamp and arguments) is replaced by what it reads now, and a launch whose
start this kdash did not see continues the last remembered one. Memory is bounded: closed
launches are frozen summaries, at most `MAX_LAUNCHES` of them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from dash.core.alerts.rules_crash import CONSEQUENCES
from dash.core.launch import Launch
from dash.core.log.events import preempted
from dash.core.log.timestamps import ts_to_epoch
from dash.core.snapshot import Record
from dash.core.state.launch_capacity import Capacity
from dash.core.state.launch_figures import STEADY_MIN_S, FiguresAccumulator
from dash.core.state.launch_merge import merge_remembered

MAX_LAUNCHES = 50
"""Launches kept per log (the oldest are forgotten first)."""
START_EVENTS = frozenset({"load_weights", "kv_cache", "cuda_graph"})
"""Startup lines that begin a launch when none is open, or the open one has served already."""
FAILURES = frozenset({"oom", "crash"})
END_BURST_S = 60.0
"""Failure lines this soon after the first one tell the same death (traceback, SIGQUIT, Killed)."""
SURVIVED_S = 60.0
"""Decode lines this long after a failure: the server survived it, the launch goes on."""
MAX_ARGS = 400
MAX_ARG_CHARS = 300
"""Arguments kept per launch, and the longest value kept as printed (longer ones are cut)."""

def _bounded_args(args: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in list(args.items())[:MAX_ARGS]:
        if isinstance(v, str):
            v = v[:MAX_ARG_CHARS]
        elif isinstance(v, (list, dict)):
            text = json.dumps(v, default=str)
            v = v if len(text) <= MAX_ARG_CHARS else text[:MAX_ARG_CHARS]
        out[str(k)] = v
    return out


def launch_key(start_ts: str | None, start_line: int | None, args: Mapping[str, Any] | None) -> str:
    """A start's identity across sessions: its stamp (its line when unstamped) and its args."""
    digest = "no-args"
    if args is not None:
        text = json.dumps(args, sort_keys=True, default=str)
        digest = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:12]
    where = start_ts or f"line {start_line if start_line is not None else '?'}"
    return f"{where}|{digest}"


class _Open:
    """The launch being read: mutable until it is frozen into a `Launch`."""

    def __init__(self, rec: Mapping[str, Any], t: float | None, args: Mapping[str, Any] | None,
                 figures: FiguresAccumulator, seen: bool) -> None:
        ts, line = rec.get("ts"), rec.get("line")
        self.start_ts = ts if isinstance(ts, str) and ts else None
        self.start_line = line if isinstance(line, int) else None
        self.started_at = t
        self.args = _bounded_args(args) if args is not None else None
        self.key = launch_key(self.start_ts, self.start_line, self.args) if seen else \
            f"unseen|{self.start_ts or self.start_line}"
        self.seen = seen
        self.engine = rec.get("engine") if isinstance(rec.get("engine"), str) else None
        self.capacity = Capacity()
        self.ready_at: float | None = None
        self.last_at = t
        self.ended_at: float | None = None
        self.outcome = "running"
        self.reason: str | None = None
        self.component: str | None = None
        self.exception: str | None = None
        """The last Python exception line since the server last worked (a stats line)."""
        self.busy = False
        """The ready banner or a stats line was seen: a startup line now means a new start."""
        self.figures = figures

    @property
    def ended(self) -> bool:
        return self.outcome != "running"

    def end(self, outcome: str, t: float | None, reason: str | None = None) -> None:
        self.outcome, self.reason = outcome, reason
        self.ended_at = t if t is not None else self.last_at

    def freeze(self, source: str | None, open_as: str) -> Launch:
        return Launch(
            key=self.key, started_at=self.started_at, start_ts=self.start_ts,
            start_line=self.start_line, start_seen=self.seen, engine=self.engine,
            ready_at=self.ready_at, last_at=self.last_at, ended_at=self.ended_at,
            outcome=self.outcome if self.ended else open_as, reason=self.reason,
            component=self.component,
            exception=self.exception if self.outcome == "crash" else None, args=self.args or {},
            capacity=dict(self.capacity.values), figures=self.figures.figures(),
            source=source,
        )


class LaunchTracker:
    """The launches of one log. Use from one thread only; `launches()` freezes them."""

    def __init__(self, source: str | None = None, *, window_s: float = 120.0,
                 min_points: int = 5, steady_min_s: float = STEADY_MIN_S,
                 max_launches: int = MAX_LAUNCHES) -> None:
        self.source = source
        self._acc = (window_s, min_points, steady_min_s)
        self._done: deque[Launch] = deque(maxlen=max_launches)
        self._max = max_launches
        self._cur: _Open | None = None
        self._remembered: tuple[Launch, ...] = ()
        self._cut = False
        self._finished = False
        self._frozen: tuple[Launch, ...] | None = None
        self._stamp: tuple[str, float | None, float | None] | None = None
        """The last stamp read and its time: the lines of one second share one."""
        self._feeds = self._stamp_feed = 0
        self.version = 0
        """Bumped by every record that changed something (what a saver watches)."""
        self.boundaries = 0
        """Bumped when a launch starts or ends (worth saving at once)."""

    # -- feeding ----------------------------------------------------------------------------

    def remember(self, launches: Iterable[Launch]) -> None:
        """Launches an earlier kdash saw in this log (from the state directory)."""
        self._remembered = tuple(dataclasses.replace(x, earlier=True) for x in launches)
        self._changed(boundary=True)

    def feed(self, records: Iterable[Record | None], now: float | None,
             ref: float | None = None) -> None:
        """Records in file order. `now`: the time of unstamped records (None offline);
        `ref`: the date a time-only stamp lacks (default `now`)."""
        ref = ref if ref is not None else now
        self._feeds += 1
        for rec in records:
            if rec is not None:
                kind = rec.get("kind")
                if kind in ("decode", "prefill", "event", "spec", "cache"):
                    self._apply(rec, kind, self._time(rec, now, ref))

    def log_rewritten(self) -> None:
        """The log was truncated or replaced: what follows may be a new start."""
        self._cut = True

    def finish(self) -> None:
        """The log has ended (offline): a launch still open ended with it."""
        self._finished = True
        self._changed(boundary=True)

    def launches(self) -> tuple[Launch, ...]:
        """Every launch, remembered ones included, in start order (frozen; cached until the
        next record)."""
        if self._frozen is None:
            session = list(self._done)
            cur = self._cur
            if cur is not None:
                open_as = "log_ended" if self._finished else "running"
                session.append(cur.freeze(self.source, open_as))
            self._frozen = merge_remembered(self._remembered, session)[-self._max:]
        return self._frozen

    def _time(self, rec: Mapping[str, Any], now: float | None, ref: float | None) -> float | None:
        ts = rec.get("ts")
        held = self._stamp
        if not isinstance(ts, str) or not ts:
            # A traceback's last line (`torch.OutOfMemoryError: ...`) carries no stamp: it
            # happened with the stamped line before it in the same read, not when kdash read
            # it; else a first read places it at `now`, past the death it belongs to, and an
            # OOM reads as a plain crash.
            if (rec.get("kind") == "event" and now is not None and held is not None
                    and held[2] is not None and self._stamp_feed == self._feeds):
                return held[2]
            return now
        self._stamp_feed = self._feeds
        if held is not None and held[0] == ts and held[1] == ref:
            t = held[2]
        else:
            try:
                t = ts_to_epoch(ts, ref=ref if ref is not None else 0.0)
            except (ValueError, TypeError, OverflowError):
                t = None
            self._stamp = (ts, ref, t)
        return now if t is None else t

    def _apply(self, rec: Record, kind: str, t: float | None) -> None:
        if kind == "event":
            self._event(rec, str(rec.get("event")), t)
        else:
            self._stats(rec, kind, t)
        cur = self._cur
        if cur is not None and t is not None:
            cur.last_at = t if cur.last_at is None else max(cur.last_at, t)
        self._changed()

    def _changed(self, boundary: bool = False) -> None:
        self.version += 1
        self.boundaries += boundary
        self._frozen = None

    def _event(self, rec: Record, event: str, t: float | None) -> None:
        cur = self._cur
        if event == "server_args":
            raw = rec.get("args")
            args: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
            same = (cur is not None and not cur.busy and not cur.ended and cur.args is not None
                    and dict(cur.args) == _bounded_args(args))
            if not same:  # else: the same dump printed again (another process of this start)
                self._start(rec, t, args)
            return
        if event in START_EVENTS:
            # vLLM's extensible KV cache grows while it serves (`Extended KV cache to N
            # blocks`): a size of the open launch, not a new one's startup line
            grows = bool(rec.get("kv_final")) and cur is not None and not cur.ended
            if cur is None or (not grows and (cur.ended or cur.busy or self._cut)):
                cur = self._start(rec, t, None)
            cur.capacity.apply(rec, event)
            return
        cur = self._cur or self._start(rec, t, None, seen=False)
        self._cut = False
        name = _exception(rec) if event in ("error", "crash") else None
        if event == "crash" and cur.exception is not None:
            name = None  # a crash line's own type fills a missing one, never the cause's
        if name is not None and (not cur.ended or (cur.outcome == "crash" and cur.exception is None)):
            cur.exception = name  # before the crash marker, or ending the traceback it opened
        if event == "ready":
            cur.busy = True
            cur.ready_at = cur.ready_at if cur.ready_at is not None else t
        elif event in FAILURES:
            self._failure(cur, rec, event, t)
        elif event == "shutdown" and not cur.ended:
            cur.end("shutdown", t)
            self.boundaries += 1
        elif event == "retract":
            cur.figures.retract(rec, t)

    def _stats(self, rec: Record, kind: str, t: float | None) -> None:
        cur = self._cur or self._start(rec, t, None, seen=False)
        self._cut = False  # the server writes on after a rewrite: a copytruncate rotation
        cur.busy = True
        if not cur.ended:
            cur.exception = None  # it worked on after that exception: not what it died of
        if kind == "decode":
            if (cur.outcome in FAILURES and t is not None and cur.ended_at is not None
                    and t - cur.ended_at > SURVIVED_S):
                cur.reason = f"survived {cur.reason or cur.outcome}"
                cur.outcome, cur.ended_at = "running", None
                self.boundaries += 1
            cur.figures.decode(rec, t)
            retract = preempted(rec)
            if retract is not None:  # vLLM V1's preemptions, counted on its stats line
                cur.figures.retract(retract, t)
        elif kind == "prefill":
            cur.figures.prefill(rec, t)
        elif kind == "cache":
            cur.figures.cache(rec)
        else:
            cur.figures.spec(rec)

    def _start(self, rec: Record, t: float | None, args: Mapping[str, Any] | None,
               seen: bool = True) -> _Open:
        prev = self._cur
        if prev is not None:
            if not prev.ended:
                prev.end("stopped", None, "log rewritten" if self._cut else "next start")
            self._done.append(prev.freeze(self.source, "stopped"))
        self._cut = False
        window_s, min_points, steady_min_s = self._acc
        figures = FiguresAccumulator(window_s, min_points, steady_min_s)
        self._cur = _Open(rec, t, args, figures, seen)
        self.boundaries += 1
        return self._cur

    def _failure(self, cur: _Open, rec: Mapping[str, Any], event: str, t: float | None) -> None:
        reason = rec.get("reason") if isinstance(rec.get("reason"), str) else None
        component = rec.get("component") if isinstance(rec.get("component"), str) else None
        if not cur.ended:
            cur.end(event, t, reason)
            cur.component = component
            cur.figures.ended(cur.ended_at)
            self.boundaries += 1
            return
        same_death = (cur.outcome in FAILURES and (t is None or cur.ended_at is None
                                                   or t - cur.ended_at <= END_BURST_S))
        if not same_death:
            return
        if event == "oom" and cur.outcome == "crash":
            cur.outcome, cur.reason = "oom", reason  # the traceback's last line names the cause
        elif event == "crash" and cur.reason in CONSEQUENCES and reason not in CONSEQUENCES:
            # `Received sigquit` printed by the parent the moment before the child's own
            # `Scheduler hit an exception`: the death's cause is the child's line
            cur.reason, cur.component = reason, component
            return
        elif event == "crash" and cur.reason == "exception" and reason is not None \
                and reason not in CONSEQUENCES and reason != "exception":
            # `Scheduler hit an exception:` opens the traceback whose last line says what
            # (`CUDA error: an illegal memory access was encountered`)
            cur.reason = reason
        cur.component = cur.component or component


def _exception(rec: Record) -> str | None:
    """The type an exception line names, without its module (`torch.AcceleratorError` ->
    `AcceleratorError`), as the crash rule names it; `SystemExit` and the like are no fault."""
    name = rec.get("exception")
    if not isinstance(name, str) or not name.endswith(("Error", "Exception")):
        return None
    return name.rsplit(".", 1)[-1]
