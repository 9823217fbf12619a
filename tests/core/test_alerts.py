"""Alert engine and rules on hand-built snapshots, with time passed in."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from dash.core.alerts.engine import AlertEngine
from dash.core.alerts.model import (
    Finding,
    RuleContext,
    ServerEvents,
    alert_to_json,
    fmt_duration,
)
from dash.core.config import AlertConfig
from dash.core.errors import ConfigError
from dash.core.snapshot import (
    ClientSnapshot,
    GpuSnapshot,
    GpusSnapshot,
    HttpSnapshot,
    PartitionSnapshot,
    ProcessInfo,
    RunSnapshot,
)
from dash.core.state.server_log import ServerLogTracker

T0 = 1_750_000_000.0


def dec(t: float, gen: float, running: int = 100, queue: int = 0, usage: float = 0.5,
        line: int = 0) -> dict[str, Any]:
    return {"kind": "decode", "line": line, "ts": None, "engine": "sglang", "rank": None,
            "running_req": running, "queue_req": queue, "tokens": running * 1500,
            "token_usage": usage, "gen_throughput": gen, "_t": t}


def ev(name: str, line: int = 0, **kw: Any) -> dict[str, Any]:
    return {"kind": "event", "event": name, "message": f"the {name} line", "line": line,
            "ts": None, "engine": "sglang", "rank": None, **kw}


class Run:
    """A tracker plus an engine driven by a fake clock (records take the clock's time)."""

    def __init__(self, **cfg: Any) -> None:
        self.log = ServerLogTracker()
        self.engine = AlertEngine(AlertConfig.from_mapping(cfg))
        self.now = T0
        self.fired: list[str] = []
        self.cleared: list[str] = []
        self.extra: dict[str, Any] = {}

    def feed(self, *records: dict[str, Any]) -> None:
        self.log.feed(records, self.now)

    def tick(self, advance: float = 0.0) -> None:
        self.now += advance
        snap = RunSnapshot(now=self.now, server=self.log.snapshot(self.now), **self.extra)
        changes = self.engine.evaluate(snap, self.now)
        self.fired += [a.key for a in changes.new]
        self.cleared += [a.key for a in changes.cleared]

    def active(self) -> dict[str, Any]:
        return {a.key: a for a in self.engine.active()}


def test_config_rejects_unknown_names_and_bad_values_in_one_line() -> None:
    assert AlertConfig.from_mapping({"silent_after_s": 60, "down_polls": 5.0}).down_polls == 5
    for bad in ({"silent_afer_s": 1}, {"kv_usage": "high"}, {"down_polls": 2.5},
                {"plateau_drop": -1}, {"bell": True}):
        with pytest.raises(ConfigError) as info:
            AlertConfig.from_mapping(bad)
        assert "\n" not in str(info.value)


def _one(ctx: RuleContext) -> Iterator[Finding]:
    if ctx.snap.notices:
        yield Finding("x", "warn", "m", "e", "h", fire_after=10.0)


def test_engine_fires_after_duration_and_clears_with_hysteresis() -> None:
    engine = AlertEngine(AlertConfig(clear_after_s=30.0), rules=(_one,))
    on, off = RunSnapshot(now=0, notices=("x",)), RunSnapshot(now=0)
    assert not engine.evaluate(on, 100.0)
    assert not engine.evaluate(on, 105.0)
    fired = engine.evaluate(on, 110.0).new
    assert [a.id for a in fired] == ["x"] and fired[0].since == 100.0
    assert not engine.evaluate(off, 120.0).cleared  # hysteresis: still active
    assert not engine.evaluate(on, 125.0)           # back: the absence clock restarts
    assert not engine.evaluate(off, 130.0).cleared
    assert [a.id for a in engine.evaluate(off, 160.0).cleared] == ["x"]
    assert engine.active() == ()


def test_a_pending_condition_that_goes_away_starts_over() -> None:
    engine = AlertEngine(AlertConfig(), rules=(_one,))
    on, off = RunSnapshot(now=0, notices=("x",)), RunSnapshot(now=0)
    engine.evaluate(on, 0.0)
    engine.evaluate(off, 8.0)
    engine.evaluate(on, 9.0)
    assert not engine.evaluate(on, 15.0)
    assert engine.evaluate(on, 19.0).new


def test_acknowledge_keeps_the_alert_but_marks_it() -> None:
    engine = AlertEngine(AlertConfig(), rules=(_one,))
    on = RunSnapshot(now=0, notices=("x",))
    engine.evaluate(on, 0.0)
    engine.evaluate(on, 10.0)
    assert engine.acknowledge("x") and not engine.acknowledge("nope")
    engine.evaluate(on, 11.0)
    assert engine.active()[0].acknowledged


def test_oom_is_crit_at_once_with_line_headroom_and_hint() -> None:
    run = Run()
    run.feed(ev("server_args", mem_fraction_static=0.93, args={}),
             ev("cuda_graph", phase="end", avail_mem_gb=0.61), ev("ready"),
             {"kind": "prefill", "line": 40, "ts": None, "new_seq": 1, "new_token": 16384,
              "cached_token": 0, "token_usage": 0.2, "running_req": 3, "queue_req": 0},
             ev("oom", line=41, message="torch.OutOfMemoryError: CUDA out of memory. Tried"))
    run.tick()
    oom = run.active()["server_oom"]
    assert oom.severity == "crit" and oom.since == T0
    assert oom.line == "torch.OutOfMemoryError: CUDA out of memory. Tried"
    assert "16384 new tokens" in oom.message and "0.61 GB" in oom.evidence
    assert "--mem-fraction-static (now 0.93; try 0.88)" in oom.hint
    assert "gpu_headroom_low" in run.active()
    doc = alert_to_json(oom)
    assert {"id", "severity", "since", "message", "evidence", "hint"} <= set(doc)


def test_a_vllm_oom_names_vllm_flags_with_the_logged_utilization() -> None:
    run = Run()
    vllm = {"engine": "vllm"}
    run.feed({**ev("server_args", gpu_memory_utilization=0.95, args={}), **vllm},
             {**ev("oom", line=9, message="torch.OutOfMemoryError: CUDA out of memory."), **vllm})
    run.tick()
    hint = run.active()["server_oom"].hint
    assert "--gpu-memory-utilization (now 0.95; try 0.90)" in hint
    assert "--max-num-batched-tokens" in hint and "--mem-fraction-static" not in hint


def test_an_oom_on_one_rank_names_the_rank() -> None:
    run = Run()
    run.feed(ev("server_args", args={}), ev("ready"),
             {**ev("oom", line=9, message="torch.OutOfMemoryError: CUDA out of memory."),
              "rank": "DP3 TP6"})
    run.tick()
    assert run.active()["server_oom"].evidence.startswith("OOM on DP3 TP6 (line 9)")


@pytest.mark.parametrize(("seconds", "text"), [(45, "45 s"), (600, "10 min"), (9000, "2.5 h"),
                                                (4444200, "51.4 days")])
def test_durations_read_in_the_unit_a_person_would_use(seconds: float, text: str) -> None:
    assert fmt_duration(seconds) == text


@pytest.mark.parametrize(("seconds", "text"), [(399.0, "6 min"), (419.0, "6 min"),
                                                (150.0, "2 min"), (5399.0, "89 min")])
def test_an_alerts_minutes_are_the_headers_minutes(seconds: float, text: str) -> None:
    """6m39s after a DP log's last stats line the header said `log quiet 6m` and the alert
    `no decode/prefill line for 7 min`: it rounded where the screen's ages (`6m`) floor."""
    assert fmt_duration(seconds) == text


def test_a_restart_clears_the_oom_at_once_and_keeps_it_in_the_incident_line() -> None:
    run = Run(clear_after_s=10)
    run.feed(ev("ready"), ev("oom"))
    run.tick()
    run.feed(ev("server_args", args={}))
    run.tick(5)
    assert "server_oom" in run.cleared  # the restart is a confirmed end: no hysteresis
    restarted = run.active()["server_restarted"]
    assert restarted.severity == "warn" and "OOM" in restarted.message
    assert "before it: oom" in restarted.evidence


def test_a_plain_restart_is_info() -> None:
    run = Run()
    run.feed(ev("ready"))
    run.tick()
    run.feed(ev("server_args", args={}))
    run.tick(5)
    assert run.active()["server_restarted"].severity == "info"


@pytest.mark.parametrize("reason", ["exception", "watchdog", "sigquit", "killed"])
def test_crash_reasons(reason: str) -> None:
    run = Run()
    run.feed(ev("crash", reason=reason))
    run.tick()
    assert run.active()["server_crash"].severity == "crit"


def test_server_down_after_n_failed_polls_only() -> None:
    run = Run(down_polls=3)
    run.extra["http"] = HttpSnapshot(url="http://127.0.0.1:1", state="down", since=T0,
                                     reason="connection refused", consecutive_failures=2)
    run.tick()
    assert "server_down" not in run.active()
    run.extra["http"] = HttpSnapshot(url="http://127.0.0.1:1", state="down", since=T0,
                                     reason="connection refused", consecutive_failures=3)
    run.tick(2)
    assert "connection refused" in run.active()["server_down"].message


def test_silent_only_while_requests_were_running() -> None:
    run = Run(silent_after_s=300)
    run.feed(dec(0, 500.0, running=0))
    run.tick(400)
    assert "server_silent" not in run.active()
    run.feed(dec(0, 500.0, running=12))
    run.tick(299)
    assert "server_silent" not in run.active()
    run.tick(2)
    assert "12 running" in run.active()["server_silent"].message


def test_silent_with_its_processes_waiting_on_each_other_is_a_hang() -> None:
    """vLLM prints no stats line while its engine is idle and none while it hangs: what tells
    them apart is its shared-memory queue's `No available shared memory broadcast block found
    in 60 seconds` from a process that waits on the others."""
    from dash.core.log.parse import parse_line

    run = Run(silent_after_s=300)
    run.feed(dec(0, 500.0, running=4, line=1))
    run.tick(60)
    wait = parse_line("(Worker_TP1 pid=12) INFO 06-01 12:01:10 [shm_broadcast.py:878] No "
                      "available shared memory broadcast block found in 60 seconds. This "
                      "typically happens when some processes are hanging or doing some "
                      "time-consuming work (e.g. compilation, weight/kv cache quantization).", 2)
    assert wait is not None and (wait["event"], wait["reason"], wait["waited_s"]) == (
        "error", "workers_waiting", 60)
    run.feed({**wait, "ts": None})
    run.tick(300)
    silent = run.active()["server_silent"]
    assert "wait on each other: hung" in silent.message and "line 2" in silent.evidence
    assert "restart the server" in silent.hint and silent.line is not None
    # 0.8-0.10 printed it at DEBUG only, idle workers too: that wording says nothing
    old = parse_line("(VllmWorker rank=1 pid=12) DEBUG 06-01 12:01:10 [shm_broadcast.py:394] No "
                     "available shared memory broadcast block found in 60 second.", 3)
    assert old is None or old.get("reason") != "workers_waiting"


def test_silent_not_when_metrics_say_the_last_requests_finished() -> None:
    """SGLang prints a decode line every 40 steps: the last one of a job still counts running
    requests, and then the log goes quiet. /metrics tells an idle server from a hung one."""
    run = Run(silent_after_s=300)
    run.feed(dec(0, 500.0, running=3))
    run.extra["http"] = HttpSnapshot(url="http://127.0.0.1:1", state="up", since=T0,
                                     metrics={"running_req": 0.0})
    run.tick(400)
    assert "server_silent" not in run.active()
    run.extra["http"] = HttpSnapshot(url="http://127.0.0.1:1", state="up", since=T0,
                                     metrics={"running_req": 3.0})
    run.tick(1)
    assert "3 running" in run.active()["server_silent"].message


def test_a_silent_log_of_a_server_that_generates_is_not_its_log() -> None:
    """The server answers and its count of generated tokens grows, yet the log kdash reads
    has been quiet for minutes: a rotation the server did not reopen, or an old file. Saying
    "hung, restart it" would stop a working server."""
    from dash.core.state.http_state import HttpSample, HttpTracker
    run = Run(silent_after_s=300)
    run.feed(dec(0, 500.0, running=12))
    http = HttpTracker("http://127.0.0.1:1")
    for k, total in enumerate((1000.0, 1000.0, 1800.0)):
        http.apply(HttpSample(at=0.0, reachable=True, latency_s=0.01, metrics={"generation_tokens_total": total,
                                                      "running_req": 90.0}), T0 + 390 + k)
    run.extra["http"] = http.snapshot(T0 + 400)
    run.tick(400)
    alert = run.active()["server_silent"]
    assert "but the server at http://127.0.0.1:1 generates" in alert.message
    assert alert.hint.startswith("Do not restart it")
    for k in range(3):  # the count stands still: it may be hung after all
        http.apply(HttpSample(at=0.0, reachable=True, latency_s=0.01, metrics={"generation_tokens_total": 1800.0,
                                                      "running_req": 90.0}), T0 + 400 + 30 * k)
    run.extra["http"] = http.snapshot(T0 + 470)
    run.tick(70)
    assert "hung if not" in run.active()["server_silent"].hint


def _written(*points: tuple[float, int]) -> PartitionSnapshot:
    return PartitionSnapshot(name="B1", path="out/B1.jsonl", done=points[-1][1], total=None,
                             at_start=0, rate_per_min=None, eta_s=None, status="running",
                             recent_counts=points)


def test_silent_not_when_the_outputs_show_the_running_requests_finished() -> None:
    """Without /metrics, samples written after the last stats line tell an idle server: as
    many as it had running means they all finished (the log stays quiet until more come)."""
    run = Run(silent_after_s=300)
    run.feed(dec(0, 500.0, running=2))
    run.extra["partitions"] = (_written((T0 - 5, 10), (T0 + 1, 11), (T0 + 2, 12)),)
    run.tick(400)
    assert "server_silent" not in run.active()
    # One of the two written: the other may be stuck in a hung server.
    run.extra["partitions"] = (_written((T0 - 5, 10), (T0 + 1, 11)),)
    run.tick(1)
    assert "the last one had 2 running" in run.active()["server_silent"].message
    assert run.active()["server_silent"].hint.startswith("Idle if those requests have finished")


def test_silent_not_while_lines_arrive_stamped_minutes_behind() -> None:
    """A server whose clock runs ten minutes behind the box's (a container's, another node's):
    ten minutes is no zone, so its stamps are read as printed and every line looks ten minutes
    old. kdash sees the lines arrive as they are written, and the log reads live: the server
    speaks, and `server_silent` (whose hint ends in "restart it") must not say it has not for
    ten minutes. Once the lines stop arriving, the silence counts from the last one heard."""
    import time
    run = Run(silent_after_s=300)

    def stamped(t: float) -> dict[str, Any]:
        rec = dec(0, 500.0, running=12)
        rec["ts"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t - 600))
        return rec

    run.log.feed([stamped(run.now)], run.now, written_at=run.now)  # the first read: history
    for _ in range(10):  # then a line every 2 s, as kdash follows the file
        run.now += 2
        run.log.feed([stamped(run.now)], run.now, written_at=run.now)
        run.tick()
    snap = run.log.snapshot(run.now)
    # lines seen arriving 20 s long teach the skew: the stamps are placed when they were written
    assert snap.clock.skew_s == 600.0 and snap.last_record_at == run.now
    assert "server_silent" not in run.active()
    heard = run.now
    run.tick(299)
    assert "server_silent" not in run.active()
    run.tick(2)
    alert = run.active()["server_silent"]
    assert "for 5 min" in alert.message and alert.since == heard


