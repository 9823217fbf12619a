"""The server's state said as known: the URL from the log, liveness apart from reachability,
server_down's severity and its recovery, incidents, the restart's incident line, the history."""

from __future__ import annotations

import dataclasses
import time

import pytest

from dash.core.alerts.history import AlertHistory, entries_from_lines
from dash.core.alerts.incidents import group_incidents, hhmm
from dash.core.alerts.model import AlertChanges
from dash.core.config import Config
from dash.core.log.parse import parse_line
from dash.core.snapshot import Alert
from dash.core.state.http_state import HttpSample
from dash.core.state.liveness import liveness, start_step
from dash.core.state.run import RunState
from dash.core.state.server_url import UrlFinder

T0 = 1_780_000_000.0


def _args_record(text: str) -> dict:
    rec = parse_line(text, 1)
    assert rec is not None and rec.get("event") == "server_args", text
    return rec


@pytest.mark.parametrize(
    ("line", "url", "why"),
    [
        ("[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', host='0.0.0.0', port=8000, "
         "tp_size=8)", "http://127.0.0.1:8000", "port 8000"),
        ("[2026-01-02 10:00:00] server_args={'model_path': 'm', 'host': '10.1.2.3', 'port': 31000}",
         "http://10.1.2.3:31000", "port 31000"),
        ("INFO 01-02 10:00:00 [utils.py:253] non-default args: {'model': 'm', 'max_num_seqs': 64}",
         "http://127.0.0.1:8000", "vLLM's default 8000"),
        ("INFO 01-02 10:00:00 [utils.py:253] non-default args: {'model': 'm', 'port': 8100}",
         "http://127.0.0.1:8100", "port 8100"),
    ],
)
def test_the_url_comes_from_the_logs_server_args(line: str, url: str, why: str) -> None:
    finder = UrlFinder(None)
    assert finder.choice() is not None and finder.choice().source == "default"  # type: ignore[union-attr]
    finder.feed([None, _args_record(line)])
    choice = finder.choice()
    assert choice is not None and (choice.url, choice.source) == (url, "server_args")
    assert why in choice.why


def test_an_explicit_url_wins_and_an_empty_one_turns_http_off() -> None:
    finder = UrlFinder("http://h:1")
    finder.feed([_args_record("[2026-01-02 10:00:00] server_args=ServerArgs(port=8000)")])
    choice = finder.choice()
    assert choice is not None and choice.url == "http://h:1" and choice.log_port == 8000
    assert UrlFinder("").choice() is None
    vllm = UrlFinder(None)
    vllm.feed([{"kind": "decode", "engine": "vllm"}])
    assert vllm.choice().url == "http://127.0.0.1:8000"  # type: ignore[union-attr]


def _decode(at_line: int, ts: str | None = None) -> dict:
    return {"kind": "decode", "line": at_line, "ts": ts, "engine": "sglang", "rank": "TP0",
            "running_req": 30, "queue_req": 0, "tokens": 1000, "token_usage": 0.3,
            "gen_throughput": 800.0}


def _down(at: float, url: str = "http://127.0.0.1:30000") -> HttpSample:
    return HttpSample(at=at, reachable=False, error="connection refused", url=url)


def test_started_before_the_server_is_a_warning_that_clears_the_moment_it_answers() -> None:
    state = RunState(Config(log="server.log"))  # type: ignore[arg-type]
    for i in range(5):
        state.http.apply(_down(T0 + 2 * i), T0 + 2 * i)
    snap = state.tick_and_snapshot(T0 + 10)[1]
    down = next(a for a in snap.alerts if a.id == "server_down")
    assert down.severity == "warn" and "never answered" in down.evidence
    assert snap.liveness.down and not snap.liveness.http_ever_up
    up = HttpSample(at=T0 + 12, reachable=True, url="http://127.0.0.1:30000")
    state.http.apply(up, T0 + 12)
    changes, snap = state.tick_and_snapshot(T0 + 12)
    assert [a.id for a in changes.cleared] == ["server_down"] and not snap.alerts


