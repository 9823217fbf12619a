"""The simulated runs, with their timings in simulated seconds (t=0 is the first log line).

Every server life starts the same way (offsets from its start): server_args +0, Load weight end +8,
KV Cache is allocated +9, Capture cuda graph end +14, max_total_num_tokens +15, uvicorn up +16
(HTTP answers from here, /health and /ready 503 until ready), ready banner +18. The client starts
(or resumes) right after the ready banner. Decode lines come every 40 decode steps (~3-4 s).

Scenarios (all on 8 GPUs of 96 GB by default, partitions B1_glaive done, B2_opencodeinstruct
resuming at 1374 of 5000, then B3_agent, B4_deepseek, B5_synth in turn):

- `healthy`: ready at t=18; ~1150 tok/s, ~96 running, queue 0-4, token usage ~0.55.
- `peak-plateau`: ramps up from t=20; peak at t=120 (1310-1317 tok/s, 121 running, 29-33 queued,
  usage ~0.74) until t=130; declines until t=600; plateau from t=600: ~606 tok/s (594-618),
  queue 100-118 (rising), token usage 0.87-0.89.
- `oom-crash-restart`: mem_fraction_static 0.93, 0.82 GB avail after CUDA graph capture,
  max_total_num_tokens 212000; a 32768-token prefill at t=300 followed by the OOM traceback,
  SIGQUIT and `Killed` (HTTP down from t=300); restart at t=360 with mem fraction 0.88:
  max_total_num_tokens=159277, 5.47 GB avail, ready at t=378, then ~989 tok/s.
- `buffered-client-log`: as healthy, but the client log stays 0 bytes; B2 grows 1374 -> 1399 by
  about t=35.
- `kv-saturation`: max_total_num_tokens 159277, ~40 running at ~4K tokens each; token usage
  >= 0.90 from t=120 with the queue rising ~0.25/s; retractions at t=200, 320, 440, 560; SIGTERM at
  t=600 (HTTP down); restart at t=620 with --kv-cache-dtype fp8_e4m3: 376029 tokens, ready at
  t=638, then ~1050 tok/s with the queue draining.
- `stalled-output`: as healthy, but from t=240 B2_opencodeinstruct's output stops growing while
  the server keeps decoding and serving requests.
- `dp-imbalance`: as healthy, on 8 DP-attention ranks (`DP0 TP0 EP0` ... `DP7 TP7 EP7`), but
  rank DP5 holds the long requests: its token usage ~0.95 and the whole queue while the other
  ranks sit at ~0.21 (with `--dp N` under 6, the last rank holds them).
- `tuning-session`: four launches on one log, each start rewriting it (`nohup ... > server.log`),
  in the 0.5.19 format (dict arguments, the KV pool's dtype): `--mem-fraction-static 0.85` from
  t=0 (116,171 KV tokens, 8.34 GB free after CUDA graph capture, ~850 tok/s from t=80), SIGTERM
  at t=480; 0.93 from t=500 (212,000 tokens, 0.82 GB free), a 32768-token prefill and an OOM at
  t=750 (4 min 10 s in); 0.88 with `--hicache-size 48` from t=780 (159,277 tokens, 5.47 GB free,
  48 GB host pool): the peak-plateau load shifted to its start (1317 tok/s at +120, ~606 from
  +600), SIGTERM at t=1860; 0.90 with `--kv-cache-dtype fp8_e4m3` (and hicache 48) from t=1880:
  376,029 tokens, 3.52 GB free, ~1050 tok/s from about +60, running on.
- `truncated-outputs`: as healthy, but 30% of the samples stop at the client's max_tokens
  (finish reason `length` at 10240 tokens for B2; 2% in the other scenarios), so fewer, longer
  samples arrive.
- `missing-reasoning`: as healthy, but from t=150 the samples come without their `<think>` block
  (the chat template stopped opening it).

Any scenario runs with data-parallel ranks with `dp` (`kdash sim --dp 8`): each rank prints its
own decode and prefill lines with its share of the requests and throughput.

Samples are SGLang `/generate` results (`text`, `meta_info` with `finish_reason`,
`completion_tokens`, `prompt_tokens`) under the client's own `id`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

READY_AFTER = 18.0
"""Seconds from a server's first line to its ready banner."""
UVICORN_AFTER = 16.0
"""Seconds from a server's first line to HTTP answering."""
GPU_TOTAL_GB = 95.59
"""GiB per GPU as SGLang counts it (a 96 GB card: 97887 MiB)."""


@dataclass(frozen=True, slots=True)
class Load:
    """The server's state while serving, at one moment."""

    running: int
    queue: int
    usage: float
    """KV token usage, 0..1."""
    gen: float
    """Generation throughput, tok/s."""


LoadFn = Callable[[float, random.Random], Load]


