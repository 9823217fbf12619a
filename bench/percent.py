"""Benchmark: stats lines that print a value as a percent, against the same lines with it as a
fraction (the bulk reader's learned shapes read both at C speed, or the percent lines fall
back to the per-line parser).

    .venv/bin/python bench/percent.py                 # 200k stats lines a log
    .venv/bin/python bench/percent.py --lines 50000

Pairs of logs with the same number of lines and the same figures, one with a ratio printed as
a percent (`88.50%`), its twin with the same ratio as a fraction (`0.89`, what the fast path
has always read): SGLang's decode line with `fwd occupancy` (`SGLANG_ENABLE_METRICS_DEVICE_TIMER`,
0.5.11+), its prefill line of 0.4.2 and before with `cache hit rate`, and vLLM's stats line
(`GPU KV cache usage`, `Prefix cache hit rate`). Each log is summarised (`kdash summary
--json`) and exported (`kdash export --format jsonl > /dev/null`), each command a fresh process
(`KDASH_PROCESSES=1`: a process keeps the shapes it learned, so logs read one after another in
one process would pay for each other's), the two logs of a pair in turn, best of `--repeat`;
the ratio percent/fraction is the cost of the percent. The interpreter's start and imports are
in both (`python -c pass` with the same imports is printed beside them).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, KDASH_PROCESSES="1", PYTHONPATH=path)


def command(what: str, path: Path) -> list[str]:
    if what == "summary":
        return [sys.executable, "-m", "dash", "summary", str(path), "--json"]
    if what == "export":
        return ["sh", "-c", '"$0" -m dash export "$1" --format jsonl > /dev/null', sys.executable,
                str(path)]
    return [sys.executable, "-c", "import dash.commands.summary, dash.commands.export"]


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, check=False, env=_env(), cwd=ROOT)
    elapsed = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.decode()[-800:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{args.lines:,} lines a log, best of {args.repeat}, one process; "
          f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        start = min(timed(command("imports", Path(tmp))) for _ in range(args.repeat))
        print(f"interpreter start and imports alone: {start:.2f} s")
        for form in FORMS:
            paths = {}
            for percent in (False, True):
                paths[percent] = Path(tmp) / f"{'pct' if percent else 'frac'}.log"
                write(paths[percent], args.lines, form, percent)
            for what in ("summary", "export"):
                runs: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(args.repeat):  # the two in turn: a slow spell falls on both
                    for percent in (False, True):
                        runs[percent].append(timed(command(what, paths[percent])))
                frac, pct = min(runs[False]), min(runs[True])
                print(f"{form:<40} {what:<8} fraction {frac:6.2f} s, percent {pct:6.2f} s: "
                      f"{pct / frac:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
