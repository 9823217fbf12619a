"""A frozen, realistic run for UI tests, snapshots and screenshots: no clock, no files, no GPU.

Five partitions (one done, one resumed at 1374), eight 96 GB GPUs, three hours of throughput that
peaked at 1317 tok/s and settled near 606 with the KV cache full and a queue building.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from dash.core.alerts.model import AlertChanges
from dash.core.config import Config
from dash.core.launch import Launch, LaunchFigures
from dash.core.series import SeriesView
from dash.core.snapshot import (
    Alert,
    ClientProgress,
    ClientSnapshot,
    GpuProcess,
    GpuSnapshot,
    GpusSnapshot,
    HistoryEntry,
    HttpSnapshot,
    PartitionSnapshot,
    Peak,
    ProcessInfo,
    RankNow,
    RunSnapshot,
    RunTotals,
    ServerLogSnapshot,
    ServerNow,
)
from dash.core.state.run import RunState

NOW = 1_750_010_800.0
"""The fixture's instant (the clock is frozen here)."""
START = NOW - 3 * 3600 - 12 * 60
GB = 1024**3
GPU_TOTAL = 96 * GB
PEAK_AT = START + 32 * 60 + 9


def _wobble(i: int, k: float) -> float:
    """Deterministic noise in [-1, 1]."""
    return math.sin(i * 0.37 * k) * 0.6 + math.sin(i * 1.91 + k) * 0.4


def _series(fn: Callable[[float, int], float], step: float = 4.0, start: float = START) -> SeriesView:
    ts: list[float] = []
    vs: list[float] = []
    t, i = start + 95.0, 0
    while t <= NOW - 1:
        ts.append(round(t, 3))
        vs.append(round(fn(t - START, i), 3))
        t += step
        i += 1
    return SeriesView(tuple(ts), tuple(vs))


def _throughput(age: float, i: int) -> float:
    ramp = min(1.0, age / 900.0)
    peak_age = PEAK_AT - START
    if abs(age - peak_age) < 2.0:
        return 1317.0
    if age < peak_age:
        return 380 + 820 * ramp + 40 * _wobble(i, 1.0)
    decay = math.exp(-(age - peak_age) / 1500.0)
    return 606 + 560 * decay + 22 * _wobble(i, 1.3)


def _running(age: float, i: int) -> float:
    return float(min(128, int(20 + age / 12)) - (3 if i % 7 == 0 else 0))


def _queued(age: float, i: int) -> float:
    peak_age = PEAK_AT - START
    return 0.0 if age < peak_age + 600 else float(int((age - peak_age - 600) / 40) + i % 5)


def _usage(age: float, i: int) -> float:
    return round(min(0.98, 0.25 + age / 4000.0) + 0.01 * _wobble(i, 2.0), 3)


def server() -> ServerLogSnapshot:
    thr = _series(_throughput)
    last = {
        "kind": "decode", "line": 88412, "ts": "2025-06-15T17:46:39", "rank": "TP0",
        "engine": "sglang", "running_req": 128, "queue_req": 212, "tokens": 1_221_377,
        "token_usage": 0.97, "gen_throughput": 606.41, "cuda_graph": True,
    }
    events = (
        {"kind": "event", "event": "load_weights", "ts": "2025-06-15T14:34:02", "line": 311,
         "message": "Load weight end. type=Qwen3MoeForCausalLM, avail mem=38.21 GB, mem usage=54.88 GB."},
        {"kind": "event", "event": "cuda_graph", "ts": "2025-06-15T14:35:40", "line": 402,
         "message": "Capture cuda graph end. Time elapsed: 61.02 s. mem usage=3.02 GB. avail mem=6.52 GB."},
        {"kind": "event", "event": "ready", "ts": "2025-06-15T14:35:51", "line": 417,
         "message": "The server is fired up and ready to roll!"},
        {"kind": "event", "event": "retract", "ts": "2025-06-15T17:31:07", "line": 84102,
         "message": "KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.4521 -> 0.7000"},
    )
    facts = {
        "model": "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "tp_size": 8, "dp_size": 1,
        "max_total_num_tokens": 1_245_184, "kv_dtype": "fp8_e4m3", "kv_size_gb": 38.4,
        "avail_mem_gb": 6.52, "mem_fraction_static": 0.88, "hicache_size": 0,
        "max_running_requests": 128, "context_length": 32768,
    }
    return ServerLogSnapshot(
        path="/data/run7/sglang_server.log", engine="sglang", last_decode=last,
        peak=Peak(gen_throughput=1317.0, at=PEAK_AT, ts="2025-06-15T15:26:49"),
        events=events, facts=facts, gen_throughput=thr, running_req=_series(_running),
        queue_req=_series(_queued), token_usage=_series(_usage), last_record_at=NOW - 2.0,
        lines=88412, records=9321, unparsed=0, restarts=0, started_at=START + 110.0,
    )


