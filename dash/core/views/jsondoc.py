"""The `kdash --once --json` document: a RunSnapshot as plain JSON (its keys are a contract).

Keys scripts rely on (see README "JSON output"): `server` {`last_decode`, `peak` {`gen_throughput`,
`ts`}, `events`, `facts`, `http` {`state`, `since`, `latency`, `metrics`}}, `partitions`
[{`name`, `path`, `done`, `total`, `at_start`, `rate_per_min`, `eta_s`, `status`}], `client`
{`log_bytes`, `last_progress`, `processes`}, `gpus` (a list per GPU, or {"available": false,
"reason"}), `alerts`. Added: `server.liveness` (the log's liveness and HTTP's reachability,
apart, and whether the figures are stale), `incidents`, `unmatched_globs`, `partitions[].error`,
`server.now` (the whole server's figures, its DP ranks summed, with `ranks`), `server.log_clock`
(how the log's stamps relate to the clock), `servers` (every server log, each shaped like
`server`, with its own liveness) and `servers_total` (sums over the live ones, when there are
several, with `servers` and `left_out` naming which).
`launches` (one per server start of the primary log, oldest first: `dash.core.launch`'s fields
with `number`, `changed`, `outcome_text` and `advice`; each of `servers` has its own). Extra
keys may be added; these are never renamed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from dash.core.launch import Launch
from dash.core.snapshot import (
    Alert,
    ClientSnapshot,
    GpusSnapshot,
    HttpSnapshot,
    Liveness,
    LogClockView,
    PartitionSnapshot,
    RankNow,
    RunSnapshot,
    RunTotals,
    ServerLogSnapshot,
    ServerNow,
)
from dash.core.state.log_clock import clock_text
from dash.core.views.launch_advice import launches_json
from dash.core.views.quality_json import quality_json


def jsonable(value: Any, depth: int = 0) -> Any:
    """Plain JSON values: NaN/inf become null, tuples lists, unknown objects their text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth > 20:
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name), depth + 1)
                for f in dataclasses.fields(value)}
    return str(value)


def _http(h: HttpSnapshot) -> dict[str, Any]:
    return {"url": h.url, "url_source": h.url_source, "url_why": h.url_why,
            "state": h.state, "since": h.since, "reason": h.reason,
            "latency": h.latency_s, "consecutive_failures": h.consecutive_failures,
            "last_ok_at": h.last_ok_at, "metrics": dict(h.metrics), "facts": dict(h.facts),
            "disagreement": h.disagreement,
            "failing": [{"path": f.path, "status": f.status, "since": f.since, "polls": f.polls}
                        for f in h.failing],
            "served": h.served, "key_sent": h.key_sent}


def _rank(r: RankNow) -> dict[str, Any]:
    return {"rank": r.rank, "at": r.at, "ts": r.ts, "gen_throughput": r.gen_throughput,
            "running_req": r.running_req, "queue_req": r.queue_req,
            "token_usage": r.token_usage, "tokens": r.tokens,
            "input_throughput": r.input_throughput, "interval_s": r.interval_s,
            "live": r.live, "lines": r.lines}


def now_json(n: ServerNow | None) -> dict[str, Any] | None:
    """`server.now`: the whole server's figures and each rank's latest line."""
    if n is None:
        return None
    return {"at": n.at, "gen_throughput": n.gen_throughput, "running_req": n.running_req,
            "queue_req": n.queue_req, "token_usage": n.token_usage,
            "token_usage_mean": n.token_usage_mean, "tokens": n.tokens,
            "input_throughput": n.input_throughput, "live_ranks": n.live_ranks, "ranks": [_rank(r) for r in n.ranks]}


def _clock(c: LogClockView, now: float) -> dict[str, Any]:
    age = None if c.last_line_at is None else max(0.0, now - c.last_line_at)
    return {"offset_s": c.offset_s, "rate": c.rate, "zoned": c.zoned, "learned": c.learned,
            "last_line_at": c.last_line_at, "last_line_age_s": age,
            "log_utc_offset_s": c.log_utc_offset_s, "box_utc_offset_s": c.box_utc_offset_s,
            "skew_s": c.skew_s, "text": clock_text(c)}


def _liveness(live: Liveness) -> dict[str, Any]:
    return {"log": live.log, "log_age_s": live.log_age_s, "http": live.http,
            "http_ever_up": live.http_ever_up, "down": live.down, "down_since": live.down_since,
            "stale": live.stale, "values_at": live.values_at,
            "starting_since": None if live.starting is None else live.starting.get("at")}


