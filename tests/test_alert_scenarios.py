"""The user's failure stories, end to end: real files on disk, read back, alerts on a fake clock.

Each scenario writes a server log (SGLang 0.4.x lines from this file's own format strings), a
client log and per-partition JSONL outputs into a temporary directory, then reads them the way
kdash does, through `dash.sources.collector.Collector` and `apply_files` (the simulator's scenarios below read
with a byte offset and `parse_line` directly). The clock moves only when told to.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.log.parse import parse_line
from dash.core.snapshot import Alert
from dash.core.state.partitions import OutputCount
from dash.core.state.run import RunState
from dash.sources.collector import Collector, apply_files

DECODE = ("[{ts} TP0] Decode batch. #running-req: {running}, #token: {tokens}, token usage: "
          "{usage:.2f}, cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: {queue}, ")
PREFILL = ("[{ts} TP0] Prefill batch. #new-seq: {seqs}, #new-token: {new}, #cached-token: 0, "
           "token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}, ")
STARTUP = (
    "[{ts}] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-70B-Instruct', "
    "tokenizer_path='meta-llama/Llama-3.1-70B-Instruct', mem_fraction_static={mfs}, tp_size=8, "
    "port=30000)",
    "[{ts} TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=78.10 GB, "
    "mem usage=17.61 GB.",
    "[{ts} TP0] KV Cache is allocated. #tokens: {kv}, K size: 12.94 GB, V size: 12.94 GB",
    "[{ts} TP0] Capture cuda graph end. Time elapsed: 9.81 s. mem usage=0.62 GB. "
    "avail mem={avail:.2f} GB.",
    "[{ts} TP0] max_total_num_tokens={kv}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=4096, context_len=131072, available_gpu_mem={avail:.2f} GB",
    "[{ts}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    "[{ts}] The server is fired up and ready to roll!",
)
OOM = (
    "[{ts} TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1999, in run_scheduler_process',
    "    scheduler.event_loop_overlap()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 3 has a total "
    "capacity of 79.19 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process "
    "has 78.16 GiB memory in use.",
    "[{ts}] Received sigquit from a child process. It usually means the child failed.",
)


class Scenario:
    """Writes a run's files and reads them back into a RunState as the clock advances."""

    def __init__(self, root: Path, clock: FakeClock, **alerts: float) -> None:
        self.root, self.clock = root, clock
        self.log = root / "server.log"
        self.client_log = root / "client.log"
        (root / "out").mkdir()
        self.log.touch()
        self.client_log.touch()
        cfg = Config(log=self.log, url="", client_log=self.client_log,
                     outputs=(str(root / "out" / "*.jsonl"),), alerts=dict(alerts))
        self.state = RunState(cfg)
        self.collector: Collector | None = None  # opened at the first step, like kdash at start
        self.fired: list[Alert] = []

    # writing, with formats of our own
    def ts(self) -> str:
        return datetime.fromtimestamp(self.clock.now()).strftime("%Y-%m-%d %H:%M:%S")

    def server(self, *lines: str, **fields: object) -> None:
        with self.log.open("a") as fh:
            for line in lines:
                fh.write(line.format(ts=self.ts(), **fields) + "\n")

    def decode(self, gen: float, running: int, queue: int, usage: float) -> None:
        self.server(DECODE, gen=gen, running=running, queue=queue, usage=usage,
                    tokens=int(usage * 212000))

    def output(self, name: str, n: int) -> None:
        with (self.root / "out" / f"{name}.jsonl").open("a") as fh:
            for i in range(n):
                fh.write(json.dumps({"id": i, "output": "ok"}) + "\n")

    def client_write(self, text: str) -> None:
        with self.client_log.open("a") as fh:
            fh.write(text)

    # reading, as kdash does
    def step(self, seconds: float = 0.0) -> list[Alert]:
        """Advance the clock, read what the files gained (the real Collector), evaluate."""
        self.clock.advance(seconds)
        now = self.clock.now()
        if self.collector is None:
            self.collector = Collector(self.state.cfg)
        self.collector.wait_counts(5.0)
        apply_files(self.state, self.collector.read_files(), now)
        new = list(self.state.tick(now).new)
        self.fired += new
        return new

    def close(self) -> None:
        if self.collector is not None:
            self.collector.close()

    def ids(self) -> list[str]:
        return [a.key for a in self.fired]

    def active(self) -> dict[str, Alert]:
        return {a.key: a for a in self.state.snapshot(self.clock.now()).alerts}

    def startup(self, mfs: float = 0.88, avail: float = 5.21, kv: int = 212000) -> None:
        self.server(*STARTUP, mfs=mfs, avail=avail, kv=kv)
        self.step(20)