def partitions() -> tuple[PartitionSnapshot, ...]:
    from ui.fake_quality import qualities

    q = qualities()
    return tuple(dataclasses.replace(p, quality=q.get(p.name)) for p in _partitions())


def _partitions() -> tuple[PartitionSnapshot, ...]:
    return (
        PartitionSnapshot("B1_glaive", "/data/run7/out/B1_glaive.jsonl", 10000, 10000, 6120,
                          None, None, status="done", last_write=NOW - 3100.0),
        PartitionSnapshot("B2_opencodeinstruct", "/data/run7/out/B2_opencodeinstruct.jsonl",
                          4210, 10000, 1374, 14.2, 24457.0, 22000.0, 27500.0, status="running",
                          last_write=NOW - 3.0, recent_rate_per_min=13.1),
        PartitionSnapshot("B3_agent", "/data/run7/out/B3_agent.jsonl", 812, 5000, 0, 9.6,
                          26175.0, status="running", last_write=NOW - 11.0, recent_rate_per_min=9.9),
        PartitionSnapshot("B4_deepseek", "/data/run7/out/B4_deepseek.jsonl", 0, 10000, 0, None,
                          None, status="pending"),
        PartitionSnapshot("B5_synth", "/data/run7/out/B5_synth.jsonl", 377, 2000, 0, 0.0, None,
                          status="stalled", last_write=NOW - 1260.0, recent_rate_per_min=0.0),
    )


def _gpu(i: int) -> GpuSnapshot:
    used = int((88.4 + 0.55 * i) * GB) if i != 3 else int(94.6 * GB)
    return GpuSnapshot(
        index=i, uuid=f"GPU-6f1c{i:02d}aa-0000-4000-8000-00000000000{i}", name="NVIDIA H20",
        memory_used=used, memory_total=GPU_TOTAL, memory_free=GPU_TOTAL - used,
        util_gpu=97.0 + i % 3, util_mem=61.0 + i, temperature_c=58.0 + 2 * i,
        power_w=312.0 + 7 * i, power_limit_w=500.0,
        processes=(GpuProcess(pid=41870 + i, name="sglang::scheduler", used_memory=used - GB),),
    )


def gpus() -> GpusSnapshot:
    cards = tuple(_gpu(i) for i in range(8))
    mem = {
        g.index: _series(lambda age, i, g=g: (g.memory_used or 0) * min(1.0, 0.2 + age / 300), 20.0)
        for g in cards
    }
    util = {g.index: _series(lambda age, i, g=g: g.util_gpu or 0.0, 20.0) for g in cards}
    return GpusSnapshot(available=True, reason=None, gpus=cards, memory_used_history=mem,
                        util_history=util, min_free_bytes=min(g.memory_free or 0 for g in cards),
                        sampled_at=NOW - 0.4)


def alerts() -> tuple[Alert, ...]:
    return (
        Alert("throughput_plateau", "warn", NOW - 2100.0,
              "gen throughput 606 tok/s, 46% of the 1317 peak, flat for 35m",
              "token_usage 0.97, queue 212, running 128 (max 128)",
              "KV-bound: lower --max-running-requests or raise --mem-fraction-static"),
        Alert("kv_saturated", "crit", NOW - 900.0, "KV cache 97% full and the queue grows",
              "token_usage 0.97 for 15m; queue 140 -> 212",
              "fewer concurrent requests, shorter max_new_tokens, or more GPUs",
              line="[2025-06-15 17:46:39 TP0] Decode batch. #running-req: 128, #token: 1221377, "
                   "token usage: 0.97, gen throughput (token/s): 606.41, #queue-req: 212"),
        Alert("partition_stalled", "warn", NOW - 1200.0, "B5_synth has written nothing for 21m",
              "377/2000 lines, last write 21m ago", "check the client log for an exception",
              subject="B5_synth"),
        Alert("gpu_headroom_low", "info", NOW - 300.0, "GPU 3 has 1.4 GB free",
              "94.6 of 96.0 GB used", "leave headroom: lower --mem-fraction-static", subject="3"),
    )


