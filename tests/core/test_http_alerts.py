"""A server that answers, but with errors: `http_auth` (401/403: it wants an API key) and
`http_errors` (5xx), after their grace, never during a start-up the log shows, with the fix."""

from __future__ import annotations

from dash.core.config import Config
from dash.core.log.parse import parse_line
from dash.core.log.timestamps import ts_to_epoch
from dash.core.snapshot import RunSnapshot
from dash.core.state.http_state import HttpSample
from dash.core.state.run import RunState

T0 = 1_780_000_000.0
URL = "http://127.0.0.1:30000"
DAY = "2026-01-02"

# What SGLang 0.5.x started with --api-key answers a poll without the key (/metrics and /ready
# are open to all; the info routes are asked only at connect and then once a minute).
FIRST = (("/metrics", 200), ("/ready", 200), ("/server_info", 401), ("/model_info", 401))
LATER = (("/metrics", 200), ("/ready", 200))
ALL_401 = (("/metrics", 401), ("/ready", 401), ("/server_info", 401), ("/model_info", 401))


def _sample(at: float, answers: tuple[tuple[str, int], ...], *, key: bool = False) -> HttpSample:
    bad = [(p, s) for p, s in answers if s not in (200, 404)]
    return HttpSample(at=at, reachable=True, error=f"HTTP {bad[0][1]}" if bad else None,
                      problems=tuple(f"HTTP {s} {p}" for p, s in bad), answers=answers,
                      url=URL, key_sent=key)


class Run:
    """A kdash polling every 2 s (and following a log, when lines are fed)."""

    def __init__(self, **alerts: float) -> None:
        self.state = RunState(Config(log="server.log", url=URL, alerts=alerts))  # type: ignore[arg-type]
        self.line = 0

    def poll(self, at: float, answers: tuple[tuple[str, int], ...], **kw: bool) -> RunSnapshot:
        self.state.http.apply(_sample(at, answers, **kw), at)
        return self.state.tick_and_snapshot(at)[1]

    def log(self, at: float, *texts: str) -> None:
        records = []
        for text in texts:
            self.line += 1
            records.append(parse_line(text, self.line))
        self.state.feed_server_log(records, at)


def _ids(snap: RunSnapshot) -> dict[str, str]:
    return {a.id: a.severity for a in snap.alerts}


def test_info_routes_refused_fire_http_auth_with_the_key_fix_after_three_polls() -> None:
    run = Run()
    assert "http_auth" not in _ids(run.poll(T0, FIRST))
    assert "http_auth" not in _ids(run.poll(T0 + 2, LATER))  # the 401s stand until re-asked
    snap = run.poll(T0 + 4, LATER)
    assert _ids(snap) == {"http_auth": "warn"}
    [alert] = snap.alerts
    assert alert.message == ("the server wants an API key: HTTP 401 Unauthorized on "
                             "/server_info, /model_info")
    assert alert.since == T0
    assert "for 4 s (3 polls)" in alert.evidence and "other routes answer" in alert.evidence
    assert "sends no key" in alert.evidence and "lacks the model" in alert.evidence
    assert "--api-key KEY" in alert.hint and "[http] api_key" in alert.hint
    assert "Authorization: Bearer KEY" in alert.hint
    # the refused routes were not asked this poll, and still stand: no flip back to "up"
    assert (snap.http.state, snap.http.reason) == ("degraded", "HTTP 401 /server_info")


def test_http_auth_clears_at_once_when_the_routes_answer_again() -> None:
    run = Run()
    for i in range(3):
        snap = run.poll(T0 + 2 * i, ALL_401)
    assert _ids(snap) == {"http_auth": "warn"} and "no route answers" in snap.alerts[0].evidence
    snap = run.poll(T0 + 6, (("/metrics", 200), ("/ready", 200), ("/server_info", 200),
                             ("/model_info", 200)))
    assert not snap.alerts  # a confirmed recovery: no hysteresis


def test_a_wrong_key_says_so_and_the_log_naming_a_key_is_evidence() -> None:
    run = Run()
    run.log(T0 - 60, f"[{DAY} 10:00:00] server_args=ServerArgs(model_path='m', port=30000, "
                     "api_key='s3cret-from-the-log')")
    for i in range(3):
        snap = run.poll(T0 + 2 * i, ALL_401, key=True)
    [alert] = [a for a in snap.alerts if a.id == "http_auth"]
    assert alert.message.startswith("the server refuses kdash's API key: HTTP 401")
    assert "sends a key (not shown)" in alert.evidence
    assert "the log's server_args show an api_key" in alert.evidence
    assert "--admin-api-key" in alert.hint
    assert "s3cret" not in alert.message + alert.evidence + alert.hint


def test_http_auth_waits_for_its_polls_and_a_down_server_is_not_refusing() -> None:
    run = Run(http_error_polls=5)
    for i in range(4):
        assert "http_auth" not in _ids(run.poll(T0 + 2 * i, ALL_401))
    assert "http_auth" in _ids(run.poll(T0 + 8, ALL_401))
    run.state.http.apply(HttpSample(at=T0 + 10, reachable=False, error="connection refused",
                                    url=URL), T0 + 10)
    snap = run.state.tick_and_snapshot(T0 + 10)[1]
    assert "http_auth" not in _ids(snap) and snap.http.failing == ()


