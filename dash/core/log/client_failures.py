"""What an inference client's retry or error line says went wrong with its request.

The client log is the inference script's own output: the OpenAI/Anthropic SDKs' retries and
exceptions, httpx's request lines. Its other shapes (tqdm bars, resume counts, which lines are
errors) are read by `dash.core.state.client`; this is the wording families of why a request
failed, which the `client_errors` alert names.
"""

from __future__ import annotations

import re

_CODE = r"(?<![\w.,])"
"""Before a status code: not a number's fraction (`in 0.503 seconds`) nor a logging stamp's
milliseconds (`12:04:01,401`)."""
_FAILURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("refused", re.compile(_CODE + r"(?:401|403)\b|Unauthorized|Forbidden|AuthenticationError|"
                           r"PermissionDenied", re.I)),
    ("rate_limited", re.compile(_CODE + r"429\b|Too Many Requests|rate.?limit", re.I)),
    ("unavailable", re.compile(_CODE + r"503\b|Service Unavailable", re.I)),
    ("server_error", re.compile(_CODE + r"50[024]\b|Internal Server Error|Bad Gateway|"
                                r"Gateway Timeout", re.I)),
    ("timeout", re.compile(r"time(?:d)? ?out|Timeout", re.I)),
    ("unreachable", re.compile(r"Connection (?:refused|reset|error)|ConnectError|"
                               r"RemoteProtocolError|Disconnected|APIConnectionError", re.I)),
    ("bad_request", re.compile(_CODE + r"400\b|BadRequest|context length|maximum context",
                               re.I)),
)
"""What a retry or error line says went wrong with a request, tried in order: the status an
SDK or httpx prints (`Error code: 401`, `"HTTP/1.1 429 Too Many Requests"`), the SDKs'
exception names (`openai.AuthenticationError`, `APIConnectionError`), httpx's timeouts."""


def request_failure(message: str) -> str | None:
    """The kind of request failure a client's retry or error line names (`refused`,
    `rate_limited`, `unavailable`, `server_error`, `timeout`, `unreachable`, `bad_request`),
    or None when it names none."""
    return next((kind for kind, pattern in _FAILURES if pattern.search(message)), None)
