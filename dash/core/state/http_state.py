"""What polling the server over HTTP says, kept over time: up/down/degraded, facts, metrics.

`HttpSample` is one poll's observation (made by `dash.sources.http.HttpPoller`); `HttpTracker`
applies samples on the main thread and produces the frozen `HttpSnapshot`. Pure: `now` is passed in.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dash.core.snapshot import FailingRoute, HttpSnapshot, Record

State = Literal["up", "down", "degraded"]


@dataclass(frozen=True, slots=True)
class HttpSample:
    """One poll. Errors are values: `error` names the first problem, `problems` all of them."""

    at: float
    reachable: bool
    """The server answered HTTP at all (any status). False: refused, timeout, reset."""
    error: str | None = None
    """"connection refused", "timeout", "HTTP 500", "bad body", "body too large", "not ready"..."""
    problems: tuple[str, ...] = ()
    """Every problem, with the path: ("HTTP 500 /metrics", ...)."""
    latency_s: float | None = None
    """Round trip of the first (liveness) request."""
    duration_s: float | None = None
    """The whole poll, all requests."""
    server_info: Mapping[str, Any] | None = None
    """The raw `/server_info` JSON when it was fetched this poll (on (re)connect, then rarely)."""
    model_info: Mapping[str, Any] | None = None
    metrics: Mapping[str, float] | None = None
    """Normalised (see dash.core.state.metrics_text); None when /metrics was not read this poll."""
    metrics_enabled: bool | None = None
    """False when /metrics answered 404 (server started without --enable-metrics)."""
    metric_families: int | None = None
    ready: bool | None = None
    """/ready's answer (SGLang 0.5.20+); None where the route does not exist."""
    endpoints: Mapping[str, str] = field(default_factory=dict)
    """Which paths answered: {"server_info": "/get_server_info", "model_info": ...}."""
    engine: str | None = None
    """"sglang" or "vllm", from the metric names."""
    url: str | None = None
    """The URL polled (set by the collector, which chooses it)."""
    url_source: str | None = None
    """"flag" (--url), "server_args" (the log said where) or "default" (the engine's port)."""
    url_why: str | None = None
    log_port: int | None = None
    """The port the log's server_args name, when they do."""
    answers: tuple[tuple[str, int], ...] = ()
    """Every HTTP answer of this poll, in order: (path, status)."""
    key_sent: bool = False
    """An API key went with the requests (`Authorization: Bearer ...`)."""

    @property
    def state(self) -> State:
        if not self.reachable:
            return "down"
        return "degraded" if self.error else "up"


_SERVER_KEYS = (
    "tp_size", "dp_size", "pp_size", "ep_size", "max_total_num_tokens", "mem_fraction_static",
    "kv_cache_dtype", "hicache_size", "hicache_ratio", "version", "context_length",
    "max_running_requests", "max_req_input_len", "chunked_prefill_size", "enable_metrics",
    "page_size", "attention_backend", "quantization", "dtype", "port",
)


def facts_from_server_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """Facts from `/server_info` (any SGLang version: flat in 0.3/0.4.3, `internal_states` later)."""
    facts: dict[str, Any] = {k: info[k] for k in _SERVER_KEYS if _scalar(info.get(k))}
    model = info.get("served_model_name") or info.get("model_path")
    if isinstance(model, str) and model:
        facts["model"] = model
    if _scalar(info.get("model_path")):
        facts["model_path"] = info["model_path"]
    states = info.get("internal_states")
    if isinstance(states, list) and states and isinstance(states[0], Mapping):
        usage = states[0].get("memory_usage")
        if isinstance(usage, Mapping):
            for key, name in (("kvcache", "kv_size_gb"), ("weight", "weights_gb"),
                              ("token_capacity", "token_capacity")):
                if _scalar(usage.get(key)):
                    facts[name] = usage[key]
        if "max_total_num_tokens" not in facts and _scalar(facts.get("token_capacity")):
            facts["max_total_num_tokens"] = facts["token_capacity"]
    return facts


def facts_from_model_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """Facts from `/model_info`: the model's name and kind."""
    facts: dict[str, Any] = {}
    if isinstance(info.get("served_model_name"), str) and info["served_model_name"]:
        facts["model"] = info["served_model_name"]  # older servers give only the path
    for key in ("model_path", "model_type", "weight_version", "is_generation"):
        if _scalar(info.get(key)):
            facts[key] = info[key]
    return facts