def test_an_oom_says_how_much_was_free_and_asked_where_the_line_prints_it() -> None:
    """vllm#9290: `Tried to allocate 138.00 MiB. GPU 0 has a total capacity of 79.15 GiB of
    which 2.19 MiB is free`: the GPU was full, the evidence says so beside the line's number."""
    from dash.core.log.parse import parse_line
    run = Run()
    rec = parse_line("ERROR 10-11 12:27:29 engine.py:157] OutOfMemoryError('CUDA out of memory. "
                     "Tried to allocate 138.00 MiB. GPU 0 has a total capacity of 79.15 GiB of "
                     "which 2.19 MiB is free. Including non-PyTorch memory, this process has "
                     "79.12 GiB memory in use.')", 1)
    assert rec is not None
    run.feed(rec)
    run.tick()
    evidence = run.active()["server_oom"].evidence
    assert "GPU 0: 2.19 MiB free of 79.15 GiB, 138 MiB asked; this process holds 79.12 GiB" \
        in evidence
    run2 = Run()
    run2.feed(ev("oom", line=3, reason="cuda_oom", message="RuntimeError: CUDA error: out of memory"))
    run2.tick()
    assert "free of" not in run2.active()["server_oom"].evidence  # nothing printed, nothing said


def test_retractions_count_once_per_line_across_ranks_as_a_rate() -> None:
    run = Run(retract_min_events=3, retract_window_s=600)
    for i in range(2):
        for rank in ("TP0", "TP1", "TP2"):  # one retraction printed by every rank
            run.feed({**ev("retract", retracted_req=2), "ts": f"t{i}", "rank": rank})
    run.tick()
    assert "retractions" not in run.active()
    run.feed({**ev("retract", retracted_req=2), "ts": "t3"})
    run.tick(1)
    assert run.active()["retractions"].message.startswith("3 retractions in 10 min (0.3/min, 6")