@pytest.fixture
def make(tmp_path: Path, clock: FakeClock) -> Iterator[Callable[..., Scenario]]:
    """Scenarios in tmp_path on the fake clock, their files closed at the end."""
    made: list[Scenario] = []

    def _make(**alerts: float) -> Scenario:
        made.append(Scenario(tmp_path, clock, **alerts))
        return made[-1]

    yield _make
    for sc in made:
        sc.close()


def _serve(sc: Scenario, seconds: int, gen: float, running: int, queue: int | tuple[int, int],
           usage: float | tuple[float, float], rng: random.Random, every: int = 4,
           noise: float = 0.04, output: str | None = None) -> None:
    for _ in range(seconds // every):
        q = queue if isinstance(queue, int) else rng.randint(*queue)
        u = usage if isinstance(usage, float) else rng.uniform(*usage)
        sc.decode(gen * (1 + rng.uniform(-noise, noise)), running, q, u)
        if output:
            sc.output(output, 1)
            sc.client_write(f"\r{output}: {rng.randint(1, 99)}%|###   | 12/5000 [00:01<09:00]")
        sc.step(every)


def test_oom_during_a_large_prefill_at_mem_fraction_093_is_crit_at_once(tmp_path: Path, clock: FakeClock, make: Callable[..., Scenario]) -> None:
    sc = make()
    sc.startup(mfs=0.93, avail=0.82)
    _serve(sc, 240, 1100.0, 96, 0, 0.55, random.Random(1))
    sc.server(PREFILL, seqs=1, new=32768, usage=0.61, running=96, queue=0)
    sc.server(*OOM)
    oom_at = clock.now()
    new = {a.id: a for a in sc.step(0)}
    oom = new["server_oom"]
    assert oom.severity == "crit" and oom.since == oom_at
    assert "32768 new tokens" in oom.message
    assert oom.line is not None and "CUDA out of memory" in oom.line
    assert "avail mem after CUDA graph 0.82 GB" in oom.evidence
    assert "--mem-fraction-static (now 0.93; try 0.88)" in oom.hint
    assert new["server_crash"].severity == "crit"
    assert "gpu_headroom_low" in sc.ids()  # 0.82 GB after CUDA graph capture, from startup


def test_peak_1317_falls_to_a_606_plateau_kv_bound(tmp_path: Path, clock: FakeClock, make: Callable[..., Scenario]) -> None:
    sc, rng = make(), random.Random(2)
    sc.startup()
    _serve(sc, 600, 1317.0, 121, (29, 33), 0.74, rng, noise=0.005)
    for i in range(60):  # the decline, over 4 minutes
        sc.decode(1317.0 - (711.0 * i / 60), 121 - i // 3, 33 + i, 0.74 + 0.14 * i / 60)
        sc.step(4)
    _serve(sc, 540, 606.0, 100, (100, 118), (0.87, 0.89), rng, noise=0.02)
    assert "throughput_plateau" not in sc.ids()
    _serve(sc, 300, 606.0, 100, (100, 118), (0.87, 0.89), rng, noise=0.02)
    alert = sc.active()["throughput_plateau"]
    assert alert.message.startswith("fell from peak 13")
    assert "to plateau 6" in alert.message and "likely KV-bound" in alert.message
    assert "(-5" in alert.message and "over 4 min" in alert.message  # the 4-minute decline
    assert "kv_saturated" not in sc.ids()


def test_empty_client_log_while_an_output_grows_is_buffered(tmp_path: Path, clock: FakeClock, make: Callable[..., Scenario]) -> None:
    sc = make()
    sc.output("B2_opencodeinstruct", 1374)
    sc.startup()
    for i in range(62):  # the log is empty from kdash's first read on, for 124 s
        sc.output("B2_opencodeinstruct", 1)
        sc.decode(1150.0, 96, 2, 0.55)
        sc.step(2)
        if i == 55:
            assert "client_log_buffered" not in sc.active()  # 112 s: not the documented 120 yet
    alert = sc.active()["client_log_buffered"]
    assert "0 bytes" in alert.message and "1374 -> 1436" in alert.message
    assert "python -u" in alert.hint and "PYTHONUNBUFFERED=1" in alert.hint
    assert tmp_path.joinpath("client.log").stat().st_size == 0  # never written to


def test_token_usage_over_090_with_a_rising_queue_is_saturated(tmp_path: Path, clock: FakeClock, make: Callable[..., Scenario]) -> None:
    sc, rng = make(), random.Random(4)
    sc.startup(kv=159277)
    _serve(sc, 120, 900.0, 40, 0, 0.6, rng)
    for i in range(120):  # 8 minutes at 0.90-0.94 with the queue rising ~0.25/s
        sc.decode(900.0 * (1 + rng.uniform(-0.04, 0.04)), 40, i, rng.uniform(0.90, 0.94))
        sc.step(4)
    alert = sc.active()["kv_saturated"]
    assert alert.message.startswith("KV cache 9") and "queue grew" in alert.message
    assert "159277" in alert.hint and "fp8" in alert.hint


def test_log_silent_after_an_oom(tmp_path: Path, clock: FakeClock, make: Callable[..., Scenario]) -> None:
    sc = make(silent_after_s=300)
    sc.startup()
    _serve(sc, 120, 1100.0, 96, 0, 0.55, random.Random(5))
    sc.server(OOM[-2])  # the OOM line alone: the server hangs instead of dying
    sc.step(1)
    for _ in range(20):
        sc.step(15)
    silent = sc.active()["server_silent"]
    assert silent.severity == "warn" and "96 running" in silent.message
    assert "last problem: oom" in silent.evidence


def test_a_healthy_hour_raises_no_warning(tmp_path: Path, clock: FakeClock, make: Callable[..., Scenario]) -> None:
    sc, rng = make(), random.Random(6)
    sc.output("B2_opencodeinstruct", 1374)
    sc.startup()
    _serve(sc, 3600, 1150.0, 96, (0, 4), (0.5, 0.6), rng, noise=0.12,
           output="B2_opencodeinstruct")
    bad = [a for a in sc.fired if a.severity != "info"]
    assert bad == [], [(a.id, a.message) for a in bad]
    assert sc.state.snapshot(clock.now()).server.records > 800


# The simulator's scenarios (timings documented in dash/sim/scenarios.py), read the same way.

def _sim_alerts(tmp_path: Path, scenario: str, until: float, step: float = 5.0,
                watch: Callable[[float, RunState, float], None] | None = None,
                ) -> list[tuple[float, Alert]]:
    """Run a simulated scenario to `until` simulated seconds; (sim time, alert) as they fire;
    `watch(sim time, state, clock)` after each step."""
    import dataclasses

    from dash.sim import run as sim_run
    from dash.sources.nvml import NvmlSource

    t0 = 1_750_000_000.0
    sim = sim_run.SimRun(tmp_path, scenario, start_epoch=t0)
    state = RunState(dataclasses.replace(sim.config(), url=""))
    nvml = NvmlSource(module=sim.nvml)
    offset = lineno = 0
    fired: list[tuple[float, Alert]] = []
    t = 0.0
    while t < until:
        t += step
        sim.advance_to(t)
        now = t0 + t
        with sim.server_log.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
        complete = data[: data.rfind(b"\n") + 1]
        offset += len(complete)
        records = []
        for raw in complete.decode("utf-8", "replace").splitlines():
            lineno += 1
            records.append(parse_line(raw, lineno))
        state.feed_server_log(records, now)
        # Totals from the prompt files, as `--inputs` gives them (a partition owing lines can stall).
        state.partitions.set_input_totals({p.stem: p.read_bytes().count(b"\n")
                                           for p in sim.inputs_dir.glob("*.jsonl")})
        state.partitions.apply([OutputCount(p.stem, str(p), p.read_bytes().count(b"\n"))
                                for p in sorted(sim.outputs_dir.glob("*.jsonl"))], now)
        # The client log's size from the real file, into the real tracker.
        state.client.note_file(os.path.getsize(sim.client_log) if sim.client_log.exists()
                               else None, now)
        state.gpus.apply(nvml.sample(now), now)
        fired += [(t, a) for a in state.tick(now).new]
        if watch is not None:
            watch(t, state, now)
    return fired


def _first(fired: list[tuple[float, Alert]], key: str) -> tuple[float, Alert]:
    return next((t, a) for t, a in fired if a.key == key)


@pytest.mark.slow
def test_sim_healthy_half_hour_is_quiet(tmp_path: Path) -> None:
    fired = _sim_alerts(tmp_path, "healthy", 1800)
    assert [(t, a.id) for t, a in fired if a.severity != "info"] == []


def test_sim_oom_crash_restart(tmp_path: Path) -> None:
    fired = _sim_alerts(tmp_path, "oom-crash-restart", 420)
    t, oom = _first(fired, "server_oom")
    assert t == 300 and oom.severity == "crit" and "32768 new tokens" in oom.message
    assert _first(fired, "server_crash")[0] == 300
    assert _first(fired, "gpu_headroom_low")[0] < 30  # 0.82 GB after CUDA graph capture
    assert 360 <= _first(fired, "server_restarted")[0] <= 380


def test_sim_partitions_wait_while_the_server_is_down(tmp_path: Path) -> None:
    """From the OOM at t=300 until the new server serves, the partitions being written wait,
    with no ETA (it would only grow); they run again once it serves."""
    seen: dict[float, tuple[set[str], bool, bool]] = {}

    def watch(t: float, state: RunState, now: float) -> None:
        snap = state.snapshot(now)
        seen[t] = ({p.status for p in snap.partitions},
                   any(p.eta_s is not None for p in snap.partitions), snap.totals.eta_s is not None)
    _sim_alerts(tmp_path, "oom-crash-restart", 420, watch=watch)
    assert "running" in seen[290][0] and seen[290][1] and seen[290][2]
    assert "waiting" in seen[305][0] and "running" not in seen[305][0]  # at once
    assert "waiting" in seen[320][0] and "running" not in seen[320][0]
    assert not seen[320][1] and seen[320][2]  # the run's, labelled as before the crash
    assert "waiting" in seen[370][0]  # the new server still loading
    assert "running" in seen[420][0] and "waiting" not in seen[420][0]


def test_sim_peak_plateau(tmp_path: Path) -> None:
    fired = _sim_alerts(tmp_path, "peak-plateau", 1500)
    t, alert = _first(fired, "throughput_plateau")
    assert 900 <= t <= 1300  # the fall crosses -30 % before the t=600 plateau, then holds 10 min
    assert alert.message.startswith("fell from peak 131") and "likely KV-bound" in alert.message
    assert "to plateau 6" in alert.message and "kv_saturated" not in [a.id for _, a in fired]


def test_sim_buffered_client_log(tmp_path: Path) -> None:
    t, alert = _first(_sim_alerts(tmp_path, "buffered-client-log", 200), "client_log_buffered")
    assert 120 <= t <= 130 and "0 bytes" in alert.message  # buffered_after_s after the first read


def test_sim_kv_saturation(tmp_path: Path) -> None:
    fired = _sim_alerts(tmp_path, "kv-saturation", 660)
    assert 420 <= _first(fired, "kv_saturated")[0] <= 560  # usage >= 0.90 from t=120, + 5 min
    assert _first(fired, "retractions")[0] == 440  # the third retraction
    assert 620 <= _first(fired, "server_restarted")[0] <= 640
    assert "server_crash" not in [a.id for _, a in fired]  # SIGTERM is an operator's restart


def test_sim_stalled_output(tmp_path: Path) -> None:
    fired = _sim_alerts(tmp_path, "stalled-output", 900)
    t, alert = _first(fired, "output_stalled:B2_opencodeinstruct")
    assert 830 <= t <= 850 and alert.subject == "B2_opencodeinstruct"  # stops at 240, + 10 min
