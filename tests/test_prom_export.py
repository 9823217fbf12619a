"""The Prometheus export: snapshot -> `kdash_*` families, served over real HTTP on 127.0.0.1."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dash.core.config import Config
from dash.core.snapshot import (
    Alert,
    ClientSnapshot,
    GpuSnapshot,
    GpusSnapshot,
    HttpSnapshot,
    PartitionSnapshot,
    Peak,
    ProcessInfo,
    RunSnapshot,
    RunTotals,
    ServerLogSnapshot,
)
from dash.core.views.metrics_map import families
from dash.sources.prom_export import ExporterError, configured_sources, start_exporter

GiB = 1024**3


def _gpu(i: int, used: int, util: float | None = 87.0) -> GpuSnapshot:
    return GpuSnapshot(index=i, uuid=f"GPU-{i}", name="H200", memory_used=used,
                       memory_total=141 * GiB, memory_free=141 * GiB - used, util_gpu=util,
                       util_mem=None, temperature_c=61.0, power_w=None, power_limit_w=700.0)


def busy_snapshot(now: float = 1_750_000_100.0) -> RunSnapshot:
    """A run in its plateau: a decode line, a peak, two partitions, two GPUs, two alerts."""
    decode = {"kind": "decode", "line": 9, "ts": "2025-06-15T10:00:00", "rank": "TP0",
              "engine": "sglang", "running_req": 41, "queue_req": 212, "tokens": 1234,
              "token_usage": 0.97, "gen_throughput": 1021.4}
    return RunSnapshot(
        now=now,
        server=ServerLogSnapshot(
            path="/runs/server.log", engine="sglang", last_decode=decode,
            peak=Peak(gen_throughput=1317.0, at=now - 50, ts="09:59:10"),
            facts={"max_total_num_tokens": 1_060_000, "model": "m"},
            last_record_at=now - 1, restarts=1, unparsed=2),
        http=HttpSnapshot(url="http://127.0.0.1:30000", state="up", latency_s=0.004),
        partitions=(
            PartitionSnapshot(name="B1", path="/o/B1.jsonl", done=250, total=1000, at_start=100,
                              rate_per_min=120.0, eta_s=375.0, status="running"),
            PartitionSnapshot(name="B2", path="/o/B2.jsonl", done=7, total=None, at_start=0,
                              rate_per_min=None, eta_s=None, status="pending"),
        ),
        totals=RunTotals(done=257, total=None, rate_per_min=120.0, eta_s=375.0),
        client=ClientSnapshot(log_path="/runs/client.log", log_bytes=4096, process_pattern="run_",
                              processes=(ProcessInfo(1, "python", "python run_inference.py",
                                                     None),)),
        gpus=GpusSnapshot(available=True, reason=None, sampled_at=now,
                          gpus=(_gpu(0, 120 * GiB), _gpu(1, 100 * GiB, util=None))),
        alerts=(
            Alert("throughput_plateau", "warn", now - 30, "m", "e", "h"),
            Alert("partition_stalled", "warn", now - 10, "m", "e", "h", subject="B2"),
        ),
    )


def _values(fams) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of parsed or pure families as {(name, sorted labels): value}."""
    out = {}
    for fam in fams:
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _pure_values(snap: RunSnapshot, configured=("server_log", "http", "nvml")) -> dict:
    out = {}
    for f in families(snap, configured):
        for lv, v in f.samples:
            out[(f.name, tuple(sorted(zip(f.labels, lv, strict=True))))] = v
    return out