def _decode_phase(run: Run, seconds: int, gen: float, noise: float, rng: random.Random,
                  **kw: Any) -> None:
    for _ in range(seconds // 2):
        run.feed(dec(run.now, gen * (1 + rng.uniform(-noise, noise)), **kw))
        run.tick(2)


def test_plateau_survives_line_to_line_noise() -> None:
    run, rng = Run(), random.Random(1)
    # +/-35 % per line: single lines fall 35 % below the mean all the time.
    _decode_phase(run, 3600, 1000.0, 0.35, rng, running=100)
    assert "throughput_plateau" not in run.fired


def test_plateau_kv_bound_fires_after_hold_and_names_the_cause() -> None:
    run, rng = Run(plateau_after_s=600), random.Random(2)
    _decode_phase(run, 900, 1317.0, 0.08, rng, running=121, usage=0.6)
    _decode_phase(run, 500, 606.0, 0.08, rng, running=95, queue=110, usage=0.88)
    assert "throughput_plateau" not in run.fired
    _decode_phase(run, 300, 606.0, 0.08, rng, running=95, queue=110, usage=0.88)
    alert = run.active()["throughput_plateau"]
    assert "likely KV-bound" in alert.message and "to plateau 6" in alert.message
    assert "max_total_num_tokens / tokens per request" in alert.hint
    assert "kv_saturated" not in run.fired  # 0.88 is below the 0.90 threshold


def _backfill_phase(run: Run, seconds: int, gen: float, noise: float, rng: random.Random,
                    **kw: Any) -> None:
    """Lines already in the log when kdash starts: read at once, no evaluation between them."""
    for _ in range(seconds // 2):
        run.feed(dec(run.now, gen * (1 + rng.uniform(-noise, noise)), **kw))
        run.now += 2


def test_plateau_started_after_the_peak_judges_the_fall_from_the_lines_it_read() -> None:
    # Two dashboards on the same log: one watching from the start, one started 20 minutes in,
    # when the peak and most of the fall are already in the log (its backfill).
    phases = ((900, 1317.0, {"running": 121, "usage": 0.6}),
              (500, 606.0, {"running": 95, "queue": 110, "usage": 0.88}))
    live, late = Run(plateau_after_s=600), Run(plateau_after_s=600)
    for run, feed in ((live, _decode_phase), (late, _backfill_phase)):
        rng = random.Random(2)
        for seconds, gen, kw in phases:
            feed(run, seconds, gen, 0.08, rng, **kw)
        run.tick()
    assert "throughput_plateau" not in late.fired  # held 10 min by the log, not yet by kdash
    for run in (live, late):
        _decode_phase(run, 700, 606.0, 0.08, random.Random(3), running=95, queue=110, usage=0.88)
    a, b = live.active()["throughput_plateau"], late.active()["throughput_plateau"]
    assert "likely KV-bound" in b.message
    assert a.message == b.message  # the same peak, plateau and fall duration


def test_a_log_that_stopped_before_its_fall_held_shows_no_plateau() -> None:
    # An old log read by the dashboard: its lines fell, then stopped a few seconds later.
    # However long kdash watches it, nothing says the low figure lasted.
    run, rng = Run(plateau_after_s=600), random.Random(6)
    _backfill_phase(run, 600, 1300.0, 0.05, rng, running=120)
    _backfill_phase(run, 200, 500.0, 0.05, rng, running=120)
    for _ in range(40):
        run.tick(30)
    assert "throughput_plateau" not in run.fired
    # ... while a log whose plateau held in its own lines before it stopped still tells it.
    held, rng = Run(plateau_after_s=600), random.Random(6)
    _backfill_phase(held, 600, 1300.0, 0.05, rng, running=120)
    _backfill_phase(held, 900, 500.0, 0.05, rng, running=120)
    for _ in range(40):
        held.tick(30)
    assert "throughput_plateau" in held.fired


def test_a_peak_before_a_restart_is_not_the_new_launchs_peak() -> None:
    # Read at once: a launch at 1300 tok/s, a restart, a launch at 600 (a new setting, slower
    # but steady). The new launch never fell from anything.
    run, rng = Run(plateau_after_s=60), random.Random(5)
    _backfill_phase(run, 900, 1300.0, 0.05, rng, running=120)
    run.feed({**ev("restart"), "_t": run.now})
    _backfill_phase(run, 600, 600.0, 0.05, rng, running=120, queue=50, usage=0.95)
    run.engine.immediate = True  # as --once and check judge: what holds now fires now
    run.tick()
    assert "throughput_plateau" not in run.fired


def test_a_reset_peak_is_not_found_again_in_the_lines_before_it() -> None:
    run, rng = Run(plateau_after_s=60), random.Random(4)
    _backfill_phase(run, 900, 1300.0, 0.05, rng, running=120)
    _backfill_phase(run, 600, 500.0, 0.05, rng, running=120, queue=50, usage=0.95)
    run.tick()
    run.log.reset_peak()  # the user pressed r: judge from now on
    _decode_phase(run, 600, 500.0, 0.05, rng, running=120, queue=50, usage=0.95)
    assert "throughput_plateau" not in run.active()


def test_plateau_client_bound_when_queue_is_empty_and_fewer_run() -> None:
    run, rng = Run(plateau_after_s=60), random.Random(3)
    _decode_phase(run, 600, 1300.0, 0.05, rng, running=120)
    _decode_phase(run, 600, 500.0, 0.05, rng, running=40)
    assert "likely client-bound" in run.active()["throughput_plateau"].message


def test_kv_saturated_with_a_growing_queue() -> None:
    run = Run(kv_after_s=300, kv_window_s=120)
    for i in range(300):
        run.feed(dec(run.now, 800.0, running=120, queue=10 + i, usage=0.93))
        run.tick(2)
    alert = run.active()["kv_saturated"]
    assert alert.message.startswith("KV cache 93% full and the queue grew")
    assert "fp8" in alert.hint and "hierarchical" in alert.hint


def test_kv_saturated_held_while_the_queue_shrinks_does_not_say_it_grew() -> None:
    run = Run(kv_after_s=300, kv_window_s=120)
    for i in range(300):
        run.feed(dec(run.now, 800.0, running=120, queue=10 + i, usage=0.93))
        run.tick(2)
    for i in range(60):  # still full, the queue falling: held by the hysteresis
        run.feed(dec(run.now, 800.0, running=120, queue=300 - 3 * i, usage=0.93))
        run.tick(2)
    message = run.active()["kv_saturated"].message
    assert "grew" not in message and "queued (" in message and " before)" in message


def test_an_alert_of_a_launch_that_ended_does_not_carry_on_into_the_next() -> None:
    """A restart resolves the old launch's saturation; the new launch saturating at once is a
    new alert, with a hold and a `since` of its own."""
    run = Run(kv_after_s=300, kv_window_s=120)
    for i in range(300):
        run.feed(dec(run.now, 800.0, running=120, queue=10 + i, usage=0.93))
        run.tick(2)
    before = run.active()["kv_saturated"]
    run.feed(ev("server_args", server_args={"tp_size": 8}))
    for i in range(10):
        run.feed(dec(run.now, 800.0, running=120, queue=310 + i, usage=0.93))
        run.tick(2)
    assert "kv_saturated" not in run.active() and "kv_saturated" in run.cleared
    for i in range(160):
        run.feed(dec(run.now, 800.0, running=120, queue=320 + i, usage=0.93))
        run.tick(2)
    after = run.active()["kv_saturated"]
    assert before.since < T0 + 10 and after.since >= T0 + 600  # the new launch's own


def test_kv_full_with_a_steady_queue_is_not_saturation() -> None:
    run = Run()
    for _ in range(300):
        run.feed(dec(run.now, 800.0, running=120, queue=50, usage=0.95))
        run.tick(2)
    assert "kv_saturated" not in run.fired


def _part(name: str, done: int, at_start: int, last_write: float | None,
          total: int | None = None, status: str = "running") -> PartitionSnapshot:
    return PartitionSnapshot(name=name, path=f"/out/{name}.jsonl", done=done, total=total,
                             at_start=at_start, rate_per_min=None, eta_s=None,
                             status=status, last_write=last_write)  # type: ignore[arg-type]


def test_client_log_buffered_when_empty_for_buffered_after_s_while_an_output_grows() -> None:
    run = Run()
    run.extra["client"] = ClientSnapshot(log_path="/run/client.log", log_bytes=0,
                                         log_still_since=T0)
    run.extra["partitions"] = (_part("B1", 1374, 1374, None),)
    run.tick()
    assert "client_log_buffered" not in run.active()
    run.extra["partitions"] = (_part("B1", 1399, 1374, T0 + 60),)
    run.tick(60)  # an empty log waits as long as a still one: 120 s by default
    assert "client_log_buffered" not in run.active()
    run.extra["partitions"] = (_part("B1", 1420, 1374, T0 + 115),)
    run.tick(60)
    alert = run.active()["client_log_buffered"]
    assert "0 bytes" in alert.message and "1374 -> 1420" in alert.message
    assert "python -u" in alert.hint and "PYTHONUNBUFFERED=1" in alert.hint


def test_growing_client_log_is_not_buffered() -> None:
    run = Run()
    for i in range(30):
        run.extra["client"] = ClientSnapshot(log_path="c.log", log_bytes=100 * (i + 1),
                                             log_still_since=run.now)
        run.extra["partitions"] = (_part("B1", 1374 + i, 1374, run.now),)
        run.tick(10)
    assert "client_log_buffered" not in run.fired


def test_output_stalled_per_partition_and_done_is_info() -> None:
    run = Run(stalled_after_s=600)
    run.extra["partitions"] = (_part("B1", 500, 400, T0, total=1000, status="stalled"),
                               _part("B2", 1000, 900, T0, total=1000, status="done"))
    run.tick(599)
    assert set(run.active()) == {"partition_done:B2"}
    run.tick(2)
    stalled = run.active()["output_stalled:B1"]
    assert stalled.subject == "B1" and stalled.since == T0


def test_sequential_client_without_totals_is_not_stalled() -> None:
    run = Run(stalled_after_s=600)
    run.extra["partitions"] = (_part("B1", 500, 400, T0, status="idle"),
                               _part("B2", 10, 0, T0 + 700))
    run.tick(701)
    assert not any(k.startswith("output_stalled") for k in run.active())


def test_quiet_partitions_without_totals_are_idle_not_stalled() -> None:
    # The run is over (or its client is gone): nothing owes lines, so nothing is stalled.
    run = Run(stalled_after_s=600)
    run.extra["partitions"] = (_part("B1", 500, 400, T0, status="idle"),
                               _part("B2", 700, 0, T0, status="idle"))
    run.tick(3600)
    run.tick(60)
    assert not any(k.startswith("output_stalled") for k in run.active())


def test_client_processes_missing_and_duplicate() -> None:
    run = Run(client_after_s=30)
    run.extra["client"] = ClientSnapshot(process_pattern="run_inference", processes=())
    run.tick()
    run.tick(31)
    assert "client_missing" in run.active()
    procs = (ProcessInfo(1, "python", "run_inference", None),
             ProcessInfo(2, "python", "run_inference", None))
    run.extra["client"] = ClientSnapshot(process_pattern="run_inference", processes=procs)
    run.tick(1)
    run.tick(31)
    assert "pids 1, 2" in run.active()["client_duplicate"].evidence


def test_gpu_headroom_from_nvml_needs_to_hold() -> None:
    gpu = GpuSnapshot(index=3, uuid=None, name="H100", memory_used=None,
                      memory_total=80 * 1024**3, memory_free=512 * 1024**2, util_gpu=None,
                      util_mem=None, temperature_c=None, power_w=None, power_limit_w=None)
    run = Run(gpu_after_s=30)
    run.extra["gpus"] = GpusSnapshot(available=True, reason=None, gpus=(gpu,))
    run.tick()
    assert "gpu_headroom_low" not in run.active()
    run.tick(30)
    assert "GPU 3: 0.50 GB free" in run.active()["gpu_headroom_low"].message


def test_gpu_headroom_names_the_gpus_with_the_same_free_memory_together() -> None:
    def gpu(index: int, free_mb: int) -> GpuSnapshot:
        return GpuSnapshot(index=index, uuid=None, name="H200", memory_used=None,
                           memory_total=96 * 1024**3, memory_free=free_mb * 1024**2,
                           util_gpu=None, util_mem=None, temperature_c=None, power_w=None,
                           power_limit_w=None)

    run = Run(gpu_after_s=30)
    gpus = (gpu(0, 594), *(gpu(i, 901) for i in range(1, 6)), gpu(6, 40_000), gpu(7, 901))
    run.extra["gpus"] = GpusSnapshot(available=True, reason=None, gpus=gpus)
    run.tick()
    run.tick(30)
    message = run.active()["gpu_headroom_low"].message
    assert message == ("GPU memory headroom is low: GPU 0: 0.58 GB free, "
                       "GPUs 1-5, 7: 0.88 GB free")


def _at(name: str, at: Any, **kw: Any) -> dict[str, Any]:
    return {**ev(name, **kw), "at": at}


def test_server_events_start_after_the_last_restart() -> None:
    events = (_at("oom", 1.0), _at("restart", 2.0), _at("crash", 3.0), _at("restart", 4.0),
              _at("oom", 5.0), _at("ready", 6.0))
    idx = ServerEvents(events)
    assert idx.last_restart == 3
    assert [e["at"] for e in idx.since_start] == [5.0, 6.0]
    assert [e["at"] for e in idx.since_start_of("oom", "crash")] == [5.0]
    assert idx.since_start_of("crash") == []
    assert ServerEvents(events[:1]).since_start == events[:1]
    assert ServerEvents(()).last_restart is None


@pytest.mark.parametrize("times", [[10.0, 20.0, 30.0, 40.0], [40.0, 10.0, 30.0, 20.0]])
def test_retractions_within_a_window_in_or_out_of_order(times: list[float]) -> None:
    """The window test is `now - at <= window`, whether or not events arrived in time order."""
    events = tuple(_at("retract", t) for t in times) + (_at("retract", "soon"), _at("oom", 35.0))
    idx = ServerEvents(events)
    got = sorted(e["at"] for e in idx.retracts_within(now=50.0, window=20.0))
    assert got == [30.0, 40.0]
    assert sorted(e["at"] for e in idx.retracts_within(now=50.0, window=40.0)) == sorted(times)


def test_rules_see_the_events_of_the_snapshot_they_run_on() -> None:
    """The event index is rebuilt when the server log's events change, not only once."""
    run = Run()
    run.feed(ev("ready"))
    run.tick()
    assert "server_oom" not in run.active()
    run.feed(ev("oom", line=7))
    run.tick(1)
    assert "server_oom" in run.active()


def test_a_stale_process_holding_the_gpu_is_named_with_what_it_holds() -> None:
    """vLLM's startup `Free memory on device ... is less than desired`: the event's hint."""
    from dash.core.log.parse import parse_line

    rec = parse_line("ValueError: Free memory on device cuda:0 (3.10/79.11 GiB) on startup is "
                     "less than desired GPU memory utilization (0.9, 71.2 GiB).", 9)
    assert rec is not None
    run = Run()
    run.feed(ev("server_args", args={}), rec)
    run.tick()
    oom = run.active()["server_oom"]
    assert "another process holds it" in oom.message
    assert "holds 76.0 GiB" in oom.hint and "nvidia-smi" in oom.hint


@pytest.mark.parametrize(("line", "title", "hint"), [
    # vLLM v1/core/kv_cache_utils.py: the length that fits is in the hint
    ("(EngineCore_DP0 pid=268) ERROR 10-21 00:35:03 [core.py:708] ValueError: To serve at least "
     "one request with the models's max seq len (262144), (24.00 GiB KV cache is needed, which "
     "is larger than the available KV cache memory (8.04 GiB). Based on the available memory, "
     "the estimated maximum model length is 87840. Try increasing `gpu_memory_utilization` or "
     "decreasing `max_model_len` when initializing the engine.",
     "the KV cache does not fit at startup", "lower --max-model-len to 87,840 or less"),
    # vLLM v1/worker/gpu_worker.py determine_available_memory
    ("(EngineCore_DP0 pid=268) ERROR 10-21 00:35:03 [core.py:708] AssertionError: Error in "
     "memory profiling. Initial free memory 70.10 GiB, current free memory 75.30 GiB. This "
     "happens when other processes sharing the same container release GPU memory while vLLM is "
     "profiling during initialization. To fix this, ensure consistent GPU memory allocation or "
     "isolate vLLM in its own container.",
     "GPU memory changed while the server measured it at startup", "GPUs of its own"),
    # SGLang: the pool does not fit in the share (the line says to raise it, not lower it)
    ("[2025-03-11 10:00:05 TP0] RuntimeError: Not enough memory. Please try to increase "
     "--mem-fraction-static.", "the KV pool does not fit in the memory share at startup",
     "Raise --mem-fraction-static"),
    ("RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
     "Computed max_mamba_cache_size=0. Try: (1) reduce --max-running-requests, (2) increase "
     "--mem-fraction-static", "the KV pool does not fit", "lower --max-running-requests"),
    # SGLang's pool exhausted by a batch at run time: no CUDA OOM
    ("[2026-01-20 10:00:05 TP0] RuntimeError: Prefill out of memory. Try to lower your batch size.",
     "the KV cache pool ran out at run time", "Cap the batch (--chunked-prefill-size"),
])
def test_a_startup_memory_failure_says_what_to_change(line: str, title: str, hint: str) -> None:
    from dash.core.log.parse import parse_line

    rec = parse_line(line, 9)
    assert rec is not None
    run = Run()
    run.feed(ev("server_args", args={}), rec)
    run.tick()
    oom = run.active()["server_oom"]
    assert title in oom.message and hint in oom.hint


@pytest.mark.parametrize(("reason", "words", "hint"), [
    ("nccl_timeout", "NCCL", "NCCL_DEBUG=INFO"),
    ("nccl_hang", "NCCL) hung", "first error lines"),
    ("unhealthy", "health check failed", "Health check failed"),
    ("port_in_use", "port is taken", "ss -ltnp | grep :<port>"),
    ("device_assert", "device-side assert", "`Assertion ... failed` line names the check"),
    ("illegal_memory_access", "memory out of bounds", "--disable-cuda-graph"),
    ("cuda_error", "CUDA error", "Xid errors"),
    ("segfault", "segmentation fault", "traceback"),
])
def test_crash_alerts_say_what_happened(reason: str, words: str, hint: str) -> None:
    run = Run()
    run.feed(ev("crash", reason=reason))
    run.tick()
    crash = run.active()["server_crash"]
    assert words in crash.message and hint in crash.hint


def test_a_crash_names_the_component_that_hit_the_exception() -> None:
    run = Run()
    run.feed(ev("crash", reason="exception", component="DetokenizerManager"))
    run.tick()
    assert "DetokenizerManager hit an exception" in run.active()["server_crash"].message


def test_an_alert_keeps_a_long_log_line_whole_and_marks_a_cut() -> None:
    from dash.core.alerts.model import LINE_CAP, text_of

    vllm_oom = "OutOfMemoryError('CUDA out of memory. " + "x" * 600 + " to avoid fragmentation')"
    assert text_of({"message": vllm_oom}) == vllm_oom
    cut = text_of({"message": "y" * (LINE_CAP + 50)})
    assert cut is not None and len(cut) == LINE_CAP and cut.endswith("…")
