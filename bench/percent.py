"""Benchmark: stats lines that print a value as a percent, against the same lines with it as a
fraction (the bulk reader's learned shapes read both at C speed, or the percent lines fall
back to the per-line parser).

    .venv/bin/python bench/percent.py                 # 200k stats lines a log
    .venv/bin/python bench/percent.py --lines 50000

Pairs of logs with the same number of lines and the same figures, one with a ratio printed as
a percent (`88.50%`), its twin with the same ratio as a fraction (`0.89`, what the fast path
has always read): SGLang's decode line with `fwd occupancy` (`SGLANG_ENABLE_METRICS_DEVICE_TIMER`,
0.5.11+), its prefill line of 0.4.2 and before with `cache hit rate`, and vLLM's stats line
(`GPU KV cache usage`, `Prefix cache hit rate`). Each log is summarised (`kdash summary`'s
reader, one process, in this process) and exported (`kdash export`'s JSON lines), in turn, best
of `--repeat`; the ratio percent/fraction is the cost of the percent.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
os.environ["KDASH_PROCESSES"] = "1"

from dash.commands.export import JsonlJob  # noqa: E402
from dash.commands.summary import summarize  # noqa: E402
from dash.sources import logread  # noqa: E402

_DECODE = ("[2026-03-01 {h:02d}:{m:02d}:{s:02d}] Decode batch, #running-req: {r}, #token: {tok}, "
           "token usage: 0.{u:02d}, cuda graph: True, gen throughput (token/s): {g:.2f}, "
           "#queue-req: {q}")
_PREFILL_042 = ("[2026-03-01 {h:02d}:{m:02d}:{s:02d} TP0] Prefill batch. #new-seq: {q}, "
                "#new-token: {tok}, #cached-token: {r}, cache hit rate: {pct}, "
                "token usage: 0.{u:02d}, #running-req: {r}, #queue-req: {q}")
# vLLM 0.7.3 V1 (`Engine 000: ` from 0.8.5 on); as a file of the stats lines alone, bare
_VLLM = ("Avg prompt throughput: {g:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, "
         "Running: {r} reqs, Waiting: {q} reqs, GPU KV cache usage: {pct1}, "
         "Prefix cache hit rate: {pct1}")

FORMS: dict[str, tuple[str, str]] = {
    # name: (line, the value's field); {pct} / {pct1}: the value, 2 or 1 decimals
    "sglang decode, fwd occupancy": (_DECODE + ", fwd occupancy: {pct}", "pct"),
    "sglang prefill <=0.4.2, cache hit rate": (_PREFILL_042, "pct"),
    "vllm stats, KV usage + hit rate": (_VLLM, "pct1"),
}


def write(path: Path, lines: int, form: str, percent: bool) -> None:
    line, _ = FORMS[form]
    out = []
    for i in range(lines):
        t = 8 * 3600 + i // 4
        h, rest = divmod(t, 3600)
        ratio = (i * 37 % 10_000) / 10_000
        pct = f"{100 * ratio:.2f}%" if percent else f"{ratio:.2f}"
        pct1 = f"{100 * ratio:.1f}%" if percent else f"{ratio:.3f}"
        out.append(line.format(h=h % 24, m=rest // 60, s=rest % 60, r=20 + i % 13,
                               tok=9000 + i % 977, u=30 + i % 50, g=600.0 + i % 97, q=i % 5,
                               pct=pct, pct1=pct1) + "\n")
    path.write_text("".join(out))


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def export(path: Path) -> int:
    n = 0

    def each(_before: int, texts: list[bytes]) -> None:
        nonlocal n
        n += sum(map(len, texts))

    logread.fold(path, JsonlJob(), each)
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{args.lines:,} lines a log, best of {args.repeat}, one process; "
          f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.log"
        write(warm, 1000, next(iter(FORMS)), True)
        summarize(warm), export(warm)  # imports and first calls out of the figures
        for form in FORMS:
            paths = {}
            for percent in (False, True):
                paths[percent] = Path(tmp) / f"{'pct' if percent else 'frac'}.log"
                write(paths[percent], args.lines, form, percent)
            for what, fn in (("summary", summarize), ("export", export)):
                got = {p: best(lambda fn=fn, path=paths[p]: fn(path), args.repeat)
                       for p in (False, True)}
                frac, pct = got[False], got[True]
                print(f"{form:<40} {what:<8} fraction {frac:6.2f} s, percent {pct:6.2f} s: "
                      f"{pct / frac:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
