"""Alerts around server restarts: each restart its own alert, an incident kept through a later
plain restart, the old launch's alerts cleared at the restart."""

from __future__ import annotations

from dash.core.config import Config
from dash.core.log.parse import parse_line
from dash.core.log.timestamps import ts_to_epoch
from dash.core.snapshot import RunSnapshot
from dash.core.state.http_state import HttpSample
from dash.core.state.run import RunState, replay_alerts

T0 = 1_780_000_000.0
DAY = "2026-01-02"


def _args(hhmmss: str, mem: float) -> str:
    return (f"[{DAY} {hhmmss}] server_args=ServerArgs(model_path='m', mem_fraction_static={mem}, "
            "port=30000)")


def _ready(hhmmss: str) -> str:
    return f"[{DAY} {hhmmss}] The server is fired up and ready to roll!"


def _graph(hhmmss: str, avail: float) -> str:
    return (f"[{DAY} {hhmmss} TP0] Capture cuda graph end. Time elapsed: 9.81 s. mem usage=0.62 "
            f"GB. avail mem={avail} GB.")


def _at(hhmmss: str) -> float:
    return ts_to_epoch(f"{DAY}T{hhmmss}", ref=T0)


class Session:
    """One kdash following a log that grows, ticking at the log's own times."""

    def __init__(self) -> None:
        self.state = RunState(Config(log="server.log", url=""))  # type: ignore[arg-type]
        self.line = 0

    def feed(self, hhmmss: str, *texts: str) -> RunSnapshot:
        records = []
        for text in texts:
            self.line += 1
            records.append(parse_line(text, self.line))
        self.state.feed_server_log(records, _at(hhmmss))
        return self.state.tick_and_snapshot(_at(hhmmss))[1]

    def tick(self, hhmmss: str) -> RunSnapshot:
        return self.state.tick_and_snapshot(_at(hhmmss))[1]


def _restarted(snap: RunSnapshot) -> dict[str, tuple[str, float, str]]:
    return {a.key: (a.severity, a.since, a.message) for a in snap.alerts
            if a.id == "server_restarted"}


