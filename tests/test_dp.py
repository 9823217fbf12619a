"""A server of 8 DP ranks whose every value is known, through every way kdash reports it:
`--once --json`, `summary --json`, Prometheus, the plateau and KV rules, and the dashboard
(`tests/ui/test_ranks_view.py`). The totals come out right to 1 %; the same server logged as
one rank gives the same figures, as it always did."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from dp_logs import POOL, DpLog, dp_values, write_dp_log, write_single_rank_log
from exposition_lint import lint
from prometheus_client.parser import text_string_to_metric_families

from dash.commands.once import collect_once
from dash.commands.summary import summarize
from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.views.jsondoc import snapshot_to_json
from dash.sources.prom_export import start_exporter

START = 1_780_000_000.0
RANKS = 8


@pytest.fixture(scope="module")
def dp() -> DpLog:
    return dp_values(ranks=RANKS, minutes=15, start=START)


def _log(tmp_path: Path, dp: DpLog, single: bool = False) -> Path:
    path = tmp_path / ("single.log" if single else "dp.log")
    (write_single_rank_log if single else write_dp_log)(path, dp)
    return path


def _once(path: Path, dp: DpLog) -> dict[str, Any]:
    # kdash reads the log a couple of seconds after its last line was written
    os.utime(path, (time.time(), time.time()))
    snap, _ = collect_once(Config(log=path, url=""), window=0, clock=FakeClock(dp.end + 2.0))
    return snapshot_to_json(snap)


def _close(got: float | None, want: float, rel: float = 0.01) -> bool:
    return got is not None and abs(got - want) <= rel * abs(want)


def test_once_json_gives_the_whole_server_and_each_rank(tmp_path: Path, dp: DpLog) -> None:
    doc = _once(_log(tmp_path, dp), dp)
    now = doc["server"]["now"]
    last = dp.last()
    assert _close(now["gen_throughput"], sum(r.gen for r in last.values()))
    assert _close(now["gen_throughput"], 600.0)
    assert now["running_req"] == sum(r.running for r in last.values())
    assert now["queue_req"] == sum(r.queue for r in last.values())
    assert now["token_usage"] == pytest.approx(max(r.usage for r in last.values()))
    assert now["token_usage_mean"] == pytest.approx(sum(r.usage for r in last.values()) / RANKS)
    assert now["live_ranks"] == RANKS
    ranks = {r["rank"]: r for r in now["ranks"]}
    assert list(ranks) == [f"DP{d}" for d in range(RANKS)]
    for d, rl in last.items():
        got = ranks[f"DP{d}"]
        assert got["gen_throughput"] == pytest.approx(round(rl.gen, 2))
        assert (got["running_req"], got["queue_req"]) == (rl.running, rl.queue)
        assert got["token_usage"] == pytest.approx(rl.usage)
        assert got["interval_s"] == dp.interval_s and got["live"]
    assert _close(doc["server"]["peak"]["gen_throughput"], 1400.0)
    clock = doc["server"]["log_clock"]
    assert clock["offset_s"] == 0.0 and clock["last_line_age_s"] == pytest.approx(2.0, abs=1.0)


def test_summary_json_peak_and_mean_are_of_the_total(tmp_path: Path, dp: DpLog) -> None:
    doc = summarize(_log(tmp_path, dp))
    gen = doc["gen_throughput"]
    assert _close(gen["peak"]["gen_throughput"], 1400.0)
    steps = len(dp.lines) // RANKS
    peak_steps = int(dp.peak_until_s / dp.interval_s)
    want_mean = (1400.0 * peak_steps + 600.0 * (steps - peak_steps)) / steps
    assert _close(gen["mean"], want_mean)
    assert doc["ranks"] == [f"DP{d}" for d in range(RANKS)]


def test_the_plateau_and_kv_rules_read_the_totals(tmp_path: Path, dp: DpLog) -> None:
    alerts = {a["id"]: a for a in summarize(_log(tmp_path, dp))["alerts"]}
    plateau = alerts["throughput_plateau"]
    assert "fell from peak 1400 to plateau 600 tok/s (-57%)" in plateau["message"]
    assert "KV-bound" in plateau["message"]
    kv = alerts["kv_saturated"]
    assert "KV cache 95% full" in kv["message"]
    assert f"the highest of {RANKS} ranks" in kv["evidence"]
    assert f"max_total_num_tokens {POOL} per rank" in kv["evidence"]
    # the concurrency the KV caches allow counts every rank's pool
    assert f"{RANKS} ranks x {POOL}" in kv["hint"]
    assert "rank_imbalance" not in alerts  # 0.88-0.95 everywhere: balanced


def test_prometheus_exports_the_total_and_a_series_per_rank(tmp_path: Path, dp: DpLog) -> None:
    path = _log(tmp_path, dp)
    os.utime(path, (time.time(), time.time()))
    snap, _ = collect_once(Config(log=path, url=""), window=0, clock=FakeClock(dp.end + 2.0))
    handle = start_exporter(Config(metrics_port=0, log=path), lambda: snap)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{handle.port}/metrics", timeout=5) as r:
            text = r.read().decode()
    finally:
        handle.close()
    assert lint(text) == []  # promtool's checks
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(text) for s in fam.samples}
    assert _close(samples[("kdash_gen_throughput_tokens_per_second", ())], 600.0)
    assert samples[("kdash_running_requests", ())] == sum(r.running for r in dp.last().values())
    assert samples[("kdash_token_usage_ratio", ())] == pytest.approx(0.95)
    for d, rl in dp.last().items():
        lab = (("rank", f"DP{d}"),)
        assert samples[("kdash_rank_gen_throughput_tokens_per_second", lab)] == \
            pytest.approx(round(rl.gen, 2))
        assert samples[("kdash_rank_token_usage_ratio", lab)] == pytest.approx(rl.usage)
        assert samples[("kdash_rank_live", lab)] == 1.0


def test_the_same_server_logged_as_one_rank_reads_as_before(tmp_path: Path, dp: DpLog) -> None:
    one = _once(_log(tmp_path, dp, single=True), dp)
    many = _once(_log(tmp_path, dp), dp)
    s1, sn = one["server"], many["server"]
    assert len(s1["now"]["ranks"]) == 1 and s1["now"]["ranks"][0]["rank"] is None
    for key in ("gen_throughput", "running_req", "queue_req", "token_usage"):
        assert _close(s1["now"][key], sn["now"][key]), key
        assert s1["last_decode"][key] == pytest.approx(s1["now"][key])  # the line itself
    assert _close(s1["peak"]["gen_throughput"], sn["peak"]["gen_throughput"])
    single = summarize(_log(tmp_path, dp, single=True))
    assert single["ranks"] == []
    assert _close(single["gen_throughput"]["mean"], summarize(_log(tmp_path, dp))["gen_throughput"]["mean"])
    assert "ranks" not in json.dumps([f for f in single["alerts"] if f["id"] == "kv_saturated"])


def test_a_rank_that_stops_drops_out_of_the_total_and_says_so(tmp_path: Path) -> None:
    log = dp_values(ranks=4, minutes=3, start=START)
    path = tmp_path / "dp.log"
    # rank 2 stops printing after the first minute; the others go on
    lines = [rl for rl in log.lines if not (rl.dp == 2 and rl.t - START > 60)]
    write_dp_log(path, DpLog(tuple(lines), 4, log.interval_s, log.peak_until_s, START))
    doc = _once(path, log)
    now = doc["server"]["now"]
    assert [r["live"] for r in now["ranks"]] == [True, True, False, True]
    assert now["live_ranks"] == 3
    assert _close(now["gen_throughput"], sum(rl.gen for d, rl in log.last().items() if d != 2))


@pytest.mark.parametrize(("scenario", "ranks", "hot", "fires"),
                         [("dp-imbalance", 8, 5, True), ("dp-imbalance", 4, 3, True),
                          ("dp-imbalance", 2, 1, True), ("healthy", 8, None, False)])
def test_rank_imbalance_fires_when_one_rank_fills_up(tmp_path: Path, scenario: str, ranks: int,
                                                     hot: int | None, fires: bool) -> None:
    from dash.sim.run import SimRun

    run = SimRun(tmp_path, scenario, start_epoch=START, dp=ranks)
    run.advance_to(600)
    alerts = {a["id"]: a for a in summarize(run.server_log)["alerts"]}
    assert ("rank_imbalance" in alerts) is fires
    if fires:
        a = alerts["rank_imbalance"]
        assert a["message"].startswith(f"DP{hot}'s KV cache is 9"), a["message"]
        assert (f"other {ranks - 1} ranks" if ranks > 2 else "the other rank ") in a["message"]
        assert "--load-balance-method" in a["hint"]


@pytest.mark.parametrize("rounds", [1, 3])
def test_the_summary_mean_leaves_out_the_ramp_in_before_every_rank_printed(
        tmp_path: Path, rounds: int) -> None:
    """Three ranks at 500 tok/s each: the first lines' sums are 500 and 1,000 (one rank, then
    two), the server's is 1,500. The mean is 1,500, over the sums with every rank in them
    (one round only: its last sum); the samples still count every line."""
    path = tmp_path / "dp3.log"
    lines = [f"[2026-05-07 13:40:{r * 3 + d:02d} DP{d} TP{d} EP{d}] Decode batch. #running-req: "
             f"20, #token: 19000, token usage: 0.02, cuda graph: True, gen throughput "
             f"(token/s): 500.00, #queue-req: 0, " for r in range(rounds) for d in range(3)]
    path.write_text("\n".join(lines) + "\n")
    gen = summarize(path)["gen_throughput"]
    assert gen["mean"] == 1500.0 and gen["peak"]["gen_throughput"] == 1500.0
    assert (gen["samples"], gen["ramp_in"]) == (3 * rounds, 2)