def test_mapping_names_values_and_units() -> None:
    v = _pure_values(busy_snapshot())
    assert v[("kdash_gen_throughput_tokens_per_second", ())] == 1021.4
    assert v[("kdash_running_requests", ())] == 41
    assert v[("kdash_queued_requests", ())] == 212
    assert v[("kdash_token_usage_ratio", ())] == 0.97
    assert v[("kdash_max_total_num_tokens", ())] == 1_060_000
    assert v[("kdash_peak_gen_throughput_tokens_per_second", ())] == 1317.0
    assert v[("kdash_partition_done", (("partition", "B1"),))] == 250
    assert v[("kdash_partition_rate_per_second", (("partition", "B1"),))] == 2.0
    assert v[("kdash_partition_eta_seconds", (("partition", "B1"),))] == 375.0
    assert v[("kdash_gpu_memory_free_bytes", (("gpu", "0"),))] == 21 * GiB
    assert v[("kdash_gpu_utilization_ratio", (("gpu", "0"),))] == pytest.approx(0.87)
    assert v[("kdash_client_processes", ())] == 1
    alert = ("kdash_alert_active",
             (("alert", "partition_stalled"), ("severity", "warn"), ("subject", "B2")))
    assert v[alert] == 1
    assert v[("kdash_alerts", (("severity", "warn"),))] == 2
    assert v[("kdash_alerts", (("severity", "crit"),))] == 0


def test_unknown_values_are_left_out_not_zero() -> None:
    v = _pure_values(busy_snapshot())
    # B2 has no total, rate or ETA; GPU 1 gave no utilization; the run total is unknown.
    assert ("kdash_partition_expected", (("partition", "B2"),)) not in v
    assert ("kdash_partition_eta_seconds", (("partition", "B2"),)) not in v
    assert ("kdash_gpu_utilization_ratio", (("gpu", "1"),)) not in v
    assert ("kdash_run_expected", ()) not in v
    empty = _pure_values(RunSnapshot(now=5.0))
    # Nothing polled yet: no HTTP or NVML verdict, no decode values, alert counts at zero.
    assert set(empty) == {("kdash_snapshot_timestamp_seconds", ()),
                          ("kdash_source_up", (("source", "server_log"),)),
                          *[("kdash_alerts", (("severity", s),)) for s in ("info", "warn", "crit")]}


def test_source_health_only_for_configured_sources() -> None:
    snap = busy_snapshot()
    v = _pure_values(snap, configured=("server_log", "http", "nvml", "client_log", "outputs"))
    ups = {dict(k[1])["source"]: val for k, val in v.items() if k[0] == "kdash_source_up"}
    assert ups == {"server_log": 1, "http": 1, "nvml": 1, "client_log": 1, "outputs": 1}
    down = RunSnapshot(
        now=1.0, server=ServerLogSnapshot(path="/x.log", status="waiting"),
        http=HttpSnapshot(url="http://127.0.0.1:1", state="down", reason="connection refused"),
        gpus=GpusSnapshot(available=False, reason="NVML Shared Library Not Found"))
    v = _pure_values(down, configured=("server_log", "http", "nvml"))
    ups = {dict(k[1])["source"]: val for k, val in v.items() if k[0] == "kdash_source_up"}
    assert ups == {"server_log": 0, "http": 0, "nvml": 0}
    assert v[("kdash_server_http_up", ())] == 0


def test_configured_sources_follow_the_config(tmp_path) -> None:
    assert configured_sources(Config(url="")) == {"nvml"}
    cfg = Config(log=tmp_path / "s.log", client_log=tmp_path / "c.log", outputs=("o/*.jsonl",))
    assert configured_sources(cfg) == {"server_log", "http", "nvml", "client_log", "outputs"}


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:
        assert resp.status == 200
        return resp.read().decode()


