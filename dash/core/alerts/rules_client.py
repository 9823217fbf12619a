"""Alert rules about what the client log says of its requests: retries and errors piling up.

The client log has no stamps of its own: an event's time is when kdash read its line, so the
lines of the log's end read at start (`backfill`) are not counted: they may be days old. A
server restart ends the count: what the client met while the old server died is that
incident's (it folds under the OOM, the crash or the down server that caused it).
"""

from __future__ import annotations

from collections.abc import Iterator

from dash.core.alerts.model import Finding, RuleContext, fmt_duration
from dash.core.alerts.rules_server import launch_start
from dash.core.log.client_failures import request_failure

_CAUSES: dict[str, tuple[str, str]] = {
    "refused": ("refused: no or a wrong API key",
                "The server refuses the client's requests: give the client the server's "
                "--api-key (`OpenAI(api_key=...)` or OPENAI_API_KEY)."),
    "rate_limited": ("rate-limited",
                     "The server (or a proxy) rate-limits the client: lower the client's "
                     "concurrency, or raise the limit that answers 429."),
    "unavailable": ("the server is not ready or overloaded",
                    "The server answers 503 (see http_errors): let the client wait for /ready "
                    "(or /health) before it sends, and retry with a backoff; an overloaded "
                    "server wants less concurrency."),
    "server_error": ("the server fails the requests",
                     "The server fails the requests: its log has the traceback; restart it if "
                     "every request fails."),
    "timeout": ("requests time out",
                "Requests time out: a long generation can outlast the client's timeout (the "
                "OpenAI SDK waits 600 s): raise it, or lower the concurrency so requests finish "
                "sooner."),
    "unreachable": ("the server cannot be reached",
                    "The client cannot reach the server: is it up at the URL the client uses? "
                    "(server_down or http_unreachable say what kdash sees.)"),
    "bad_request": ("the server rejects the requests",
                    "The server rejects the requests (400): a prompt longer than the context "
                    "length, or a bad parameter; the error's text says which."),
}
"""What each kind of request failure (`request_failure`) means, and its fix."""


def cause_of(message: str) -> tuple[str, str]:
    """(what the line says happened, the fix) for a client retry or error line."""
    kind = request_failure(message)
    if kind is not None:
        return _CAUSES[kind]
    return ("", "Read the client log's last lines for the cause (the dashboard's client view "
            "shows them).")


def rule_client_errors(ctx: RuleContext) -> Iterator[Finding]:
    """`client_errors` (warn): at least `client_errors_min` retries and errors in the client
    log within `client_errors_window_s`, read as they arrived; names the last one, what it
    says happened, and the fix."""
    window = ctx.cfg.client_errors_window_s
    ctx.launch_ended("client_errors")
    start = launch_start(ctx)
    recent = [e for e in ctx.snap.client.events if not e.get("backfill")
              and isinstance(e.get("at"), (int, float)) and ctx.now - e["at"] <= window
              and e["at"] > start]
    if len(recent) < ctx.cfg.client_errors_min:
        return
    retries = sum(1 for e in recent if e.get("event") == "retry")
    errors = len(recent) - retries
    counts = " and ".join(f"{n} {word}{'s' * (n != 1)}" if word != "retry" else
                          f"{n} retr{'ies' if n != 1 else 'y'}"
                          for n, word in ((retries, "retry"), (errors, "error")) if n)
    last = recent[-1]
    message = str(last.get("message", ""))
    what, fix = cause_of(message)
    ago = fmt_duration(max(0.0, ctx.now - float(last["at"])))
    yield Finding(
        "client_errors", "warn",
        f"the client logged {counts} in the last {fmt_duration(window)}"
        + (f": {what}" if what else ""),
        f"last {last.get('event')} {ago} ago: {message[:300]}",
        fix, line=message, since=float(recent[0]["at"]))


CLIENT_RULES = (rule_client_errors,)