def test_server_down_is_crit_when_the_log_shows_a_crash() -> None:
    state = RunState(Config(log="server.log"))  # type: ignore[arg-type]
    state.feed_server_log([_decode(1)], T0)
    state.feed_server_log([{"kind": "event", "event": "crash", "reason": "killed",
                            "message": "Killed", "line": 2, "ts": None}], T0 + 5)
    for i in range(3):
        state.http.apply(_down(T0 + 6 + 2 * i), T0 + 6 + 2 * i)
    snap = state.tick_and_snapshot(T0 + 12)[1]
    assert snap.liveness.log == "crashed" and snap.liveness.down
    down = next(a for a in snap.alerts if a.id == "server_down")
    assert down.severity == "crit" and "crash" in down.evidence
    assert [i.root.id for i in snap.incidents][0] == "server_crash"  # the cause first
    assert [a.id for a in snap.incidents[0].consequences] == ["server_down"]


def test_a_live_log_with_a_wrong_port_names_the_port_of_its_server_args() -> None:
    state = RunState(Config(log="server.log", url="http://127.0.0.1:30000"))  # type: ignore[arg-type]
    state.feed_server_log([_args_record("[2026-01-02 10:00:00] server_args=ServerArgs(port=8000)")],
                          T0 - 60)
    state.feed_server_log([_decode(2)], T0 - 30)
    state.feed_server_log([_decode(3)], T0)  # arriving as kdash follows
    for i in range(3):
        state.http.apply(_down(T0 + i), T0 + i)
    snap = state.tick_and_snapshot(T0 + 3)[1]
    assert snap.liveness.log == "live" and not snap.liveness.down
    [alert] = snap.alerts
    assert alert.id == "http_unreachable" and alert.severity == "warn"
    assert "the log's server_args say port 8000" in alert.message
    assert "--url http://127.0.0.1:8000" in alert.hint


def test_a_stamp_ahead_of_the_clock_says_nothing_about_freshness() -> None:
    state = RunState(Config(log="server.log"))  # type: ignore[arg-type]
    state.feed_server_log([_decode(1, "2056-01-01 10:00:00")], T0)  # another zone, far ahead
    live = state.snapshot(T0 + 3600).liveness
    assert live.log == "quiet" and live.log_age_s is None


def test_liveness_is_off_without_http_and_stale_once_the_log_is_quiet() -> None:
    state = RunState(Config(log="server.log", url=""))  # type: ignore[arg-type]
    state.feed_server_log([_decode(1)], T0)
    state.feed_server_log([_decode(2)], T0 + 1)
    assert state.snapshot(T0 + 2).liveness.log == "live"
    quiet = state.snapshot(T0 + 300).liveness
    assert (quiet.http, quiet.log, quiet.stale, quiet.down) == ("off", "quiet", True, False)
    assert liveness(state.server_log.snapshot(T0), state.http.snapshot(T0), T0,
                    live_s=60.0, silent_after_s=300.0).http == "unknown"


def _alert(id: str, severity: str = "crit", since: float = T0, **kw: object) -> Alert:
    return Alert(id, severity, since, f"{id} message", "", "", **kw)  # type: ignore[arg-type]


def test_incidents_fold_consequences_under_the_deepest_cause() -> None:
    alerts = (_alert("server_down", since=T0 + 1), _alert("server_crash"),
              _alert("server_silent", "warn"), _alert("server_oom", since=T0 + 2),
              _alert("kv_saturated", "warn"), _alert("output_stalled", "warn", subject="B1"))
    incidents = group_incidents(alerts)
    assert incidents[0].root.id == "server_oom"
    assert [a.id for a in incidents[0].consequences] == ["server_crash", "server_down",
                                                         "server_silent"]
    assert {i.root.key for i in incidents[1:]} == {"kv_saturated", "output_stalled:B1"}
    acked = group_incidents(tuple(dataclasses.replace(a, acknowledged=a.id == "server_oom"
                                                      or a.id.startswith("server_"))
                                  for a in alerts))
    assert acked[-1].root.id == "server_oom"  # acknowledged incidents go last


