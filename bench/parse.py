"""Benchmark: `kdash summary`, `export` and `replay` on a large realistic server log, against
`grep -c` on the same file.

    .venv/bin/python bench/parse.py                # 1 GB log under bench/out/
    .venv/bin/python bench/parse.py --size-mb 200  # the quick run

The log mixes what a busy SGLang server writes during a batch-inference job: per second one
`Decode batch` line, a few `Prefill batch` lines and many uvicorn access lines, with a startup
section and a rare retraction. Both commands read the same file in the same run (from the page
cache, as after generation), in turn, `--repeat` times; the best of each is printed, with the
ratio. grep uses one core and writes its count to a pipe (GNU grep stops at the first match
when its output is /dev/null); kdash reads a large file with one process per core, at most
eight, and is timed with one too (`KDASH_PROCESSES=1`). `export --format jsonl` writes to
/dev/null. The replay's figure is its first frame: a headless `ReplayApp` reading the log
until it has drawn the first state, with its peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from dash.sources.logread import processes

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"

STARTUP = """\
[2026-03-01 08:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', tp_size=1, dp_size=1, mem_fraction_static=0.88, kv_cache_dtype='auto', max_running_requests=None, context_length=None, port=30000)
[2026-03-01 08:00:10] Load weight begin. avail mem=78.53 GB
[2026-03-01 08:00:25] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.41 GB, mem usage=15.12 GB.
[2026-03-01 08:00:26] KV Cache is allocated. #tokens: 463000, K size: 28.26 GB, V size: 28.26 GB
[2026-03-01 08:00:26] Memory pool end. avail mem=6.31 GB
[2026-03-01 08:00:26] Capture cuda graph begin. This can take up to several minutes. avail mem=6.21 GB
[2026-03-01 08:00:36] Capture cuda graph end. Time elapsed: 9.81 s. mem usage=0.62 GB. avail mem=5.59 GB.
[2026-03-01 08:00:37] max_total_num_tokens=463000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem=5.59 GB
[2026-03-01 08:00:39] INFO:     Started server process [4021]
[2026-03-01 08:00:39] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2026-03-01 08:00:41] The server is fired up and ready to roll!
"""


def _stamp(t: int) -> str:
    day, rest = divmod(t, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"2026-03-{1 + day % 28:02d} {h:02d}:{m:02d}:{s:02d}"


def _second(rng: random.Random, t: int) -> str:
    """What the server logs in one second of a busy run."""
    ts = _stamp(t)
    running = rng.randint(150, 256)
    queue = rng.randint(0, 400)
    lines = []
    for _ in range(rng.randint(2, 4)):
        new = rng.randint(1, 8192)
        lines.append(
            f"[{ts}] Prefill batch, #new-seq: {rng.randint(1, 9)}, #new-token: {new}, "
            f"#cached-token: {rng.randint(0, 4096)}, token usage: {rng.random():.2f}, "
            f"#running-req: {running}, #queue-req: {queue}, #pending-token: {rng.randint(0, 99999)}, "
            f"cuda graph: False, input throughput (token/s): {rng.uniform(1e3, 3e4):.2f}"
        )
    lines.append(
        f"[{ts}] Decode batch, #running-req: {running}, #token: {rng.randint(10000, 463000)}, "
        f"token usage: {rng.random():.2f}, cuda graph: True, "
        f"gen throughput (token/s): {rng.uniform(2000, 9000):.2f}, #queue-req: {queue}"
    )
    for _ in range(rng.randint(12, 20)):
        lines.append(
            f'[{ts}] INFO:     127.0.0.1:{rng.randint(30000, 60000)} - '
            f'"POST /v1/chat/completions HTTP/1.1" 200 OK'
        )
    if rng.random() < 0.0005:
        lines.append(f"[{ts}] KV cache pool is full. Retract requests. #retracted_reqs: 2, "
                     f"#new_token_ratio: 0.4000 -> 0.5322")
    rng.shuffle(lines)
    return "\n".join(lines) + "\n"


def generate(path: Path, size_mb: int) -> None:
    """Write the mixed log (deterministic for a given size)."""
    rng = random.Random(size_mb)
    target = size_mb * 1024 * 1024
    written = 0
    t = 8 * 3600 + 60
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        fh.write(STARTUP)
        while written < target:
            block = "".join(_second(rng, t + i) for i in range(2000))
            t += 2000
            fh.write(block)
            written += len(block)


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _time(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (every process of the command), stdout."""
    c0, t0 = _cpu(), time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    elapsed, cpu = time.perf_counter() - t0, _cpu() - c0
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()[-500:]}")
    return elapsed, cpu, res.stdout


