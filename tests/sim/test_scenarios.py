"""Each scenario's key numbers appear at the documented simulated time; runs are deterministic."""

from __future__ import annotations

from dash.core.log.timestamps import ts_to_epoch

START = 1_750_000_000.0


def _at(rec):
    """Simulated seconds of a record, from its own timestamp."""
    return ts_to_epoch(rec["ts"], START) - START


def _decodes(records, lo, hi):
    return [r for r in records if r["kind"] == "decode" and lo <= _at(r) < hi]


def _events(records, name):
    return [r for r in records if r["kind"] == "event" and r["event"] == name]


def _snapshot(run):
    files = [run.server_log, run.client_log, *sorted(run.outputs_dir.glob("*.jsonl"))]
    return {p.name: p.read_bytes().replace(str(run.dir).encode(), b"DIR") for p in files}


def test_same_seed_same_bytes_however_stepped(make_run):
    a, b, c = make_run(seed=7), make_run(seed=7), make_run(seed=8)
    a.advance_to(400)
    t = 0.0
    while t < 400:
        t = min(400.0, t + 7.3)
        b.advance_to(t)
    c.advance_to(400)
    assert _snapshot(a) == _snapshot(b)
    assert _snapshot(a)["server.log"] != _snapshot(c)["server.log"]


def test_peak_then_plateau(make_run, parse_log):
    run = make_run("peak-plateau")
    run.advance_to(900)
    records = parse_log(run.server_log)
    peak = max(_decodes(records, 0, 900), key=lambda r: r["gen_throughput"])
    assert 1300 <= peak["gen_throughput"] <= 1317.5
    assert 110 <= _at(peak) < 130
    assert peak["running_req"] == 121 and 29 <= peak["queue_req"] <= 33
    plateau = _decodes(records, 600, 900)
    assert len(plateau) > 50
    assert all(594 <= r["gen_throughput"] <= 618 for r in plateau)
    assert all(r["queue_req"] >= 100 and 0.87 <= r["token_usage"] <= 0.89 for r in plateau)


def test_oom_then_restart_with_smaller_pool(make_run, parse_log):
    run = make_run("oom-crash-restart")
    run.advance_to(500)
    records = parse_log(run.server_log)
    oom = _events(records, "oom")
    assert oom
    # The exception's last line has no timestamp: it belongs to the last stamped line before it.
    stamped = [r for r in records if r["ts"] and r["line"] < oom[0]["line"]]
    assert _at(stamped[-1]) == 300
    graphs = [r for r in _events(records, "cuda_graph") if r.get("avail_mem_gb") is not None
              and r.get("phase") == "end"]
    assert [(r["avail_mem_gb"], _at(r)) for r in graphs] == [(0.82, 14), (5.47, 374)]
    args = _events(records, "server_args")
    assert [(a["mem_fraction_static"], _at(a)) for a in args] == [(0.93, 0), (0.88, 360)]
    caps = [r for r in _events(records, "kv_cache") if r.get("max_total_num_tokens")]
    assert caps[-1]["max_total_num_tokens"] == 159277 and _at(caps[-1]) == 375
    assert not _decodes(records, 300, 378)
    after = _decodes(records, 378, 500)
    assert after and all(975 <= r["gen_throughput"] <= 1003 for r in after)


def test_kv_saturation_then_fp8_restart(make_run, parse_log):
    run = make_run("kv-saturation")
    run.advance_to(800)
    records = parse_log(run.server_log)
    saturated = _decodes(records, 120, 600)
    assert all(r["token_usage"] >= 0.9 and 36 <= r["running_req"] <= 41 for r in saturated)
    queues = [r["queue_req"] for r in saturated]
    assert queues == sorted(queues) and queues[-1] - queues[0] > 100
    assert [_at(r) for r in _events(records, "retract")] == [200, 320, 440, 560]
    kv = [r for r in _events(records, "kv_cache") if r.get("tokens")]
    assert {r["tokens"] for r in kv if _at(r) < 600} == {159277}
    assert {r["tokens"] for r in kv if _at(r) >= 620} == {376029}
    assert _events(records, "server_args")[-1]["kv_cache_dtype"] == "fp8_e4m3"


def _lines(run, name="B2_opencodeinstruct"):
    path = run.outputs_dir / f"{name}.jsonl"
    return path.read_bytes().count(b"\n")


def test_buffered_client_log_stays_empty_while_outputs_grow(make_run):
    run = make_run("buffered-client-log")
    run.advance_to(17)
    assert _lines(run) == 1374
    run.advance_to(35)
    assert _lines(run) >= 1399
    run.advance_to(300)
    assert run.client_log.stat().st_size == 0


def test_stalled_output_while_server_keeps_going(make_run, parse_log):
    run = make_run("stalled-output")
    run.advance_to(240)
    stalled_at = _lines(run)
    assert stalled_at > 1374
    run.advance_to(500)
    assert _lines(run) == stalled_at
    assert len(_decodes(parse_log(run.server_log), 250, 500)) > 50


def test_client_log_resumes_and_shows_progress(make_run):
    run = make_run("healthy")
    run.advance_to(60)
    text = run.client_log.read_bytes().decode()
    assert "Resuming: 1374 already done\n" in text
    bars = [p for p in text.split("\r") if p.startswith("B2_opencodeinstruct:")]
    assert len(bars) > 20 and "/5000 [" in bars[-1]


def test_tuning_session_rewrites_the_log_at_each_start(make_run, parse_log):
    import os

    run = make_run("tuning-session")
    files = []
    for t, life in zip((499, 779, 1879, 2400), run.scenario.lives, strict=True):
        run.advance_to(t)
        st = os.stat(run.server_log)
        files.append(((st.st_dev, st.st_ino), parse_log(run.server_log), life))
    assert len({ident for ident, _, _ in files}) == 1  # `> server.log`: truncated, not replaced
    for _, records, life in files:
        args = _events(records, "server_args")
        assert len(args) == 1 and args[0]["line"] == 1 and _at(args[0]) == life.start
        assert args[0]["mem_fraction_static"] == life.mem_fraction
        capacity = [r for r in _events(records, "kv_cache") if "max_total_num_tokens" in r]
        assert capacity[0]["max_total_num_tokens"] == life.max_total_num_tokens
        graph = [r for r in _events(records, "cuda_graph") if r.get("phase") == "end"]
        assert graph[0]["avail_mem_gb"] == life.avail_after_graph_gb
        host = [r["hicache_host_gb"] for r in _events(records, "kv_cache")
                if "hicache_host_gb" in r]
        assert host == ([48.0] * 8 if life.hicache_gb else [])
    oom = _events(files[1][1], "oom")  # a raw traceback line: no stamp of its own
    assert oom and oom[0]["reason"] == "cuda_oom" and files[1][2].end_kind == "oom"
    big = [r for r in files[1][1] if r["kind"] == "prefill" and r["new_token"] == 32768]
    assert len(big) == 1 and _at(big[0]) == 750
    dtypes = {r.get("dtype") for r in _events(files[3][1], "kv_cache")} - {None}
    assert dtypes == {"torch.float8_e4m3fn"} and files[3][2].kv_dtype == "fp8_e4m3"
    steady = _decodes(files[3][1], 1880 + 100, 2400)
    assert steady and all(1020 <= r["gen_throughput"] <= 1080 for r in steady)