@dataclass(frozen=True, slots=True)
class Life:
    """One server process: from its server_args line to its end (crash or shutdown) or forever."""

    start: float
    load: LoadFn
    max_total_num_tokens: int = 300_000
    mem_fraction: float = 0.88
    kv_dtype: str = "auto"
    avail_after_graph_gb: float = 5.21
    end: float | None = None
    end_kind: str = ""
    """"oom" (a large prefill, traceback, SIGQUIT, Killed) or "sigterm" (operator restart)."""
    hicache_gb: float = 0.0
    """`--hicache-size`: the hierarchical cache's host pool per rank (0: off)."""
    rewrite: bool = False
    """This start rewrites the log from empty (`nohup ... > server.log`) instead of appending."""

    @property
    def ready_at(self) -> float:
        return self.start + READY_AFTER


@dataclass(frozen=True, slots=True)
class Scenario:
    """A named simulated run."""

    name: str
    lives: tuple[Life, ...]
    retractions: tuple[float, ...] = ()
    stall: tuple[str, float] | None = None
    """(partition, t): from t that partition's output stops growing."""
    buffered_client: bool = False
    dp: int = 1
    """DP-attention ranks the server runs with unless told otherwise (`--dp`)."""
    hot_rank: int | None = None
    """A DP rank that gets the long requests (its KV cache fills while the others idle)."""
    truncated_share: float = 0.02
    """Share of the samples that stop at the client's max_tokens (finish reason `length`)."""
    mean_output_tokens: float = 600.0
    """Mean completion tokens of a sample (with the truncated ones): sets the completion rate."""
    reasoning_lost_at: float | None = None
    """From this time on the samples come without their reasoning (a chat-template bug)."""
    notes: dict[str, float] = field(default_factory=dict)
    """Named times (simulated seconds) that tests and alert tests key on."""
    log_format: str | None = None
    """The log family this scenario is written in unless another is asked for."""


def _lerp(a: float, b: float, x: float) -> float:
    x = min(1.0, max(0.0, x))
    return a + (b - a) * x


def _healthy(t: float, rng: random.Random) -> Load:
    return Load(running=rng.randint(92, 100), queue=rng.randint(0, 4),
                usage=rng.uniform(0.53, 0.57), gen=rng.uniform(1110.0, 1190.0))


def _peak_plateau(t: float, rng: random.Random) -> Load:
    if t < 110:
        x = (t - 20) / 90
        return Load(running=int(_lerp(30, 121, x)), queue=int(_lerp(0, 30, x)),
                    usage=_lerp(0.2, 0.74, x), gen=_lerp(400, 1290, x) + rng.uniform(-10, 10))
    if t < 130:
        return Load(running=121, queue=rng.randint(29, 33), usage=rng.uniform(0.73, 0.75),
                    gen=1317.0 - rng.uniform(0.0, 7.0))
    if t < 600:
        x = (t - 130) / 470
        return Load(running=int(_lerp(121, 70, x)), queue=int(_lerp(31, 100, x)),
                    usage=_lerp(0.74, 0.88, x), gen=_lerp(1300, 610, x) + rng.uniform(-8, 8))
    return Load(running=rng.randint(68, 72), queue=100 + min(18, int((t - 600) / 60)),
                usage=rng.uniform(0.87, 0.89), gen=rng.uniform(594.0, 618.0))


def _oom_first(t: float, rng: random.Random) -> Load:
    return Load(running=rng.randint(105, 112), queue=rng.randint(8, 14),
                usage=_lerp(0.6, 0.86, (t - 20) / 280), gen=rng.uniform(1080.0, 1140.0))


def _oom_after(t: float, rng: random.Random) -> Load:
    return Load(running=rng.randint(62, 66), queue=rng.randint(15, 22),
                usage=rng.uniform(0.78, 0.82), gen=rng.uniform(975.0, 1003.0))


def _kv_saturated(t: float, rng: random.Random) -> Load:
    queue = 0 if t < 60 else int(0.25 * (t - 60))
    usage = _lerp(0.55, 0.92, (t - 20) / 100) if t < 120 else rng.uniform(0.92, 0.98)
    return Load(running=rng.randint(38, 41), queue=queue, usage=usage,
                gen=rng.uniform(400.0, 440.0))


def _kv_fp8(t: float, rng: random.Random) -> Load:
    return Load(running=rng.randint(88, 94), queue=max(8, 135 - int(0.5 * (t - 640))),
                usage=rng.uniform(0.84, 0.88), gen=rng.uniform(1020.0, 1080.0))


def _shifted(load: LoadFn, start: float, t: float, rng: random.Random) -> Load:
    """A load shape written for a server that starts at 0, for one that starts at `start`."""
    return load(t - start, rng)


def _tune_085(t: float, rng: random.Random) -> Load:
    """0.85: a small KV pool fills, so the server runs fewer requests at ~850 tok/s."""
    if t < 80:
        x = (t - 18) / 62
        return Load(running=int(_lerp(10, 54, x)), queue=int(_lerp(0, 34, x)),
                    usage=_lerp(0.2, 0.88, x), gen=_lerp(300, 850, x) + rng.uniform(-10, 10))
    return Load(running=rng.randint(52, 56), queue=rng.randint(30, 40),
                usage=rng.uniform(0.86, 0.90), gen=rng.uniform(830.0, 870.0))


