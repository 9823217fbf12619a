"""The frozen picture of a run that the UI, `--once --json` and the Prometheus export all read.

Trackers in `dash.core` own mutable state; each produces its part of a `RunSnapshot` on demand.
Nothing here does I/O, and nothing here is mutable: a snapshot can cross a thread boundary and be
rendered without locks. `to_json` gives the document `kdash --once --json` prints (its keys are a
contract that scripts rely on; see README "JSON output").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dash.core.launch import Launch
from dash.core.samples.snapshot import QualitySnapshot
from dash.core.series import SeriesView

Record = dict[str, Any]
"""A parsed log line: `kind`, `line`, `ts`, `rank`, `engine`, then kind-specific keys."""

Severity = Literal["info", "warn", "crit"]
SEVERITY_ORDER: Mapping[str, int] = {"info": 0, "warn": 1, "crit": 2}


@dataclass(frozen=True, slots=True)
class Peak:
    """The highest generation throughput seen since start (or since the user reset it)."""

    gen_throughput: float
    at: float
    """Clock time (epoch seconds) of the record that set it."""
    ts: str | None
    """The record's own timestamp text, as printed in the log."""


@dataclass(frozen=True, slots=True)
class RankNow:
    """One data-parallel rank's latest stats line (an SGLang `DP3` tag, a vLLM `Engine 003:`)."""

    rank: str | None
    """The rank as kdash names it: `DP3`, `engine 3`; None for a server without ranks."""
    at: float
    """Clock time of its latest decode or prefill line."""
    ts: str | None = None
    gen_throughput: float | None = None
    running_req: float | None = None
    queue_req: float | None = None
    token_usage: float | None = None
    tokens: float | None = None
    input_throughput: float | None = None
    """Its latest prefill line's input throughput (a PD prefill server's figure)."""
    interval_s: float | None = None
    """Its logging interval: the median gap between its decode lines (None: not known yet)."""
    live: bool = True
    """Its latest line is recent enough (a few intervals) to count in the server's figures."""
    lines: int = 0
    """Stats lines seen from it."""
    token_usage_history: SeriesView = SeriesView()


@dataclass(frozen=True, slots=True)
class ServerNow:
    """The whole server from its ranks' latest lines: throughput, running and queued requests
    summed over the live ranks, token usage the highest live rank's (the one that runs out
    first) with the mean beside it. A server without ranks has one, named None."""

    at: float | None = None
    """Clock time of the newest line these figures include."""
    gen_throughput: float | None = None
    running_req: float | None = None
    queue_req: float | None = None
    token_usage: float | None = None
    token_usage_mean: float | None = None
    tokens: float | None = None
    input_throughput: float | None = None
    """The ranks' latest prefill lines' input throughput, summed: what a PD prefill server
    does, which prints no decode lines."""
    ranks: tuple[RankNow, ...] = ()
    """Every rank seen since the server started, live or dropped, in rank order."""

    @property
    def live_ranks(self) -> int:
        return sum(1 for r in self.ranks if r.live)

    @property
    def multi(self) -> bool:
        """More than one rank prints stats (data parallelism, several vLLM engines)."""
        return len(self.ranks) > 1

    def as_record(self) -> Record:
        """The figures under a decode record's keys (what compares with /metrics)."""
        return {"gen_throughput": self.gen_throughput, "running_req": self.running_req,
                "queue_req": self.queue_req, "token_usage": self.token_usage,
                "tokens": self.tokens, "input_throughput": self.input_throughput}


