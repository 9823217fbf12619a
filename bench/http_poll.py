"""Cost of one HTTP poll cycle in kdash's own code, with a /metrics of ~170 families.

A local HTTP server (127.0.0.1, its own thread) answers like SGLang 0.5.23 with --enable-metrics:
`/metrics` of 170 families (gauges, counters and 20-bucket histograms, labels as the
multiprocess exposition writes them, ~0.3 MB), `/ready` and the info routes. Measured in the
same run:

- baseline: the same GETs (/metrics, /ready) with a bare httpx.AsyncClient, bodies read, nothing else;
- kdash: `HttpPoller.poll()` (the same GETs, streamed with size caps and a deadline, /metrics
  parsed and normalised, the sample built) plus `HttpTracker.apply` and `snapshot`;
- parsing alone: `parse_metrics` (drops unused families first) against prometheus_client's parser
  over the whole text.

    .venv/bin/python bench/http_poll.py [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from prometheus_client.parser import text_string_to_metric_families

from dash.core.state.http_state import HttpTracker
from dash.core.state.metrics_text import parse_metrics
from dash.sources.http import HttpPoller

FAMILIES = 170
BUCKETS = tuple(0.005 * 2**i for i in range(19)) + (float("inf"),)
SCHED = 'engine_type="unified",model_name="llama-70b",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
REAL = ["num_running_reqs", "num_queue_reqs", "num_used_tokens", "token_usage", "gen_throughput",
        "cache_hit_rate", "utilization", "max_total_num_tokens"]


def exposition(families: int = FAMILIES) -> str:
    """A /metrics body shaped like SGLang 0.5.23's: ~40% gauges, 25% counters, 35% histograms."""
    out: list[str] = []
    for i in range(families):
        kind = "gauge" if i % 20 < 8 else "counter" if i % 20 < 13 else "histogram"
        name = f"sglang:{REAL[i]}" if i < len(REAL) else f"sglang:{kind}_family_{i}"
        if kind == "counter":
            name += "_total"
        out.append(f"# HELP {name} doc of {name}\n# TYPE {name} {kind}\n")
        if kind != "histogram":
            out.append(f"{name}{{{SCHED}}} {float(i)}\n")
            continue
        for n, le in enumerate(BUCKETS):
            out.append(f'{name}_bucket{{{SCHED},le="{le if le != float("inf") else "+Inf"}"}} {n}.0\n')
        out.append(f"{name}_count{{{SCHED}}} 19.0\n{name}_sum{{{SCHED}}} 12.5\n")
    return "".join(out)


def serve(body: bytes) -> tuple[ThreadingHTTPServer, str]:
    routes = {"/metrics": body, "/ready": b"", "/server_info": b'{"version": "0.5.23"}',
              "/model_info": b'{"model_path": "m"}'}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            data = routes.get(self.path)
            self.send_response(200 if data is not None else 404)
            self.send_header("Content-Length", str(len(data or b"")))
            self.end_headers()
            self.wfile.write(data or b"")

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


async def best_async(fn: Callable[[], Awaitable[object]], n: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            await fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best


def best_sync(fn: Callable[[], object], n: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best


async def run(n: int, repeats: int) -> None:
    text = exposition()
    httpd, url = serve(text.encode())
    client = httpx.AsyncClient(base_url=url, trust_env=False)
    poller = HttpPoller(url)
    tracker = HttpTracker(url)
    clock = [1_750_000_000.0]

    async def raw() -> None:
        for path in ("/metrics", "/ready"):
            (await client.get(path)).raise_for_status()

    async def kdash() -> None:
        clock[0] += 2.0
        tracker.apply(await poller.poll(clock[0]), clock[0])
        tracker.snapshot(clock[0])

    try:
        await kdash()  # connect and read the info once, as at start; then steady-state polls
        await raw()
        base = await best_async(raw, n, repeats)
        ours = await best_async(kdash, n, repeats)
    finally:
        await client.aclose()
        await poller.aclose()
        httpd.shutdown()
    full = best_sync(lambda: list(text_string_to_metric_families(text)), max(3, n // 4), repeats)
    mine = best_sync(lambda: parse_metrics(text), max(3, n // 4), repeats)
    families = parse_metrics(text).families
    print(f"/metrics: {families} families, {len(text) / 1024:.0f} KiB, {text.count(chr(10))} lines")
    print(f"baseline  raw httpx GET /metrics + /ready : {base * 1e3:7.2f} ms")
    print(f"kdash     poll + apply + snapshot        : {ours * 1e3:7.2f} ms   "
          f"ratio {ours / base:.2f}x, kdash's own share {(ours - base) * 1e3:.2f} ms")
    print(f"parse     prometheus_client, whole text  : {full * 1e3:7.2f} ms")
    print(f"parse     kdash parse_metrics (filtered) : {mine * 1e3:7.2f} ms   "
          f"ratio {mine / full:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a few seconds)")
    ns = ap.parse_args()
    asyncio.run(run(n=10 if ns.quick else 50, repeats=3 if ns.quick else 5))


if __name__ == "__main__":
    main()
