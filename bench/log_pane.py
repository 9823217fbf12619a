"""The log pane's cost on a busy log: kdash's CPU and key response with the pane shown vs hidden.

This process appends 2,000 SGLang-style lines a second to a server log (decode, prefill and
access lines, in bursts every 50 ms); kdash follows it in a detached 160x45 tmux session (1 s
refresh, a fake NVML of 8 GPUs, no HTTP). The same kdash process is measured in alternating
phases, the log pane hidden and then shown (`l`), so that the ratio compares like with like on a
shared machine. In each phase kdash's CPU is read from /proc (psutil), and the key response is
timed: `p` is sent with `tmux send-keys` and the clock stops when `capture-pane` shows the header
change (PAUSED on, then off). That time includes tmux's own round trip, so it is an upper bound.
At the end kdash reports how many log rows its pane turned into text, against the lines it got.

    .venv/bin/python bench/log_pane.py                 # 2 x (20 s hidden + 20 s shown)
    .venv/bin/python bench/log_pane.py --seconds 8 --rounds 1   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
RATE = 2000
"""Log lines per second."""
BURST_S = 0.05
WARMUP_S = 6.0
KEY_SAMPLES = 8

DECODE = ("[{ts} TP0] Decode batch. #running-req: {run}, #token: {tok}, token usage: {use:.2f}, "
          "cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: {q}, \n")
PREFILL = ("[{ts} TP0] Prefill batch. #new-seq: 1, #new-token: {new}, #cached-token: {cached}, "
           "token usage: {use:.2f}, #running-req: {run}, #queue-req: {q}, \n")
ACCESS = '[{ts}] INFO:     127.0.0.1:{port} - "POST /generate HTTP/1.1" 200 OK\n'


def child(ns: argparse.Namespace) -> int:
    """The kdash process: the real dashboard; on `q` it writes its log pane's counters."""
    from dash.core.state.run import RunState
    from dash.sim.fake_nvml import FakeNvml
    from dash.sources.collector import Collector
    from dash.sources.config_files import build_config
    from dash.ui.app import DashApp

    Path(ns.pid_file).write_text(str(os.getpid()))
    cfg = build_config({"log": ns.log, "url": "", "refresh": 1.0, "alert_history": False},
                       cwd=Path(ns.dir), user_file=Path(ns.dir) / "no-user-config.toml")

    import dash.ui.app

    class BenchApp(DashApp):
        CSS_PATH = str(Path(dash.ui.app.__file__).parent / "dash.tcss")  # relative to a subclass

        async def action_quit(self) -> None:
            view = self.query_one("#log-view")
            stats = {"rows_rendered": getattr(view, "rows_rendered", None),
                     "lines": self.state.server_log.snapshot(0.0).lines}
            with open(ns.stats, "w") as fh:  # noqa: ASYNC230 - a few bytes, once, at exit
                fh.write(json.dumps(stats))
            await super().action_quit()

    app = BenchApp(cfg, state=RunState(cfg), handle_signals=True,
                   collector=Collector(cfg, nvml_module=FakeNvml.scenario("rtx-pro-6000x8")))
    result = app.run()
    return result if isinstance(result, int) else 0


def writer(log: Path, stop: threading.Event) -> None:
    """2,000 lines a second, in bursts, stamped now (a busy server with its access log on)."""
    rng = random.Random(0)
    per_burst = int(RATE * BURST_S)
    next_at = time.monotonic()
    with log.open("a") as fh:
        while not stop.is_set():
            ts = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            lines = []
            for _ in range(per_burst):
                r = rng.random()
                fields = {"ts": ts, "run": rng.randint(90, 128), "q": rng.randint(0, 40),
                          "use": rng.uniform(0.5, 0.95), "tok": rng.randint(1, 9) * 100_000,
                          "gen": rng.uniform(900, 1300), "new": rng.randint(100, 8000),
                          "cached": rng.randint(0, 4000), "port": rng.randint(30000, 60000)}
                fmt = DECODE if r < 0.6 else PREFILL if r < 0.8 else ACCESS
                lines.append(fmt.format(**fields))
            fh.write("".join(lines))
            fh.flush()
            next_at += BURST_S
            stop.wait(max(0.0, next_at - time.monotonic()))


class Session:
    """The tmux session kdash runs in."""

    def __init__(self, name: str, cmd: list[str]) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TMUX", "COLUMNS",
                                                                 "LINES")}
        env["TERM"] = "xterm-256color"
        self.base = ["tmux", "-L", name, "-f", "/dev/null"]
        self.name = name
        subprocess.run([*self.base, "new-session", "-d", "-s", name, "-x", "160", "-y", "45",
                        *cmd], check=True, env=env)

    def keys(self, key: str) -> None:
        subprocess.run([*self.base, "send-keys", "-t", self.name, key], check=False)

    def screen(self) -> str:
        return subprocess.run([*self.base, "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True, check=False).stdout

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], check=False)