def _server_log(s: ServerLogSnapshot, now: float, live: Liveness) -> dict[str, Any]:
    peak = None
    if s.peak is not None:
        peak = {"gen_throughput": s.peak.gen_throughput, "ts": s.peak.ts, "at": s.peak.at}
    return {"path": s.path, "name": s.name, "role": s.role, "engine": s.engine,
            "status": s.status, "status_message": s.status_message, "now": now_json(s.now),
            "log_clock": _clock(s.clock, now), "last_decode": s.last_decode,
            "last_prefill": s.last_prefill, "perf": dict(s.perf), "peak": peak,
            "events": list(s.events),
            "facts": dict(s.facts), "lines": s.lines, "records": s.records,
            "unparsed": s.unparsed, "restarts": s.restarts, "last_record_at": s.last_record_at,
            "liveness": _liveness(live)}


def _server(s: ServerLogSnapshot, h: HttpSnapshot, now: float, live: Liveness) -> dict[str, Any]:
    return {**_server_log(s, now, live), "http": _http(h)}


def _partition(p: PartitionSnapshot) -> dict[str, Any]:
    return {"name": p.name, "path": p.path, "done": p.done, "total": p.total,
            "at_start": p.at_start, "written": p.written, "percent": p.percent,
            "rate_per_min": p.rate_per_min, "eta_s": p.eta_s, "eta_low_s": p.eta_low_s,
            "eta_high_s": p.eta_high_s, "status": p.status, "error": p.error,
            "last_write": p.last_write,
            "quality": None if p.quality is None else quality_json(p.quality)}


def _totals(t: RunTotals) -> dict[str, Any]:
    return {"done": t.done, "total": t.total, "rate_per_min": t.rate_per_min, "eta_s": t.eta_s,
            "last_to_finish": t.last_to_finish, "output_tokens_per_s": t.output_tokens_per_s}


def _client(c: ClientSnapshot) -> dict[str, Any]:
    progress = None
    if c.last_progress is not None:
        p = c.last_progress
        progress = {"done": p.done, "total": p.total, "percent": p.percent, "rate": p.rate,
                    "text": p.text}
    procs = None
    if c.processes is not None:
        procs = [{"pid": p.pid, "name": p.name, "cmdline": p.cmdline,
                  "started_at": p.started_at, "cpu_percent": p.cpu_percent} for p in c.processes]
    return {"log_path": c.log_path, "log_bytes": c.log_bytes,
            "log_last_growth": c.log_last_growth, "last_progress": progress,
            "resuming": c.resuming, "events": list(c.events),
            "process_pattern": c.process_pattern, "processes": procs}


def _gpus(g: GpusSnapshot) -> Any:
    if not g.available:
        return {"available": False, "reason": g.reason}
    return [jsonable(gpu) for gpu in g.gpus]


def _alert(a: Alert) -> dict[str, Any]:
    return {"id": a.id, "key": a.key, "severity": a.severity, "since": a.since,
            "message": a.message, "evidence": a.evidence, "hint": a.hint, "subject": a.subject,
            "line": a.line, "acknowledged": a.acknowledged}


def _servers(snap: RunSnapshot) -> list[tuple[ServerLogSnapshot, Liveness]]:
    """Every server with its own liveness (the primary's is `snap.liveness`)."""
    servers = snap.servers or (snap.server,)
    lives = snap.server_liveness or (snap.liveness,) * len(servers)
    return list(zip(servers, lives, strict=False))


def _launches(snap: RunSnapshot) -> tuple[tuple[Launch, ...], ...]:
    """Each server's launches (the primary's are `snap.launches`)."""
    return snap.server_launches or (snap.launches,)


def _servers_total(snap: RunSnapshot) -> dict[str, Any] | None:
    """`now_json` of the sums, with which servers they sum (`servers`, by name), which they
    leave out (`left_out`: their log is not live), and whether the figures are old."""
    doc = now_json(snap.total)
    if doc is None:
        return None
    names = [s.name or s.path for s in snap.servers]
    stale, age_s = snap.figures_liveness
    return {**doc, "servers": [names[i] for i in snap.total_from],
            "left_out": [names[i] for i in snap.left_out],
            "stale": stale, "age_s": age_s}


def snapshot_to_json(snap: RunSnapshot) -> dict[str, Any]:
    """The --once --json document for one snapshot."""
    doc = {
        "now": snap.now,
        "server": _server(snap.server, snap.http, snap.now, snap.liveness),
        "servers": [{**_server_log(s, snap.now, live), "launches": launches_json(launches)}
                    for (s, live), launches in zip(_servers(snap), _launches(snap), strict=False)],
        "servers_total": _servers_total(snap),
        "partitions": [_partition(p) for p in snap.partitions],
        "totals": _totals(snap.totals),
        "client": _client(snap.client),
        "gpus": _gpus(snap.gpus),
        "alerts": [_alert(a) for a in snap.alerts],
        "incidents": [{"root": i.root.key, "severity": i.severity,
                       "consequences": [a.key for a in i.consequences]} for i in snap.incidents],
        "unmatched_globs": list(snap.unmatched_globs),
        "notices": list(snap.notices),
        "launches": launches_json(snap.launches),
    }
    return jsonable(doc)  # type: ignore[no-any-return]