def test_answers_cut_off_while_reasoning_fold_under_their_truncation() -> None:
    """Per partition: empty answers the token limit cut off are the truncation's doing; empty
    ones for another reason, or of another partition, stand alone."""
    from dash.core.alerts.rules_outputs import CUT_WHILE_REASONING
    cut = dataclasses.replace(_alert("outputs_empty", "warn", subject="B2"), hint=CUT_WHILE_REASONING)
    other = dataclasses.replace(_alert("outputs_empty", "warn", subject="B3"), hint=CUT_WHILE_REASONING)
    alerts = (_alert("outputs_truncated", "warn", subject="B2"), cut, other,
              _alert("outputs_truncated", "warn", subject="B4"),
              _alert("outputs_empty", "warn", subject="B4"))
    by_root = {i.root.key: [c.key for c in i.consequences] for i in group_incidents(alerts)}
    assert by_root == {"outputs_truncated:B2": ["outputs_empty:B2"], "outputs_empty:B3": [],
                       "outputs_truncated:B4": [], "outputs_empty:B4": []}


def test_hhmm_reads_any_stamp() -> None:
    assert hhmm({"ts": "2026-06-07T10:59:31.659"}) == "10:59"
    assert hhmm({"ts": None, "near_ts": "04:40:55"}) == "04:40"
    assert hhmm({}) == ""


def test_the_incident_line_stays_an_hour_and_then_until_acknowledged() -> None:
    state = RunState(Config(log="server.log", url=""))  # type: ignore[arg-type]
    lines = [
        "[2026-01-02 14:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.93, "
        "port=30000)",
        "[2026-01-02 14:00:10 TP0] Capture cuda graph end. Time elapsed: 9.81 s. mem usage=0.62 GB. "
        "avail mem=0.82 GB.",
        "[2026-01-02 14:00:20] The server is fired up and ready to roll!",
        "[2026-01-02 14:02:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.",
        "[2026-01-02 14:05:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.88, "
        "port=30000)",
    ]
    records = [parse_line(text, i + 1) for i, text in enumerate(lines)]
    from dash.core.log.timestamps import ts_to_epoch

    start = ts_to_epoch("2026-01-02T14:05:00", ref=T0)
    state.feed_server_log(records, start)
    snap = state.tick_and_snapshot(start + 5)[1]
    [alert] = [a for a in snap.alerts if a.id == "server_restarted"]
    assert alert.severity == "warn"
    assert alert.message == ("14:02 OOM (mem fraction 0.93, 0.82 GB after CUDA graph) -> "
                             "restarted 14:05 with 0.88")
    assert "server_oom" not in {a.id for a in snap.alerts}
    state.acknowledge("server_restarted")
    assert any(a.id == "server_restarted" for a in state.tick_and_snapshot(start + 3000)[1].alerts)
    later = state.tick_and_snapshot(start + 3700)[1]  # an hour on, and acknowledged: gone
    assert not any(a.id == "server_restarted" for a in later.alerts)


def test_history_pairs_fired_and_cleared_lines_per_session_and_keeps_this_ones() -> None:
    a = _alert("server_oom")
    doc = {"id": a.id, "key": a.key, "severity": a.severity, "since": a.since,
           "message": a.message, "evidence": "", "hint": "", "subject": None, "line": None}
    lines = [{**doc, "event": "fired", "at": T0, "session": "s1"},
             {**doc, "event": "fired", "at": T0 + 5, "session": "s2"},
             {**doc, "event": "cleared", "at": T0 + 60, "session": "s1"},
             {"garbage": True}, {**doc, "event": "fired", "at": "soon"}]
    earlier = entries_from_lines(lines)
    assert [(e.fired_at, e.cleared_at) for e in earlier] == [(T0, T0 + 60), (T0 + 5, None)]
    assert all(e.earlier for e in earlier)
    history = AlertHistory(earlier)
    history.record(AlertChanges(new=(a,)), T0 + 100)
    history.record(AlertChanges(cleared=(a,)), T0 + 160)
    mine = history.entries()[-1]
    assert (mine.fired_at, mine.cleared_at, mine.earlier) == (T0 + 100, T0 + 160, False)


def test_a_url_that_answered_before_is_not_called_the_wrong_address() -> None:
    """The server answered at this URL, then stopped (killed without a crash line): for the
    minute its log still counts as live, the alert must not say "the server works, but not at
    this address"; the address is right and the server may have died."""
    state = RunState(Config(log="server.log", url="http://127.0.0.1:30000"))  # type: ignore[arg-type]
    state.feed_server_log([_decode(1)], T0 - 30)
    state.http.apply(HttpSample(at=T0 - 20, reachable=True, url="http://127.0.0.1:30000"),
                     T0 - 20)
    state.feed_server_log([_decode(2)], T0 - 10)  # arriving as kdash follows
    for i in range(3):
        state.http.apply(_down(T0 + i), T0 + i)
    snap = state.tick_and_snapshot(T0 + 3)[1]
    assert snap.liveness.log == "live"
    [alert] = snap.alerts
    assert alert.id == "http_unreachable"
    assert "stopped answering at http://127.0.0.1:30000" in alert.message
    assert "not at this address" not in alert.hint and "may have just died" in alert.hint


