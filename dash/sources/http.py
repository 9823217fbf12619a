"""Polling an SGLang/vLLM server over HTTP (the only module that imports httpx).

One kept-alive connection of the standard library's `http.client`, used from one long-lived
daemon thread: each `await poll(now)` runs one poll cycle there
(`dash.sources.blocking.BlockingWorker`), so the event loop sees one hand-over per poll and no
thread is started for it. A GET through it costs a third of the CPU of one through httpx's
blocking client (0.37 against 1.05 ms for a 20 KB body on a local server), which itself costs
half of its async one, whose socket wake-ups would also land on the loop that draws the screen;
httpx is kept for webhooks, sent rarely and to any address (proxies, HTTP/2 and all).
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
import base64
import http.client
import json
import ssl
import sys
import threading
import time
import urllib.parse
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
    if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol, _BadUrl)):
        return "bad url"
    if isinstance(exc, (http.client.RemoteDisconnected, http.client.HTTPException)):
        return "protocol error"  # an answer that is no HTTP, or none before the close
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


class _BadUrl(ValueError):
    """The URL is not one an HTTP request can be sent to."""


REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 20
"""Redirects followed for one GET (httpx's default)."""
CHUNK = 64 * 1024


def _drain(resp: http.client.HTTPResponse) -> None:
    """Read a short body of a known length to its end (a longer one closes the connection)."""
    if not resp.chunked and resp.length is not None and resp.length <= SMALL_LIMIT:
        resp.read()


@dataclass(frozen=True, slots=True)
class _Origin:
    """Where requests go: scheme, host and port, and the base URL's path (requests' prefix)."""

    scheme: str
    host: str
    port: int
    prefix: str

    @classmethod
    def of(cls, url: str) -> _Origin:
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:  # "http://[::1", a port that is no number
            raise _BadUrl(str(exc)) from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _BadUrl(url)
        default = 443 if parts.scheme == "https" else 80
        return cls(parts.scheme, parts.hostname, port or default, parts.path.rstrip("/"))

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=_tls_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)


_TLS: list[ssl.SSLContext] = []


def _tls_context() -> ssl.SSLContext:
    """The certificates httpx verifies against (certifi's), made once."""
    if not _TLS:
        import certifi

        _TLS.append(ssl.create_default_context(cafile=certifi.where()))
    return _TLS[0]


def _basic_auth(url: str) -> str | None:
    """`Basic ...` for the user and password written in the URL (percent-decoded), else None."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return None  # the poll says what is wrong with the URL
    if parts.username is None:
        return None
    user = urllib.parse.unquote(parts.username)
    password = urllib.parse.unquote(parts.password or "")
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


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
        self._headers = {"Accept": "*/*", "User-Agent": "kdash"}
        """Sent with every request; with the API key, which is never logged or shown."""
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        else:
            basic = _basic_auth(url)
            if basic is not None:  # `http://user:pass@host`: sent as httpx (and curl) send it
                self._headers["Authorization"] = basic
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._info_interval = info_interval
        self._recheck_interval = recheck_interval
        self._conn: http.client.HTTPConnection | None = None
        """The kept-alive connection to the URL's server (None: none open)."""
        self._origin: _Origin | None = None
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
            answers=tuple(cyc.answers), key_sent="Authorization" in self._headers,
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
            status, body, error = self._fetch(path, limit, cyc.deadline)
        except (http.client.HTTPException, OSError, _Deadline, _BadUrl) as exc:
            self._drop()  # whatever it was in the middle of, the connection is not reused
            return _Reply(path, None, error=_describe(exc), latency_s=time.monotonic() - start)
        return _Reply(path, status, body, error, time.monotonic() - start)

    def _fetch(self, path: str, limit: int, deadline: float) -> tuple[int, bytes, str | None]:
        """GET `path` (after the URL's own path), following redirects; each request's
        timeouts cut to what is left before `deadline`."""
        if self._origin is None:
            self._origin = _Origin.of(self.url)
        origin, target = self._origin, self._origin.prefix + path
        for _ in range(MAX_REDIRECTS + 1):
            resp = self._request(origin, target, deadline)
            location = resp.getheader("location")
            if resp.status not in REDIRECTS or not location:
                try:
                    return self._body(resp, limit, deadline)
                finally:
                    if origin is not self._origin:
                        self._drop()  # the connection kept is the URL's own server's only
            _drain(resp)  # a redirect's short body: the connection can be used again
            self._release(resp)
            url = urllib.parse.urljoin(f"{origin.scheme}://{origin.host}:{origin.port}{target}",
                                       location)
            moved = _Origin.of(url)
            parts = urllib.parse.urlsplit(url)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            if (moved.scheme, moved.host, moved.port) != (origin.scheme, origin.host, origin.port):
                self._drop()  # the kept connection is to the URL's server, not this one
                origin = _Origin(moved.scheme, moved.host, moved.port, "")
        raise http.client.HTTPException("too many redirects")

    def _request(self, origin: _Origin, target: str, deadline: float) -> http.client.HTTPResponse:
        """Send one GET on the kept connection (opened under the connect timeout when there is
        none); a kept one the server has closed meanwhile is opened again, once."""
        for attempt in (0, 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("poll deadline")
            fresh = self._conn is None
            if self._conn is None:
                self._conn = origin.connection(min(self._connect_timeout, remaining))
                self._conn.connect()
            sock = self._conn.sock
            if sock is not None:
                sock.settimeout(min(self._read_timeout, remaining))
            try:
                self._conn.request("GET", target, headers=self._headers)
                return self._conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._drop()
                if fresh or attempt:
                    raise
        raise AssertionError("unreachable")

    def _body(self, resp: http.client.HTTPResponse, limit: int,
              deadline: float) -> tuple[int, bytes, str | None]:
        try:
            if resp.status != 200:
                _drain(resp)  # a 404's or 503's few bytes: the connection stays usable
                return resp.status, b"", None
            declared = resp.getheader("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                return resp.status, b"", "body too large"
            chunks: list[bytes] = []
            size = 0
            while chunk := resp.read1(CHUNK):
                size += len(chunk)
                if size > limit:
                    return resp.status, b"", "body too large"
                if time.monotonic() > deadline:
                    raise _Deadline  # each read came in time: a trickle, not a hang
                chunks.append(chunk)
            return resp.status, b"".join(chunks), None
        finally:
            self._release(resp)

    def _release(self, resp: http.client.HTTPResponse) -> None:
        """Done with `resp`: its connection is kept for the next request only when all of its
        body was read and the server keeps it open."""
        # read1 leaves a body of known length open once all of it is read
        read = resp.isclosed() or (not resp.chunked and resp.length == 0)
        if not read or resp.will_close:
            self._drop()  # a body left unread, or a server that closes: no reuse
        resp.close()

    def _drop(self) -> None:
        """Close the kept connection (the next request opens another)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    async def aclose(self, timeout: float = CLOSE_WAIT_S) -> None:
        """Close the client once a poll in flight has ended; nobody awaits that poll's sample
        any more; then the polls' thread ends, and is waited for. Waits at most `timeout`: past
        it the closing thread closes the client when the poll ends (its deadline bounds that),
        and the caller goes on."""
        task, self._inflight = self._inflight, None
        if task is not None and not task.done():
            task.cancel()
        self._worker.stop()
        if self._conn is not None or self._worker.thread is not None:
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
            self._drop()
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
