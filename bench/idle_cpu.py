"""kdash's own cost on a live run: CPU% and RSS in a real terminal (tmux), next to `tail | grep`.

A simulated run (5 partitions, a server log growing ~20 lines/s, HTTP on 127.0.0.1) is written by
this process; kdash runs in a detached 160x45 tmux session with a fake NVML of 8 GPUs and a 1 s
refresh. In the same window, `tail -F LOG | grep "Decode batch"` follows the same log, as the
baseline a user would otherwise leave running. Prints CPU% of one core for both, their ratio, and
kdash's RSS over time (it should stay flat).

    .venv/bin/python bench/idle_cpu.py              # 60 s
    .venv/bin/python bench/idle_cpu.py --seconds 15 # a quick look
    .venv/bin/python bench/idle_cpu.py --compare    # samples read vs not, side by side
    .venv/bin/python bench/idle_cpu.py --compare --against ../ref  # and another checkout's code
    .venv/bin/python bench/idle_cpu.py --floor      # and the same dashboard drawing nothing

Beside the simulated client's own outputs, a writer appends realistic samples (SGLang
`/generate` records of 4-16 KB) at `--samples-per-s` (20) to three partitions, so the dashboard
reads sample content as it would on a busy run. `--compare` runs two dashboards on the same run
at the same time, one with `[outputs] samples = false` (lines counted, contents never read).
`--against DIR` runs the dashboard of another checkout (its `bench/idle_cpu.py --child`) beside
each of these, on the same run at the same time: old code against new under the same load.
`--floor` runs beside it the same dashboard with its screen never updated (sources, run state,
alert rules and Textual's own loop all running): what drawing costs, and what no drawing
optimisation can take away.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

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
    if ns.no_samples:
        (Path(ns.dir) / "kdash.toml").write_text("[outputs]\nsamples = false\n")
    if ns.not_drawing:
        from dash.ui.app import DashApp

        # Everything up to the screen runs (the tick composes the snapshot and evaluates the
        # rules); only pushing the snapshot into the widgets, and so Textual's compositing, stops.
        DashApp.render_snapshot = lambda self, tick=False: None  # type: ignore[method-assign]
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


def feed_samples(run: object, per_s: float, stop: threading.Event) -> None:
    """Append 4-16 KB SGLang records to B3..B5 at `per_s` in all (a busy client's outputs)."""
    import random

    from dash.sim.client import SampleStyle, output_line

    rng, text_rng = random.Random(3), random.Random(4)
    outputs = Path(run.outputs_dir)  # type: ignore[attr-defined]
    names = PARTITIONS[2:]
    i = 0
    while not stop.wait(1.0 / per_s):
        i += 1
        name = names[i % len(names)]
        line = output_line(name, i, rng, rng.randint(300, 2000), rng.randint(500, 4000),
                           "length" if rng.random() < 0.1 else "stop", text_rng=text_rng,
                           style=SampleStyle(size=rng.randint(4096, 16384)))
        with (outputs / f"{name}.jsonl").open("ab") as fh:
            fh.write(line.encode())


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
    stop_feed = threading.Event()
    feeder = threading.Thread(target=feed_samples, args=(run, ns.samples_per_s, stop_feed),
                              daemon=True)
    if ns.samples_per_s > 0:
        feeder.start()
    modes = [True, False] if ns.compare else [ns.no_samples]
    try:
        return _measure(ns, run, work, modes)
    finally:
        stop_feed.set()
        run.stop()
        shutil.rmtree(work, ignore_errors=True)


def _measure(ns: argparse.Namespace, run: object, work: Path, modes: list[bool]) -> int:
    sessions = []
    checkouts = [(REPO, "")] + ([(Path(ns.against).resolve(), ", against")] if ns.against else [])
    for no_samples in modes:
        for checkout, suffix in checkouts:
            label = ("counts only" if no_samples else "samples read") + suffix
            wdir = work / (("off" if no_samples else "on") + ("-against" if suffix else ""))
            wdir.mkdir()
            sessions.append((label, *_start(ns, run, wdir, no_samples, checkout)))
    if ns.floor:
        wdir = work / "floor"
        wdir.mkdir()
        label = "not drawing, " + ("counts only" if modes[-1] else "samples read")
        sessions.append((label, *_start(ns, run, wdir, modes[-1], REPO, drawing=False)))
    tail = subprocess.Popen(f"tail -F -n 0 {run.server_log} | grep --line-buffered 'Decode batch'"  # type: ignore[attr-defined]
                            " > /dev/null", shell=True, start_new_session=True)
    try:
        for _, _, pid_file in sessions:
            wait_for(pid_file)
        procs = [(label, psutil.Process(int(pid_file.read_text()))) for label, _, pid_file in sessions]
        return report(ns, procs, psutil.Process(tail.pid), run)
    finally:
        if ns.screens:  # what each dashboard showed as the measurement ended
            try:
                Path(ns.screens).mkdir(parents=True, exist_ok=True)
                for label, tmux, _ in sessions:
                    shown = subprocess.run([*tmux, "capture-pane", "-p", "-t", tmux[2]],
                                           check=False, capture_output=True, text=True).stdout
                    (Path(ns.screens) / (label.replace(" ", "-").replace(",", "") + ".txt")
                     ).write_text(shown)
            except OSError as exc:  # the dashboards are still stopped below
                print(f"bench: screens not saved: {exc}", file=sys.stderr)
        for _, tmux, _ in sessions:
            subprocess.run([*tmux, "send-keys", "-t", tmux[2], "q"], check=False)
        time.sleep(1.5)
        for _, tmux, _ in sessions:
            subprocess.run([*tmux, "kill-server"], check=False, stderr=subprocess.DEVNULL)
        os.killpg(tail.pid, 15)
        tail.wait()


def _start(ns: argparse.Namespace, run: object, work: Path, no_samples: bool, checkout: Path,
           drawing: bool = True) -> tuple[list[str], Path]:
    run_: Any = run
    session = f"kdash-bench-{os.getpid()}-{work.name}"
    pid_file = work / "kdash.pid"
    script = checkout / "bench" / "idle_cpu.py"
    if not script.is_file():
        raise SystemExit(f"bench: {script} not found (--against names a kdash checkout)")
    cmd = [sys.executable, str(script), "--child", "--pid-file", str(pid_file),
           "--dir", str(work), "--log", str(run_.server_log), "--client-log", str(run_.client_log),
           "--outputs", str(run_.outputs_dir / "*.jsonl"),
           "--inputs", str(run_.inputs_dir / "*.jsonl"), "--url", run_.url,
           *(["--no-samples"] if no_samples else []), *([] if drawing else ["--not-drawing"]),
           *(["--profile", ns.profile] if ns.profile else [])]
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "TMUX", "COLUMNS", "LINES")}  # the pane's size, not the caller's
    env["TERM"] = "xterm-256color"
    tmux = ["tmux", "-L", session, "-f", "/dev/null"]  # a server of its own, default options
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "160", "-y", "45",
                    *cmd], check=True, env=env)
    return tmux, pid_file


