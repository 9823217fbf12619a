"""Alert rules about what the server's HTTP answers say when it answers, but with errors: it
refuses kdash (401, 403: an API key) or fails (5xx). A URL that gives no answer at all is
`server_down` / `http_unreachable` (rules_server).

What the servers answer, from their source: SGLang started with `--api-key` answers 401
`{"error": "Unauthorized"}` to every path but `/health*`, `/ready*` and `/metrics*` (0.5.x;
older versions left only `/health*` open, then `/metrics` too) unless the request carries
`Authorization: Bearer KEY` (or `x-api-key`); it reads the key from no environment variable.
vLLM's `--api-key` (or `$VLLM_API_KEY`) guards `/v1/*` (and, in newer versions, every route but
`/health`, `/ping`, `/load`, `/version`, `/metrics`): nothing kdash asks for. SGLang's `/ready`
answers 503 while the server is not ready: starting, paused, after a failed health check, shutting
down; vLLM answers 500 once its engine died (where it stays up at all).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from http import HTTPStatus

from dash.core.alerts.model import Finding, RuleContext, fmt_duration
from dash.core.alerts.rules_server import starting, stopped
from dash.core.snapshot import FailingRoute, Severity

KEY_HINT = ("`--api-key KEY`, or `[http] api_key = \"KEY\"` in ./kdash.toml (a flag is "
            "visible to `ps`, a file is not); kdash sends it as `Authorization: Bearer KEY` and "
            "never shows it")


def _status(code: int) -> str:
    try:
        return f"HTTP {code} {HTTPStatus(code).phrase}"
    except ValueError:  # a status the standard does not name (a proxy's own)
        return f"HTTP {code}"


def _paths(routes: Sequence[FailingRoute]) -> str:
    return ", ".join(dict.fromkeys(r.path for r in routes))


def _where(ctx: RuleContext, routes: Sequence[FailingRoute]) -> str:
    """`on /server_info, /model_info`, or `to every route kdash asks` when no route answered."""
    return "to every route kdash asks" if not ctx.snap.http.served else f"on {_paths(routes)}"


def _streak(ctx: RuleContext, routes: Sequence[FailingRoute]) -> str:
    """`for 2 min (61 polls)`: how long the oldest of them has answered so."""
    since = min(r.since for r in routes)
    polls = max(r.polls for r in routes)
    return f"for {fmt_duration(max(0.0, ctx.now - since))} ({polls} poll{'s' * (polls != 1)})"


def _served(ctx: RuleContext) -> str:
    return ("other routes answer" if ctx.snap.http.served
            else "no route answers")


def _started_with_key(ctx: RuleContext) -> bool:
    """The log's latest server arguments name an API key (the key itself is not used)."""
    for e in reversed(ctx.events.all):
        if e.get("event") == "server_args":
            args = e.get("args")
            return isinstance(args, dict) and bool(args.get("api_key"))
    return False


def rule_http_auth(ctx: RuleContext) -> Iterator[Finding]:
    """`http_auth` (warn): a route has answered 401/403 for `http_error_polls` polls: the
    server wants an API key kdash does not send, or another one. Clears at once when the
    routes answer again (or the server stops answering at all: then it is `server_down`)."""
    http = ctx.snap.http
    refused = [r for r in http.failing if r.status in (401, 403)]
    if not refused:
        ctx.resolve("http_auth")
        return
    if max(r.polls for r in refused) < ctx.cfg.http_error_polls:
        return
    code = refused[0].status
    paths = _paths(refused)
    logged = "; the log's server_args show an api_key" if _started_with_key(ctx) else ""
    lost = "; without /server_info kdash lacks the model and KV capacity" \
        if any(r.path in ("/server_info", "/get_server_info") for r in refused) else ""
    evidence = (f"{_status(code)} from {paths} {_streak(ctx, refused)}; {_served(ctx)}; "
                f"kdash {'sends a key (not shown)' if http.key_sent else 'sends no key'}"
                f"{logged}{lost}")
    if http.key_sent:
        message = f"the server refuses kdash's API key: {_status(code)} {_where(ctx, refused)}"
        hint = ("The key kdash sends is not the server's: pass the server's own --api-key "
                "(SGLang's --admin-api-key does not open these routes) as " + KEY_HINT + ".")
    else:
        message = f"the server wants an API key: {_status(code)} {_where(ctx, refused)}"
        hint = ("The server was started with --api-key: give kdash the same key: " + KEY_HINT
                + ("; $VLLM_API_KEY is read too." if ctx.snap.server.engine == "vllm" else "."))
    if code == 403:
        hint += " A 403 may also come from a proxy in front of the server that forbids the route."
    yield Finding("http_auth", "warn", message, evidence, hint, since=refused[0].since)