def _best_interleaved(cmds: list[tuple[list[str], dict[str, str] | None]],
                     repeat: int) -> list[tuple[float, float, str]]:
    """Best wall and CPU of each command over `repeat` rounds; each round runs every command
    once, so that a slow spell of a shared machine falls on all of them alike."""
    runs: list[list[tuple[float, float, str]]] = [[] for _ in cmds]
    for _ in range(repeat):
        for i, (cmd, env) in enumerate(cmds):
            runs[i].append(_time(cmd, env))
    return [(min(r[0] for r in rs), min(r[1] for r in rs), rs[-1][2]) for rs in runs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="log size (default 1024)")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs each (default 3)")
    ns = ap.parse_args()
    path = OUT / f"mixed-{ns.size_mb}mb.log"
    if not path.exists() or path.stat().st_size < ns.size_mb * 1024 * 1024:
        print(f"generating {path} ...", flush=True)
        generate(path, ns.size_mb)
    try:
        _report(path, ns.repeat)
    finally:
        if not ns.keep:
            path.unlink()
    return 0


_REPLAY = """
import asyncio, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
from dash.commands.replay import replay_config
from dash.ui.replay_app import ReplayApp

async def main():
    app = ReplayApp(replay_config(Path(sys.argv[1]), ()), speed=60.0)
    async with app.run_test(size=(160, 45)) as pilot:
        while app.cursor is None:
            await pilot.pause(0.01)
        await pilot.pause()
        print(time.perf_counter() - t0, len(app.timeline.records))
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        app.exit()

asyncio.run(main())
"""


def _replay(path: Path, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """First frame (s, as the script measures it), records, peak RSS (MB) of a replay."""
    res = subprocess.run([sys.executable, "-c", _REPLAY, str(path)], capture_output=True,
                         text=True, check=False, env=env)
    if res.returncode != 0:
        sys.exit(f"replay failed: {res.stderr.strip()[-800:]}")
    first, rss = res.stdout.split("\n")[:2]
    t, n = first.split()
    return float(t), float(n), float(rss)


def _report(path: Path, repeat: int) -> None:
    grep = shutil.which("grep") or "grep"
    py = [sys.executable, "-m", "dash"]
    one = dict(os.environ, KDASH_PROCESSES="1")
    export = ["sh", "-c", '"$0" -m dash export "$1" --format jsonl > /dev/null', sys.executable,
              str(path)]
    runs = _best_interleaved(
        [([grep, "-c", "Decode batch", str(path)], None),
         ([*py, "summary", str(path), "--json"], None), ([*py, "summary", str(path), "--json"], one),
         (export, None), (export, one)], repeat)
    (g, g_cpu, g_out), (s2, s2_cpu, out), (s1, s1_cpu, _), (e2, e2_cpu, _), (e1, e1_cpu, _) = runs
    replays = [(_replay(path), _replay(path, one)) for _ in range(max(1, repeat - 1))]
    r2 = min((r[0] for r in replays), key=lambda r: r[0])
    r1 = min((r[1] for r in replays), key=lambda r: r[0])
    doc = json.loads(out)
    size = path.stat().st_size / 1e6
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"log: {size:,.0f} MB, {doc['lines']:,} lines ({doc['records']['decode']:,} decode, "
          f"{doc['records']['prefill']:,} prefill, {doc['records']['event']:,} events; "
          f"grep counts {int(g_out.strip()):,} decode lines)")
    print(f"machine: {cores} cores, load average {load:.2f} at the start (other work slows both)")
    n = processes()
    print(f"{'':44} {'wall':>7} {'ratio':>6} {'cpu':>7} {'ratio':>6}   goal")
    for name, wall, cpu, goal in (
            ("grep -c 'Decode batch' (1 core)", g, g_cpu, ""),
            (f"kdash summary --json ({n} processes)", s2, s2_cpu, "<= 6x"),
            ("kdash summary --json (1 process)", s1, s1_cpu, ""),
            (f"kdash export jsonl ({n} processes)", e2, e2_cpu, "<= 15x"),
            ("kdash export jsonl (1 process)", e1, e1_cpu, ""),
            (f"kdash replay, first frame ({n} processes)", r2[0], float("nan"), "<= 15x"),
            ("kdash replay, first frame (1 process)", r1[0], float("nan"), "")):
        print(f"{name:44} {wall:6.2f}s {wall / g:5.1f}x {cpu:6.2f}s {cpu / g_cpu:5.1f}x   {goal}")
    print(f"replay: {r2[1]:,.0f} records kept, peak RSS {r2[2]:.0f} MB ({n} processes), "
          f"{r1[2]:.0f} MB (1 process); goal <= 250 MB")
    print(f"alerts replayed by summary: {len(doc['alerts'])}")


if __name__ == "__main__":
    raise SystemExit(main())