def _stamped(line: str, at: float, n: int) -> dict:
    rec = parse_line(f"[{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(at))}] {line}")
    assert rec is not None
    rec["line"] = n
    return rec


def test_a_server_that_prints_its_start_is_starting_not_down_until_its_start_goes_silent() -> None:
    state = RunState(Config(log="server.log", url="http://127.0.0.1:30000"))  # type: ignore[arg-type]
    start = ["server_args=ServerArgs(model_path='m', port=30000)",
             "Load weight begin. avail mem=78.50 GB",
             "Capture cuda graph begin. This can take up to several minutes. avail mem=11.16 GB"]
    for n, line in enumerate(start):
        state.feed_server_log([_stamped(line, T0 - 60 + 20 * n, n + 1)], T0 - 60 + 20 * n)
    for i in range(5):
        state.http.apply(_down(T0 + i), T0 + i)
    snap = state.tick_and_snapshot(T0 + 5)[1]
    live = snap.liveness
    assert live.starting is not None and live.starting["event"] == "server_args"
    assert not live.down and live.down_since is None and not snap.alerts
    assert start_step(snap.server.events) == "capturing CUDA graphs"
    # A start that has printed nothing for longer than `silent_after_s` is hung: down again.
    hung = state.tick_and_snapshot(T0 + 400)[1].liveness
    assert hung.starting is None and hung.down
    # Its first stats line ends the start: the log is live.
    state.feed_server_log([_stamped("Decode batch. #running-req: 1, #token: 90, token usage: "
                                    "0.01, gen throughput (token/s): 50.00, #queue-req: 0",
                                    T0 + 401, 9)], T0 + 401)
    served = state.snapshot(T0 + 402).liveness
    assert served.log == "live" and served.starting is None and not served.down


def test_a_restarted_servers_old_answers_are_not_its_new_launchs_figures() -> None:
    """While the new start loads, the URL is down, and what /server_info said was the server
    before's: its 212,000 tokens beside the new start's mem fraction 0.88 mixed two launches."""
    from dash.core.snapshot import HttpSnapshot, RunSnapshot, ServerLogSnapshot
    http = HttpSnapshot(url="http://x", state="down", facts={"max_total_num_tokens": 212000,
                                                            "model": "m", "tp_size": 8})
    server = ServerLogSnapshot(facts={"mem_fraction_static": 0.88}, restarts=1)
    facts = RunSnapshot(now=0.0, server=server, http=http).facts
    assert "max_total_num_tokens" not in facts and facts["model"] == "m" and facts["tp_size"] == 8
    up = RunSnapshot(now=0.0, server=server, http=dataclasses.replace(http, state="up")).facts
    assert up["max_total_num_tokens"] == 212000


def test_a_url_down_for_a_restart_the_log_shows_is_no_death() -> None:
    """The URL stopped answering when the server restarted; the new one prints stats before
    its port answers kdash's next poll: no `stopped answering ... may have just died`."""
    state = RunState(Config(log="server.log", url="http://127.0.0.1:30000"))  # type: ignore[arg-type]
    state.feed_server_log([_decode(1)], T0 - 60)
    state.http.apply(HttpSample(at=T0 - 50, reachable=True, url="http://127.0.0.1:30000"), T0 - 50)
    for i in range(3):
        state.http.apply(_down(T0 - 40 + i), T0 - 40 + i)
    args = _stamped("server_args=ServerArgs(model_path='m', mem_fraction_static=0.88)", T0 - 30, 2)
    state.feed_server_log([args], T0 - 30)
    state.feed_server_log([_decode(3)], T0 - 2)
    state.feed_server_log([_decode(4)], T0)
    snap = state.tick_and_snapshot(T0 + 1)[1]
    assert snap.liveness.log == "live" and snap.server.restarts == 1
    assert "http_unreachable" not in {a.id for a in snap.alerts}