@dataclass(frozen=True, slots=True)
class LogClockView:
    """How a log's stamps relate to kdash's clock, as learned from lines as they arrived.

    A stamp read as the box's local time, plus `offset_s`, is the clock time the line was
    written (a server in a container stamping UTC on a box in Tokyo: +9 h). A log whose stamps
    run faster than the clock (a simulator at 10x) maps by `rate` instead."""

    offset_s: float = 0.0
    """Clock minus stamp (rate 1): a whole number of quarter hours (a zone), plus a skew of
    whole seconds where the server's clock is off."""
    rate: float = 1.0
    """Log seconds per clock second; 1 for a real server."""
    zoned: bool = False
    """The stamps carry their zone (RFC 3339): nothing to learn."""
    learned: bool = False
    """At least one line told the offset (or the rate)."""
    last_line_at: float | None = None
    """Clock time of the last stamped line."""
    box_utc_offset_s: float | None = None
    """The box's own zone at that time (seconds east of UTC)."""
    skew_s: float = 0.0
    """The part of `offset_s` that is no zone: how far the server's clock is off (clock minus
    stamp; 600: its stamps 10 min behind)."""

    @property
    def log_utc_offset_s(self) -> float | None:
        """The zone the log's stamps are in (seconds east of UTC), when it follows."""
        if self.box_utc_offset_s is None or self.rate != 1.0:
            return None
        return self.box_utc_offset_s - (self.offset_s - self.skew_s)

    @property
    def differs(self) -> bool:
        """The log's clock is not the box's: an offset, or a rate."""
        return self.rate != 1.0 or self.offset_s != 0.0


@dataclass(frozen=True, slots=True)
class ServerLogSnapshot:
    """What the server log says: charts, the last decode record, peak, events and facts."""

    path: str | None = None
    engine: str | None = None
    last_decode: Record | None = None
    last_prefill: Record | None = None
    peak: Peak | None = None
    events: tuple[Record, ...] = ()
    """The most recent event records (ready, oom, crash, restart...), oldest first, bounded."""
    facts: Mapping[str, Any] = field(default_factory=dict)
    """From startup lines: max_total_num_tokens, kv_dtype, kv_size_gb, avail_mem_gb (after CUDA
    graph capture), mem_fraction_static, tp_size, model, hicache_size, ..."""
    gen_throughput: SeriesView = SeriesView()
    running_req: SeriesView = SeriesView()
    queue_req: SeriesView = SeriesView()
    token_usage: SeriesView = SeriesView()
    accept_len: SeriesView = SeriesView()
    """Speculative decoding's acceptance length (empty when the server runs none)."""
    perf: Mapping[str, float] = field(default_factory=dict)
    """The last of each decoding figure the server estimates, as printed since it started:
    `accept_rate`, `tflops_per_gpu`, `gbps_per_gpu` (vLLM) or `read_gbps_per_gpu` /
    `write_gbps_per_gpu` (SGLang), `fwd_occupancy` (0..1); absent when it prints none."""
    last_record_at: float | None = None
    """Clock time of the last decode or prefill record (for `server_silent`)."""
    last_record_arrived_at: float | None = None
    """When kdash last read a decode or prefill line as it was written (not in the first read
    of the log): the log is live by this too, whatever its stamps say."""
    stamps_ahead: bool = False
    """The last stats line is stamped well ahead of the clock (a log in another time zone): its
    stamp says nothing about how fresh it is."""
    lines: int = 0
    records: int = 0
    unparsed: int = 0
    restarts: int = 0
    started_at: float | None = None
    """Clock time of the last server start (ready banner or first line), for uptime."""
    status: str = "ok"
    """Source status: "ok", "waiting" (file absent), "error"."""
    status_message: str | None = None
    name: str | None = None
    """What kdash calls this server when it watches several (the log file's name)."""
    role: str | None = None
    """"prefill" or "decode" for a PD-disaggregated server, from its stats lines or args."""
    now: ServerNow | None = None
    """The whole server's figures now (None before its first stats line)."""
    clock: LogClockView = LogClockView()

    @property
    def figures(self) -> Mapping[str, Any]:
        """The server's current figures under a decode record's keys: the ranks' sums where
        there are several, else the last decode line itself (as printed); a server that
        prints no decode lines (a PD prefill server) has its last stats line's levels."""
        if self.now is not None and (self.now.multi or self.last_decode is None):
            return self.now.as_record()
        return self.last_decode or {}


