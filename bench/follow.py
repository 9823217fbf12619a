"""Following and counting cost: does it grow with new bytes only, never with file size?

Prints, in one run (ratios against a baseline measured in the same run):
- poll cost on a 10 GB log vs a 10 MB log (goal <= 1.1x),
- time to the first state with a 10 GB log and five 2 GB outputs vs empty files (goal <= 1.2x;
  the first state must not wait for counting),
- first-count throughput vs `wc -l` on the same file (goal >= 0.8x), and the pure-Python
  fallback's,
- peak RSS.

Big files are sparse (no disk used) apart from the counting file; all are deleted at the end.
`--quick` uses smaller sizes.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dash.core.config import Config
from dash.core.state.run import RunState
from dash.sources.bgcount import count_newlines
from dash.sources.collector import Collector, apply_files
from dash.sources.counts import LineCounter
from dash.sources.files import FileFollower

GB = 1024**3
MB = 1024**2
LINE = (b"[2025-09-03 18:33:19 TP0] Decode batch. #running-req: 3, #token: 2740, token usage: "
        b"0.01, cuda graph: True, gen throughput (token/s): 84.20, #queue-req: 0\n")
JSONL = b'{"id": 1, "response": "' + b"t" * 1500 + b'"}\n'


def sparse(path: Path, size: int, tail: bytes = b"") -> None:
    """A file of `size` bytes (a hole) ending with `tail` (real lines)."""
    with open(path, "wb") as fh:
        fh.truncate(size - len(tail))
        fh.seek(size - len(tail))
        fh.write(tail)


def poll_cost(path: Path, rounds: int) -> float:
    """Median seconds per poll that finds one new line."""
    f = FileFollower(path, backfill=4 * MB)
    while f.poll().more:  # the backfill takes a few reads
        pass
    times = []
    with open(path, "ab") as fh:
        for _ in range(rounds):
            fh.write(LINE)
            fh.flush()
            t0 = time.perf_counter()
            r = f.poll()
            times.append(time.perf_counter() - t0)
            assert len(r.lines) == 1
    f.close()
    return statistics.median(times)


def first_state(log: Path, outputs: str) -> float:
    """Seconds from nothing to the first snapshot (Collector, one read, apply, snapshot)."""
    t0 = time.perf_counter()
    cfg = Config(log=log, outputs=(outputs,), url="")
    col = Collector(cfg)
    state = RunState(cfg)
    apply_files(state, col.read_files(), time.time())
    state.snapshot(time.time())
    elapsed = time.perf_counter() - t0
    col.close()
    return elapsed


def counting(path: Path) -> tuple[float, float, float]:
    """Seconds for `wc -l`, kdash's first count, and the pure-Python count of one file."""
    subprocess.run(["wc", "-l", str(path)], capture_output=True, check=True)  # warm the cache
    t0 = time.perf_counter()
    subprocess.run(["wc", "-l", str(path)], capture_output=True, check=True)
    t_wc = time.perf_counter() - t0
    with ThreadPoolExecutor(1) as pool:
        c = LineCounter(path, pool, big=1)
        t0 = time.perf_counter()
        r = c.count()
        while r.counting:
            time.sleep(0.002)
            r = c.count()
        t_kdash = time.perf_counter() - t0
    fd = os.open(path, os.O_RDONLY)
    t0 = time.perf_counter()
    n, _ = count_newlines(fd, 0, path.stat().st_size)
    t_py = time.perf_counter() - t0
    os.close(fd)
    assert n == r.lines, (n, r.lines)
    return t_wc, t_kdash, t_py


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller files, fewer rounds")
    ap.add_argument("--dir", help="where to put the temporary files (default: system temp)")
    ns = ap.parse_args()
    big_log, out_size, count_size, rounds = (
        (1 * GB, 256 * MB, 128 * MB, 300) if ns.quick else (10 * GB, 2 * GB, 1 * GB, 2000))
    tmp = Path(tempfile.mkdtemp(prefix="kdash-bench-", dir=ns.dir))
    try:
        tail = LINE * 40000  # ~6 MB of real lines at the end of each log
        sparse(tmp / "big.log", big_log, tail)
        sparse(tmp / "small.log", 10 * MB, tail)
        small = poll_cost(tmp / "small.log", rounds)
        large = poll_cost(tmp / "big.log", rounds)
        print(f"poll cost        {large * 1e6:8.1f} us on {big_log / GB:.0f} GB vs "
              f"{small * 1e6:8.1f} us on 10 MB: {large / small:.2f}x (goal <= 1.1x)")

        for d in ("big", "small", "empty"):
            (tmp / d).mkdir()
        for i in range(5):
            sparse(tmp / "big" / f"B{i}.jsonl", out_size, JSONL * 10)
            sparse(tmp / "small" / f"B{i}.jsonl", len(JSONL) * 10, JSONL * 10)
            (tmp / "empty" / f"B{i}.jsonl").write_bytes(b"")
        (tmp / "empty.log").write_bytes(b"")
        times = {}
        for log, d in (("empty.log", "empty"), ("small.log", "small"), ("big.log", "big")):
            times[d] = min(first_state(tmp / log, str(tmp / d / "*.jsonl")) for _ in range(3))
        heavy, same, empty = times["big"], times["small"], times["empty"]
        print(f"first state      {heavy * 1e3:8.1f} ms with {big_log / GB:.0f} GB log + 5 x "
              f"{out_size / GB:.2f} GB outputs vs {same * 1e3:8.1f} ms with 10 MB log + small "
              f"outputs of the same recent lines: {heavy / same:.2f}x (goal <= 1.2x)")
        print(f"                 ({empty * 1e3:.1f} ms with empty files: the difference is parsing "
              f"the {4} MB backfill, whatever the log's size)")

        cpath = tmp / "count.jsonl"
        block = JSONL * (8 * MB // len(JSONL))
        with open(cpath, "wb") as fh:
            for _ in range(count_size // len(block)):
                fh.write(block)
        t_wc, t_k, t_py = counting(cpath)
        size = cpath.stat().st_size
        print(f"first count      {size / t_k / GB:6.2f} GB/s vs wc -l {size / t_wc / GB:6.2f} GB/s: "
              f"{t_wc / t_k:.2f}x (goal >= 0.8x); pure-Python fallback {size / t_py / GB:.2f} GB/s "
              f"({t_wc / t_py:.2f}x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS         {rss:8.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
