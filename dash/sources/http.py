"""Polling an SGLang/vLLM server over HTTP (the only module that imports httpx).

One long-lived `httpx.Client`, used from one long-lived daemon thread: each `await poll(now)`
runs one poll cycle there (`dash.sources.blocking.BlockingWorker`), so the event loop sees one
hand-over per poll and no thread is started for it. httpx's
async client costs twice the CPU of its blocking one for the same GETs (3.7 against 1.8 ms a
cycle on a local server), and its socket wake-ups land on the loop that draws the screen.
Each cycle reads `/metrics` where the server has it
(liveness and numbers in one request), `/ready` where it exists (SGLang 0.5.20+), and the slow-
changing `/server_info` and `/model_info` only on (re)connect and then every `info_interval`
seconds. `/health` is never polled: on SGLang >= 0.4.10 an idle `/health` runs a real generation.
Every failure comes back as a value in the `HttpSample`; `poll` never raises.

A poll has one overall deadline (connect + read timeout): httpx's read timeout is per read, so
a server trickling a byte at a time would otherwise hold a poll for ever; each request's
timeouts are cut to what is left of it, and a body is checked against it between chunks. Bodies
are streamed and dropped past a size cap.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from dash.core.state.http_state import ERROR_STATUSES, HttpSample
from dash.core.state.metrics_text import parse_metrics
from dash.sources.blocking import BlockingWorker, run_blocking

# httpx's package init imports its command-line client (`httpx._main`) when click, rich and
# pygments are installed, which Textual brings along. That would pull Rich into the sources layer
# and add ~50 ms to every start; kdash never uses the httpx CLI, so its import is declined.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import httpx  # noqa: E402 - must follow the line above

INFO_LIMIT = 2 * 1024 * 1024
METRICS_LIMIT = 8 * 1024 * 1024
SMALL_LIMIT = 64 * 1024
CLOSE_WAIT_S = 1.0
"""How long `aclose` waits for a poll in flight to end (a quit must not wait on a hung server)."""

# Newest first: 0.5.6+ logs a WARNING for every call of the old `get_` names.
SERVER_INFO_PATHS = ("/server_info", "/get_server_info", "/get_server_args")
MODEL_INFO_PATHS = ("/model_info", "/get_model_info")


@dataclass(frozen=True, slots=True)
class _Reply:
    path: str
    status: int | None
    """None when no HTTP answer came (refused, timeout, reset)."""
    body: bytes = b""
    error: str | None = None
    latency_s: float = 0.0


@dataclass(slots=True)
class _Cycle:
    """What one poll has gathered so far."""

    deadline: float
    answered: bool = False
    stop: bool = False
    error: str | None = None
    problems: list[str] = field(default_factory=list)
    latency_s: float | None = None
    server_info: Mapping[str, Any] | None = None
    model_info: Mapping[str, Any] | None = None
    metrics: Mapping[str, float] | None = None
    metrics_enabled: bool | None = None
    families: int | None = None
    engine: str | None = None
    ready: bool | None = None
    endpoints: dict[str, str] = field(default_factory=dict)
    answers: list[tuple[str, int]] = field(default_factory=list)

    def note(self, reply: _Reply) -> bool:
        """Record reachability; True when the server answered HTTP."""
        if self.latency_s is None:
            self.latency_s = reply.latency_s
        if reply.status is None:
            self.stop = True  # the budget is spent or the server is gone: ask nothing more
            self.problem(reply.error or "no answer", reply.path)
            return False
        self.answered = True
        self.answers.append((reply.path, reply.status))
        return True

    @property
    def refused(self) -> bool:
        """A request of this cycle was refused for want of a (right) API key."""
        return any(status in (401, 403) for _, status in self.answers)

    def problem(self, what: str, path: str) -> None:
        self.error = self.error or what
        self.problems.append(f"{what} {path}")


def _describe(exc: BaseException) -> str:
    """An httpx/OS error in the words the dashboard shows."""
    if isinstance(exc, (httpx.TimeoutException, asyncio.TimeoutError, TimeoutError, _Deadline)):
        return "timeout"
    if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
        return "bad url"
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        if isinstance(cur, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cur, ConnectionResetError):
            return "connection reset"
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    if isinstance(exc, httpx.RemoteProtocolError):
        return "protocol error"
    return "connection error"


def _json_object(body: bytes) -> Mapping[str, Any] | None:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


class _Deadline(Exception):
    """The poll's deadline passed while a body was still arriving."""


