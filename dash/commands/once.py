"""`kdash --once [--json]`: read every configured source once, print the state, exit.

The first counts of the outputs are waited for here (unlike the dashboard, which shows them
counting), so the numbers printed are complete.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import TextIO

from dash.core.clock import Clock, SystemClock
from dash.core.config import Config
from dash.core.snapshot import RunSnapshot, ServerLogSnapshot
from dash.core.state.log_clock import clock_text
from dash.core.views.jsondoc import snapshot_to_json
from dash.sources.collector import Collector, apply_files, apply_gpus, apply_http, apply_processes


async def _http_once(collector: Collector) -> object:
    try:
        return await collector.poll_http()
    finally:
        await collector.aclose()


def collect_once(cfg: Config, *, nvml_module: object | None = None,
                 clock: Clock | None = None) -> RunSnapshot:
    """The run's state from one pass over every source (blocks until counts are done)."""
    from dash.core.state.run import RunState

    clock = clock or SystemClock()
    collector = Collector(cfg, nvml_module=nvml_module)
    state = RunState(cfg)
    try:
        read = collector.read_files()
        apply_files(state, read, clock.now())
        while read.more or read.counting:
            collector.wait_counts()
            read = collector.read_files()
            apply_files(state, read, clock.now())
        apply_processes(state, collector.sample_processes(), clock.now())
        apply_gpus(state, collector.sample_gpus(), clock.now())
        apply_http(state, asyncio.run(_http_once(collector)), clock.now())
    finally:
        collector.close()
    now = clock.now()
    return state.tick_and_snapshot(now)[1]


def run_once(cfg: Config, as_json: bool, *, nvml_module: object | None = None,
             out: TextIO | None = None) -> int:
    """Print the state once; 0 on success (a bad glob raises ConfigError: exit 2 in the CLI)."""
    out = out or sys.stdout
    snap = collect_once(cfg, nvml_module=nvml_module)
    if as_json:
        json.dump(snapshot_to_json(snap), out, indent=2, sort_keys=False)
        out.write("\n")
    else:
        out.write(render_text(snap))
    out.flush()
    return 0


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    if s >= 86400:
        return f"{s // 86400}d{s % 86400 // 3600:02d}h"
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s"


def _num(v: object, fmt: str = "{:.1f}") -> str:
    return "?" if v is None else fmt.format(v)


def _server_lines(s: ServerLogSnapshot, now: float) -> list[str]:
    lines = []
    if s.path:
        name = f"{s.name}: " if s.name else ""
        lines.append(f"server log  {name}{s.path} [{s.status}]"
                     + (f" {s.role}" if s.role else "")
                     + (f" {s.status_message}" if s.status_message else ""))
    d = s.last_decode
    if d:
        lines.append(f"  last decode  gen {_num(d.get('gen_throughput'))} tok/s, running "
                     f"{d.get('running_req', '?')}, queue {d.get('queue_req', '?')}, "
                     f"token usage {_num(d.get('token_usage'), '{:.2f}')}  ({d.get('ts') or '-'})")
    n = s.now
    if n is not None and n.multi:
        lines.append(f"  server       gen {_num(n.gen_throughput)} tok/s, running "
                     f"{_num(n.running_req, '{:.0f}')}, queue {_num(n.queue_req, '{:.0f}')}, "
                     f"token usage {_num(n.token_usage, '{:.2f}')} (mean "
                     f"{_num(n.token_usage_mean, '{:.2f}')}) over {n.live_ranks} of "
                     f"{len(n.ranks)} ranks")
        for r in n.ranks:
            lines.append(f"    {r.rank or '-':<10} gen {_num(r.gen_throughput)} tok/s, running "
                         f"{_num(r.running_req, '{:.0f}')}, queue {_num(r.queue_req, '{:.0f}')}, "
                         f"token usage {_num(r.token_usage, '{:.2f}')}"
                         + ("" if r.live else "  (stopped printing)"))
    if s.peak:
        lines.append(f"  peak         {s.peak.gen_throughput:.1f} tok/s at {s.peak.ts or '-'}")
    clock = clock_text(s.clock)
    if clock or s.clock.last_line_at is not None:
        age = None if s.clock.last_line_at is None else max(0.0, now - s.clock.last_line_at)
        lines.append(f"  clock        last line {_dur(age)} ago" + (f"; {clock}" if clock else ""))
    for ev in s.events[-5:]:
        lines.append(f"  event        {ev.get('event')}: {str(ev.get('message', ''))[:120]}")
    return lines


def render_text(snap: RunSnapshot) -> str:
    """A readable report of one snapshot (what `kdash --once` prints)."""
    lines = [f"kdash at {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(snap.now))}"]
    h = snap.http
    for s in snap.servers or (snap.server,):
        lines.extend(_server_lines(s, snap.now))
    if snap.total is not None:
        n = snap.total
        lines.append(f"all servers  gen {_num(n.gen_throughput)} tok/s, running "
                     f"{_num(n.running_req, '{:.0f}')}, queue {_num(n.queue_req, '{:.0f}')}")
    if h.url:
        lines.append(f"server http {h.url} [{h.state}]" + (f" {h.reason}" if h.reason else "")
                     + (f" {h.latency_s * 1000:.0f} ms" if h.latency_s is not None else ""))
    if snap.partitions:
        lines.append("partitions")
        for p in snap.partitions:
            total = "?" if p.total is None else str(p.total)
            pct = "" if p.percent is None else f" {p.percent:5.1f}%"
            lines.append(f"  {p.name:<24} {p.done:>8}/{total:<8}{pct} [{p.status}] "
                         f"+{p.written} since start, {_num(p.rate_per_min)}/min, "
                         f"eta {_dur(p.eta_s)}")
        t = snap.totals
        lines.append(f"  {'total':<24} {t.done:>8}/{'?' if t.total is None else t.total:<8} "
                     f"{_num(t.rate_per_min)}/min, eta {_dur(t.eta_s)}"
                     + (f", last to finish {t.last_to_finish}" if t.last_to_finish else ""))
    c = snap.client
    if c.log_path:
        prog = c.last_progress.text if c.last_progress else "no progress bar"
        lines.append(f"client log  {c.log_path} {_num(c.log_bytes, '{}')} bytes; {prog}")
    if c.processes is not None:
        pids = ", ".join(str(p.pid) for p in c.processes) or "none"
        lines.append(f"client proc {c.process_pattern!r}: {pids}")
    g = snap.gpus
    if not g.available:
        lines.append(f"gpus        NVML unavailable: {g.reason}")
    for gpu in g.gpus:
        used = "?" if gpu.memory_used is None else f"{gpu.memory_used / 2**30:.1f}"
        tot = "?" if gpu.memory_total is None else f"{gpu.memory_total / 2**30:.1f}"
        lines.append(f"gpu {gpu.index:<7} {used}/{tot} GiB, util {_num(gpu.util_gpu, '{:.0f}')}%")
    if not snap.alerts:
        lines.append("alerts      none")
    for a in snap.alerts:
        lines.append(f"ALERT {a.severity:<4} {a.id}: {a.message}")
    for n in snap.notices:
        lines.append(f"note  {n}")
    return "\n".join(lines) + "\n"