def _tuning(s: Session) -> None:
    """A plain restart at 20:15, an OOM at 20:19:56 and the restart after it at 20:20."""
    s.feed("20:00:00", _args("20:00:00", 0.85), _graph("20:00:10", 8.34), _ready("20:00:20"))
    s.feed("20:15:00", _args("20:15:00", 0.93))
    s.feed("20:15:20", _graph("20:15:10", 0.82), _ready("20:15:20"))
    s.feed("20:19:56",
           f"[{DAY} 20:19:56 TP0] Scheduler hit an exception: Traceback (most recent call last):",
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.")
    s.feed("20:20:30", _args("20:20:30", 0.88))
    s.feed("20:20:50", _graph("20:20:40", 5.47), _ready("20:20:50"))


def test_each_restart_has_its_own_alert_since_its_own_time() -> None:
    s = Session()
    _tuning(s)
    snap = s.tick("20:21:00")
    assert _restarted(snap) == {"server_restarted": (
        "warn", _at("20:20:30"),
        "20:19 OOM (mem fraction 0.93, 0.82 GB after CUDA graph) -> restarted 20:20 with 0.88")}
    fired = [e for e in snap.history if e.alert.id == "server_restarted"]
    assert [(e.alert.severity, e.alert.since) for e in fired] == [
        ("info", _at("20:15:00")), ("warn", _at("20:20:30"))]
    assert fired[0].cleared_at == _at("20:20:30")  # the next restart ended the first one's line


def test_a_plain_restart_after_an_oom_keeps_the_incident_beside_its_own_line() -> None:
    s = Session()
    _tuning(s)
    s.feed("20:38:00", _args("20:38:00", 0.90))
    snap = s.feed("20:38:30", _graph("20:38:10", 3.52), _ready("20:38:30"))
    restarted = _restarted(snap)
    incident = restarted["server_restarted"]
    assert incident[:2] == ("warn", _at("20:20:30"))
    # The launch it restarted into ran 0.88, not the 0.90 running now.
    assert incident[2].endswith("-> restarted 20:20 with 0.88")
    assert restarted["server_restarted:restart #3"] == (
        "info", _at("20:38:00"), "the server restarted; peak reset")
    assert "server_restarted" in _restarted(s.tick("21:19:00"))  # still there, 58 min on
    assert list(_restarted(s.tick("20:55:00"))) == ["server_restarted"]  # the info line's 15 min
    fired = [e for e in s.tick("20:55:10").history if e.alert.id == "server_restarted"]
    assert len(fired) == 3


def test_an_acknowledged_incident_goes_after_its_hour_and_stays_away() -> None:
    s = Session()
    _tuning(s)
    assert s.state.acknowledge("server_restarted")
    assert "server_restarted" in _restarted(s.tick("21:10:00"))
    assert not _restarted(s.tick("21:21:00"))  # an hour on, and acknowledged: gone
    assert not _restarted(s.tick("21:21:10"))  # and not back on the next tick


def test_a_restart_clears_the_old_launchs_alerts_at_once() -> None:
    s = Session()
    s.feed("20:00:00", _args("20:00:00", 0.93), _graph("20:00:10", 0.82), _ready("20:00:20"))
    snap = s.tick("20:05:00")
    [low] = [a for a in snap.alerts if a.id == "gpu_headroom_low"]
    assert "(now 0.93)" in low.hint
    snap = s.feed("20:10:00", _args("20:10:00", 0.88))
    assert "gpu_headroom_low" not in {a.id for a in snap.alerts}  # not a minute of hysteresis
    assert "gpu_headroom_low" in {e.alert.id for e in snap.history if e.cleared_at == _at(
        "20:10:00")}


def test_a_restart_seen_only_by_its_ready_banner_quotes_no_old_figures() -> None:
    s = Session()
    s.feed("20:00:00", _args("20:00:00", 0.93), _graph("20:00:10", 0.82), _ready("20:00:20"))
    snap = s.feed("20:10:00", _ready("20:10:00"))  # a start that printed no arguments
    facts = snap.server.facts
    assert "mem_fraction_static" not in facts and "avail_mem_gb" not in facts
    restarted = [a for a in snap.alerts if a.id == "server_restarted"]
    assert restarted and "0.93" not in restarted[0].message


def test_retractions_of_the_launch_before_do_not_count_for_the_new_one() -> None:
    s = Session()
    retract = (f"[{DAY} 20:0{{}}:00 TP0] KV cache pool is full. Retract requests. "
               "#retracted_reqs: 2, #new_token_ratio: 0.5 -> 0.9")
    s.feed("20:00:00", _args("20:00:00", 0.88), _ready("20:00:20"))
    snap = s.feed("20:04:00", *(retract.format(m) for m in (1, 2, 3, 4)))
    assert "retractions" in {a.id for a in snap.alerts}
    snap = s.feed("20:05:00", _args("20:05:00", 0.85))
    assert "retractions" not in {a.id for a in snap.alerts}
    assert "retractions" not in {a.id for a in s.tick("20:06:30").alerts}


def _serving() -> Session:
    """A server up since 20:00 that printed stats lines until 20:09:58."""
    s = Session()
    s.feed("20:00:00", _args("20:00:00", 0.88), _ready("20:00:20"))
    decode = (f"[{DAY} 20:09:5{{}} TP0] Decode batch. #running-req: 30, #token: 1000, "
              "token usage: 0.30, gen throughput (token/s): 800.00, #queue-req: 0, ")
    s.feed("20:09:58", *(decode.format(i) for i in range(9)))
    return s


def _url_silent_from(s: Session, hhmmss: str) -> None:
    """The right URL refusing four polls, 2 s apart, from `hhmmss`."""
    for i in range(4):
        at = _at(hhmmss) + 2 * i
        s.state.http.apply(HttpSample(at=at, reachable=False, error="connection refused",
                                      url="http://127.0.0.1:30000"), at)


def test_a_restart_in_progress_is_not_a_wrong_address_nor_a_dead_server() -> None:
    s = _serving()
    s.feed("20:10:00", _args("20:10:00", 0.85),
           f"[{DAY} 20:10:00 TP0] Load weight begin. avail mem=94.50 GB")
    _url_silent_from(s, "20:10:00")
    ids = {a.id for a in s.tick("20:10:08").alerts}
    assert "http_unreachable" not in ids and "server_down" not in ids
    ids = {a.id for a in s.tick("20:12:00").alerts}  # the old stats line is 2 min old now
    assert "server_down" not in ids
    # A start that stopped printing for longer than a silence counts is no start in progress.
    assert "server_down" in {a.id for a in s.tick("20:16:00").alerts}


def test_the_log_replay_sees_an_oom_that_a_restart_ends_at_its_next_stamp() -> None:
    lines = [_args("20:00:00", 0.93), _graph("20:00:10", 0.82), _ready("20:00:20"),
             f"[{DAY} 20:05:05 TP0] Scheduler hit an exception: Traceback (most recent call "
             "last):",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.",
             _args("20:06:00", 0.88), _ready("20:06:20")]
    fired = replay_alerts([parse_line(text, i + 1) for i, text in enumerate(lines)])
    ids = [a.id for a in fired]
    assert "server_oom" in ids and "server_crash" in ids
    [restarted] = [a for a in fired if a.id == "server_restarted"]
    assert restarted.message.startswith("20:05 OOM (mem fraction 0.93")  # the OOM's own time


def test_a_server_that_said_it_shut_down_is_not_at_a_wrong_address() -> None:
    s = _serving()
    s.feed("20:10:00", f"[{DAY} 20:10:00] SIGTERM received. signum=None frame=None. Shutting down.")
    _url_silent_from(s, "20:10:00")
    assert "http_unreachable" not in {a.id for a in s.tick("20:10:08").alerts}


def _oom_loop() -> Session:
    """A server started at 20:00, dying of OOM every five minutes from 20:05, restarted each
    time 30 s later with a lower mem fraction."""
    s = Session()
    s.feed("20:00:00", _args("20:00:00", 0.93), _ready("20:00:20"))
    for n, minute in enumerate(("05", "10", "15", "20")):
        s.feed(f"20:{minute}:00", f"[{DAY} 20:{minute}:00 TP0] Scheduler hit an exception: "
               "Traceback (most recent call last):",
               "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.")
        s.feed(f"20:{minute}:30", _args(f"20:{minute}:30", 0.93 - 0.01 * n),
               _ready(f"20:{minute}:50"))
    return s


def test_a_crash_loop_shows_its_latest_two_restarts_not_one_line_each() -> None:
    s = _oom_loop()
    restarted = _restarted(s.tick("20:21:00"))
    assert len(restarted) == 2
    assert sorted(since for _, since, _ in restarted.values()) == [_at("20:15:30"),
                                                                   _at("20:20:30")]


def test_a_crash_loop_says_how_many_restarts_it_has_had_since_when() -> None:
    # Two lines shown of four OOMs: one says the loop's length, or it reads as two.
    messages = sorted(_restarted(_oom_loop().tick("20:21:00")).values(), key=lambda r: r[1])
    # on the first of the two, the one listed on top (shown in full at 80x24)
    assert messages[0][2].endswith("; 4 restarts after an OOM or crash since 20:05")
    assert "restarts after" not in messages[1][2]


def test_a_vllm_incident_line_names_its_memory_share() -> None:
    # vLLM's share is --gpu-memory-utilization: the line said nothing of it.
    s = Session()
    stamp = "01-02 20:00:00"
    s.feed("20:00:00", f"INFO {stamp} [utils.py:326] non-default args: {{'model': 'm', "
           "'gpu_memory_utilization': 0.95}")
    s.feed("20:00:10", "INFO 01-02 20:00:10 [loggers.py:127] Engine 000: Avg prompt throughput: "
           "0.0 tokens/s, Avg generation throughput: 900.0 tokens/s, Running: 40 reqs, Waiting: "
           "2 reqs, GPU KV cache usage: 30.0%, Prefix cache hit rate: 41.0%")
    s.feed("20:05:00", "ERROR 01-02 20:05:00 [core.py:700] EngineCore encountered a fatal error.",
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    s.feed("20:06:00", "INFO 01-02 20:06:00 [utils.py:326] non-default args: {'model': 'm', "
           "'gpu_memory_utilization': 0.9}")
    snap = s.tick("20:06:10")
    (_, _, message), = _restarted(snap).values()
    assert message == "20:05 OOM (mem fraction 0.95) -> restarted 20:06 with 0.9"
    hint = next(a.hint for a in snap.alerts if a.id == "server_restarted")
    assert "--gpu-memory-utilization further (now 0.9)" in hint