@dataclass(frozen=True, slots=True)
class FailingRoute:
    """A path whose last answer was an HTTP error (401, 403, 5xx), and how long it has been."""

    path: str
    status: int
    since: float
    """When it first gave this status (the streak's start)."""
    polls: int
    """Polls since then in which the server answered and this path's last answer stayed this
    status (a path asked once a minute counts every poll in between)."""
    answers: int = 1
    """Times the path was asked and gave this status in a row: a route asked once a minute
    that failed once has one, however many polls came since."""


@dataclass(frozen=True, slots=True)
class HttpSnapshot:
    """What polling the server over HTTP says."""

    url: str | None = None
    url_source: str | None = None
    """"flag" (--url), "server_args" (taken from the log) or "default" (the engine's port)."""
    url_why: str | None = None
    """Why this URL, for the user: "--url", "the log's server_args, port 8000"..."""
    log_port: int | None = None
    """The port the log's server_args name, when they do."""
    state: Literal["unknown", "up", "down", "degraded"] = "unknown"
    since: float | None = None
    since_seen: bool = False
    """Whether `since` is a change kdash saw; False for the state of the first poll, which
    began at some time before kdash started (the header gives no duration for it)."""
    reason: str | None = None
    """Why it is down/degraded: "connection refused", "timeout", "HTTP 500", "bad body"."""
    latency_s: float | None = None
    consecutive_failures: int = 0
    """Polls in a row the server did not answer at all (refused, timed out); a poll it
    answered, with an error too, ends the run (`server_down` counts these)."""
    last_ok_at: float | None = None
    """When the server last answered a poll, an error status too (401, 503): it was there, at
    this address."""
    facts: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    """Normalised metric names: running_req, queue_req, token_usage, gen_throughput, ..."""
    disagreement: str | None = None
    """Set when /metrics and the log disagree by a wide margin on running/queue/usage."""
    generated_at: float | None = None
    """When /metrics last showed the count of generated tokens growing (None: never seen)."""
    failing: tuple[FailingRoute, ...] = ()
    """The paths whose last answer was an HTTP error, in the order they were asked."""
    served: bool = False
    """The last poll got at least one 200: some route works (the errors are not everywhere)."""
    key_sent: bool = False
    """kdash sends an API key (`Authorization: Bearer ...`); never the key itself."""


LogLiveness = Literal["live", "quiet", "crashed", "waiting", "error", "none"]
HttpReach = Literal["up", "degraded", "down", "unknown", "off"]


@dataclass(frozen=True, slots=True)
class Liveness:
    """Two separate facts about the server, and what they mean together.

    The log says whether the server works (fresh decode/prefill lines); HTTP says whether its URL
    answers. A server whose log is live is not down, whatever its URL does.
    """

    log: LogLiveness = "none"
    """"live": a decode/prefill line within `log_live_s`; "quiet": none since; "crashed": an OOM
    or crash line after the last stats line of this server start; "waiting": no file yet;
    "error": the file cannot be read; "none": no log configured."""
    log_age_s: float | None = None
    """Seconds since the last decode/prefill line (None: none seen)."""
    http: HttpReach = "off"
    """"off": HTTP polling is turned off; "unknown": not polled yet."""
    http_ever_up: bool = False
    """The URL answered at least once since kdash started polling it."""
    down: bool = False
    """The server is down as far as kdash can tell: it crashed, or its URL does not answer and
    its log is not live."""
    down_since: float | None = None
    stale: bool = False
    """The log's figures (throughput, running, usage) are not current: they are from
    `values_at`. Set when the log is not live, whatever the reason."""
    values_at: float | None = None
    """Clock time of the last decode/prefill line."""
    starting: Record | None = None
    """The line that began a start still in progress (its arguments, or a restart), when the
    log shows one and the URL does not answer yet: the server is starting, not down."""