def report(ns: argparse.Namespace, kdash: list[tuple[str, psutil.Process]],
           shell: psutil.Process, run: object) -> int:
    log = Path(run.server_log)  # type: ignore[attr-defined]
    outputs = Path(run.outputs_dir)  # type: ignore[attr-defined]
    time.sleep(ns.warmup)
    pipeline = shell.children(recursive=True)
    lines0, t0 = sum(1 for _ in log.open("rb")), time.monotonic()
    samples0 = sum(sum(1 for _ in p.open("rb")) for p in outputs.glob("*.jsonl"))
    k0 = [cpu_seconds([p]) for _, p in kdash]
    b0 = cpu_seconds(pipeline)
    rss: list[list[int]] = [[] for _ in kdash]
    while time.monotonic() - t0 < ns.seconds:
        for i, (_, p) in enumerate(kdash):
            rss[i].append(p.memory_info().rss)
        time.sleep(min(5.0, max(0.1, ns.seconds - (time.monotonic() - t0))))
    for i, (_, p) in enumerate(kdash):
        rss[i].append(p.memory_info().rss)
    wall = time.monotonic() - t0
    k_cpu = [100 * (cpu_seconds([p]) - k) / wall for (_, p), k in zip(kdash, k0, strict=True)]
    b_cpu = 100 * (cpu_seconds(pipeline) - b0) / wall
    lines = (sum(1 for _ in log.open("rb")) - lines0) / wall
    samples = (sum(sum(1 for _ in p.open("rb")) for p in outputs.glob("*.jsonl")) - samples0) / wall
    print(f"kdash on a simulated run: 8 GPUs, {len(PARTITIONS)} partitions, {lines:.1f} log lines/s, "
          f"{samples:.1f} samples/s ({ns.samples_per_s:g}/s of 4-16 KB), 1 Hz refresh, 160x45 "
          f"tmux, {wall:.0f} s measured after {ns.warmup:.0f} s warm-up")
    width = max(13, *(len(label) for label, _ in kdash))
    for (label, _), cpu, mem in zip(kdash, k_cpu, rss, strict=True):
        mib = [r / 2**20 for r in mem]
        print(f"  kdash CPU, {label:<{width}} {cpu:6.2f} % of one core   RSS start {mib[0]:.1f} "
              f"end {mib[-1]:.1f} max {max(mib):.1f} MiB")
    print(f"  {'tail -F | grep CPU':<{width + 11}} {b_cpu:6.2f} % of one core")
    cpu = dict(zip((label for label, _ in kdash), k_cpu, strict=True))
    if b_cpu > 0:
        for label, value in cpu.items():
            print(f"  ratio kdash / tail|grep, {label:<{width}} {value / b_cpu:5.1f}x")
    for a, b, what in (("counts only", "samples read", "samples read / counts only"),
                       ("not drawing, samples read", "samples read", "drawing / not drawing"),
                       ("not drawing, counts only", "counts only", "drawing / not drawing"),
                       ("counts only, against", "samples read, against",
                        "samples read / counts only, against"),
                       ("counts only, against", "counts only", "counts only: this / against"),
                       ("samples read, against", "samples read", "samples read: this / against")):
        if cpu.get(a) and b in cpu:
            print(f"  {what:<{width + 25}} {cpu[b] / cpu[a]:5.2f}x")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0, help="measured time (default 60)")
    p.add_argument("--warmup", type=float, default=WARMUP_S,
                   help=f"seconds not measured after start (default {WARMUP_S:g}; over 90: "
                        "alerts old enough that their ages change once a minute)")
    p.add_argument("--profile", metavar="FILE", help="write kdash's cProfile stats to FILE")
    p.add_argument("--samples-per-s", type=float, default=20.0,
                   help="realistic 4-16 KB samples written per second (default 20; 0: none)")
    p.add_argument("--compare", action="store_true",
                   help="also run a dashboard that does not read sample contents, side by side")
    p.add_argument("--no-samples", action="store_true", help="[outputs] samples = false")
    p.add_argument("--against", metavar="DIR",
                   help="also run this kdash checkout's dashboard beside each, on the same run")
    p.add_argument("--floor", action="store_true",
                   help="also run the same dashboard with its screen never updated, beside it")
    p.add_argument("--screens", metavar="DIR",
                   help="save each dashboard's last screen (tmux capture-pane) in DIR")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--not-drawing", action="store_true", help=argparse.SUPPRESS)
    for name in ("pid-file", "dir", "log", "client-log", "outputs", "inputs", "url"):
        p.add_argument(f"--{name}", help=argparse.SUPPRESS)
    ns = p.parse_args()
    return child(ns) if ns.child else measure(ns)


if __name__ == "__main__":
    sys.exit(main())
