"""RunState composition and the headless replay of a log's alerts."""

from __future__ import annotations

from pathlib import Path

import pytest

from dash.core.config import Config
from dash.core.errors import ConfigError
from dash.core.log.parse import parse_line
from dash.core.state.partitions import OutputCount
from dash.core.state.run import RunState, replay_alerts

T0 = 1_750_000_000.0


def _records(path: Path) -> list:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [parse_line(line, i + 1) for i, line in enumerate(text.splitlines())]


def test_run_state_composes_every_part_and_alerts(tmp_path: Path) -> None:
    state = RunState(Config(log=tmp_path / "server.log", url="http://127.0.0.1:9"))
    state.feed_server_log([{"kind": "event", "event": "crash", "reason": "killed",
                            "message": "Killed", "line": 9, "ts": None}], T0)
    changes = state.tick(T0)
    assert [a.id for a in changes.new] == ["server_crash"] and not changes.cleared
    snap = state.snapshot(T0)
    assert snap.now == T0 and snap.server.path == str(tmp_path / "server.log")
    assert snap.http.url == "http://127.0.0.1:9" and snap.http.state == "unknown"
    assert not snap.gpus.available and snap.partitions == ()
    assert [a.key for a in snap.alerts] == ["server_crash"]
    assert state.acknowledge("server_crash") and state.snapshot(T0).alerts[0].acknowledged
    assert not state.tick(T0 + 1)  # nothing new


def test_bad_alert_settings_fail_at_construction() -> None:
    with pytest.raises(ConfigError, match="unknown alert setting 'silence'"):
        RunState(Config(alerts={"silence": 3}))


def test_a_server_restart_restarts_partition_rates() -> None:
    state = RunState(Config(url=""))
    state.partitions.apply([OutputCount("B1", "/o/B1.jsonl", 100)], T0)
    state.partitions.apply([OutputCount("B1", "/o/B1.jsonl", 160)], T0 + 60)
    assert state.snapshot(T0 + 60).partitions[0].rate_per_min == pytest.approx(60.0)
    ready = {"kind": "event", "event": "ready", "message": "ready", "line": 1, "ts": None}
    state.feed_server_log([ready], T0 + 60)
    state.feed_server_log([ready], T0 + 60)  # a second banner: the server restarted
    assert state.snapshot(T0 + 60).server.restarts == 1
    assert state.snapshot(T0 + 60).partitions[0].rate_per_min is None


@pytest.mark.parametrize(("name", "rule", "line_has"), [
    ("sglang-9780-crash-tail-sigquit-killed.log", "server_crash", "AttributeError: module"),
    ("sglang-4547-cuda-error-oom-overlap-thread-traceback.log", "server_oom", "out of memory"),
    ("vllm-9290-oom-engine-error-traceback.log", "server_oom", "CUDA out of memory"),
])
def test_replay_of_real_crash_logs(real_logs: Path, name: str, rule: str, line_has: str) -> None:
    fired = {a.id: a for a in replay_alerts(_records(real_logs / name))}
    assert fired[rule].severity == "crit"
    assert fired[rule].line is not None and line_has in fired[rule].line


def test_replay_counts_a_retraction_once_across_ranks(real_logs: Path) -> None:
    records = _records(real_logs / "sglang-2746-decode-full-kv-retract.log")
    assert replay_alerts(records) == []  # one retraction is below the default rate
    fired = replay_alerts(records, Config(alerts={"retract_min_events": 1}))
    assert [a.id for a in fired] == ["retractions"]
    assert fired[0].message.startswith("1 retraction in 10 min")


@pytest.mark.parametrize("name", ["sglang-3909-decode-throughput-decrease.log",
                                  "sglang-4407-decode-largest-len-trailing-comma.log",
                                  "sglang-1270-decode-time-only-timestamp.log"])
def test_replay_of_working_servers_raises_nothing(real_logs: Path, name: str) -> None:
    assert replay_alerts(_records(real_logs / name)) == []


def test_replay_sees_a_silence_inside_the_log_as_the_dashboard_did(real_logs: Path) -> None:
    """The grok2 log's 17-hour gap after a decode line with 1 running: the dashboard and `kdash
    replay` say `server_silent` (idle or hung: nothing in the log tells) during it; the replay
    of `summary` ticked only at lines, so it never saw the gap and listed nothing."""
    fired = replay_alerts(_records(real_logs / "sglang-grok2-blog-v052rc2-tp8-startup-to-decode.log"))
    assert [a.id for a in fired] == ["server_silent"]
    assert fired[0].message.startswith("no decode/prefill line for 20.9 h; the last one had 1")
    assert "Idle if those requests have finished" in fired[0].hint


def test_replay_uses_the_logs_own_clock() -> None:
    lines = [f"[2026-06-01 12:{m:02d}:00 TP0] Decode batch. #running-req: 8, #token: 900, "
             "token usage: 0.10, gen throughput (token/s): 300.00, #queue-req: 0, "
             for m in range(3)]
    lines.append("[2026-06-01 12:30:00] Received sigquit from a child process. It usually means "
                 "the child failed.")
    fired = replay_alerts([parse_line(line, i + 1) for i, line in enumerate(lines)],
                          Config(alerts={"silent_after_s": 600}))
    by_id = {a.id: a for a in fired}
    assert set(by_id) == {"server_silent", "server_crash"}
    crash_at = by_id["server_crash"].since
    assert crash_at - by_id["server_silent"].since == 28 * 60  # since the last decode line


@pytest.mark.slow
def test_memory_stays_flat_once_the_history_is_full() -> None:
    """Days of a run cost what hours do: every series, event list and history is a ring buffer."""
    import gc
    import tracemalloc

    from dash.core.snapshot import GpuSnapshot

    state = RunState(Config(url=""))
    gb = 2**30

    def run_for(start: int, seconds: int) -> None:
        for s in range(start, start + seconds):
            now = T0 + s
            decode = {"kind": "decode", "line": s, "ts": None, "running_req": 100 + s % 7,
                      "queue_req": s % 11, "tokens": 250_000, "token_usage": 0.8,
                      "gen_throughput": 900.0 + s % 13, "engine": "sglang", "rank": "TP0"}
            event = ({"kind": "event", "event": "retract", "message": "KV cache pool is full.",
                      "line": s, "ts": None} if s % 600 == 0 else None)
            state.feed_server_log([decode, event], now, lines=3)
            gpus = tuple(GpuSnapshot(i, f"GPU-{i}", "GPU", 80 * gb, 96 * gb, 16 * gb, 90.0, 50.0,
                                     60.0, 400.0, 600.0) for i in range(8))
            state.gpus.apply(gpus, now)
            if s % 5 == 0:
                state.tick_and_snapshot(now)

    run_for(0, 4200)  # every ring buffer (4096 points at most) is full
    tracemalloc.start()
    run_for(4200, 1800)
    # a full collection first: tracemalloc also counts what the interpreter's free lists keep
    # (they grow and shrink with the shape of the calls, not with what the state holds)
    gc.collect()
    before, _ = tracemalloc.get_traced_memory()
    run_for(6000, 3600)  # another hour
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert after <= before * 1.05 + 64 * 1024, (before, after)
