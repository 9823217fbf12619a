"""kdash's memory under a burst and over a soak, in a live dashboard (real app in tmux, real files).

Burst: 2 M server-log lines (291 MB) written in about 44 s into the followed log of a running
dashboard (160x45 tmux, 1 s refresh, 5 partitions); kdash's RSS is sampled every 0.5 s during the
burst and for a minute after it. Goal: peak under 120 MB, back under 80 MB within the minute.
Soak (`--soak`): 10^6 log lines and 10^5 output lines at a steady pace; RSS sampled; goal: growth
under 5 MB once the histories are full (the first quarter of the soak fills them).

Baseline, in the same run: `tail -F LOG | grep "Decode batch"` following the same log (its RSS,
and its CPU against kdash's), as a user would otherwise leave running.

    .venv/bin/python bench/burst.py                   # the burst
    .venv/bin/python bench/burst.py --soak            # the soak
    .venv/bin/python bench/burst.py --lines 200000    # a quick look
    .venv/bin/python bench/burst.py --tracemalloc F   # kdash writes its top allocations to F at
                                                      # the burst's end
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from idle_cpu import cpu_seconds, wait_for

PARTITIONS = ("B1_glaive", "B2_opencodeinstruct", "B3_agent", "B4_deepseek", "B5_synth")
DECODE = ("[2025-09-03 {h:02d}:{m:02d}:{s:02d} DP0 TP0] Decode batch. #running-req: {r}, #token: "
          "{t}, token usage: 0.{u:02d}, gen throughput (token/s): {g}.{f:02d}, #queue-req: {q}\n")


def decode_lines(start: int, n: int) -> str:
    """`n` decode lines numbered from `start`: about 145 bytes each, every field varying."""
    out = []
    for i in range(start, start + n):
        s = i // 40
        out.append(DECODE.format(h=s // 3600 % 24, m=s // 60 % 60, s=s % 60, r=i % 128,
                                 t=100000 + i % 90000, u=i % 100, g=900 + i % 700, f=i % 100,
                                 q=i % 17))
    return "".join(out)


def child(ns: argparse.Namespace) -> int:
    """The kdash process: the real dashboard, fake NVML of 8 GPUs, no HTTP."""
    from dash.sim.fake_nvml import FakeNvml
    from dash.sources.config_files import build_config
    from dash.ui.app import run_dashboard

    if ns.tracemalloc:
        import tracemalloc

        tracemalloc.start(12)

        def dump(_sig: int, _frame: object) -> None:
            snap = tracemalloc.take_snapshot()
            stats = snap.statistics("traceback")[:15]
            with open(ns.tracemalloc, "w") as fh:
                fh.write(f"traced now {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MiB, "
                         f"peak {tracemalloc.get_traced_memory()[1] / 2**20:.1f} MiB\n")
                for st in stats:
                    fh.write(f"\n{st.size / 2**20:8.1f} MiB in {st.count} blocks\n")
                    fh.write("\n".join(st.traceback.format()[-8:]) + "\n")

        signal.signal(signal.SIGUSR1, dump)
    Path(ns.pid_file).write_text(str(os.getpid()))
    cfg = build_config({"log": ns.log, "outputs": [ns.outputs], "url": "", "refresh": 1.0,
                        "expect": {p: 1_000_000 for p in PARTITIONS}},
                       cwd=Path(ns.dir), user_file=Path(ns.dir) / "no-user-config.toml")
    return run_dashboard(cfg, nvml_module=FakeNvml.scenario("rtx-pro-6000x8"))


def _rss(p: psutil.Process) -> float:
    return p.memory_info().rss / 2**20


def _tree_rss(procs: list[psutil.Process]) -> float:
    return sum(_rss(p) for p in procs)


def _write_paced(log: Path, outputs: Path, lines: int, seconds: float, out_lines: int,
                 sample: Callable[[], None]) -> None:
    """Append `lines` log lines (and `out_lines` output lines) over `seconds`, sampling as it goes."""
    steps = max(1, int(seconds * 10))
    per, per_out = -(-lines // steps), -(-out_lines // steps) if out_lines else 0
    t0 = time.monotonic()
    written = out_written = 0
    with log.open("a") as fh, (outputs / f"{PARTITIONS[1]}.jsonl").open("a") as out:
        for k in range(steps):
            n = min(per, lines - written)
            if n > 0:
                fh.write(decode_lines(written, n))
                fh.flush()
                written += n
            m = min(per_out, out_lines - out_written)
            if m > 0:
                out.write("".join(json.dumps({"id": out_written + j, "text": "ok"}) + "\n"
                                  for j in range(m)))
                out.flush()
                out_written += m
            sample()
            delay = t0 + (k + 1) * seconds / steps - time.monotonic()
            if delay > 0:
                time.sleep(delay)


def measure(ns: argparse.Namespace) -> int:
    if shutil.which("tmux") is None:
        print("bench: tmux is not installed", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="kdash-burst-"))
    log, outputs = work / "server.log", work / "outputs"
    outputs.mkdir()
    log.write_text(decode_lines(0, 2000))
    for name in PARTITIONS:
        (outputs / f"{name}.jsonl").write_text('{"id": 0}\n' * 100)
    session = f"kdash-burst-{os.getpid()}"
    pid_file = work / "kdash.pid"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--pid-file", str(pid_file),
           "--dir", str(work), "--log", str(log), "--outputs", str(outputs / "*.jsonl"),
           *(["--tracemalloc", ns.tracemalloc] if ns.tracemalloc else [])]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TMUX", "COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    tmux = ["tmux", "-L", session, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "160", "-y", "45", *cmd],
                   check=True, env=env)
    tail = subprocess.Popen(f"tail -F -n 0 {log} | grep --line-buffered 'Decode batch' > /dev/null",
                            shell=True, start_new_session=True)
    try:
        wait_for(pid_file)
        kdash = psutil.Process(int(pid_file.read_text()))
        return report(ns, kdash, psutil.Process(tail.pid), log, outputs,
                      lambda: _lines_shown(tmux, session))
    finally:
        subprocess.run([*tmux, "send-keys", "-t", session, "q"], check=False)
        time.sleep(1.5)
        subprocess.run([*tmux, "kill-server"], check=False)
        os.killpg(tail.pid, signal.SIGTERM)
        tail.wait()
        shutil.rmtree(work, ignore_errors=True)


def _lines_shown(tmux: list[str], session: str) -> int | None:
    """The server log's line count on kdash's screen (the server panel's `log N lines`)."""
    screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", session], capture_output=True,
                            text=True, check=False).stdout
    m = re.search(r"log ([\d,]+) lines", screen)
    return int(m.group(1).replace(",", "")) if m else None