ERROR_STATUSES = frozenset({401, 403}) | frozenset(range(500, 600))
"""Answers that say the server refuses or fails a request (404 and 405 say a route is absent:
older and other servers lack some)."""


def _scalar(value: object) -> bool:
    return isinstance(value, (str, int, float, bool)) and value != ""


# Wide margins on purpose: /metrics gauges are written at log events, so small lags are normal.
_MARGINS: tuple[tuple[str, float, float], ...] = (
    ("running_req", 8.0, 0.5),
    ("queue_req", 16.0, 0.5),
    ("token_usage", 0.3, 0.0),
)
LOG_FRESH_S = 20.0
"""A decode record older than this is not compared: an idle server prints no decode lines."""


def disagreement(metrics: Mapping[str, float], record: Record | None) -> str | None:
    """Say where /metrics and the log's last decode record differ by a wide margin, else None."""
    if record is None or record.get("kind") not in (None, "decode") or metrics.get("dp_ranks"):
        return None
    diffs: list[str] = []
    for key, absolute, relative in _MARGINS:
        m, lg = metrics.get(key), record.get(key)
        if key == "token_usage" and isinstance(m, (int, float)):
            lg = _pools_usage(record, m)
        if not isinstance(m, (int, float)) or not isinstance(lg, (int, float)):
            continue
        if abs(m - lg) > max(absolute, relative * max(abs(m), abs(lg))):
            diffs.append(f"{key} {_fmt(m)} vs {_fmt(lg)}")
    if not diffs:
        return None
    return "/metrics vs log: " + ", ".join(diffs) + " (is the URL this log's server?)"


_POOLS = ("token_usage", "swa_token_usage", "mamba_usage")


def _pools_usage(record: Record, gauge: float) -> float | None:
    """The log record's KV usage nearest the server's `/metrics` `token_usage`: a hybrid
    model's line prints each pool, and the gauge is the fullest of them (SGLang 0.5.12+) or
    the full pool's (before, for a Mamba pool), where the record's `token_usage` is the full
    pool's. A full pool at 0.42 beside a Mamba pool at 0.90 agrees with a gauge of either."""
    full = record.get("token_usage")
    if not isinstance(full, (int, float)) or isinstance(full, bool):
        return None
    values = [v for v in map(record.get, _POOLS)
              if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return min((full, max(values)), key=lambda v: abs(v - gauge))


def shown_url(url: str | None) -> str | None:
    """The URL as the screen, alerts and exports show it: a password written in it is `***`
    (it is sent, never shown, as the API key)."""
    if url is None or "@" not in url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
        if parts.password is None:
            return url
    except ValueError:
        return url
    user, _, host = parts.netloc.rpartition("@")
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user.split(':', 1)[0]}:***@{host}"))