def key_response(tmux: Session) -> float:
    """Seconds from sending `p` until the header shows it, averaged over on and off."""
    times = []
    for want in (True, False):
        t0 = time.monotonic()
        tmux.keys("p")
        while ("PAUSED" in tmux.screen().splitlines()[1]) != want:
            if time.monotonic() - t0 > 5:
                raise SystemExit("bench: the screen never answered the key")
        times.append(time.monotonic() - t0)
    return sum(times) / len(times)


def phase(tmux: Session, kdash: psutil.Process, seconds: float) -> tuple[float, list[float]]:
    """kdash's CPU % over `seconds`, and key responses sampled through the phase."""
    responses: list[float] = []
    t0, c0 = time.monotonic(), _cpu(kdash)
    gap = seconds / (KEY_SAMPLES + 1)
    while time.monotonic() - t0 < seconds:
        time.sleep(gap)
        if len(responses) < KEY_SAMPLES:
            responses.append(key_response(tmux))
    wall = time.monotonic() - t0
    return 100.0 * (_cpu(kdash) - c0) / wall, responses


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def measure(ns: argparse.Namespace) -> int:
    if shutil.which("tmux") is None:
        print("bench: tmux is not installed", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="kdash-bench-pane-"))
    log, pid_file, stats = work / "server.log", work / "kdash.pid", work / "stats.json"
    log.write_text("")
    stop = threading.Event()
    feeder = threading.Thread(target=writer, args=(log, stop), daemon=True)
    feeder.start()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--pid-file", str(pid_file),
           "--dir", str(work), "--log", str(log), "--stats", str(stats)]
    tmux = Session(f"kdash-bench-pane-{os.getpid()}", cmd)
    try:
        deadline = time.monotonic() + 20
        while not (pid_file.exists() and pid_file.read_text()):
            if time.monotonic() > deadline:
                raise SystemExit("bench: kdash did not start")
            time.sleep(0.1)
        kdash = psutil.Process(int(pid_file.read_text()))
        time.sleep(WARMUP_S)
        results = run_phases(ns, tmux, kdash)
        tmux.keys("q")
        deadline = time.monotonic() + 10
        while not stats.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        counters = json.loads(stats.read_text()) if stats.exists() else {}
        report(results, counters, log)
    finally:
        stop.set()
        feeder.join()
        time.sleep(0.5)
        tmux.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def run_phases(ns: argparse.Namespace, tmux: Session, kdash: psutil.Process
               ) -> dict[str, tuple[list[float], list[float]]]:
    out: dict[str, tuple[list[float], list[float]]] = {"hidden": ([], []), "shown": ([], [])}
    for _ in range(ns.rounds):
        for name in ("hidden", "shown"):
            cpu, keys = phase(tmux, kdash, ns.seconds)
            out[name][0].append(cpu)
            out[name][1].extend(keys)
            tmux.keys("l")  # hidden -> shown -> hidden ...
            time.sleep(1.0)
    return out


def report(results: dict[str, tuple[list[float], list[float]]], counters: dict[str, int],
           log: Path) -> None:
    lines = sum(1 for _ in log.open("rb"))
    print(f"kdash following a server log at {RATE:,} lines/s ({lines:,} lines written), "
          "160x45 tmux, 1 Hz refresh, 8 fake GPUs, no HTTP")
    cpu = {k: statistics.mean(v[0]) for k, v in results.items()}
    key = {k: statistics.median(v[1]) for k, v in results.items()}
    p90 = {k: sorted(v[1])[int(0.9 * (len(v[1]) - 1))] for k, v in results.items()}
    for name in ("hidden", "shown"):
        runs = ", ".join(f"{c:.1f}" for c in results[name][0])
        print(f"  pane {name:<6}  kdash CPU {cpu[name]:5.1f} % of a core ({runs})   key response "
              f"median {1000 * key[name]:4.0f} ms, p90 {1000 * p90[name]:4.0f} ms")
    ratio_cpu = cpu["shown"] / cpu["hidden"] if cpu["hidden"] else float("nan")
    ratio_key = key["shown"] / key["hidden"] if key["hidden"] else float("nan")
    print(f"  shown / hidden: CPU {ratio_cpu:.2f}x, key response {ratio_key:.2f}x "
          "(goal: CPU below 15 % of a core, key response under 100 ms)")
    rows, got = counters.get("rows_rendered"), counters.get("lines")
    if rows is not None and got:
        print(f"  log rows turned into text: {rows:,} for {got:,} lines received "
              f"({rows / got:.3f} per line): only the rows on screen are drawn")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=20.0, help="length of each phase (20)")
    p.add_argument("--rounds", type=int, default=2, help="hidden+shown rounds (2)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("pid-file", "dir", "log", "stats"):
        p.add_argument(f"--{name}", help=argparse.SUPPRESS)
    ns = p.parse_args()
    return child(ns) if ns.child else measure(ns)


if __name__ == "__main__":
    sys.exit(main())