def history() -> tuple[HistoryEntry, ...]:
    """Alerts that came and went: two of the day before (the history file), and this session's."""
    day = 86400.0
    oom = Alert("server_oom", "crit", NOW - day - 7200.0,
                "CUDA out of memory in the server after a prefill of 32768 new tokens",
                "OOM at about 2025-06-14T16:06:40 (line 90211); avail mem after CUDA graph 0.82 GB, "
                "mem_fraction_static 0.93",
                "Lower --mem-fraction-static (now 0.93; try 0.88) to leave more headroom outside "
                "the KV cache; the server usually needs a restart after an OOM.",
                line="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.")
    restarted = Alert("server_restarted", "warn", NOW - day - 7020.0,
                      "16:06 OOM (mem fraction 0.93, 0.82 GB after CUDA graph) -> restarted 16:09 "
                      "with 0.88", "restart #1 at 2025-06-14T16:09:40 (line 90240)",
                      "The server came back after an OOM.")
    plateau, kv = alerts()[0], alerts()[1]
    return (
        HistoryEntry(oom, NOW - day - 7200.0, NOW - day - 7020.0, earlier=True),
        HistoryEntry(restarted, NOW - day - 7020.0, NOW - day - 3400.0, earlier=True),
        HistoryEntry(plateau, NOW - 2100.0),
        HistoryEntry(kv, NOW - 900.0),
    )


def client() -> ClientSnapshot:
    return ClientSnapshot(
        log_path="/data/run7/client.log", log_bytes=18_442_113, log_last_growth=NOW - 3.0,
        last_progress=ClientProgress(4210, 10000, 42.1, 0.24,
                                     "B2_opencodeinstruct:  42%|████▏     | 4210/10000 [3:12:05<6:42:10,  0.24it/s]"),
        resuming=1374,
        last_lines=("Resuming: 1374 already done", "B2_opencodeinstruct:  42%|████▏     | 4210/10000"),
        process_pattern="run_inference",
        processes=(ProcessInfo(41822, "python", "python run_inference.py --resume", START + 40.0),),
    )


_QWEN = {"model_path": "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "tp_size": 8, "dp_size": 1,
         "mem_fraction_static": 0.88, "kv_cache_dtype": "fp8_e4m3", "hicache_size": 0,
         "max_running_requests": 128, "chunked_prefill_size": 8192, "context_length": 32768}


def launches() -> tuple[Launch, ...]:
    """The fixture run's one start (its facts as a launch)."""
    return (Launch(
        key="2025-06-15T14:33:40|qwen", started_at=START + 90.0, start_ts="2025-06-15T14:33:40",
        start_line=1, engine="sglang", ready_at=START + 221.0, last_at=NOW - 2.0, args=_QWEN,
        capacity={"max_total_num_tokens": 1_245_184, "kv_size_gb": 38.4, "kv_dtype": "fp8_e4m3",
                  "weights_gb": 54.88, "weights_avail_gb": 38.21, "graph_avail_gb": 6.52},
        figures=LaunchFigures(peak=1309.0, peak_line=1317.0, steady=606.0, steady_s=5400.0,
                              running=128.0, queued=205.0, usage=0.97, decode_lines=2650,
                              retractions=1, retracted_reqs=3, prefix_hit=0.21)),)


def tuning_launches() -> tuple[Launch, ...]:
    """Four starts of one afternoon's tuning, the last one running (the launches view)."""
    base = {"model_path": "deepseek-ai/DeepSeek-V3", "tp_size": 8, "kv_cache_dtype": "auto",
            "enable_hierarchical_cache": False, "hicache_size": 0, "chunked_prefill_size": 8192,
            "max_running_requests": 1024, "context_length": 163840}
    plans = [
        (0.85, "auto", 0, 116_171, 8.34, "shutdown", 480.0, 848.0, 852.0),
        (0.93, "auto", 0, 212_000, 0.82, "oom", 250.0, None, 1122.0),
        (0.88, "auto", 48, 159_277, 5.47, "shutdown", 1080.0, 609.0, 1242.0),
        (0.90, "fp8_e4m3", 48, 376_029, 3.52, "running", 520.0, 1055.0, 1060.0),
    ]
    out, t = [], NOW - 2400.0
    for i, (mem, kv, host, tokens, graph, outcome, ran, steady, peak) in enumerate(plans):
        args = {**base, "mem_fraction_static": mem, "kv_cache_dtype": kv, "hicache_size": host,
                "enable_hierarchical_cache": bool(host)}
        cap = {"max_total_num_tokens": tokens, "kv_size_gb": 23.06 + 2 * i, "weights_gb": 58.2,
               "weights_avail_gb": 35.89, "graph_avail_gb": graph,
               "kv_dtype": "fp8_e4m3" if kv != "auto" else "bf16",
               **({"hicache_host_gb": float(host)} if host else {})}
        note = None if steady else "too short: 3m47s of decode lines, 5m00s needed"
        figures = LaunchFigures(peak=peak, peak_line=peak + 20, steady=steady, steady_note=note,
                                running=54.0 + 12 * i, queued=35.0 - 6 * i, usage=0.88,
                                decode_lines=120, prefix_hit=0.18,
                                prefill_before_end=32768 if outcome == "oom" else None)
        out.append(Launch(key=f"tune{i}", started_at=t, start_ts=f"tune {i}", engine="sglang",
                          last_at=t + ran, ended_at=None if outcome == "running" else t + ran,
                          outcome=outcome, reason="cuda_oom" if outcome == "oom" else None,
                          args=args, capacity=cap, figures=figures))
        t += ran + 20.0
    return tuple(out)