@dataclass(frozen=True, slots=True)
class PartitionSnapshot:
    """One dataset partition: one output file and its progress."""

    name: str
    path: str
    done: int
    total: int | None
    at_start: int
    """Lines present when kdash started (a resumed run), kept apart from lines written since."""
    rate_per_min: float | None
    eta_s: float | None
    eta_low_s: float | None = None
    eta_high_s: float | None = None
    status: Literal["counting", "pending", "running", "waiting", "stalled", "idle", "done",
                    "unreadable", "missing"] = "pending"
    """"waiting": was being written, but the server is down (crashed, or gone): no ETA until it
    serves again; "stalled": owes lines (known total) but has not grown for minutes; "idle": the same quiet
    with no total, which may just mean finished; "pending": no line written since kdash started
    (or no output file yet); "unreadable": the file is there but cannot be read (`error`);
    "missing": it was counted, and is not there any more (deleted or moved)."""
    error: str | None = None
    """Why the output file cannot be read now (permission denied, not a regular file)."""
    last_write: float | None = None
    """Clock time the file last grew."""
    counting_progress: float | None = None
    """0..1 while the first count of a large file runs in the background."""
    recent_rate_per_min: float | None = None
    quality: QualitySnapshot | None = None
    """What the samples in the file look like (None: none read, or reading them is off)."""
    recent_counts: tuple[tuple[float, int], ...] = ()
    """The last few (clock time, line count) points of the file's growth, oldest first."""

    @property
    def written(self) -> int:
        return max(0, self.done - self.at_start)

    def written_after(self, t: float) -> int:
        """Lines written after clock time `t`, as far as the recent points tell (at least)."""
        before = next((n for at, n in reversed(self.recent_counts) if at <= t), None)
        if before is None:  # every point kept is later: count from the oldest
            before = self.recent_counts[0][1] if self.recent_counts else self.done
        return max(0, self.done - before)

    @property
    def percent(self) -> float | None:
        if not self.total:
            return None
        return min(100.0, 100.0 * self.done / self.total)

    @property
    def over_total(self) -> str | None:
        """What more lines than prompts mean, when there are more: duplicates (a resumed
        client that wrote again what was done, two clients on one partition) or a wrong total;
        the count is not what it seems."""
        if not self.total or self.done <= self.total:
            return None
        return f"{self.done - self.total:,} more than the total: duplicates, or a wrong total?"


_HTTP_LAUNCH_FACTS = frozenset({
    "max_total_num_tokens", "token_capacity", "kv_size_gb", "weights_gb", "mem_fraction_static",
    "context_length", "max_running_requests", "chunked_prefill_size", "kv_cache_dtype",
    "hicache_size", "hicache_ratio"})
"""What `/server_info` says of one launch of the server (its sizes and the arguments that set
them), unlike its model and parallelism."""


@dataclass(frozen=True, slots=True)
class RunTotals:
    done: int = 0
    total: int | None = None
    rate_per_min: float | None = None
    eta_s: float | None = None
    last_to_finish: str | None = None
    output_tokens_per_s: float | None = None
    """Output tokens arriving in the samples per second, over every partition (client side)."""


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    name: str
    cmdline: str
    started_at: float | None
    cpu_percent: float | None = None


@dataclass(frozen=True, slots=True)
class ClientProgress:
    """The last tqdm bar seen in the client log."""

    done: int
    total: int | None
    percent: float | None
    rate: float | None
    """Items per second as tqdm printed it."""
    text: str
    label: str = ""
    """What precedes the bar (tqdm's `desc`, often the partition: `B2_opencodeinstruct:`)."""


