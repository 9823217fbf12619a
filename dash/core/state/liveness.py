"""Is the server working? The log's liveness and the URL's reachability, kept apart.

A server whose log shows fresh decode or prefill lines is working, whatever its URL does: an
unreachable URL is then a wrong URL (or port), not a dead server. The server is *down* only when
it crashed (an OOM or crash line after its last stats line), or when its URL does not answer and
its log is not live. Pure: every time is passed in.
"""

from __future__ import annotations

from collections.abc import Sequence

from dash.core.alerts.rules_server import start_in_progress
from dash.core.snapshot import (
    HttpReach,
    HttpSnapshot,
    Liveness,
    LogLiveness,
    Record,
    ServerLogSnapshot,
)

CRASH_EVENTS = ("oom", "crash")


def crash_since_start(events: Sequence[Record]) -> Record | None:
    """The first OOM or crash line since the server last started, or None."""
    start = max((i for i, e in enumerate(events) if e.get("event") == "restart"), default=-1)
    return next((e for e in events[start + 1:] if e.get("event") in CRASH_EVENTS), None)


# (event, "begin" or None) of a start's newest line -> what the header says the start is at
_STEP_TEXT: dict[tuple[object, object], str] = {
    ("load_weights", "begin"): "loading weights", ("load_weights", None): "weights loaded",
    ("kv_cache", None): "KV cache allocated",
    ("cuda_graph", "begin"): "capturing CUDA graphs", ("cuda_graph", None): "CUDA graphs captured",
}


def start_step(events: Sequence[Record]) -> str:
    """Where a start in progress is, from its newest line: `capturing CUDA graphs`, for one."""
    last = events[-1] if events else {}
    event, phase = last.get("event"), last.get("phase")
    return _STEP_TEXT.get((event, phase if phase == "begin" else None), "starting")


def log_liveness(server: ServerLogSnapshot, now: float, live_s: float) -> LogLiveness:
    """What the server log says about the server (see `Liveness.log`)."""
    if server.path is None:
        return "none"
    if server.status == "waiting":
        return "waiting"
    if server.status == "error":
        return "error"
    crash = crash_since_start(server.events)
    last = server.last_record_at
    if crash is not None and (last is None or _at(crash) >= last):
        return "crashed"
    stamped = None if server.stamps_ahead else last
    fresh = [t for t in (stamped, server.last_record_arrived_at) if t is not None]
    if fresh and now - max(fresh) <= live_s:
        return "live"
    return "quiet"


def http_reach(http: HttpSnapshot, enabled: bool) -> HttpReach:
    if not enabled:
        return "off"
    return http.state


def liveness(server: ServerLogSnapshot, http: HttpSnapshot, now: float, *, live_s: float,
             silent_after_s: float, http_enabled: bool = True) -> Liveness:
    """Both facts, and whether the server is down and its figures stale.

    A server whose log shows a start in progress is not down while its URL is silent: it
    answers after its ready banner, minutes after its arguments on a large model."""
    log = log_liveness(server, now, live_s)
    reach = http_reach(http, http_enabled)
    last = server.last_record_at
    seen = [t for t in (None if server.stamps_ahead else last, server.last_record_arrived_at)
            if t is not None]
    age = max(0.0, now - max(seen)) if seen else None  # unknown: stamps from another zone
    start = start_in_progress(server.events, last, now, silent_after_s) \
        if log == "quiet" and reach != "up" else None
    down_since: float | None = None
    if log == "crashed":
        crash = crash_since_start(server.events)
        down_since = _at(crash) if crash is not None else None
    elif reach == "down" and log != "live" and start is None:
        down_since = http.since
    down = log == "crashed" or (reach == "down" and log != "live" and start is None)
    return Liveness(log=log, log_age_s=age, http=reach, http_ever_up=http.last_ok_at is not None,
                    down=down, down_since=down_since, stale=last is not None and log != "live",
                    values_at=last, starting=start)


def _at(ev: Record) -> float:
    at = ev.get("at")
    return float(at) if isinstance(at, (int, float)) else float("-inf")
