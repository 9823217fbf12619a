"""kdash's own cost on a live run: CPU% and RSS in a real terminal (tmux), next to `tail | grep`.

A simulated run (5 partitions, a server log growing ~20 lines/s, HTTP on 127.0.0.1) is written by
this process; kdash runs in a detached 160x45 tmux session with a fake NVML of 8 GPUs and a 1 s
refresh. In the same window, `tail -F LOG | grep "Decode batch"` follows the same log, as the
baseline a user would otherwise leave running. Prints CPU% of one core for both, their ratio, and
kdash's RSS over time (it should stay flat).

    .venv/bin/python bench/idle_cpu.py              # 60 s
    .venv/bin/python bench/idle_cpu.py --seconds 15 # a quick look
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
WARMUP_S = 8.0
"""Not measured: start-up and the backfill of the log's end."""
SIM_SPEED = 8.0
"""Simulated seconds per second: the healthy scenario then writes about 20 log lines a second."""
PARTITIONS = ("B1_glaive", "B2_opencodeinstruct", "B3_agent", "B4_deepseek", "B5_synth")


def child(ns: argparse.Namespace) -> int:
    """The kdash process: the real dashboard, with 8 fake GPUs instead of a driver."""
    from dash.sim.fake_nvml import FakeNvml
    from dash.sources.config_files import build_config
    from dash.ui.app import run_dashboard

    Path(ns.pid_file).write_text(str(os.getpid()))
    cfg = build_config({"log": ns.log, "client_log": ns.client_log, "outputs": [ns.outputs],
                        "inputs": [ns.inputs], "url": ns.url, "refresh": 1.0}, cwd=Path(ns.dir),
                       user_file=Path(ns.dir) / "no-user-config.toml")
    if not ns.profile:
        return run_dashboard(cfg, nvml_module=FakeNvml.scenario("rtx-pro-6000x8"))
    import cProfile

    with cProfile.Profile() as prof:
        code = run_dashboard(cfg, nvml_module=FakeNvml.scenario("rtx-pro-6000x8"))
    prof.dump_stats(ns.profile)
    return code


def cpu_seconds(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def wait_for(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: {path} never appeared (kdash did not start?)")
        time.sleep(0.1)


def measure(ns: argparse.Namespace) -> int:
    from dash.sim.run import SimRun

    if shutil.which("tmux") is None:
        print("bench: tmux is not installed", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="kdash-bench-"))
    run = SimRun(work / "run", "healthy", speed=SIM_SPEED, gpus=8)
    run.prepare()
    for name in PARTITIONS:  # every partition has an output file, as in a resumed run
        (run.outputs_dir / f"{name}.jsonl").touch()
    run.start()
    session = f"kdash-bench-{os.getpid()}"
    pid_file = work / "kdash.pid"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--pid-file", str(pid_file),
           "--dir", str(work), "--log", str(run.server_log), "--client-log", str(run.client_log),
           "--outputs", str(run.outputs_dir / "*.jsonl"), "--inputs", str(run.inputs_dir / "*.jsonl"),
           "--url", run.url, *(["--profile", ns.profile] if ns.profile else [])]
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "TMUX", "COLUMNS", "LINES")}  # the pane's size, not the caller's
    env["TERM"] = "xterm-256color"
    tmux = ["tmux", "-L", session, "-f", "/dev/null"]  # a server of its own, default options
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "160", "-y", "45",
                    *cmd], check=True, env=env)
    tail = subprocess.Popen(f"tail -F -n 0 {run.server_log} | grep --line-buffered 'Decode batch'"
                            " > /dev/null", shell=True, start_new_session=True)
    try:
        wait_for(pid_file)
        return report(ns, psutil.Process(int(pid_file.read_text())), psutil.Process(tail.pid), run)
    finally:
        subprocess.run([*tmux, "send-keys", "-t", session, "q"], check=False)
        time.sleep(1.5)
        subprocess.run([*tmux, "kill-server"], check=False)
        os.killpg(tail.pid, 15)
        tail.wait()
        run.stop()
        shutil.rmtree(work, ignore_errors=True)


def report(ns: argparse.Namespace, kdash: psutil.Process, shell: psutil.Process, run: object) -> int:
    log = Path(run.server_log)  # type: ignore[attr-defined]
    time.sleep(WARMUP_S)
    pipeline = shell.children(recursive=True)
    lines0, t0 = sum(1 for _ in log.open("rb")), time.monotonic()
    k0, b0 = cpu_seconds([kdash]), cpu_seconds(pipeline)
    rss: list[int] = []
    while time.monotonic() - t0 < ns.seconds:
        rss.append(kdash.memory_info().rss)
        time.sleep(min(5.0, max(0.1, ns.seconds - (time.monotonic() - t0))))
    rss.append(kdash.memory_info().rss)
    wall = time.monotonic() - t0
    k_cpu = 100 * (cpu_seconds([kdash]) - k0) / wall
    b_cpu = 100 * (cpu_seconds(pipeline) - b0) / wall
    lines = (sum(1 for _ in log.open("rb")) - lines0) / wall
    mib = [r / 2**20 for r in rss]
    print(f"kdash on a simulated run: 8 GPUs, {len(PARTITIONS)} partitions, {lines:.1f} log lines/s, "
          f"1 Hz refresh, 160x45 tmux, {wall:.0f} s measured after {WARMUP_S:.0f} s warm-up")
    print(f"  kdash CPU            {k_cpu:6.2f} % of one core   (goal <= 1 %)")
    print(f"  tail -F | grep CPU   {b_cpu:6.2f} % of one core")
    if b_cpu > 0:
        print(f"  ratio kdash / tail|grep  {k_cpu / b_cpu:.1f}x")
    print(f"  kdash RSS MiB        start {mib[0]:.1f}  end {mib[-1]:.1f}  max {max(mib):.1f}  "
          f"(growth {mib[-1] - mib[0]:+.1f})")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0, help="measured time (default 60)")
    p.add_argument("--profile", metavar="FILE", help="write kdash's cProfile stats to FILE")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("pid-file", "dir", "log", "client-log", "outputs", "inputs", "url"):
        p.add_argument(f"--{name}", help=argparse.SUPPRESS)
    ns = p.parse_args()
    return child(ns) if ns.child else measure(ns)


if __name__ == "__main__":
    sys.exit(main())