def settled(snap: RunSnapshot) -> RunSnapshot:
    """`snap` with what RunState derives from its parts: liveness and incidents."""
    from dash.core.alerts.incidents import group_incidents
    from dash.core.state.liveness import liveness

    live = liveness(snap.server, snap.http, snap.now, live_s=60.0, silent_after_s=300.0)
    return dataclasses.replace(snap, liveness=live, incidents=group_incidents(snap.alerts))


def snapshot(**changes: object) -> RunSnapshot:
    """The fixture run at NOW; keyword arguments replace top-level fields."""
    parts = partitions()
    snap = RunSnapshot(
        now=NOW, server=server(),
        http=HttpSnapshot(url="http://127.0.0.1:30000", state="up", since=START + 120.0,
                          since_seen=True,  # kdash watched it come up
                          latency_s=0.012, last_ok_at=NOW - 1.0,
                          metrics={"running_req": 128.0, "queue_req": 212.0, "token_usage": 0.97}),
        partitions=parts,
        totals=RunTotals(done=sum(p.done for p in parts), total=37000, rate_per_min=23.8, output_tokens_per_s=588.0,
                         eta_s=51200.0, last_to_finish="B4_deepseek"),
        client=client(), gpus=gpus(), alerts=alerts(), history=history(),
        launches=launches(),
    )
    return settled(dataclasses.replace(snap, **changes))  # type: ignore[arg-type]


SERVER_LINES = (
    "[2025-06-15 17:46:31 TP0] Prefill batch. #new-seq: 2, #new-token: 7424, #cached-token: 512, token usage: 0.97, #running-req: 126, #queue-req: 214",
    "[2025-06-15 17:46:35 TP0] Decode batch. #running-req: 128, #token: 1220004, token usage: 0.97, cuda graph: True, gen throughput (token/s): 601.22, #queue-req: 213",
    "[2025-06-15 17:46:36] INFO:     127.0.0.1:52114 - \"POST /generate HTTP/1.1\" 200 OK",
    "[2025-06-15 17:46:37 TP0] user prompt says [bold red]hello[/] and \x1b[31mred\x1b[0m [/nonsense]",
    "[2025-06-15 17:46:39 TP0] Decode batch. #running-req: 128, #token: 1221377, token usage: 0.97, cuda graph: True, gen throughput (token/s): 606.41, #queue-req: 212",
)
CLIENT_LINES = (
    "Resuming: 1374 already done",
    "B2_opencodeinstruct:  42%|████▏     | 4209/10000 [3:12:01<6:42:14,  0.24it/s]",
    "B2_opencodeinstruct:  42%|████▏     | 4210/10000 [3:12:05<6:42:10,  0.24it/s]",
)


class FrozenState(RunState):
    """A `RunState` whose picture is the fixture snapshot, plus the effects of `a` and `r`.

    Alert rules are not evaluated (the fixture's alerts are the picture); what is fed to its
    trackers is kept but not shown.
    """

    def __init__(self, snap: RunSnapshot | None = None) -> None:
        super().__init__(Config())
        self.snap = snap or snapshot()
        self.ticks = 0
        self.acknowledged: list[str] = []

    def tick_and_snapshot(self, now: float) -> tuple[AlertChanges, RunSnapshot]:
        self.ticks += 1
        return AlertChanges(), self.snap

    def snapshot(self, now: float) -> RunSnapshot:
        return self.snap

    def acknowledge(self, key: str) -> bool:
        self.acknowledged.append(key)
        alerts = tuple(
            dataclasses.replace(a, acknowledged=True) if a.key == key else a for a in self.snap.alerts
        )
        self.snap = settled(dataclasses.replace(self.snap, alerts=alerts))
        return True

    def reset_peak(self) -> None:
        self.snap = dataclasses.replace(
            self.snap, server=dataclasses.replace(self.snap.server, peak=None)
        )