@dataclass(frozen=True, slots=True)
class ClientSnapshot:
    log_path: str | None = None
    log_bytes: int | None = None
    """None when no client log is configured or the file does not exist."""
    log_last_growth: float | None = None
    log_still_since: float | None = None
    """Since when kdash has seen the log at its present size (its first read, or last growth)."""
    log_status: str = "ok"
    """"ok", "waiting" (not there yet) or "error" (`log_message` says why)."""
    log_message: str | None = None
    last_progress: ClientProgress | None = None
    bars: tuple[ClientProgress, ...] = ()
    """The last bar of each label, oldest first (a client with a bar per partition draws them
    in turn: the last one alone would change from one partition to another every redraw)."""
    resuming: int | None = None
    """N from `Resuming: N already done`."""
    events: tuple[Record, ...] = ()
    last_lines: tuple[str, ...] = ()
    process_pattern: str | None = None
    processes: tuple[ProcessInfo, ...] | None = None
    """None when no pattern is configured."""


@dataclass(frozen=True, slots=True)
class GpuProcess:
    pid: int
    name: str | None
    used_memory: int | None


@dataclass(frozen=True, slots=True)
class GpuSnapshot:
    """One GPU at one poll. A field NVML could not give is None; a lost GPU sets `lost`."""

    index: int
    uuid: str | None
    name: str | None
    memory_used: int | None
    memory_total: int | None
    memory_free: int | None
    util_gpu: float | None
    util_mem: float | None
    temperature_c: float | None
    power_w: float | None
    power_limit_w: float | None
    processes: tuple[GpuProcess, ...] = ()
    lost: bool = False
    error: str | None = None


@dataclass(frozen=True, slots=True)
class GpusSnapshot:
    available: bool = False
    reason: str | None = "not polled yet"
    """Why NVML is unavailable ("NVML Shared Library Not Found", "Driver/library version mismatch")."""
    gpus: tuple[GpuSnapshot, ...] = ()
    memory_used_history: Mapping[int, SeriesView] = field(default_factory=dict)
    util_history: Mapping[int, SeriesView] = field(default_factory=dict)
    min_free_bytes: int | None = None
    sampled_at: float | None = None


@dataclass(frozen=True, slots=True)
class Alert:
    """A problem kdash noticed. `id` is a contract (scripts and --json rely on it)."""

    id: str
    severity: Severity
    since: float
    """When its condition began, in the log's time where the log says (the OOM's line, the
    restart, the start of the fall): an alert that must hold first fires later, and its history
    entry says when."""
    message: str
    evidence: str
    hint: str
    subject: str | None = None
    """What it is about when one id can fire several times: a partition name, a GPU index."""
    line: str | None = None
    """The log line that shows it, when there is one."""
    acknowledged: bool = False
    hold_s: float = 0.0
    """How long its condition had to hold before it fired (0: at once, as an OOM's line)."""

    @property
    def key(self) -> str:
        return f"{self.id}:{self.subject}" if self.subject else self.id


