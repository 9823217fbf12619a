"""`client_errors`: retries and errors piling up in the client log, read as they arrive, named
by the last one with what it says happened and the fix; the log's end read at start is not
counted (its lines may be days old)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dash.core.alerts.rules_client import cause_of
from dash.core.config import Config
from dash.core.snapshot import RunSnapshot
from dash.core.state.run import RunState

T0 = 1_780_000_000.0
RETRY = ("INFO:openai._base_client:Retrying request to /chat/completions in 0.8 seconds")
E503 = ("openai.InternalServerError: Error code: 503 - {'error': 'Service Unavailable'}")


def _run(**alerts: float) -> RunState:
    return RunState(Config(client_log=Path("client.log"), url="", alerts=alerts))


def _feed(state: RunState, at: float, *lines: str) -> RunSnapshot:
    state.client.feed(list(lines), at)
    return state.tick_and_snapshot(at)[1]


def _alerts(snap: RunSnapshot) -> list:
    return [a for a in snap.alerts if a.id == "client_errors"]


def test_five_retries_in_ten_minutes_fire_naming_the_last_and_its_cause() -> None:
    state = _run()
    _feed(state, T0)  # the first read: the log's end (empty here)
    for i in range(4):
        assert not _alerts(_feed(state, T0 + 60 * i, RETRY))
    [alert] = _alerts(_feed(state, T0 + 240, E503))
    assert alert.severity == "warn" and alert.since == T0
    assert alert.message == ("the client logged 4 retries and 1 error in the last 10 min: "
                             "the server is not ready or overloaded")
    assert alert.evidence.startswith("last error 0 s ago: openai.InternalServerError")
    assert "/ready" in alert.hint and alert.line == E503


def test_the_logs_end_read_at_start_is_not_counted() -> None:
    state = _run()
    assert not _alerts(_feed(state, T0, *[RETRY] * 20))  # hours old, for all kdash knows
    assert not _alerts(_feed(state, T0 + 1, RETRY))
    assert _alerts(_feed(state, T0 + 2, *[RETRY] * 4))


def test_old_retries_leave_the_window() -> None:
    state = _run(client_errors_window_s=60, clear_after_s=0)
    _feed(state, T0)
    assert _alerts(_feed(state, T0 + 1, *[RETRY] * 5))
    assert not _alerts(_feed(state, T0 + 62))


@pytest.mark.parametrize(("line", "says"), [
    ("openai.AuthenticationError: Error code: 401 - {'error': 'Unauthorized'}", "API key"),
    ('HTTP Request: POST http://h:30000/v1/chat/completions "HTTP/1.1 429 Too Many Requests"',
     "rate-limited"),
    ("httpx.ReadTimeout: timed out", "time out"),
    ("openai.APIConnectionError: Connection error.", "cannot be reached"),
    ("openai.BadRequestError: Error code: 400 - maximum context length is 8192", "rejects"),
    ("openai.InternalServerError: Error code: 500 - {}", "fails the requests"),
])
def test_each_cause_is_named(line: str, says: str) -> None:
    what, fix = cause_of(line)
    assert says in what + fix


@pytest.mark.parametrize(("line", "what"), [
    ("2026-03-01 12:04:01,401 ERROR request failed: Connection refused",
     "the server cannot be reached"),
    ("2026-03-01 12:04:01,503 - INFO - Retrying request to /chat/completions in 0.8 seconds", ""),
    ("Retrying request to /chat/completions in 0.429 seconds", ""),
])
def test_a_stamps_milliseconds_or_a_fraction_are_no_status_code(line: str, what: str) -> None:
    """Python's logging stamps its milliseconds after a comma: `,401` is no 401 answer."""
    assert cause_of(line)[0] == what


def test_a_server_restart_ends_the_count_and_a_down_server_is_the_root() -> None:
    from dash.core.log.parse import parse_line
    from dash.core.log.timestamps import ts_to_epoch
    from dash.core.state.http_state import HttpSample

    state = RunState(Config(log=Path("server.log"), client_log=Path("client.log"),  # type: ignore[arg-type]
                            url="http://127.0.0.1:30000"))
    day = "2026-01-02"
    t = ts_to_epoch(f"{day}T10:00:00", ref=T0)
    state.feed_server_log([parse_line(f"[{day} 10:00:00] server_args=ServerArgs(port=30000)", 1),
                           parse_line(f"[{day} 10:00:20] The server is fired up and ready to "
                                      "roll!", 2)], t + 20)
    state.client.feed([], t + 20)
    state.http.apply(HttpSample(at=t + 21, reachable=True, url="http://127.0.0.1:30000"), t + 21)
    for i in range(3):
        state.http.apply(HttpSample(at=t + 600 + 2 * i, reachable=False, error="connection refused",
                                    url="http://127.0.0.1:30000"), t + 600 + 2 * i)
    refused = "openai.APIConnectionError: Connection error."
    snap = _feed(state, t + 606, *[refused] * 5)
    [incident] = [i for i in snap.incidents if i.root.id == "server_down"]
    assert [a.id for a in incident.consequences] == ["client_errors"]
    state.feed_server_log([parse_line(f"[{day} 10:11:00] server_args=ServerArgs(port=30000)", 3)],
                          t + 660)
    assert not _alerts(_feed(state, t + 661))  # the new launch: the old errors are over