def screen_text(app: object) -> str:
    """The app's screen as plain text (what a user would read), for assertions."""
    import io

    from rich.console import Console

    width, height = app.size  # type: ignore[attr-defined]
    console = Console(width=width, height=height, file=io.StringIO(), record=True,
                      force_terminal=True, color_system=None, legacy_windows=False)
    screen = app.screen  # type: ignore[attr-defined]
    console.print(screen._compositor.render_update(full=True, screen_stack=app._background_screens))  # type: ignore[attr-defined]
    return console.export_text()


async def wait_screen(pilot: object, app: object, until: Callable[[str], bool]) -> str:
    """The screen's text once `until` holds of it (30 s at most: a loaded machine is slow, a
    quick one returns at once)."""
    for _ in range(300):
        await pilot.pause(0.1)  # type: ignore[attr-defined]
        text = screen_text(app)
        if until(text):
            return text
    raise AssertionError(f"the screen never showed it:\n{screen_text(app)}")


def _rank(d: int, usage: float, running: int, queue: int, gen: float,
          live: bool = True) -> RankNow:
    return RankNow(rank=f"DP{d}", at=NOW - (2.0 if live else 95.0), ts="2025-06-15T17:46:37",
                   gen_throughput=gen, running_req=float(running), queue_req=float(queue),
                   token_usage=usage, tokens=usage * 155_648, interval_s=3.0, live=live,
                   lines=3100)


def dp_snapshot() -> RunSnapshot:
    """The fixture server as 8 DP-attention ranks: DP5 holds the long requests (its KV cache
    95 % full, the queue), DP6 stopped printing a minute and a half ago."""
    ranks = tuple(
        _rank(d, 0.95, 22, 212, 71.2) if d == 5 else
        _rank(d, 0.21 + 0.01 * (d % 3), 15 + d % 2, 0, 76.0 + d, live=d != 6)
        for d in range(8))
    live = [r for r in ranks if r.live]
    now = ServerNow(at=NOW - 2.0, gen_throughput=sum(r.gen_throughput or 0 for r in live),
                    running_req=sum(r.running_req or 0 for r in live),
                    queue_req=sum(r.queue_req or 0 for r in live), token_usage=0.95,
                    token_usage_mean=sum(r.token_usage or 0 for r in live) / len(live),
                    tokens=sum(r.tokens or 0 for r in live), ranks=ranks)
    srv = dataclasses.replace(server(), now=now, facts={**server().facts, "dp_size": 8})
    imbalance = Alert("rank_imbalance", "warn", NOW - 420.0,
                      "DP5's KV cache is 95% full while the other 6 ranks sit at 22%",
                      "median token usage over 2 min: DP5 0.95, the others 0.21-0.23 (median "
                      "0.22); DP5 running 22, queue 212; the others running 15 (median)",
                      "Requests are not spread evenly over the data-parallel ranks.")
    return snapshot(server=srv, servers=(srv,), alerts=(imbalance, *alerts()[:2]))


def pd_snapshot() -> RunSnapshot:
    """Two server logs: a PD prefill server and its decode server (the primary is prefill)."""
    base = server()
    prefill = dataclasses.replace(
        base, path="/data/run7/prefill.log", name="prefill", role="prefill",
        last_decode=None, peak=None, gen_throughput=SeriesView(),
        now=ServerNow(at=NOW - 1.0, running_req=0.0, queue_req=3.0, token_usage=0.12,
                      token_usage_mean=0.12, ranks=(RankNow(None, NOW - 1.0),)))
    decode = dataclasses.replace(
        base, path="/data/run7/decode.log", name="decode", role="decode",
        now=ServerNow(at=NOW - 2.0, gen_throughput=606.41, running_req=128.0, queue_req=212.0,
                      token_usage=0.97, token_usage_mean=0.97, tokens=1_221_377,
                      ranks=(RankNow(None, NOW - 2.0, gen_throughput=606.41),)))
    total = ServerNow(at=NOW - 1.0, gen_throughput=606.41, running_req=128.0, queue_req=215.0,
                      token_usage=0.97)
    return snapshot(server=prefill, servers=(prefill, decode), total=total,
                    total_from=(0, 1))