def rule_http_errors(ctx: RuleContext) -> Iterator[Finding]:
    """`http_errors`: a route has answered a 5xx `http_error_polls` times in a row (its own
    answers: one 500 of a route asked once a minute is not a streak of polls; a 503 for
    `unavailable_after_s` too, and never while the log shows the server starting or stopping:
    a warm-up answers 503). Crit when no route answers, or when `/ready` says not ready; a
    warning when only some routes fail. Clears after the usual hysteresis (an overloaded
    server's 503s come and go)."""
    http = ctx.snap.http
    failing = [r for r in http.failing if r.status >= 500]
    if not failing or max(r.answers for r in failing) < ctx.cfg.http_error_polls:
        return
    if starting(ctx) is not None or stopped(ctx):
        return
    by_code: dict[int, list[FailingRoute]] = {}
    for r in failing:
        by_code.setdefault(r.status, []).append(r)
    # The status most routes give (503 on a tie: it says why the others fail).
    code = max(by_code, key=lambda c: (len(by_code[c]), c == 503))
    routes = by_code[code]
    others = "".join(f"; {_status(c)} from {_paths(rs)} {_streak(ctx, rs)}"
                     for c, rs in by_code.items() if c != code)
    evidence = f"{_status(code)} from {_paths(routes)} {_streak(ctx, routes)}{others}; " \
        f"{_served(ctx)}"
    not_ready = code == 503 and any(r.path == "/ready" for r in routes)
    severity: Severity = "crit" if not http.served or not_ready else "warn"
    engine = ctx.snap.server.engine
    if code == 503:
        message = ("the server says it is not ready: /ready answers 503" if not_ready and
                   len(routes) == 1 else f"the server answers {_status(code)} {_where(ctx, routes)}")
        yield Finding("http_errors", severity, message, evidence, _unavailable_hint(engine),
                      fire_after=ctx.cfg.unavailable_after_s,
                      since=min(r.since for r in routes))
        return
    message = (f"the server answers {_status(code)} to every route kdash asks" if not http.served else
               f"{_paths(routes)} fail{'s' * (len(routes) == 1)}: {_status(code)}")
    yield Finding("http_errors", severity, message, evidence, _failing_hint(engine, code),
                  since=min(r.since for r in routes))


def _unavailable_hint(engine: str | None) -> str:
    if engine == "vllm":
        return ("Not ready, or overloaded: vLLM answers 503 on /health once its engine died "
                "(restart it); a router or proxy answers 503 when no server behind it is "
                "healthy. See the end of the server log.")
    return ("Not ready, or overloaded: SGLang's /ready answers 503 while it is paused "
            "(/continue_generation resumes it), after a failed health check (\"Health check "
            "failed\" in its log: restart it) or shutting down; a router or proxy answers 503 "
            "when no server behind it is healthy. See the end of the server log.")


def _failing_hint(engine: str | None, code: int) -> str:
    if code in (502, 504):
        return ("A gateway answers: a router or proxy in front of the server cannot reach it "
                "(502) or waits for it in vain (504). Is the server behind it alive? Check its "
                "log and the proxy's.")
    if engine == "vllm":
        return ("The route fails inside the server: vLLM answers 500 once its engine died (an "
                "EngineDeadError in its log), where VLLM_KEEP_ALIVE_ON_ENGINE_DEATH keeps it up; "
                "restart it then. Otherwise its log has the traceback of the failing route.")
    return ("The route fails inside the server: its log has the traceback (look for the path "
            "and a Traceback near it). If every route fails, the server is broken: restart it.")


HTTP_RULES = (rule_http_auth, rule_http_errors)
"""HTTP answers that are errors, after the rules about no answer at all."""