def _fmt(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


class HttpTracker:
    """Applies HttpSamples (main thread only) and answers `snapshot(now)`."""

    def __init__(self, url: str | None) -> None:
        self.url = url
        self._url_source: str | None = "flag" if url else None
        self._url_why: str | None = "--url" if url else None
        self._log_port: int | None = None
        self._state: Literal["unknown", "up", "down", "degraded"] = "unknown"
        self._since: float | None = None
        self._since_seen = False
        self._reason: str | None = None
        self._latency: float | None = None
        self._failures = 0
        self._last_ok: float | None = None
        self._facts: dict[str, Any] = {}
        self._metrics: Mapping[str, float] = {}
        self._generated: float | None = None
        self._generated_at: float | None = None
        self._failing: dict[str, FailingRoute] = {}
        self._served = False
        self._key_sent = False

    def apply(self, sample: HttpSample, now: float) -> None:
        """Fold one poll into the state; the time of a state change is `now`.

        A sample from another URL than before (the log named a new port) starts afresh: what
        the old address did says nothing about the new one.
        """
        if sample.url is not None and sample.url != self.url:
            self._forget(sample.url)
        if sample.url_source is not None:
            self._url_source, self._url_why = sample.url_source, sample.url_why
        self._log_port = sample.log_port
        self._note_answers(sample, now)
        state, reason = sample.state, sample.error
        if state == "up" and self._failing:
            # A route asked less often (the info routes, once a minute) still fails: the polls
            # between that ask only the open routes must not flip the state back to "up".
            failing = next(iter(self._failing.values()))
            state, reason = "degraded", f"HTTP {failing.status} {failing.path}"
        if state != self._state:
            self._since_seen = self._state != "unknown"
            self._state, self._since = state, now
        self._reason = reason
        self._latency = sample.latency_s
        if state == "up":
            self._failures, self._last_ok = 0, now
        elif sample.reachable:
            # It answered (with an error): no failure to reach it, and the address is right.
            self._failures, self._last_ok = 0, now
        else:
            self._failures += 1
        self._merge_facts(sample)
        # /metrics is read every poll where it exists: no numbers this poll means none to show
        # (stale numbers from a dead or broken server would mislead).
        self._metrics = dict(sample.metrics) if sample.metrics is not None else {}
        self._note_generated(self._metrics.get("generation_tokens_total"), now)

    def _note_answers(self, sample: HttpSample, now: float) -> None:
        """Keep each path's error streak: a path keeps its last answer until it is asked again
        (the info routes are asked once a minute), and every poll the server answers counts.
        A poll with no answer at all starts afresh: what comes back may be another server."""
        self._key_sent = sample.key_sent
        if not sample.reachable:
            self._failing.clear()
            self._served = False
            return
        self._served = any(status == 200 for _, status in sample.answers)
        for path, status in sample.answers:
            old = self._failing.get(path)
            if status not in ERROR_STATUSES:
                self._failing.pop(path, None)
            elif old is None or old.status != status:
                self._failing[path] = FailingRoute(path, status, now, 0)
            else:
                self._failing[path] = dataclasses.replace(old, answers=old.answers + 1)
        self._failing = {p: dataclasses.replace(f, polls=f.polls + 1)
                         for p, f in self._failing.items()}

    def _note_generated(self, total: float | None, now: float) -> None:
        """When the server's count of generated tokens last grew: it generates then, whatever
        the log kdash reads says (a gauge keeps its last value through a hang; a counter
        that grows cannot)."""
        if total is not None and self._generated is not None and total > self._generated:
            self._generated_at = now
        self._generated = total

    def _forget(self, url: str) -> None:
        self.url = url
        self._state, self._since, self._reason, self._latency = "unknown", None, None, None
        self._since_seen = False
        self._failures, self._last_ok = 0, None
        self._metrics = {}
        self._generated = self._generated_at = None
        self._failing, self._served = {}, False

    def _merge_facts(self, sample: HttpSample) -> None:
        if sample.server_info is not None:
            self._facts.update(facts_from_server_info(sample.server_info))
        if sample.model_info is not None:
            self._facts.update(facts_from_model_info(sample.model_info))
        if "model" not in self._facts and "model_path" in self._facts:
            self._facts["model"] = self._facts["model_path"]
        metrics = sample.metrics or {}
        if "max_total_num_tokens" in metrics and "max_total_num_tokens" not in self._facts:
            self._facts["max_total_num_tokens"] = int(metrics["max_total_num_tokens"])
        for key, value in (("metrics_enabled", sample.metrics_enabled), ("ready", sample.ready),
                           ("engine", sample.engine), ("metric_families", sample.metric_families)):
            if value is not None:
                self._facts[key] = value
        for key, path in sample.endpoints.items():
            self._facts[f"{key}_path"] = path

    def snapshot(
        self, now: float, last_decode: Record | None = None, *, last_decode_at: float | None = None
    ) -> HttpSnapshot:
        """The frozen view. Pass `last_decode_at` (clock time of that record) to skip stale ones."""
        fresh_log = last_decode_at is None or now - last_decode_at <= LOG_FRESH_S
        disagree = None
        if self._state == "up" and self._metrics and fresh_log:
            disagree = disagreement(self._metrics, last_decode)
        return HttpSnapshot(
            url=shown_url(self.url),
            url_source=self._url_source,
            url_why=self._url_why,
            log_port=self._log_port,
            state=self._state,
            since=self._since,
            since_seen=self._since_seen,
            reason=self._reason,
            latency_s=self._latency,
            consecutive_failures=self._failures,
            last_ok_at=self._last_ok,
            facts=dict(self._facts),
            metrics=dict(self._metrics),
            disagreement=disagree,
            generated_at=self._generated_at,
            failing=tuple(self._failing.values()),
            served=self._served,
            key_sent=self._key_sent,
        )