def _tune_fp8(t: float, rng: random.Random) -> Load:
    """0.90 with fp8 KV: 2.36x the tokens, more running requests, the queue drains."""
    if t < 80:
        x = (t - 18) / 62
        return Load(running=int(_lerp(20, 91, x)), queue=int(_lerp(60, 20, x)),
                    usage=_lerp(0.2, 0.84, x), gen=_lerp(400, 1050, x) + rng.uniform(-10, 10))
    return Load(running=rng.randint(88, 94), queue=rng.randint(4, 12),
                usage=rng.uniform(0.82, 0.86), gen=rng.uniform(1020.0, 1080.0))


def _tuning() -> Scenario:
    """The four launches of one afternoon's tuning (README, "Launches")."""
    return Scenario("tuning-session", (
        Life(start=0.0, load=_tune_085, max_total_num_tokens=116_171, mem_fraction=0.85,
             avail_after_graph_gb=8.34, end=480.0, end_kind="sigterm"),
        Life(start=500.0, load=partial(_shifted, _oom_first, 500.0),
             max_total_num_tokens=212_000, mem_fraction=0.93, avail_after_graph_gb=0.82,
             end=750.0, end_kind="oom", rewrite=True),
        Life(start=780.0, load=partial(_shifted, _peak_plateau, 780.0),
             max_total_num_tokens=159_277, mem_fraction=0.88, avail_after_graph_gb=5.47,
             hicache_gb=48.0, end=1860.0, end_kind="sigterm", rewrite=True),
        Life(start=1880.0, load=partial(_shifted, _tune_fp8, 1880.0),
             max_total_num_tokens=376_029, mem_fraction=0.90, kv_dtype="fp8_e4m3",
             avail_after_graph_gb=3.52, hicache_gb=48.0, rewrite=True),
    ), notes={"ready": 18.0, "first_end": 480.0, "second": 500.0, "oom": 750.0, "third": 780.0,
              "plateau": 1380.0, "third_end": 1860.0, "fourth": 1880.0, "fourth_steady": 2300.0},
        log_format="0.5.19")


def _build() -> dict[str, Scenario]:
    healthy = (Life(start=0.0, load=_healthy),)
    return {s.name: s for s in (
        Scenario("healthy", healthy, notes={"ready": 18.0}),
        Scenario("peak-plateau", (Life(start=0.0, load=_peak_plateau),),
                 notes={"ready": 18.0, "peak": 120.0, "plateau": 600.0}),
        Scenario("oom-crash-restart", (
            Life(start=0.0, load=_oom_first, max_total_num_tokens=212_000, mem_fraction=0.93,
                 avail_after_graph_gb=0.82, end=300.0, end_kind="oom"),
            Life(start=360.0, load=_oom_after, max_total_num_tokens=159_277, mem_fraction=0.88,
                 avail_after_graph_gb=5.47),
        ), notes={"ready": 18.0, "oom": 300.0, "restart": 360.0, "ready_again": 378.0}),
        Scenario("buffered-client-log", healthy, buffered_client=True,
                 notes={"ready": 18.0, "b2_at_1399": 35.0}),
        Scenario("kv-saturation", (
            Life(start=0.0, load=_kv_saturated, max_total_num_tokens=159_277, mem_fraction=0.88,
                 avail_after_graph_gb=5.47, end=600.0, end_kind="sigterm"),
            Life(start=620.0, load=_kv_fp8, max_total_num_tokens=376_029, mem_fraction=0.88,
                 kv_dtype="fp8_e4m3", avail_after_graph_gb=5.47),
        ), retractions=(200.0, 320.0, 440.0, 560.0),
            notes={"ready": 18.0, "saturated": 120.0, "shutdown": 600.0, "restart": 620.0,
                   "ready_again": 638.0}),
        Scenario("stalled-output", healthy, stall=("B2_opencodeinstruct", 240.0),
                 notes={"ready": 18.0, "stall": 240.0}),
        Scenario("dp-imbalance", healthy, dp=8, hot_rank=5, notes={"ready": 18.0}),
        _tuning(),
        Scenario("truncated-outputs", healthy, truncated_share=0.3, mean_output_tokens=4000.0,
                 notes={"ready": 18.0}),
        Scenario("missing-reasoning", healthy, reasoning_lost_at=150.0,
                 notes={"ready": 18.0, "reasoning_lost": 150.0}),
    )}


SCENARIOS: dict[str, Scenario] = _build()
NAMES = tuple(SCENARIOS)


def get(name: str) -> Scenario:
    """The scenario called `name`, or ValueError listing the choices."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r} (choose from {', '.join(NAMES)})") from None
