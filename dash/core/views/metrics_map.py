"""Which Prometheus samples a RunSnapshot stands for: the `kdash_*` names, labels and values.

Pure: a snapshot in, plain frozen families out. `dash.sources.prom_export` turns them into
prometheus_client metric families on each scrape, so the names live in one place and can be
tested without a server. A value kdash does not know (no decode line yet, a field NVML could not
read) is left out rather than exported as 0: a missing series is honest, a fake zero is not.
Units follow Prometheus practice: seconds, bytes, and ratios in 0..1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from dash.core.snapshot import GpusSnapshot, RunSnapshot, ServerLogSnapshot
from dash.core.views.family import Family
from dash.core.views.metrics_quality import quality_families

SOURCES = ("server_log", "http", "nvml", "client_log", "outputs")
"""The sources `kdash_source_up` reports on, by the `source` label."""

Labels = tuple[tuple[str, str], ...]


class _Builder:
    """Collects families in declaration order, dropping samples whose value is unknown."""

    def __init__(self) -> None:
        self.families: list[Family] = []

    def add(self, name: str, doc: str, value: Any, kind: str = "gauge") -> None:
        self.many(name, doc, (), [((), value)], kind)

    def many(
        self,
        name: str,
        doc: str,
        labels: tuple[str, ...],
        rows: Iterable[tuple[tuple[str, ...], Any]],
        kind: str = "gauge",
    ) -> None:
        samples = tuple((lv, v) for lv, v in ((lv, _num(v)) for lv, v in rows) if v is not None)
        if samples:
            fam_kind: Literal["gauge", "counter"] = "counter" if kind == "counter" else "gauge"
            self.families.append(Family(name, doc, fam_kind, labels, samples))

    def build(self) -> tuple[Family, ...]:
        return tuple(self.families)


def build_info(version: str) -> Family:
    """`kdash_build_info{version="..."} 1`: lets a fleet query see which kdash each box runs."""
    return Family("kdash_build_info", "kdash version (always 1).", "gauge", ("version",),
                  (((version,), 1.0),))


def _num(value: Any) -> float | None:
    """A finite number as float; None for anything else (missing, text, bool noise, NaN)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and value == value and abs(value) != float("inf"):
        return float(value)
    return None


def families(
    snap: RunSnapshot, configured: Iterable[str] = SOURCES, version: str | None = None
) -> tuple[Family, ...]:
    """Every `kdash_*` family for one snapshot.

    `configured` names the sources this kdash watches: only those get a `kdash_source_up` sample,
    so a box without a client log does not look like one whose client log is broken.
    """
    b = _Builder()
    if version is not None:
        b.families.append(build_info(version))
    b.add("kdash_snapshot_timestamp_seconds",
          "When kdash last built its picture of the run (epoch seconds); stale means stuck.",
          snap.now)
    _server(b, snap)
    _servers(b, snap)
    _ranks(b, snap)
    _http(b, snap)
    _partitions(b, snap)
    b.families.extend(quality_families(snap))
    _gpus(b, snap)
    _client(b, snap)
    _health(b, snap, set(configured))
    _alerts(b, snap)
    return b.build()


def _server(b: _Builder, snap: RunSnapshot) -> None:
    s = snap.server
    d: Mapping[str, Any] = snap.figures
    livenesses = snap.server_liveness or (snap.liveness,)
    if all(live.down for live in livenesses):  # (with several, the live ones are summed)
        # A dead server generates nothing and runs nothing: its last lines' figures would keep
        # a fleet's `sum(kdash_gen_throughput_tokens_per_second)` counting it.
        d = {"gen_throughput": 0.0, "running_req": 0, "queue_req": 0}
    b.add("kdash_gen_throughput_tokens_per_second",
          "Generation throughput of the whole server (its DP ranks summed; every live server "
          "watched, summed), from the server log's latest decode lines; 0 while it is down.",
          d.get("gen_throughput"))
    b.add("kdash_running_requests", "Running requests (latest decode lines, ranks summed; "
          "0 while the server is down).", d.get("running_req"))
    b.add("kdash_queued_requests", "Queued requests (latest decode lines, ranks summed; "
          "0 while the server is down).", d.get("queue_req"))
    b.add("kdash_token_usage_ratio",
          "KV cache token usage, 0..1: the highest rank's (the first to run out); absent while "
          "the server is down.", d.get("token_usage"))
    b.add("kdash_max_total_num_tokens", "KV cache capacity in tokens (server startup line).",
          s.facts.get("max_total_num_tokens"))
    # With several servers the throughput above is their sum, and no peak of that sum is kept:
    # the first server's peak here would read as a peak below the current figure (each
    # server's own is `kdash_server_peak_gen_throughput_tokens_per_second`), as the header
    # shows no peak beside a sum.
    b.add("kdash_peak_gen_throughput_tokens_per_second",
          "Highest generation throughput seen since kdash started (or the peak was reset); "
          "absent with several servers (see kdash_server_peak_gen_throughput_tokens_per_second).",
          s.peak.gen_throughput if s.peak and len(snap.servers) <= 1 else None)
    b.add("kdash_server_last_record_timestamp_seconds",
          "When the server log last printed a decode or prefill line (epoch seconds).",
          s.last_record_at)
    b.add("kdash_server_restarts", "Server restarts seen in the log since kdash started.",
          s.restarts if s.path else None, "counter")
    b.add("kdash_server_log_unparsed_lines",
          "Stats-like log lines that did not parse (format drift).",
          s.unparsed if s.path else None, "counter")


