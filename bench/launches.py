"""Benchmark: what tracking launches costs, offline and live.

    .venv/bin/python bench/launches.py                # 200 MB log under bench/out/
    .venv/bin/python bench/launches.py --size-mb 50   # the quick run

Offline: `kdash launches LOG` (every record through the launch tracker, one process) against
`kdash summary LOG --json` with one process (`KDASH_PROCESSES=1`) and `grep -c "Decode batch"`
on the same file, in the same run, best of `--repeat` rounds, with the peak RSS of each kdash.
The log is bench/parse.py's busy server (per second a decode line, a few prefill lines and many
access lines), four starts appended into one file.

Live: the records of that log fed in batches, as the dashboard's reads hand them over, to the
server-log tracker alone and to the server-log tracker plus the launch tracker (what RunState
does), in this process: the launch tracker's share of the cost of applying a read.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse import OUT, generate  # bench/parse.py: the same busy log

from dash.core.log.parse import parse_line
from dash.core.state.launches import LaunchTracker
from dash.core.state.server_log import ServerLogTracker

STARTS = 4
BATCH = 2000


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of a command (run under /usr/bin/time when it exists)."""
    timer = shutil.which("time") if Path("/usr/bin/time").exists() else None
    full = ["/usr/bin/time", "-f", "%M", *cmd] if timer else cmd
    t0 = time.perf_counter()
    res = subprocess.run(full, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()[-500:]}")
    rss = float(res.stderr.strip().splitlines()[-1]) / 1024 if timer else float("nan")
    return wall, rss


def _log(size_mb: int) -> Path:
    one = OUT / f"mixed-{size_mb // STARTS}mb.log"
    path = OUT / f"launches-{size_mb}mb.log"
    if not path.exists():
        print(f"generating {path} ...", flush=True)
        generate(one, max(1, size_mb // STARTS))
        with path.open("wb") as out:
            for _ in range(STARTS):
                out.write(one.read_bytes())
        one.unlink()
    return path


def _offline(path: Path, repeat: int) -> None:
    grep = shutil.which("grep") or "grep"
    one = dict(os.environ, KDASH_PROCESSES="1")
    py = [sys.executable, "-m", "dash"]
    cmds = {"grep -c": ([grep, "-c", "Decode batch", str(path)], None),
            "summary --json (1 process)": ([*py, "summary", str(path), "--json"], one),
            "launches": ([*py, "launches", str(path)], one)}
    best: dict[str, tuple[float, float]] = {}
    for _ in range(repeat):
        for name, (cmd, env) in cmds.items():
            wall, rss = _timed(cmd, env)
            old = best.get(name)
            best[name] = (min(wall, old[0]) if old else wall, rss)
    base = best["grep -c"][0]
    for name, (wall, rss) in best.items():
        print(f"  {name:<28} {wall:7.2f} s  {wall / base:6.1f}x grep  peak RSS {rss:6.0f} MB")
    print(f"  launches / summary: {best['launches'][0] / best['summary --json (1 process)'][0]:.2f}x")


def _live(path: Path, limit: int) -> None:
    records = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            rec = parse_line(line.rstrip("\n"), n)
            if rec is not None:
                records.append(rec)
            if len(records) >= limit:
                break
    batches = [records[i:i + BATCH] for i in range(0, len(records), BATCH)]

    def run(with_launches: bool) -> float:
        server, launches = ServerLogTracker(), LaunchTracker()
        t0 = time.perf_counter()
        for i, batch in enumerate(batches):
            server.feed(batch, 1_772_000_000.0 + i)
            if with_launches:
                launches.feed(batch, 1_772_000_000.0 + i)
                launches.launches()  # what each refresh's snapshot asks for
        return time.perf_counter() - t0

    alone = min(run(False) for _ in range(3))
    both = min(run(True) for _ in range(3))
    per = 1e6 * (both - alone) / len(records)
    print(f"  {len(records):,} records in batches of {BATCH}: server log alone {alone:.2f} s, "
          f"with launches {both:.2f} s ({both / alone:.2f}x; {per:.2f} µs a record more)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--records", type=int, default=300_000, help="records for the live figure")
    ap.add_argument("--keep", action="store_true")
    ns = ap.parse_args()
    path = _log(ns.size_mb)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"log: {path.stat().st_size / 1e6:,.0f} MB, {STARTS} starts; load {load:.1f} on "
          f"{os.cpu_count()} cores; peak RSS of this script so far "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    try:
        print("offline:")
        _offline(path, ns.repeat)
        print("live:")
        _live(path, ns.records)
    finally:
        if not ns.keep:
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
