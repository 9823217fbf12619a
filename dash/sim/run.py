"""`SimRun`: a simulated run on disk and on 127.0.0.1, for the demo, tests and benchmarks.

Layout under `dir`: `server.log`, `client.log`, `inputs/<partition>.jsonl` (the prompts, so
totals are known) and `outputs/<partition>.jsonl` (one line per finished sample, appended whole).

Two ways to drive it: `advance_to(sim_seconds)` steps deterministically with no threads (tests);
`start()` binds the HTTP server and, by default, a thread that advances in accelerated real time
(`speed` simulated seconds per real second) until `stop()`.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from dash.core.config import Config
from dash.sim import endpoints, gpu, scenarios
from dash.sim.client import PARTITIONS, input_line, output_line
from dash.sim.endpoints import Response
from dash.sim.engine import Simulation, StepOutput
from dash.sim.formats import resolve_family
from dash.sim.httpd import SimHttpServer

MIB = 1024**2


class SimClock:
    """The simulation's clock: epoch seconds at the simulated time (runs at `speed`)."""

    def __init__(self, run: SimRun) -> None:
        self._run = run

    def now(self) -> float:
        return self._run.start_epoch + self._run.sim_now()

    def monotonic(self) -> float:
        return self._run.sim_now()


class SimRun:
    """A scenario written to `dir`, served over HTTP, with a fake NVML that follows it."""

    def __init__(self, dir: str | os.PathLike[str], scenario: str = "healthy", seed: int = 0,
                 speed: float = 10.0, gpus: int = 8, log_format: str | None = None, *,
                 port: int = 0, start_epoch: float | None = None,
                 duration: float | None = None, dp: int | None = None,
                 sample_bytes: tuple[int, int] | None = None,
                 api_key: str | None = None) -> None:
        if not (math.isfinite(speed) and speed > 0) or gpus < 1:
            raise ValueError("speed must be a finite number > 0 and gpus >= 1")
        self.dir = Path(dir)
        self.server_log = self.dir / "server.log"
        self.client_log = self.dir / "client.log"
        self.inputs_dir = self.dir / "inputs"
        self.outputs_dir = self.dir / "outputs"
        self.scenario = scenarios.get(scenario)
        log_format = log_format or self.scenario.log_format or "0.5.12"
        self.speed = float(speed)
        self.gpus = gpus
        self.duration = duration
        self.start_epoch = float(int(time.time())) if start_epoch is None else float(start_epoch)
        self.sim = Simulation(self.scenario, seed=seed, start_epoch=self.start_epoch,
                              log_format=resolve_family(log_format), gpus=gpus,
                              port=port or 30000, inputs_dir=str(self.inputs_dir), dp=dp,
                              sample_bytes=sample_bytes)
        self._seed = seed
        self.api_key = api_key
        """The simulated server's `--api-key`: its routes then want `Authorization: Bearer`."""
        self._http = SimHttpServer(self._answer, port)
        self._serving = False
        self._lock = threading.RLock()
        self._prepared = False
        self._t = 0.0
        self._nvml: Any = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._real0: tuple[float, float] | None = None

    # -- public ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The server's base URL ("" before `start()`: nothing listens)."""
        return f"http://127.0.0.1:{self._http.port}" if self._serving else ""

    @property
    def nvml(self) -> Any:
        """The fake pynvml module, following the simulated server's memory (made on first use)."""
        if self._nvml is None:
            from dash.sim.fake_nvml import RTX_PRO_6000, FakeGpu, FakeNvml

            fake = FakeNvml([FakeGpu(name=RTX_PRO_6000, total=97_887 * MIB, temperature=45 + i)
                             for i in range(self.gpus)])
            with self._lock:
                self._nvml = fake
                self._sync_nvml()
        return self._nvml

    def config(self) -> Config:
        """The Config that watches this run."""
        return Config(log=self.server_log, url=self.url, client_log=self.client_log,
                      outputs=(str(self.outputs_dir / "*.jsonl"),),
                      inputs=(str(self.inputs_dir / "*.jsonl"),))

    def clock(self) -> SimClock:
        return SimClock(self)

    def sim_now(self) -> float:
        """Simulated seconds now: from the real clock while the thread runs, else the last step."""
        with self._lock:
            if self._real0 is None:
                return self._t
            mono0, t0 = self._real0
            return t0 + (time.monotonic() - mono0) * self.speed

    def prepare(self) -> None:
        """Create the directory: inputs, the outputs written before the run, empty logs."""
        with self._lock:
            if self._prepared:
                return
            self._prepared = True
            self._clear()
            self.inputs_dir.mkdir(parents=True, exist_ok=True)
            self.outputs_dir.mkdir(parents=True, exist_ok=True)
            rng = random.Random(self._seed)
            for name, total, done in PARTITIONS:
                (self.inputs_dir / f"{name}.jsonl").write_text(
                    "".join(input_line(name, i + 1) for i in range(total)))
                if done:
                    (self.outputs_dir / f"{name}.jsonl").write_text("".join(
                        output_line(name, i + 1, rng, 900, 160, "stop") for i in range(done)))
            self.server_log.touch()
            self.client_log.touch()

    def _clear(self) -> None:
        """Remove this simulator's own files from an earlier run (new files, not truncation)."""
        for path in (self.server_log, self.client_log):
            path.unlink(missing_ok=True)
        for name, _, _ in PARTITIONS:
            (self.inputs_dir / f"{name}.jsonl").unlink(missing_ok=True)
            (self.outputs_dir / f"{name}.jsonl").unlink(missing_ok=True)

    def advance_to(self, sim_seconds: float) -> None:
        """Run the simulation up to `sim_seconds` and write what happened (no threads needed)."""
        with self._lock:
            self.prepare()
            out = self.sim.step(sim_seconds)
            self._t = max(self._t, sim_seconds)
            # HTTP first: a real server is listening by the time its ready banner can be read.
            self._sync_http()
            self._write(out)
            if self._nvml is not None:
                self._sync_nvml()

    def start(self, background: bool = True) -> None:
        """Bind the HTTP server (its port goes into the log) and, if `background`, run in time."""
        with self._lock:
            self.prepare()
            if not self._serving:
                self.sim.port = self._http.bind()
                self._serving = True
                self._sync_http()
        if background and self._thread is None:
            self._stop.clear()
            with self._lock:
                self._real0 = (time.monotonic(), self._t)
            self._thread = threading.Thread(target=self._loop, name="kdash-sim", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread and the HTTP server; files stay."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        with self._lock:
            if self._real0 is not None:
                self._t = self.sim_now()
            self._real0 = None
            self._serving = False
            self._http.stop()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread ends (at `duration`) or `timeout`; True when it ended."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def __enter__(self) -> SimRun:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- internals ---------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            now = self.sim_now()
            if self.duration is not None and now >= self.duration:
                self.advance_to(self.duration)
                return
            self.advance_to(now)

    def _answer(self, path: str, authorization: str | None = None) -> Response:
        with self._lock:
            return endpoints.answer(self.sim, self._t, path, authorization, self.api_key)

    def _write(self, out: StepOutput) -> None:
        cut = len(out.server) if out.rewrite_at is None else out.rewrite_at
        if out.server[:cut]:
            with self.server_log.open("ab") as fh:
                fh.write("".join(out.server[:cut]).encode())
        if out.rewrite_at is not None:
            # What `nohup ... > server.log` does: the same file, truncated, written from empty.
            with self.server_log.open("wb") as fh:
                fh.write("".join(out.server[cut:]).encode())
        if out.client and not self.scenario.buffered_client:
            with self.client_log.open("ab") as fh:
                fh.write(out.client.encode())
        for name, lines in out.outputs.items():
            with (self.outputs_dir / f"{name}.jsonl").open("ab") as fh:
                fh.write("".join(lines).encode())

    def _sync_http(self) -> None:
        if not self._serving:
            return
        want = self.sim.http_up(self._t)
        if want and not self._http.up:
            try:
                self._http.start()
            except OSError:
                pass  # the port is briefly taken: try again on the next step
        elif not want and self._http.up:
            self._http.stop()

    def _sync_nvml(self) -> None:
        for i, level in enumerate(gpu.levels(self.sim, self._t, self.gpus)):
            self._nvml.set_memory_used(i, level.used_bytes)
            self._nvml.set_utilization(i, level.util_gpu, level.util_mem)
            self._nvml.set_processes(i, [(os.getpid(), level.used_bytes)] if level.busy else [])