def _label(s: ServerLogSnapshot) -> str:
    return s.name or s.path or "?"


def _servers(b: _Builder, snap: RunSnapshot) -> None:
    """Each server's own figures, by its name, when kdash watches several."""
    servers = snap.servers if len(snap.servers) > 1 else ()
    lab = ("server",)

    def rows(key: str) -> list[tuple[tuple[str, ...], Any]]:
        return [((_label(s),), s.figures.get(key)) for s in servers]

    b.many("kdash_server_gen_throughput_tokens_per_second",
           "Generation throughput of one server (its DP ranks summed).", lab,
           rows("gen_throughput"))
    b.many("kdash_server_peak_gen_throughput_tokens_per_second",
           "Highest generation throughput of one server since kdash started.", lab,
           [((_label(s),), s.peak.gen_throughput if s.peak else None) for s in servers])
    b.many("kdash_server_running_requests", "Running requests of one server.", lab,
           rows("running_req"))
    b.many("kdash_server_queued_requests", "Queued requests of one server.", lab,
           rows("queue_req"))
    b.many("kdash_server_token_usage_ratio", "KV cache token usage of one server (highest rank).",
           lab, rows("token_usage"))
    b.many("kdash_server_summed",
           "1 while a server's figures count in the run's totals (0: its log is not live while "
           "another's is; left out of the sums).", lab,
           [((_label(s),), i in snap.total_from) for i, s in enumerate(servers)
            if s.now is not None])
    b.many("kdash_server_log_clock_offset_seconds",
           "Seconds the server log's stamps are behind the clock (a log in another zone).", lab,
           [((_label(s),), s.clock.offset_s) for s in servers if s.clock.learned])


def _ranks(b: _Builder, snap: RunSnapshot) -> None:
    """One series per data-parallel rank (vLLM engine), for servers that have several."""
    several = len(snap.servers) > 1
    lab = ("server", "rank") if several else ("rank",)
    rows: dict[str, list[tuple[tuple[str, ...], Any]]] = {
        k: [] for k in ("gen_throughput", "running_req", "queue_req", "token_usage", "live")}
    for s in snap.servers or (snap.server,):
        if s.now is None or not s.now.multi:
            continue
        head = (_label(s),) if several else ()
        for r in s.now.ranks:
            labels = (*head, r.rank or "")
            for key in ("gen_throughput", "running_req", "queue_req", "token_usage"):
                rows[key].append((labels, getattr(r, key)))
            rows["live"].append((labels, r.live))
    b.many("kdash_rank_gen_throughput_tokens_per_second",
           "Generation throughput of one DP rank (vLLM engine), from its latest decode line.",
           lab, rows["gen_throughput"])
    b.many("kdash_rank_running_requests", "Running requests of one DP rank.", lab,
           rows["running_req"])
    b.many("kdash_rank_queued_requests", "Queued requests of one DP rank.", lab,
           rows["queue_req"])
    b.many("kdash_rank_token_usage_ratio", "KV cache token usage of one DP rank, 0..1.", lab,
           rows["token_usage"])
    b.many("kdash_rank_live",
           "1 while a DP rank prints stats lines (0: it stopped; left out of the sums).", lab,
           rows["live"])
    b.add("kdash_log_clock_offset_seconds",
          "Seconds the server log's stamps are behind the clock (a log in another zone).",
          snap.server.clock.offset_s if snap.server.clock.learned and not several else None)


def _http(b: _Builder, snap: RunSnapshot) -> None:
    h = snap.http
    if h.url is None or h.state == "unknown":
        return
    b.add("kdash_server_http_up", "1 when the server answers over HTTP (up or degraded), else 0.",
          h.state in ("up", "degraded"))
    b.add("kdash_server_http_latency_seconds", "Latency of the last HTTP poll.", h.latency_s)


