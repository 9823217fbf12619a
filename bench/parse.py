"""Benchmark: `kdash summary`, `export` and `replay` on a large realistic server log, against
`grep -c` on the same file.

    .venv/bin/python bench/parse.py                # 1 GB log under bench/out/
    .venv/bin/python bench/parse.py --size-mb 200  # the quick run

The log mixes what a busy SGLang server writes during a batch-inference job: per second one
`Decode batch` line, a few `Prefill batch` lines and many uvicorn access lines, with a startup
section and a rare retraction. Every command reads the same file (from the page cache, as
after generation) once a round, `--repeat` rounds, with grep run again beside each of them,
so that a slow spell of a shared machine falls on the baseline too; the best of each is
printed with its ratio to the best grep, and the load average before each round. grep uses
one core and writes its count to a pipe (GNU grep stops at the first match when its output
is /dev/null); kdash reads a large file with one process per core, at most eight, and is
timed with one too (`KDASH_PROCESSES=1`). `export --format jsonl` writes to /dev/null. The
replay's figure is its first frame: a headless `ReplayApp`, started as `kdash replay` starts
it, from the interpreter's start until it has drawn the log's first state, with its peak RSS.
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
from collections.abc import Callable
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


class Run:
    """One timed command: wall seconds, CPU seconds (every process of it), and for a
    replay its first frame, records and peak RSS (its own, and its largest reading
    process's)."""

    def __init__(self, wall: float, cpu: float, out: str) -> None:
        self.wall, self.cpu, self.out = wall, cpu, out


def _time(cmd: list[str], env: dict[str, str] | None = None) -> Run:
    c0, t0 = _cpu(), time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    elapsed, cpu = time.perf_counter() - t0, _cpu() - c0
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()[-800:]}")
    return Run(elapsed, cpu, res.stdout)


# The replay as `kdash replay` starts it (`replay_app`: the reading started before the app),
# headless: the time from the interpreter's start to the first frame drawn.
_REPLAY = """
import asyncio, json, resource, sys, time
from pathlib import Path
from dash.commands.replay import replay_app

async def main():
    path = Path(sys.argv[1])
    app = replay_app(path, (), 60.0)
    async with app.run_test(size=(160, 45)) as pilot:
        while app.frame is None and app.load_error is None:
            await pilot.pause(0.01)
        await pilot.pause()
        first = time.time()
        out = {"first": first, "records": len(app.timeline.records) if app.timeline else 0,
               "error": app.load_error,
               "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               "workers": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}
        print(json.dumps(out))
        app.exit()

asyncio.run(main())
"""


def _replay(path: Path, env: dict[str, str] | None = None) -> Run:
    t0 = time.time()
    run = _time([sys.executable, "-c", _REPLAY, str(path)], env)
    got = json.loads(run.out.strip().splitlines()[-1])
    if got["error"]:
        sys.exit(f"replay failed: {got['error']}")
    run.wall = got["first"] - t0
    run.out = got
    return run


def _rounds(path: Path, repeat: int) -> tuple[dict[str, list[Run]], list[float]]:
    """Every command once a round, grep among them, `repeat` rounds: a slow spell of a
    shared machine falls on all of them alike. The load average before each round."""
    grep = shutil.which("grep") or "grep"
    py = [sys.executable, "-m", "dash"]
    one = dict(os.environ, KDASH_PROCESSES="1")
    export = ["sh", "-c", '"$0" -m dash export "$1" --format jsonl > /dev/null', sys.executable,
              str(path)]
    summary = [*py, "summary", str(path), "--json"]
    cmds: dict[str, Callable[[], Run]] = {
        "grep": lambda: _time([grep, "-c", "Decode batch", str(path)]),
        "summary": lambda: _time(summary), "summary1": lambda: _time(summary, one),
        "export": lambda: _time(export), "export1": lambda: _time(export, one),
        "replay": lambda: _replay(path), "replay1": lambda: _replay(path, one),
    }
    runs: dict[str, list[Run]] = {name: [] for name in cmds}
    loads = []
    for _ in range(repeat):
        loads.append(os.getloadavg()[0])
        for name, cmd in cmds.items():
            runs[name].append(cmd())
            if name != "grep":
                runs["grep"].append(cmds["grep"]())  # grep again beside each command
    return runs, loads


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="log size (default 1024)")
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    ap.add_argument("--repeat", type=int, default=3, help="best of N rounds (default 3)")
    ns = ap.parse_args()
    path = OUT / f"mixed-{ns.size_mb}mb.log"
    if not path.exists() or path.stat().st_size < ns.size_mb * 1024 * 1024:
        print(f"generating {path} ...", flush=True)
        generate(path, ns.size_mb)
    # Every command starts from compiled bytecode, as an installed kdash does (pip compiles a
    # wheel's modules as it installs them): where PYTHONDONTWRITEBYTECODE is set, a checkout's
    # modules would otherwise be compiled from source again at every start (0.1-0.4 s here).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "dash")], check=True)
    try:
        _report(path, ns.repeat)
    finally:
        if not ns.keep:
            path.unlink()
    return 0


def _report(path: Path, repeat: int) -> None:
    runs, loads = _rounds(path, repeat)
    best = {name: min(rs, key=lambda r: r.wall) for name, rs in runs.items()}
    g = best["grep"]
    g_cpu = min(r.cpu for r in runs["grep"])
    doc = json.loads(best["summary"].out)
    size = path.stat().st_size / 1e6
    print(f"log: {size:,.0f} MB, {doc['lines']:,} lines ({doc['records']['decode']:,} decode, "
          f"{doc['records']['prefill']:,} prefill, {doc['records']['event']:,} events; "
          f"grep counts {int(g.out.strip()):,} decode lines)")
    cores = os.cpu_count() or 1
    print(f"machine: {cores} cores; load average before each round: "
          f"{', '.join(f'{x:.2f}' for x in loads)}, after: {os.getloadavg()[0]:.2f} "
          "(other work slows every command)")
    n = processes()
    print(f"best of {repeat} rounds, grep run beside every command "
          f"({len(runs['grep'])} times: {min(r.wall for r in runs['grep']):.2f}-"
          f"{max(r.wall for r in runs['grep']):.2f} s)")
    print(f"{'':44} {'wall':>7} {'ratio':>6} {'cpu':>7} {'ratio':>6}   goal")
    rows = (("grep -c 'Decode batch' (1 core)", "grep", ""),
            (f"kdash summary --json ({n} processes)", "summary", "<= 6x"),
            ("kdash summary --json (1 process)", "summary1", ""),
            (f"kdash export jsonl ({n} processes)", "export", "<= 15x"),
            ("kdash export jsonl (1 process)", "export1", ""),
            (f"kdash replay, first frame ({n} processes)", "replay", "<= 15x"),
            ("kdash replay, first frame (1 process)", "replay1", ""))
    for label, name, goal in rows:
        r = best[name]
        print(f"{label:44} {r.wall:6.2f}s {r.wall / g.wall:5.1f}x {r.cpu:6.2f}s "
              f"{r.cpu / g_cpu:5.1f}x   {goal}")
    r2, r1 = best["replay"].out, best["replay1"].out
    assert isinstance(r2, dict) and isinstance(r1, dict)
    print(f"replay: {r2['records']:,} records kept; peak RSS {r2['rss']:.0f} MB with {n} "
          f"processes (each reading process at most {r2['workers']:.0f} MB), "
          f"{r1['rss']:.0f} MB with one; goal <= 250 MB")
    print(f"alerts replayed by summary: {len(doc['alerts'])}")


if __name__ == "__main__":
    raise SystemExit(main())
