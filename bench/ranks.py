"""Benchmark: what data-parallel ranks cost, against the same lines from one rank.

    .venv/bin/python bench/ranks.py            # 200k decode lines
    .venv/bin/python bench/ranks.py --lines 50000

Two logs with the same number of decode lines and the same figures: one server of 8 DP ranks
(`DP{d} TP{d} EP{d}` tags, every rank printing every interval), and one rank (`TP0`). Each is
fed through the live tracker (`ServerLogTracker`, what the dashboard and `--once` use: per line
the rank's figures and the sums over the ranks) and summarised by `kdash summary`'s reader, in
this process, in turn, best of `--repeat`. The ratios are the cost of the ranks.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from dash.commands.summary import summarize  # noqa: E402
from dash.core.log.parse import parse_line  # noqa: E402
from dash.core.state.server_log import ServerLogTracker  # noqa: E402

LINE = ("[2026-03-01 {h:02d}:{m:02d}:{s:02d}{tag}] Decode batch, #running-req: {r}, #token: {tok}, "
        "token usage: 0.{u:02d}, cuda graph: True, gen throughput (token/s): {g:.2f}, "
        "#queue-req: {q}\n")


def write(path: Path, lines: int, ranks: int) -> None:
    out = []
    for i in range(lines):
        step, d = divmod(i, ranks)
        t = 8 * 3600 + 2 * step
        h, rest = divmod(t, 3600)
        tag = f" DP{d} TP{d} EP{d}" if ranks > 1 else " TP0"
        out.append(LINE.format(h=h % 24, m=rest // 60, s=rest % 60, tag=tag, r=20 + d,
                               tok=9000 + i % 977, u=30 + d, g=600.0 + i % 97, q=i % 5))
    path.write_text("".join(out))


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        logs = {}
        for ranks in (1, 8):
            path = Path(tmp) / f"r{ranks}.log"
            write(path, args.lines, ranks)
            records = [parse_line(line, n) for n, line in enumerate(path.open(), 1)]
            logs[ranks] = (path, records)

        def feed(ranks: int) -> Callable[[], object]:
            def run() -> object:
                tracker = ServerLogTracker("x")
                tracker.feed(logs[ranks][1], 2e9)
                return tracker.snapshot(2e9)
            return run

        results = {}
        for ranks in (1, 8):
            results[("tracker", ranks)] = best(feed(ranks), args.repeat)
            results[("summary", ranks)] = best(lambda r=ranks: summarize(logs[r][0]), args.repeat)
    n = args.lines
    for what in ("tracker", "summary"):
        one, eight = results[(what, 1)], results[(what, 8)]
        print(f"{what:<8} {n:,} decode lines: 1 rank {one:.3f} s ({1e6 * one / n:.1f} us/line), "
              f"8 ranks {eight:.3f} s ({1e6 * eight / n:.1f} us/line): {eight / one:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
