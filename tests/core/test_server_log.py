"""ServerLogTracker: series stamped with the log's own time, peak, facts, restarts, bounds."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dash.core.state.server_log import ServerLogTracker


def _ts(h: int, m: int, s: int) -> str:
    return f"2026-06-01T{h:02d}:{m:02d}:{s:02d}"


def _epoch(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp()


def decode(ts: str | None, gen: float, running: int = 10, queue: int = 0,
           usage: float = 0.5, line: int = 0) -> dict[str, Any]:
    return {"kind": "decode", "line": line, "ts": ts, "rank": None, "engine": "sglang",
            "running_req": running, "queue_req": queue, "tokens": running * 1000,
            "token_usage": usage, "gen_throughput": gen}


def event(name: str, ts: str | None = None, line: int = 0, **kw: Any) -> dict[str, Any]:
    return {"kind": "event", "event": name, "message": f"{name} line", "line": line, "ts": ts,
            "rank": None, "engine": "sglang", **kw}


NOW = _epoch(_ts(13, 0, 0))


def test_series_use_the_records_own_time_and_now_when_it_has_none() -> None:
    tr = ServerLogTracker("server.log")
    tr.feed([decode(_ts(12, 0, 0), 100.0), decode(None, 120.0)], NOW)
    snap = tr.snapshot(NOW)
    assert snap.gen_throughput.t == (_epoch(_ts(12, 0, 0)), NOW)
    assert snap.gen_throughput.v == (100.0, 120.0)
    assert snap.running_req.last == 10.0 and snap.token_usage.last == 0.5
    assert snap.last_decode is not None and snap.last_decode["gen_throughput"] == 120.0
    assert snap.engine == "sglang" and snap.path == "server.log"


def test_peak_is_the_highest_and_reset_forgets_it() -> None:
    tr = ServerLogTracker()
    tr.feed([decode(_ts(12, 0, s), g) for s, g in enumerate([500.0, 1317.0, 900.0])], NOW)
    peak = tr.snapshot(NOW).peak
    assert peak is not None and peak.gen_throughput == 1317.0 and peak.ts == _ts(12, 0, 1)
    tr.reset_peak()
    assert tr.snapshot(NOW).peak is None
    tr.feed([decode(_ts(12, 0, 5), 700.0)], NOW)
    assert tr.snapshot(NOW).peak.gen_throughput == 700.0  # type: ignore[union-attr]


def test_counts_lines_records_and_unparsed() -> None:
    tr = ServerLogTracker()
    tr.feed([None, decode(_ts(12, 0, 0), 1.0), {"kind": "unparsed", "text": "Decode batch ??"},
             None, "garbage"], NOW)  # type: ignore[list-item]
    snap = tr.snapshot(NOW)
    assert (snap.lines, snap.records, snap.unparsed) == (5, 1, 1)
    tr.feed([None], NOW, lines=7)
    assert tr.snapshot(NOW).lines == 12


def test_startup_facts_are_merged_and_memory_takes_the_smallest_rank() -> None:
    tr = ServerLogTracker()
    tr.feed([
        event("server_args", _ts(11, 58, 2), model="meta-llama/Llama-3.1-8B-Instruct",
              tp_size=2, mem_fraction_static=0.93, args={}),
        event("load_weights", _ts(11, 58, 25), avail_mem_gb=63.41, mem_usage_gb=15.12),
        event("kv_cache", _ts(11, 58, 26), tokens=463000, k_size_gb=28.26, v_size_gb=28.26,
              dtype="torch.bfloat16"),
        event("cuda_graph", _ts(11, 58, 36), phase="end", avail_mem_gb=5.59),
        event("cuda_graph", _ts(11, 58, 36), phase="end", avail_mem_gb=0.61),
        event("kv_cache", _ts(11, 58, 37), max_total_num_tokens=463000,
              max_running_requests=4096, context_len=131072, available_gpu_mem_gb=5.59),
    ], NOW)
    f = tr.snapshot(NOW).facts
    assert f["model"] == "meta-llama/Llama-3.1-8B-Instruct" and f["tp_size"] == 2
    assert f["mem_fraction_static"] == 0.93 and f["max_total_num_tokens"] == 463000
    assert f["kv_tokens"] == 463000 and f["kv_dtype"] == "torch.bfloat16"
    assert f["kv_size_gb"] == 56.52 and f["load_avail_mem_gb"] == 63.41
    assert f["avail_mem_gb"] == 0.61  # the tighter of the two ranks


def test_a_pool_sized_after_graph_capture_gives_the_headroom_it_left() -> None:
    """SGLang 0.5.23+ can size the KV pool after CUDA graph capture: the capture's `avail mem`
    is then taken before the pool, and the `Post-capture KV sizing` line says what is left."""
    from dash.core.log.parse import parse_line

    stamp = "[2026-06-01 11:58:{:02d} TP0] "
    lines = ["KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 900000, K size: 55.00 GB, "
             "V size: 55.00 GB",
             "Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=9.81 s, "
             "mem usage=0.62 GB, avail mem=61.20 GB.",
             "Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, "
             "#tokens: 463000, KV size: 56.52 GB, avail mem=4.10 GB"]
    records = [parse_line(stamp.format(i) + text, i) for i, text in enumerate(lines, 1)]
    assert [r["event"] for r in records if r] == ["kv_cache", "cuda_graph", "kv_cache"]
    tr = ServerLogTracker()
    tr.feed(records, NOW)
    f = tr.snapshot(NOW).facts
    assert f["kv_tokens"] == 463000 and f["kv_size_gb"] == 56.52
    assert f["avail_mem_gb"] == 4.10  # not the 61.20 GB free before the pool was allocated


def test_a_second_start_counts_a_restart_resets_peak_and_keeps_counts() -> None:
    tr = ServerLogTracker()
    startup = [event("server_args", _ts(12, 0, 0), args={}),
               decode(_ts(12, 0, 1), 5.0),  # warmup traffic before the banner is not a restart
               event("ready", _ts(12, 0, 2))]
    tr.feed(startup + [decode(_ts(12, 1, s), 1000.0 + s) for s in range(5)], NOW)
    assert tr.snapshot(NOW).restarts == 0
    tr.feed([event("oom", _ts(12, 2, 0)), event("server_args", _ts(12, 5, 0), args={})], NOW)
    snap = tr.snapshot(NOW)
    assert snap.restarts == 1 and snap.peak is None
    restart = [e for e in snap.events if e["event"] == "restart"]
    assert len(restart) == 1 and restart[0]["at"] == _epoch(_ts(12, 5, 0))
    assert snap.started_at == _epoch(_ts(12, 5, 0))
    assert snap.records == 10 and len(snap.gen_throughput) == 6  # history kept across it
    tr.feed([event("ready", _ts(12, 5, 30))], NOW)
    assert tr.snapshot(NOW).restarts == 1  # the new server's own banner


def test_ready_twice_without_server_args_is_a_restart() -> None:
    tr = ServerLogTracker()
    tr.feed([event("ready", _ts(12, 0, 0)), decode(_ts(12, 0, 5), 10.0),
             event("crash", _ts(12, 1, 0), reason="killed"), event("ready", _ts(12, 3, 0))], NOW)
    assert tr.snapshot(NOW).restarts == 1


def test_events_and_series_are_bounded() -> None:
    tr = ServerLogTracker(history=50, max_events=10)
    tr.feed((decode(None, float(i)) for i in range(500)), NOW)
    tr.feed((event("retract", None, retracted_req=1) for _ in range(100)), NOW)
    snap = tr.snapshot(NOW)
    assert len(snap.gen_throughput) == 50 and len(snap.events) == 10


def test_garbage_values_never_crash() -> None:
    tr = ServerLogTracker()
    tr.feed([{"kind": "decode", "ts": "not a time", "gen_throughput": "fast"},
             {"kind": "event", "event": "kv_cache", "k_size_gb": None},
             {"kind": "prefill", "ts": 12, "running_req": True}, {}], NOW)
    snap = tr.snapshot(NOW)
    assert snap.records == 3 and len(snap.gen_throughput) == 0


def test_note_file_and_last_record_never_ahead_of_now() -> None:
    tr = ServerLogTracker()
    tr.note_file("waiting", "server.log does not exist yet", NOW)
    tr.feed([decode(_ts(14, 0, 0), 10.0)], NOW)  # stamped an hour ahead (another time zone)
    snap = tr.snapshot(NOW)
    assert snap.status == "waiting" and snap.status_message == "server.log does not exist yet"
    assert snap.last_record_at == NOW


def test_one_event_from_every_tp_rank_is_shown_once_with_its_ranks() -> None:
    from dash.core.log.parse import parse_line

    lines = [f"[2026-03-01 12:00:0{i // 4} TP{i}] KV Cache is allocated. #tokens: 300000, "
             "K size: 12.96 GB, V size: 12.96 GB" for i in range(8)]
    lines.append("[2026-03-01 12:00:05 TP0] Capture cuda graph begin. This can take up to "
                 "several minutes. avail mem=11.35 GB")
    lines.append("[2026-03-01 12:00:30 TP0] KV Cache is allocated. #tokens: 300000, "
                 "K size: 12.96 GB, V size: 12.96 GB")
    tracker = ServerLogTracker()
    tracker.feed([parse_line(line, i + 1) for i, line in enumerate(lines)], 1_772_366_400.0)
    events = tracker.snapshot(1_772_366_400.0).events
    assert [e["event"] for e in events] == ["kv_cache", "cuda_graph", "kv_cache"]
    assert events[0]["ranks"] == tuple(f"TP{i}" for i in range(8))
    assert "ranks" not in events[2]  # a later allocation (a restart) is a new event


def test_a_restart_with_another_kv_dtype_shows_the_new_one() -> None:
    from dash.core.log.parse import parse_line

    lines = [
        "[2026-03-01 12:00:00] server_args=ServerArgs(model_path='m', kv_cache_dtype='auto', tp_size=1)",
        "[2026-03-01 12:00:20] The server is fired up and ready to roll!",
        "[2026-03-01 12:10:00] server_args=ServerArgs(model_path='m', kv_cache_dtype='fp8_e4m3', tp_size=1)",
    ]
    tracker = ServerLogTracker()
    tracker.feed([parse_line(line, i + 1) for i, line in enumerate(lines)], 1_772_366_400.0)
    snap = tracker.snapshot(1_772_366_400.0)
    assert snap.restarts == 1
    assert snap.facts["kv_dtype"] == snap.facts["kv_cache_dtype"] == "fp8_e4m3"


def test_ranks_fold_one_line_of_theirs_not_two_lines_of_one_kind() -> None:
    """Each rank prints the same line with its own figures; a KV cache's size and its memory
    pool's end are both `kv_cache` events, and stay two."""
    from dash.core.log.parse import parse_line

    lines = [f"[2026-03-01 12:00:00 TP{i}] Memory pool end. avail mem={11.2 + i / 100:.2f} GB"
             for i in range(4)]
    lines += [f"[2026-03-01 12:00:01 TP{i}] KV Cache is allocated. #tokens: 300000, "
              "K size: 12.96 GB, V size: 12.96 GB" for i in range(4)]
    tracker = ServerLogTracker()
    tracker.feed([parse_line(line, i + 1) for i, line in enumerate(lines)], 1_772_366_400.0)
    events = tracker.snapshot(1_772_366_400.0).events
    assert [(e["event"], len(e["ranks"])) for e in events] == [("kv_cache", 4), ("kv_cache", 4)]
    assert "Memory pool end" in events[0]["message"] and "KV Cache" in events[1]["message"]