def report(ns: argparse.Namespace, kdash: psutil.Process, shell: psutil.Process, log: Path,
           outputs: Path, shown: Callable[[], int | None]) -> int:
    time.sleep(6.0)  # start-up and the backfill
    pipeline = shell.children(recursive=True)
    before = _rss(kdash)
    during: list[float] = []
    k0, b0, t0 = cpu_seconds([kdash]), cpu_seconds(pipeline), time.monotonic()

    def sample() -> None:
        if not during or time.monotonic() - sample.at >= 0.5:  # type: ignore[attr-defined]
            during.append(_rss(kdash))
            sample.at = time.monotonic()  # type: ignore[attr-defined]

    sample.at = 0.0  # type: ignore[attr-defined]
    _write_paced(log, outputs, ns.lines, ns.seconds, ns.out_lines, sample)
    wrote = time.monotonic() - t0
    if ns.tracemalloc:
        os.kill(kdash.pid, signal.SIGUSR1)
        wait_for(Path(ns.tracemalloc), timeout=120.0)
    total = sum(1 for _ in log.open("rb"))
    after: list[tuple[float, float]] = []
    caught_up = None
    while time.monotonic() - t0 - wrote < ns.after:
        time.sleep(0.5)
        after.append((time.monotonic() - t0 - wrote, _rss(kdash)))
        if caught_up is None and (shown() or 0) >= total - 2000:  # the backfill's first lines
            caught_up = after[-1][0]
    k_cpu = cpu_seconds([kdash]) - k0
    b_cpu = cpu_seconds(pipeline) - b0
    size = log.stat().st_size / 2**20
    what = "soak" if ns.soak else "burst"
    print(f"kdash {what}: {ns.lines:,} log lines and {ns.out_lines:,} output lines in {wrote:.0f} s "
          f"(log now {size:.0f} MiB), then {ns.after:.0f} s; 160x45 tmux, 1 Hz refresh")
    print(f"  kdash RSS MiB        before {before:.1f}  peak {max(during):.1f}  "
          f"at the end of writing {during[-1]:.1f}  {ns.after:.0f} s after {after[-1][1]:.1f}")
    settled = next((t for t, r in after if r < 80.0), None)
    print("  back under 80 MiB    " + (f"{settled:.0f} s after" if settled is not None else "no"))
    print("  every line read      " + (f"{caught_up:.0f} s after the writing ended"
                                       if caught_up is not None else f"no: {shown()} of {total}"))
    if ns.soak:
        full = during[len(during) // 4]  # the histories are full by then
        print(f"  growth once full     {during[-1] - full:+.1f} MiB (goal < 5)")
    print(f"  tail -F | grep RSS   {_tree_rss(pipeline):.1f} MiB")
    print(f"  CPU seconds          kdash {k_cpu:.1f}  tail -F | grep {b_cpu:.1f}  "
          f"ratio {k_cpu / b_cpu:.1f}x" if b_cpu > 0 else f"  CPU seconds kdash {k_cpu:.1f}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--soak", action="store_true", help="10^6 log and 10^5 output lines, steady")
    p.add_argument("--lines", type=int, help="log lines to write (burst 2,000,000; soak 1,000,000)")
    p.add_argument("--seconds", type=float, help="over how long (burst 44; soak 600)")
    p.add_argument("--after", type=float, default=60.0, help="seconds sampled after (default 60)")
    p.add_argument("--tracemalloc", metavar="FILE", help="kdash writes its top allocations here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("pid-file", "dir", "log", "outputs"):
        p.add_argument(f"--{name}", help=argparse.SUPPRESS)
    ns = p.parse_args()
    if ns.child:
        return child(ns)
    ns.lines = ns.lines or (1_000_000 if ns.soak else 2_000_000)
    ns.seconds = ns.seconds or (600.0 if ns.soak else 44.0)
    ns.out_lines = 100_000 if ns.soak else 0
    return measure(ns)


if __name__ == "__main__":
    sys.exit(main())