def _partitions(b: _Builder, snap: RunSnapshot) -> None:
    parts = snap.partitions
    lab = ("partition",)
    b.many("kdash_partition_done", "Finished samples (lines) in the partition's output file.",
           lab, [((p.name,), p.done) for p in parts])
    b.many("kdash_partition_expected", "Expected samples in the partition (when known).",
           lab, [((p.name,), p.total) for p in parts])
    b.many("kdash_partition_rate_per_second", "Samples finished per second, recent rate.",
           lab, [((p.name,), _per_s(p.rate_per_min)) for p in parts])
    b.many("kdash_partition_eta_seconds", "Estimated seconds until the partition is done.",
           lab, [((p.name,), p.eta_s) for p in parts])
    t = snap.totals
    if parts:
        b.add("kdash_run_done", "Finished samples over all partitions.", t.done)
        b.add("kdash_run_expected", "Expected samples over all partitions (when all are known).",
              t.total)
        b.add("kdash_run_rate_per_second", "Samples finished per second over all partitions.",
              _per_s(t.rate_per_min))
        b.add("kdash_run_eta_seconds", "Estimated seconds until the last partition is done.",
              t.eta_s)


def _per_s(rate_per_min: float | None) -> float | None:
    return None if rate_per_min is None else rate_per_min / 60.0


def _gpus(b: _Builder, snap: RunSnapshot) -> None:
    g = [x for x in snap.gpus.gpus if not x.lost] if snap.gpus.available else []
    lab = ("gpu",)
    b.many("kdash_gpu_memory_used_bytes", "GPU memory used.", lab,
           [((str(x.index),), x.memory_used) for x in g])
    b.many("kdash_gpu_memory_total_bytes", "GPU memory total.", lab,
           [((str(x.index),), x.memory_total) for x in g])
    b.many("kdash_gpu_memory_free_bytes", "GPU memory free.", lab,
           [((str(x.index),), x.memory_free) for x in g])
    b.many("kdash_gpu_utilization_ratio", "GPU utilization, 0..1.", lab,
           [((str(x.index),), None if x.util_gpu is None else x.util_gpu / 100.0) for x in g])
    b.many("kdash_gpu_temperature_celsius", "GPU temperature.", lab,
           [((str(x.index),), x.temperature_c) for x in g])
    b.many("kdash_gpu_power_watts", "GPU power draw.", lab,
           [((str(x.index),), x.power_w) for x in g])


def _client(b: _Builder, snap: RunSnapshot) -> None:
    c = snap.client
    b.add("kdash_client_log_bytes", "Size of the client log.", c.log_bytes)
    if c.processes is not None:
        b.add("kdash_client_processes", "Client processes matching the configured pattern.",
              len(c.processes))


def source_up(snap: RunSnapshot) -> dict[str, bool | None]:
    """Whether each source currently gives kdash what it needs; None while not yet known."""
    http_known = snap.http.state != "unknown"
    g = snap.gpus
    nvml_known = g.available or g.sampled_at is not None or g.reason != GpusSnapshot().reason
    return {
        "server_log": snap.server.path is not None and snap.server.status == "ok",
        "http": snap.http.state in ("up", "degraded") if http_known else None,
        "nvml": snap.gpus.available if nvml_known else None,
        "client_log": snap.client.log_bytes is not None,
        "outputs": bool(snap.partitions),
    }


def _health(b: _Builder, snap: RunSnapshot, configured: set[str]) -> None:
    up = source_up(snap)
    b.many("kdash_source_up",
           "1 when kdash can read the source (server_log, http, nvml, client_log, outputs).",
           ("source",), [((name,), up[name]) for name in SOURCES if name in configured])


def _alerts(b: _Builder, snap: RunSnapshot) -> None:
    seen: set[tuple[str, ...]] = set()
    rows: list[tuple[tuple[str, ...], Any]] = []
    for a in snap.alerts:
        key = (a.id, a.severity, a.subject or "")
        if key not in seen:
            seen.add(key)
            rows.append((key, 1))
    b.many("kdash_alert_active", "1 for each active alert (id, severity, subject).",
           ("alert", "severity", "subject"), rows)
    counts = {sev: 0 for sev in ("info", "warn", "crit")}
    for a in snap.alerts:
        counts[a.severity] = counts.get(a.severity, 0) + 1
    # Always exported (zeros included), so "no alerts" reads 0 rather than an absent series.
    b.many("kdash_alerts", "Number of active alerts by severity.", ("severity",),
           [((sev,), n) for sev, n in counts.items()])