def test_rank_tags_give_the_parallelism_a_log_without_arguments_shows() -> None:
    """TP7 and DP3 printed: at least tp 8 and dp 4; TP0 alone (tp 1 prints it) says nothing;
    a restart forgets them with the rest of the launch's facts."""
    tr = ServerLogTracker("server.log")
    tr.feed([{**decode(_ts(12, 0, 0), 100.0), "rank": "TP0"}], NOW)
    assert "tp_seen" not in tr.snapshot(NOW).facts
    tr.feed([{**event("load_weights", _ts(12, 0, 1)), "rank": f"DP{i // 2} TP{i}"}
             for i in (0, 7, 3)], NOW)
    facts = tr.snapshot(NOW).facts
    assert (facts["tp_seen"], facts["dp_seen"]) == (8, 4)
    tr.feed([event("server_args", _ts(12, 5, 0), args={"tp_size": 2}),
             {**decode(_ts(12, 6, 0), 90.0), "rank": "TP1"}], NOW)
    facts = tr.snapshot(NOW).facts
    assert facts["tp_seen"] == 2 and "dp_seen" not in facts


def test_ranks_that_interleave_their_startup_lines_fold_each_line_once(tmp_path: Any) -> None:
    """sglang-11716's TP8 start: four ranks' `KV Cache is allocated` among their `Memory pool
    end` lines. Folded only into the line just before, the panel listed five events for two
    (and summary counted kv_cache 4)."""
    from dash.commands.summary import summarize
    from dash.core.log.parse import parse_line

    order = [5, 1, 3, 1, 6, 5, 3, 6]
    kinds = ["kv", "kv", "kv", "pool", "kv", "pool", "pool", "pool"]
    lines = [f"[2025-10-16 09:06:22 TP{r}] " + (
        "KV Cache is allocated. #tokens: 2795207, K size: 53.31 GB, V size: 53.31 GB"
        if k == "kv" else "Memory pool end. avail mem=11.87 GB") for r, k in zip(order, kinds, strict=True)]
    records = [parse_line(line, i + 1) for i, line in enumerate(lines)]
    tracker = ServerLogTracker()
    tracker.feed(records, 1_760_600_000.0)
    events = tracker.snapshot(1_760_600_000.0).events
    assert [(e["message"][:8], len(e["ranks"])) for e in events] == [("KV Cache", 4), ("Memory p", 4)]
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    assert summarize(log)["event_counts"] == {"kv_cache": 2}