def test_503_forever_is_crit_after_its_grace_not_after_three_polls() -> None:
    run = Run(unavailable_after_s=30)
    every = (("/metrics", 503), ("/ready", 503), ("/server_info", 503), ("/model_info", 503))
    for i in range(17):
        snap = run.poll(T0 + 2 * i, every)
        assert "http_errors" not in _ids(snap), i
    snap = run.poll(T0 + 34, every)
    assert _ids(snap) == {"http_errors": "crit"}
    [alert] = snap.alerts
    assert alert.message == "the server answers HTTP 503 Service Unavailable to every route kdash asks"
    assert "no route answers" in alert.evidence
    assert "HTTP 503 Service Unavailable from /metrics, /ready, /server_info" in alert.evidence
    assert "Not ready" in alert.hint and "Health check failed" in alert.hint


def test_ready_503_with_metrics_open_says_not_ready_and_is_crit() -> None:
    run = Run(unavailable_after_s=10)
    answers = (("/metrics", 200), ("/ready", 503))
    for i in range(7):  # the grace runs from the third poll on
        assert not run.poll(T0 + 2 * i, answers).alerts
    [alert] = run.poll(T0 + 14, answers).alerts
    assert alert.id == "http_errors" and alert.severity == "crit"
    assert alert.message == "the server says it is not ready: /ready answers 503"
    assert "for 14 s (8 polls)" in alert.evidence
    assert alert.since == T0


def test_no_503_alert_while_the_log_shows_the_launch_starting() -> None:
    """SGLang answers 503 during its warm-up: that is not a problem until the start ends."""
    run = Run(unavailable_after_s=10)
    t = ts_to_epoch(f"{DAY}T10:00:00", ref=T0)
    run.log(t, f"[{DAY} 10:00:00] server_args=ServerArgs(model_path='m', port=30000)")
    answers = (("/metrics", 200), ("/ready", 503))
    for i in range(10):  # 20 s of 503 while weights load: still starting
        run.log(t + 2 * i, f"[{DAY} 10:00:{2 * i:02d}] Load weight begin. avail mem=78.50 GB")
        snap = run.poll(t + 2 * i, answers)
        assert "http_errors" not in _ids(snap), i


def test_a_failing_route_is_a_warning_naming_path_and_status() -> None:
    """A route asked once a minute that fails once is no streak (the polls between do not ask
    it); the third 500 in a row of its own fires."""
    run = Run()
    answers = (("/metrics", 200), ("/ready", 200), ("/server_info", 500), ("/model_info", 200))
    for minute in range(3):
        for i in range(30):
            snap = run.poll(T0 + 60 * minute + 2 * i, answers if i == 0 else LATER)
            if minute < 2:
                assert not snap.alerts, (minute, i)
    [alert] = snap.alerts
    assert (alert.id, alert.severity) == ("http_errors", "warn")
    assert alert.message == "/server_info fails: HTTP 500 Internal Server Error"
    assert "traceback" in alert.hint.lower()


def test_a_gateway_error_everywhere_is_crit_and_says_gateway() -> None:
    run = Run()
    answers = (("/metrics", 502), ("/ready", 502), ("/server_info", 502), ("/model_info", 502))
    for i in range(3):
        snap = run.poll(T0 + 2 * i, answers)
    [alert] = snap.alerts
    assert (alert.id, alert.severity) == ("http_errors", "crit")
    assert alert.message == "the server answers HTTP 502 Bad Gateway to every route kdash asks"
    assert "proxy" in alert.hint


def test_a_404_is_no_error_and_a_status_change_starts_a_new_streak() -> None:
    run = Run()
    for i in range(3):
        snap = run.poll(T0 + 2 * i, (("/metrics", 404), ("/ready", 404), ("/model_info", 200)))
    assert not snap.alerts and snap.http.failing == ()
    run.poll(T0 + 6, (("/metrics", 500),))
    run.poll(T0 + 8, (("/metrics", 500),))
    snap = run.poll(T0 + 10, (("/metrics", 502),))
    assert [(f.status, f.since, f.polls) for f in snap.http.failing] == [(502, T0 + 10, 1)]


def test_a_poll_with_no_answer_after_refused_ones_is_one_failure_not_the_whole_run() -> None:
    """A server that refuses kdash (401) answers every poll: those polls are no failures to
    reach it. One poll that times out then is one, not `down_polls` in a row."""
    run = Run()
    run.poll(T0, FIRST)
    for i in range(1, 11):
        run.poll(T0 + 2 * i, LATER)
    run.state.http.apply(HttpSample(at=T0 + 22, reachable=False, error="timeout", url=URL),
                         T0 + 22)
    snap = run.state.tick_and_snapshot(T0 + 22)[1]
    assert snap.http.state == "down" and snap.http.consecutive_failures == 1
    assert not {"server_down", "http_unreachable"} & set(_ids(snap))


def test_a_server_that_refused_kdash_and_then_went_silent_had_answered_at_that_address() -> None:
    run = Run()
    run.poll(T0, FIRST)
    run.poll(T0 + 2, LATER)
    for i in range(3):
        run.state.http.apply(HttpSample(at=T0 + 4 + 2 * i, reachable=False,
                                        error="connection refused", url=URL), T0 + 4 + 2 * i)
    snap = run.state.tick_and_snapshot(T0 + 8)[1]
    [down] = [a for a in snap.alerts if a.id == "server_down"]
    assert down.severity == "crit" and "last answered 6 s ago" in down.evidence
    assert snap.liveness.http_ever_up
