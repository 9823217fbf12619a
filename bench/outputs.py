"""`kdash outputs` on a large JSONL file, against `wc -l` and the JSON decoding floor.

Writes a file of SGLang `/generate` records of 4-16 KB (reasoning in `<think>` blocks, a share
stopping at `length`, a few error records and one crashed half line), then times, in this run:
`wc -l` (output to a pipe: GNU tools take shortcuts when it goes to /dev/null), `json.loads` of
every line (reading in the same blocks), and `kdash outputs FILE --json` (a subprocess, output
to a pipe). Prints both ratios: against `wc -l`, and against `wc -l` plus the decoding floor.

    .venv/bin/python bench/outputs.py            # 1 GB
    .venv/bin/python bench/outputs.py --quick    # 100 MB
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORDS = ("the", "function", "returns", "a", "list", "of", "values", "we", "first", "check",
         "whether", "input", "is", "empty", "then", "loop", "over", "each", "item", "and")


def write(path: Path, size: int) -> int:
    rng = random.Random(7)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        written = 0
        while written < size:
            n += 1
            body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(700, 2800)))
            cut = rng.random() < 0.08
            if n % 997 == 0:
                line = json.dumps({"id": n, "error": {"message": "context length exceeded"}})
            else:
                line = json.dumps({"id": f"p-{n:07d}", "text": f"<think>\n{body}\n</think>\n\n"
                                   f"{body[:400]}", "meta_info": {
                                       "id": f"{n:016x}", "finish_reason": {
                                           "type": "length", "length": 10240} if cut else {
                                           "type": "stop", "matched": 1},
                                       "prompt_tokens": rng.randint(300, 2000),
                                       "completion_tokens": 10240 if cut else rng.randint(
                                           200, 4000), "cached_tokens": 0, "e2e_latency": 9.5}})
            if n == 5000:
                line = line[: len(line) // 2]  # a writer killed mid-line
            fh.write(line + "\n")
            written += len(line) + 1
    return n


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def json_floor(path: Path) -> None:
    carry = b""
    with path.open("rb", buffering=0) as fh:
        while data := fh.read(4 * 1024 * 1024):
            data = carry + data
            end = data.rfind(b"\n") + 1
            carry = data[end:]
            for raw in data[:end].split(b"\n")[:-1]:
                try:
                    json.loads(raw)
                except ValueError:
                    pass


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="100 MB instead of 1 GB")
    ns = p.parse_args()
    size = (100 if ns.quick else 1024) * 1024 * 1024
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "outputs.jsonl"
        lines = write(path, size)
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # page cache
        wc = timed(lambda: subprocess.run(["wc", "-l", str(path)], stdout=subprocess.PIPE,
                                          check=True))
        floor = timed(lambda: json_floor(path))
        kdash = timed(lambda: subprocess.run(
            [sys.executable, "-m", "dash", "outputs", str(path), "--json"],
            stdout=subprocess.PIPE, check=True, cwd=tmp))
    print(f"kdash outputs on {size / 2**30:.2f} GiB of JSONL ({lines:,} records of 4-16 KB)")
    print(f"  wc -l                {wc:7.2f} s")
    print(f"  json.loads of lines  {floor:7.2f} s")
    print(f"  kdash outputs        {kdash:7.2f} s")
    print(f"  ratio vs wc -l                 {kdash / wc:6.1f}x")
    print(f"  ratio vs wc -l + json floor    {kdash / (wc + floor):6.2f}x   (goal <= 5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