@dataclass(frozen=True, slots=True)
class Incident:
    """Alerts that share a cause: the root (an OOM) and what it caused (the crash, the server
    down, the silent log), shown as one."""

    root: Alert
    consequences: tuple[Alert, ...] = ()

    @property
    def key(self) -> str:
        return self.root.key

    @property
    def alerts(self) -> tuple[Alert, ...]:
        return (self.root, *self.consequences)

    @property
    def severity(self) -> Severity:
        worst = max(self.alerts, key=lambda a: SEVERITY_ORDER[a.severity])
        return worst.severity

    @property
    def acknowledged(self) -> bool:
        return all(a.acknowledged for a in self.alerts)


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One alert as it came and went: this session's, or an earlier one's (from the history
    file). `cleared_at` None: still active (or, for an earlier session, active when it ended)."""

    alert: Alert
    fired_at: float
    cleared_at: float | None = None
    earlier: bool = False
    """From an earlier kdash session (read from the history file at start)."""


@dataclass(frozen=True, slots=True)
class RunSnapshot:
    """Everything the screen shows at one instant."""

    now: float
    server: ServerLogSnapshot = ServerLogSnapshot()
    http: HttpSnapshot = HttpSnapshot()
    partitions: tuple[PartitionSnapshot, ...] = ()
    totals: RunTotals = RunTotals()
    client: ClientSnapshot = ClientSnapshot()
    gpus: GpusSnapshot = GpusSnapshot()
    alerts: tuple[Alert, ...] = ()
    notices: tuple[str, ...] = ()
    """Non-fatal problems to show once (a vanished file, a garbage config value)."""
    liveness: Liveness = Liveness()
    unmatched_globs: tuple[str, ...] = ()
    """`--outputs` globs that match no file (checked at every poll)."""
    incidents: tuple[Incident, ...] = ()
    """The active alerts grouped by cause, the one to act on first (see `alerts` for each)."""
    history: tuple[HistoryEntry, ...] = ()
    """Every alert of this session and the last ones of earlier sessions, oldest first."""
    servers: tuple[ServerLogSnapshot, ...] = ()
    """Every server log watched, `server` (the first) included; empty in hand-made snapshots."""
    total: ServerNow | None = None
    """Figures summed over the servers where there are several (None: `server.now` is it)."""
    total_from: tuple[int, ...] = ()
    """Indexes into `servers` of those `total` sums: the live ones (a quiet or crashed server's
    last figures are not current), every one with figures when none is live."""
    server_liveness: tuple[Liveness, ...] = ()
    """Each server's liveness where there are several (`liveness` is the first's)."""
    launches: tuple[Launch, ...] = ()
    """Every start of the (primary) server's log seen and remembered, in start order; the last
    is the current one."""
    server_launches: tuple[tuple[Launch, ...], ...] = ()
    """Each server's launches where there are several (`launches` is the first's)."""

    def for_server(self, index: int) -> RunSnapshot:
        """The run as one of its servers sees it: `server` that one, its liveness, the HTTP
        figures only for the first (the one URL polled). Itself when there is one server."""
        if len(self.servers) < 2:
            return self
        i = index % len(self.servers)
        server = self.servers[i]
        http = self.http if i == 0 else HttpSnapshot()
        live = self.server_liveness[i] if i < len(self.server_liveness) else self.liveness
        launches = self.server_launches[i] if i < len(self.server_launches) else self.launches
        return dataclasses.replace(self, server=server, servers=(server,), total=None,
                                   total_from=(), http=http,
                                   liveness=live, server_liveness=(), launches=launches,
                                   server_launches=())

    def polled_for(self, index: int) -> str | None:
        """The server whose URL is polled, when server `index` is not it (the one URL is the
        first server's); None for the first, one server, or HTTP off."""
        if len(self.servers) < 2 or not index % len(self.servers) or self.liveness.http == "off":
            return None
        return self.servers[0].name or "the first server"

    @property
    def figures(self) -> Mapping[str, Any]:
        """The run's current server figures: summed over the servers where there are several."""
        return self.total.as_record() if self.total is not None else self.server.figures

    @property
    def left_out(self) -> tuple[int, ...]:
        """Indexes into `servers` of those with figures that `total` does not sum."""
        if self.total is None:
            return ()
        return tuple(i for i, s in enumerate(self.servers)
                     if s.now is not None and i not in self.total_from)

    @property
    def figures_liveness(self) -> tuple[bool, float | None]:
        """Whether `figures` are old (no server they sum is live) and the age of the freshest
        one's last stats line (None: unknown)."""
        if self.total is None or not self.server_liveness:
            return self.liveness.stale, self.liveness.log_age_s
        lives = [self.server_liveness[i] for i in self.total_from
                 if i < len(self.server_liveness)]
        ages = [x.log_age_s for x in lives if x.log_age_s is not None]
        return all(x.stale for x in lives), min(ages) if ages else None

    @property
    def facts(self) -> dict[str, Any]:
        """Server facts as shown: the log's startup lines, HTTP's answers filling what they lack
        (but a restarted server's, while its URL does not answer: what it answered was of the
        server before, whose pool is not the one the new start allocates)."""
        http = self.http.facts
        if self.server.restarts and self.http.state != "up":
            http = {k: v for k, v in http.items() if k not in _HTTP_LAUNCH_FACTS}
        return {**http, **self.server.facts}
