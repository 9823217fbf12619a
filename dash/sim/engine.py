"""The simulation itself: a pure function of simulated time and the seed (no I/O, no clock).

`Simulation.step(sim_now)` runs every whole simulated second up to `sim_now` and returns what
happened in them: server log lines, client log text, JSONL output lines per partition. Each second
draws from its own `random.Random(seed, second)`, so the result depends only on seed and time,
never on how the calls were chunked.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from dash.sim import scenarios
from dash.sim.client import MAX_TOKENS, ClientModel, SampleStyle, output_line
from dash.sim.formats import LogFormat
from dash.sim.scenarios import UVICORN_AFTER, Life, Load, Scenario

DECODE_LOG_INTERVAL = 40
MODEL = "deepseek-ai/DeepSeek-V3"
MODEL_TYPE = "DeepseekV3ForCausalLM"
WEIGHTS_GB = 58.20
CONTEXT_LEN = 163840
MAX_RUNNING = 1024


@dataclass(slots=True)
class StepOutput:
    """What one `step` produced."""

    server: list[str] = field(default_factory=list)
    """Complete server-log lines, each ending in a newline."""
    client: str = ""
    """Client-log text (tqdm bars carry `\\r` and no newline)."""
    outputs: dict[str, list[str]] = field(default_factory=dict)
    """Partition name -> complete JSONL lines appended."""
    rewrite_at: int | None = None
    """A server start rewrote the log: `server[rewrite_at:]` replace the file's contents (the
    lines before it are appended first)."""


@dataclass(slots=True)
class Counters:
    """What the HTTP endpoints report, updated as the log lines are written."""

    load: Load | None = None
    """The server's state now (GPU utilisation follows it)."""
    reported: Load | None = None
    """The state as of the last decode line (what /metrics and /server_info report)."""
    last_decode_at: float | None = None
    ranks: tuple[Load, ...] = ()
    """Each DP rank's figures as its last decode line printed them (one without DP)."""
    prompt_tokens: int = 0
    generation_tokens: int = 0
    requests: int = 0
    retractions: int = 0
    new_token_ratio: float = 0.35