class HttpPoller:
    """Polls one server; `await poll(now)` gives an HttpSample and never raises."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 1.0,
        read_timeout: float = 2.0,
        info_interval: float = 60.0,
        recheck_interval: float = 60.0,
        api_key: str | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        """Sent with every request; never logged or shown (the key is a secret)."""
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._info_interval = info_interval
        self._recheck_interval = recheck_interval
        self._client: httpx.Client | None = None
        self._inflight: asyncio.Future[HttpSample] | None = None
        self._worker = BlockingWorker("kdash-http")
        """The thread every poll cycle runs in, ended by `aclose`."""
        self._lock = threading.Lock()
        """Held by a cycle in its thread, and by closing: the client is never closed under one."""
        self._connected = False
        self._info_due = float("-inf")
        self._metrics_absent_at: float | None = None
        self._ready_absent = False
        self._paths: dict[str, str] = {}
        """Which of the alternative paths answered last time, by kind."""

    def _get_client(self) -> httpx.Client:
        if self._client is None:
            timeout = httpx.Timeout(self._read_timeout, connect=self._connect_timeout,
                                    pool=self._connect_timeout)
            # trust_env=False: a cluster's HTTP_PROXY must not capture a local server's port.
            self._client = httpx.Client(
                base_url=self.url, timeout=timeout, trust_env=False, follow_redirects=True,
                headers=self._headers,
                limits=httpx.Limits(max_connections=2, max_keepalive_connections=2),
            )
        return self._client

    async def poll(self, now: float) -> HttpSample:
        """One poll cycle. A call made while another runs waits for that one's sample."""
        if self._inflight is not None:
            return await asyncio.shield(self._inflight)
        self._inflight = asyncio.ensure_future(
            self._worker.call(partial(self.poll_blocking, now)))
        try:
            return await asyncio.shield(self._inflight)
        finally:
            self._inflight = None

    def poll_blocking(self, now: float) -> HttpSample:
        """One poll cycle in the calling thread (at most one at a time); never raises."""
        with self._lock:
            return self._poll_once(now)

    def _poll_once(self, now: float) -> HttpSample:
        start = time.monotonic()
        cyc = _Cycle(deadline=start + self._connect_timeout + self._read_timeout)
        if not self._connected:
            # A (re)started server may be another version: forget what we learnt about it.
            self._paths.clear()
            self._ready_absent = False
            self._metrics_absent_at = None
            self._info_due = float("-inf")
        for step in (self._step_metrics, self._step_ready, self._step_info, self._step_liveness):
            if cyc.stop:
                break
            step(cyc, now)
        self._connected = cyc.answered
        return HttpSample(
            at=now, reachable=cyc.answered, error=cyc.error, problems=tuple(cyc.problems),
            latency_s=cyc.latency_s, duration_s=time.monotonic() - start,
            server_info=cyc.server_info, model_info=cyc.model_info, metrics=cyc.metrics,
            metrics_enabled=cyc.metrics_enabled, metric_families=cyc.families,
            ready=cyc.ready, endpoints=dict(cyc.endpoints), engine=cyc.engine,
            answers=tuple(cyc.answers), key_sent=bool(self._headers),
        )

    def _step_metrics(self, cyc: _Cycle, now: float) -> None:
        absent_at = self._metrics_absent_at
        if absent_at is not None and now - absent_at < self._recheck_interval:
            cyc.metrics_enabled = False
            return
        reply = self._get("/metrics", METRICS_LIMIT, cyc)
        if not cyc.note(reply):
            return
        if reply.status == 404:  # started without --enable-metrics
            self._metrics_absent_at, cyc.metrics_enabled = now, False
            return
        self._metrics_absent_at = None
        if reply.error or reply.status != 200:
            cyc.problem(reply.error or f"HTTP {reply.status}", reply.path)
            return
        cyc.metrics_enabled = True
        result = parse_metrics(reply.body.decode("utf-8", "replace"))
        if result.error:
            cyc.problem("bad body", reply.path)
            return
        cyc.metrics, cyc.families, cyc.engine = result.metrics, result.families, result.engine

    def _step_ready(self, cyc: _Cycle, now: float) -> None:
        if self._ready_absent:
            return
        reply = self._get("/ready", SMALL_LIMIT, cyc)
        if not cyc.note(reply):
            return
        if reply.status == 404:  # before SGLang 0.5.20; asked again after a reconnect
            self._ready_absent = True
        elif reply.status == 200:
            cyc.ready = True
        elif reply.status == 503:
            cyc.ready = False
            cyc.problem("not ready", reply.path)
        else:
            cyc.problem(reply.error or f"HTTP {reply.status}", reply.path)

    def _step_info(self, cyc: _Cycle, now: float) -> None:
        if now < self._info_due:
            return
        asked = len(cyc.answers)
        cyc.server_info = self._info(cyc, "server_info", SERVER_INFO_PATHS)
        if cyc.server_info is None and not cyc.stop and not cyc.refused:
            cyc.server_info = self._info(cyc, "version", ("/version",))  # vLLM
        if not cyc.stop:
            cyc.model_info = self._info(cyc, "model_info", MODEL_INFO_PATHS)
        # A route that answered an error is asked again soon: one 500 must not stand as its
        # answer (and hold the state degraded) for a whole interval.
        failed = any(status in ERROR_STATUSES for _, status in cyc.answers[asked:])
        ok = cyc.answered and not cyc.stop and not failed
        self._info_due = now + (self._info_interval if ok else min(10.0, self._info_interval))

    def _step_liveness(self, cyc: _Cycle, now: float) -> None:
        """Without /metrics or /ready, the cheap model-info route tells that the server lives."""
        if not cyc.answered and cyc.model_info is None:
            cyc.model_info = self._info(cyc, "model_info", MODEL_INFO_PATHS)

    def _info(self, cyc: _Cycle, kind: str, paths: tuple[str, ...]) -> Mapping[str, Any] | None:
        """GET the first of `paths` that exists (the one that worked last time first)."""
        known = self._paths.get(kind)
        ordered = (known, *(p for p in paths if p != known)) if known else paths
        for path in ordered:
            reply = self._get(path, INFO_LIMIT, cyc)
            if not cyc.note(reply):
                return None
            if reply.status in (404, 405):
                continue
            if reply.error or reply.status != 200:
                cyc.problem(reply.error or f"HTTP {reply.status}", path)
                return None
            data = _json_object(reply.body)
            if data is None:
                cyc.problem("bad body", path)
                return None
            self._paths[kind] = cyc.endpoints[kind] = path
            return data
        self._paths.pop(kind, None)
        return None

    def _get(self, path: str, limit: int, cyc: _Cycle) -> _Reply:
        """One GET under the poll's deadline; errors become `_Reply.error`."""
        start = time.monotonic()
        remaining = cyc.deadline - start
        if remaining <= 0:
            return _Reply(path, None, error="timeout")
        try:
            status, body, error = self._fetch(path, limit, cyc.deadline, remaining)
        except (httpx.HTTPError, httpx.InvalidURL, OSError, _Deadline) as exc:
            return _Reply(path, None, error=_describe(exc), latency_s=time.monotonic() - start)
        return _Reply(path, status, body, error, time.monotonic() - start)

    def _fetch(self, path: str, limit: int, deadline: float,
               remaining: float) -> tuple[int, bytes, str | None]:
        client = self._get_client()
        timeout = httpx.Timeout(min(self._read_timeout, remaining),
                                connect=min(self._connect_timeout, remaining),
                                pool=min(self._connect_timeout, remaining))
        with client.stream("GET", path, timeout=timeout) as resp:
            if resp.status_code != 200:
                return resp.status_code, b"", None
            declared = resp.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                return resp.status_code, b"", "body too large"
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > limit:
                    return resp.status_code, b"", "body too large"
                if time.monotonic() > deadline:
                    raise _Deadline  # each read came in time: a trickle, not a hang
                chunks.append(chunk)
            return resp.status_code, b"".join(chunks), None

    async def aclose(self, timeout: float = CLOSE_WAIT_S) -> None:
        """Close the client once a poll in flight has ended; nobody awaits that poll's sample
        any more; then the polls' thread ends, and is waited for. Waits at most `timeout`: past
        it the closing thread closes the client when the poll ends (its deadline bounds that),
        and the caller goes on."""
        task, self._inflight = self._inflight, None
        if task is not None and not task.done():
            task.cancel()
        self._worker.stop()
        if self._client is not None or self._worker.thread is not None:
            deadline = time.monotonic() + timeout
            try:
                await run_blocking(partial(self._close, deadline), timeout=timeout,
                                   name="kdash-http-close")
            except TimeoutError:
                pass

    def close_now(self) -> None:
        """`aclose` in the calling thread: waits for a poll in progress (its deadline bounds
        it), closes the client and ends the polls' thread."""
        self._worker.stop()
        self._close(time.monotonic() + self._connect_timeout + self._read_timeout)

    def _close(self, deadline: float = float("inf")) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
        self._worker.join(max(0.0, deadline - time.monotonic()))


async def post_webhook(url: str, payload: dict[str, Any], *, timeout: float = 5.0) -> str | None:
    """POST `payload` as JSON (Slack-compatible `{"text": ...}`); error text, or None when sent."""
    async def send() -> str | None:
        # trust_env=True: a webhook is usually outside, behind the site's proxy.
        async with httpx.AsyncClient(timeout=timeout) as client, client.stream(
            "POST", url, json=payload
        ) as resp:
            if 200 <= resp.status_code < 300:
                return None
            head = b""
            async for chunk in resp.aiter_bytes():
                head += chunk
                if len(head) >= 200:
                    break
            text = head[:200].decode("utf-8", "replace").strip()
            return f"HTTP {resp.status_code}" + (f": {text}" if text else "")

    try:
        return await asyncio.wait_for(send(), timeout * 2)
    except (httpx.HTTPError, OSError, asyncio.TimeoutError, ValueError, TypeError) as exc:
        return _describe(exc) if not isinstance(exc, (ValueError, TypeError)) else f"bad payload: {exc}"