def test_scrape_over_http_parses_with_prometheus_client() -> None:
    current = {"snap": busy_snapshot()}
    handle = start_exporter(Config(metrics_port=0), lambda: current["snap"])
    try:
        assert handle.host == "127.0.0.1" and handle.port > 0
        parsed = _values(text_string_to_metric_families(_scrape(handle.url)))
        assert parsed[("kdash_gen_throughput_tokens_per_second", ())] == 1021.4
        assert parsed[("kdash_alert_active", (("alert", "throughput_plateau"),
                                              ("severity", "warn"), ("subject", "")))] == 1
        assert parsed[("kdash_gpu_memory_used_bytes", (("gpu", "1"),))] == 100 * GiB
        assert parsed[("kdash_server_restarts_total", ())] == 1
        assert ("kdash_process_resident_memory_bytes", ()) in parsed
        # Each scrape maps the snapshot published at that moment.
        current["snap"] = RunSnapshot(now=2.0)
        parsed = _values(text_string_to_metric_families(_scrape(handle.url)))
        assert ("kdash_gen_throughput_tokens_per_second", ()) not in parsed
        assert parsed[("kdash_snapshot_timestamp_seconds", ())] == 2.0
    finally:
        handle.close()
    with pytest.raises(urllib.error.URLError):
        _scrape(handle.url)
    handle.close()  # idempotent


def test_before_the_first_snapshot_only_build_info() -> None:
    handle = start_exporter(Config(metrics_port=0), lambda: None)
    try:
        names = {f.name for f in text_string_to_metric_families(_scrape(handle.url))}
        assert "kdash_build_info" in names
        assert not any(n.startswith("kdash_gen") or n.startswith("kdash_source") for n in names)
    finally:
        handle.close()


def test_port_in_use_is_a_one_line_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ExporterError, match=f"127.0.0.1:{port}"):
            start_exporter(Config(metrics_port=port), lambda: None)


def test_no_port_configured_is_refused() -> None:
    with pytest.raises(ExporterError):
        start_exporter(Config(), lambda: None)


def test_grafana_dashboard_uses_only_exported_names() -> None:
    import json
    import re
    from pathlib import Path

    board = json.loads((Path(__file__).resolve().parent.parent / "contrib" /
                        "grafana-kdash.json").read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    used = {n for e in exprs for n in re.findall(r"\bkdash_[a-z_]+", e)}
    exported = {f.name for f in families(busy_snapshot(), version="1")}
    assert used and used <= exported, sorted(used - exported)


def test_every_family_passes_the_checks_of_promtool_check_metrics() -> None:
    """Gauges never end in `_total` (Prometheus keeps that for counters), every family has
    help and base units; checked with promlint's rules, and by promtool where installed."""
    import dataclasses

    from exposition_lint import lint, promtool_problems
    from prometheus_client import generate_latest

    from dash.sources.prom_export import build_registry

    snap = busy_snapshot()  # every value known, so every family is in the text
    snap = dataclasses.replace(snap, totals=dataclasses.replace(snap.totals, total=1100))
    text = generate_latest(build_registry(lambda: snap, frozenset(
        ("server_log", "http", "nvml", "client_log", "outputs")))).decode()
    assert "kdash_run_expected 1100.0" in text and "kdash_partition_expected{" in text
    assert lint(text) == []
    checked = promtool_problems(text)
    assert checked is None or checked[0] == 0, checked


def test_a_dead_servers_figures_are_not_exported_as_if_it_ran() -> None:
    """A fleet's `sum(kdash_gen_throughput_tokens_per_second)` must not count a box whose server
    died: its last decode line said 1021 tok/s and 41 running; now it generates and runs nothing."""
    import dataclasses

    from dash.core.snapshot import Liveness

    snap = busy_snapshot()
    alive = _pure_values(snap)
    assert alive[("kdash_gen_throughput_tokens_per_second", ())] == 1021.4
    dead = dataclasses.replace(snap, liveness=Liveness(log="crashed", down=True))
    got = _pure_values(dead)
    assert got[("kdash_gen_throughput_tokens_per_second", ())] == 0.0
    assert got[("kdash_running_requests", ())] == 0.0
    assert got[("kdash_queued_requests", ())] == 0.0
    assert ("kdash_token_usage_ratio", ()) not in got
    # the server's last record is still there: when it last printed
    assert got[("kdash_server_last_record_timestamp_seconds", ())] == snap.now - 1