class Simulation:
    """A scenario's run, advanced in whole simulated seconds."""

    def __init__(self, scenario: Scenario, *, seed: int = 0, start_epoch: float,
                 log_format: str = "0.5.12", gpus: int = 8, port: int = 30000,
                 inputs_dir: str = "inputs", dp: int | None = None,
                 sample_bytes: tuple[int, int] | None = None) -> None:
        self.scenario = scenario
        self.sample_bytes = sample_bytes
        """(low, high) bytes of a sample's text, drawn per sample; None: short samples."""
        self.seed = seed
        self.epoch0 = float(start_epoch)
        self.fmt = LogFormat(log_format)
        self.tp = gpus
        self.dp = scenario.dp if dp is None else dp
        """DP-attention ranks: each prints its own stats lines (1: none)."""
        if self.dp < 1 or gpus % self.dp:
            raise ValueError(f"dp must divide the number of GPUs ({gpus}), got {self.dp}")
        hot = scenario.hot_rank
        self.hot_rank = None if hot is None else min(hot, self.dp - 1)
        """The rank with the long requests; the last one when `--dp` gives fewer ranks than
        the scenario's (DP5 of 8 is DP3 of 4), so the imbalance is there at any rank count."""
        self.port = port
        self.inputs_dir = inputs_dir
        self.client = ClientModel(stall=scenario.stall)
        self.counters = Counters()
        self.next_tick = 0
        self._acc_steps = 0.0
        self._acc_done = 0.0
        self._last_prefill = 0.0
        self._req = 0

    # -- queries -----------------------------------------------------------------------------
    @property
    def sim_time(self) -> float:
        """Simulated seconds processed so far."""
        return float(self.next_tick)

    def life_at(self, t: float) -> Life | None:
        """The server process alive at t (from its first line to its end), if any."""
        for life in self.scenario.lives:
            if life.start <= t and (life.end is None or t < life.end):
                return life
        return None

    def http_up(self, t: float) -> bool:
        life = self.life_at(t)
        return life is not None and t >= life.start + UVICORN_AFTER

    def ready(self, t: float) -> bool:
        life = self.life_at(t)
        return life is not None and t >= life.ready_at

    def pid(self, life: Life) -> int:
        return 40_000 + 1_000 * self.scenario.lives.index(life) + self.seed % 997

    # -- stepping ----------------------------------------------------------------------------
    def step(self, sim_now: float) -> StepOutput:
        """Run every whole second up to `sim_now`; return what was written."""
        out = StepOutput()
        while self.next_tick <= sim_now:
            self._tick(self.next_tick, out)
            self.next_tick += 1
        return out

    def _tick(self, k: int, out: StepOutput) -> None:
        rng = random.Random(self.seed * 1_000_003 + k)
        t = float(k)
        for life in self.scenario.lives:
            self._startup(life, t, out)
            if life.end is not None and t == life.end:
                self._end(life, t, rng, out)
        life = self.life_at(t)
        if life is not None and t >= life.ready_at:
            if not self.client.started:
                out.client += self.client.start(t, self.inputs_dir)
            if t in self.scenario.retractions:
                self._retract(life, t, rng, out)
            self._serve(life, t, rng, out)
        elif self.client.started and k % 10 == 0:
            out.client += self.client.warn(
                "WARNING: request failed: httpx.ConnectError: [Errno 111] Connection refused;"
                " retrying in 10 s")

    def _line(self, out: StepOutput, t: float, text: str, rank: int | None = 0) -> None:
        out.server.append(f"{self.fmt.prefix(self.epoch0 + t, rank, self.tp, self.dp)}{text}\n")

    def dp_head(self, d: int) -> int:
        """The TP rank that prints DP rank d's stats (its attention group's first)."""
        return d * (self.tp // self.dp)

    def _startup(self, life: Life, t: float, out: StepOutput) -> None:
        """The startup lines that fall in second t of this life."""
        dt = t - life.start
        f, avail0 = self.fmt, scenarios.GPU_TOTAL_GB - 1.5
        kv_gb = life.mem_fraction * scenarios.GPU_TOTAL_GB - WEIGHTS_GB
        pool_avail = scenarios.GPU_TOTAL_GB * (1 - life.mem_fraction) - 0.06
        if dt == 0:
            self.counters = Counters()
            if life.rewrite:
                out.rewrite_at = len(out.server)
            self._line(out, t, f.server_args(MODEL, self.tp, life.mem_fraction, life.kv_dtype,
                                            MAX_RUNNING, CONTEXT_LEN, self.port,
                                            life.hicache_gb, self.dp), None)
        elif dt == 3:
            self._line(out, t, f.load_weight_begin(avail0))
        elif dt == 8:
            for r in range(self.tp):
                self._line(out, t, f.load_weight_end(MODEL_TYPE, avail0 - WEIGHTS_GB, WEIGHTS_GB,
                                                    4.87 + 0.01 * r), r)
        elif dt == 9:
            for r in range(self.tp):
                self._line(out, t, f.kv_allocated(life.max_total_num_tokens, kv_gb / 2, kv_gb / 2,
                                                  life.kv_dtype), r)
            self._line(out, t, f.memory_pool_end(pool_avail))
            for r in range(self.tp if life.hicache_gb else 0):
                self._line(out, t, f.hicache_host(life.hicache_gb, life.kv_dtype), r)
        elif dt == 10:
            self._line(out, t, f.graph_begin(pool_avail - 0.06))
        elif dt == 14:
            after = life.avail_after_graph_gb
            self._line(out, t, f.graph_end(3.84, pool_avail - 0.06 - after, after))
        elif dt == 15:
            self._line(out, t, f.capacity(life.max_total_num_tokens, MAX_RUNNING, CONTEXT_LEN,
                                          life.avail_after_graph_gb))
        elif dt == UVICORN_AFTER:
            for text in f.uvicorn_startup(self.pid(life), self.port):
                self._line(out, t, text, None)
        elif dt == 17:
            self._line(out, t, f.access(51200, "GET", f.model_info_path()), None)
        elif dt == scenarios.READY_AFTER:
            self._line(out, t, f.prefill(1, 7, 0, 0.0, 0, 0, 0, 0.29))
            self._line(out, t, f.access(51202, "POST", "/generate"), None)
            self._line(out, t, f.ready(), None)
            self._last_prefill = t

    def _serve(self, life: Life, t: float, rng: random.Random, out: StepOutput) -> None:
        """One second of serving: completions, prefill, access lines, maybe a decode line."""
        load = life.load(t, rng)
        c = self.counters
        c.load = load
        tokens = int(load.usage * life.max_total_num_tokens)
        self._acc_done += load.gen / self.scenario.mean_output_tokens
        n = int(self._acc_done)
        self._acc_done -= n
        if n:
            self._complete(n, t, rng, out)
            prompt = sum(rng.randint(300, 2000) for _ in range(n))
            cached = int(prompt * rng.uniform(0.05, 0.3))
            c.prompt_tokens += prompt
            tps = prompt / max(1.0, t - self._last_prefill)
            self._last_prefill = t
            d = self._req % self.dp  # the rank these requests went to
            r = rank_loads(load, self.dp, self.hot_rank)[d]
            self._line(out, t, self.fmt.prefill(n, prompt - cached, cached, r.usage,
                                                r.running, r.queue, r.queue * 1100, tps),
                       self.dp_head(d))
        c.generation_tokens += int(load.gen)
        self._acc_steps += load.gen / max(1, load.running)
        while self._acc_steps >= DECODE_LOG_INTERVAL:
            self._acc_steps -= DECODE_LOG_INTERVAL
            c.last_decode_at = t
            c.reported = Load(load.running, load.queue, round(load.usage, 2), round(load.gen, 2))
            if self.dp == 1:
                c.ranks = (c.reported,)
                self._line(out, t, self.fmt.decode(load.running, tokens, load.usage, load.gen,
                                                   load.queue))
                continue
            ranks = rank_loads(load, self.dp, self.hot_rank)
            c.ranks = tuple(Load(r.running, r.queue, round(r.usage, 2), round(r.gen, 2))
                            for r in ranks)
            for d, r in enumerate(ranks):  # every rank prints at the same decode step
                self._line(out, t, self.fmt.decode(
                    r.running, int(r.usage * life.max_total_num_tokens), r.usage, r.gen,
                    r.queue), self.dp_head(d))

    def _complete(self, n: int, t: float, rng: random.Random, out: StepOutput) -> None:
        """n requests finished: access lines, and the client's outputs and progress."""
        part = self.client.partition()
        text, took = self.client.record(t, n)
        out.client += self.client.reopen_bar(t) if not text else ""
        out.client += text
        lines = []
        text_rng = random.Random(self.seed * 1_000_003 + int(t * 1000) + 7_919)
        for i in range(n):
            self._req += 1
            self.counters.requests += 1
            self._line(out, t, self.fmt.access(30000 + (self._req * 7919) % 30000, "POST",
                                               "/generate"), None)
            if part is not None and i < took:
                lines.append(self._output(part.name, part.done - took + i + 1, t, rng, text_rng))
        if lines and part is not None:
            out.outputs.setdefault(part.name, []).extend(lines)

    def _output(self, name: str, index: int, t: float, rng: random.Random,
                text_rng: random.Random) -> str:
        """One sample line; its length scaled so that samples average the scenario's mean."""
        sc = self.scenario
        finish = "length" if rng.random() < sc.truncated_share else "stop"
        prompt, drawn = rng.randint(300, 2000), rng.randint(80, 1800)
        limit = MAX_TOKENS.get(name, 10_240)
        scale = max(0.05, (sc.mean_output_tokens - sc.truncated_share * limit)
                    / ((1 - sc.truncated_share) * 940.0))
        style = SampleStyle(reasoning=sc.reasoning_lost_at is None or t < sc.reasoning_lost_at,
                            size=self.sample_size(text_rng))
        return output_line(name, index, rng, prompt, max(1, round(drawn * scale)), finish,
                           text_rng=text_rng, style=style)

    def sample_size(self, rng: random.Random) -> int | None:
        """The padded size of a sample's text (None: as short as it comes)."""
        if self.sample_bytes is None:
            return None
        return rng.randint(*self.sample_bytes)

    def _retract(self, life: Life, t: float, rng: random.Random, out: StepOutput) -> None:
        c = self.counters
        n = rng.randint(2, 6)
        old, c.new_token_ratio = c.new_token_ratio, min(1.0, c.new_token_ratio + rng.uniform(0.2, 0.4))
        c.retractions += n
        self._line(out, t, self.fmt.retract(n, n * 4096, old, c.new_token_ratio))
        c.new_token_ratio = 0.35

    def _end(self, life: Life, t: float, rng: random.Random, out: StepOutput) -> None:
        """The server dies (OOM on a large prefill) or is stopped (SIGTERM)."""
        load = life.load(t, rng)
        if life.end_kind == "oom":
            self._line(out, t, self.fmt.prefill(1, 32768, 0, load.usage, load.running,
                                                load.queue, load.queue * 1100, 32768.0))
            first, *rest = self.fmt.oom_traceback(1.73, scenarios.GPU_TOTAL_GB, 812.0)
            self._line(out, t, first)
            out.server.extend(f"{line}\n" for line in rest)
            self._line(out, t, self.fmt.sigquit(), None)
            out.server.append("Killed\n")
        else:
            if not self.fmt.legacy:
                self._line(out, t, self.fmt.sigterm(), None)
            for text in ("INFO:     Shutting down", "INFO:     Waiting for application shutdown.",
                         "INFO:     Application shutdown complete.",
                         f"INFO:     Finished server process [{self.pid(life)}]"):
                self._line(out, t, text, None)
        self.counters.load = self.counters.reported = None


def _split(total: int, n: int) -> list[int]:
    return [total // n + (1 if d < total % n else 0) for d in range(n)]


def rank_loads(load: Load, dp: int, hot: int | None = None) -> list[Load]:
    """The server's load as its DP ranks see it: requests split evenly (the round-robin
    balancer), throughput in proportion with a fixed spread; each rank's KV pool as full as the
    server's. With a `hot` rank, that one holds the long requests: its pool nearly full and
    the queue, while the others sit at a fifth."""
    if dp == 1:
        return [load]
    weights = [1.0 + 0.04 * ((d * 37) % 7 - 3) for d in range(dp)]
    scale = load.gen / sum(weights)
    running, queue = _split(load.running, dp), _split(load.queue, dp)
    out = []
    for d in range(dp):
        usage, q = load.usage, queue[d]
        if hot is not None:
            usage = min(0.97, 0.9 + 0.1 * load.usage) if d == hot else 0.2 * load.usage + 0.1
            q = load.queue if d == hot else 0
        out.append(Load(running[d], q, usage, weights[d] * scale))
    return out
