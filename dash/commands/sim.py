"""`kdash sim`: only the simulated run, headless, for another pane or a test to watch.

The options are shared with `kdash demo` (`dash.commands.demo`), which adds the dashboard.
"""

from __future__ import annotations

import argparse
import math
import shlex
import signal
import sys
from pathlib import Path
from types import FrameType

from dash.core.errors import UsageError
from dash.sim.formats import ALIASES, FAMILIES, resolve_family
from dash.sim.scenarios import NAMES

DEMO_SPEED = 10.0
SIM_SPEED = 1.0


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """The options of `kdash sim` or `kdash demo`."""
    if name == "sim":
        parser.description = ("Only the simulated run (server log, outputs, client log, HTTP on "
                              "127.0.0.1), for another pane or a test to watch with kdash.")
        parser.add_argument("--dir", metavar="PATH", required=True, help="where to write the run")
        parser.add_argument("--port", type=int, default=0, help="HTTP port (default: any free one)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--log-format", default=None, choices=FAMILIES + tuple(ALIASES),
                            help="SGLang log family (default: the scenario's, else 0.5.12)")
        parser.add_argument("--duration", type=float, metavar="SECONDS",
                            help="stop after this many simulated seconds")
        parser.add_argument("--api-key", metavar="KEY",
                            help="answer as a server started with --api-key KEY: 401 without "
                                 "`Authorization: Bearer KEY` (/health, /ready, /metrics open)")
        speed = SIM_SPEED
    else:
        parser.description = "A simulated run and the dashboard on it (no GPU needed)."
        parser.add_argument("--dir", metavar="PATH",
                            help="keep the run's files here (default: a temp dir, removed at exit)")
        speed = DEMO_SPEED
    parser.add_argument("--scenario", default="healthy", choices=NAMES)
    parser.add_argument("--speed", type=float, default=speed,
                        help=f"simulated seconds per real second (default {speed:g})")
    parser.add_argument("--gpus", type=int, default=8, help="simulated GPUs (96 GB each)")
    parser.add_argument("--dp", type=int, default=None, metavar="N",
                        help="data-parallel (DP attention) ranks, each printing its own stats "
                             "lines (default: the scenario's, 1 for most)")


def kdash_command() -> str:
    """How to run the kdash that runs now, from any directory: its script's full path, or
    `python -m dash` with this interpreter (quoted for a POSIX shell)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name not in ("__main__.py", "-c", "") and script.exists():
        return shlex.quote(str(script.resolve()))
    return f"{shlex.quote(sys.executable)} -m dash"


def watch_command(run: object) -> str:
    """The command line that watches a SimRun, runnable as printed."""
    from dash.sim.run import SimRun

    assert isinstance(run, SimRun)
    q = shlex.quote
    return (f"{kdash_command()} --log {q(str(run.server_log.resolve()))}"
            f" --outputs {q(str(run.outputs_dir.resolve() / '*.jsonl'))}"
            f" --inputs {q(str(run.inputs_dir.resolve() / '*.jsonl'))}"
            f" --client-log {q(str(run.client_log.resolve()))} --url {q(run.url)}")


MAX_GPUS = 64


def check_arguments(ns: argparse.Namespace) -> str | None:
    if not (math.isfinite(ns.speed) and ns.speed > 0):
        return f"--speed must be a positive number, got {ns.speed:g}"
    if not 1 <= ns.gpus <= MAX_GPUS:
        return f"--gpus must be from 1 to {MAX_GPUS}, got {ns.gpus}"
    port = getattr(ns, "port", 0)
    if port is not None and not 0 <= port <= 65535:
        return f"--port must be 0-65535, got {port}"
    dp = getattr(ns, "dp", None)
    if dp is not None and not (1 <= dp <= ns.gpus and ns.gpus % dp == 0):
        return f"--dp must divide --gpus ({ns.gpus}), got {dp}"
    duration = getattr(ns, "duration", None)
    if duration is not None and not (math.isfinite(duration) and duration > 0):
        return f"--duration must be a positive number of seconds, got {duration:g}"
    return None


class _Stopped(Exception):
    """A signal asked the simulation to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def run_sim(ns: argparse.Namespace) -> int:
    """Run only the simulator until --duration (exit 0) or a signal (128 + the signal: SIGINT,
    SIGTERM, SIGHUP); print how to watch it."""
    from dash.sim.run import SimRun

    problem = check_arguments(ns)
    if problem:
        raise UsageError(f"sim: {problem}")
    run = SimRun(Path(ns.dir).expanduser(), ns.scenario, seed=ns.seed, speed=ns.speed,
                 gpus=ns.gpus, log_format=ns.log_format and resolve_family(ns.log_format),
                 port=ns.port, duration=ns.duration, dp=ns.dp, api_key=ns.api_key)
    try:
        run.prepare()
    except OSError as exc:
        raise UsageError(f"sim: cannot write the run in {run.dir}: {exc.strerror or exc}") from None
    try:
        run.start()
    except OSError as exc:
        raise UsageError(f"sim: cannot listen on 127.0.0.1:{ns.port}: {exc.strerror or exc}") from None
    print(f"Simulating {ns.scenario!r} at {ns.speed:g}x in {run.dir} (Ctrl+C to stop). Watch it with:")
    print(f"  {watch_command(run)}")
    if ns.api_key:
        print(f"Its routes want the API key: add --api-key {shlex.quote(ns.api_key)} (without it, "
              "kdash shows http_auth).")
    print("GPUs: the simulated NVML lives in this process only, so that kdash shows this machine's "
          "GPUs or 'NVML unavailable'; `kdash demo` shows the simulated GPUs.", flush=True)
    if ns.speed != 1:
        print(f"Log timestamps run {ns.speed:g}x faster than the wall clock.", flush=True)
    previous = {sig: signal.signal(sig, _on_signal) for sig in STOP_SIGNALS}
    status = 0
    try:
        while not run.wait(0.5):
            pass
    except _Stopped as stopped:
        status = 128 + stopped.signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        run.stop()
    return status
