"""The text that `kdash --once` prints: one snapshot, read top to bottom.

What the screen dims is said in words here: figures from a log that is not live carry their age,
rates and ETAs measured before the server went down say so.
"""

from __future__ import annotations

import re
import textwrap
import time
from collections.abc import Mapping, Sequence
from typing import Any

from dash.core.samples.snapshot import QualitySnapshot
from dash.core.snapshot import Liveness, Record, RunSnapshot, ServerLogSnapshot, ServerNow
from dash.core.state.liveness import start_step
from dash.core.state.log_clock import clock_text
from dash.core.views.launch_advice import server_line


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    if s >= 86400:
        return f"{s // 86400}d{s % 86400 // 3600:02d}h"
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s"


def _input(rec: Mapping[str, Any]) -> str:
    """`, input 8123 tok/s` where the prefill line prints its input throughput."""
    value = rec.get("input_throughput")
    return f", input {value:.0f} tok/s" if isinstance(value, (int, float)) else ""


def _num(v: object, fmt: str = "{:.1f}") -> str:
    return "?" if v is None else fmt.format(v)


def liveness_text(live: Liveness, polled_for: str | None = None,
                  events: Sequence[Record] = ()) -> str:
    """`log live (last stats line 3s ago), http up` and the like; `polled_for`: the server
    whose URL is polled, on the line of another (the one --url is the first server's);
    `events`: the server's, to say where a start in progress is."""
    log = {"live": "log live", "quiet": "log quiet", "crashed": "log shows a crash",
           "waiting": "log not there yet", "error": "log unreadable", "none": "no log"}[live.log]
    if live.log_age_s is not None and live.log in ("live", "quiet", "crashed"):
        log += f" (last stats line {_dur(live.log_age_s)} ago)"
    http = {"off": "http off", "unknown": "http not polled"}.get(live.http, f"http {live.http}")
    if polled_for is not None:
        http = f"http not polled: the one URL is {polled_for}'s"
    if live.starting is not None:  # no stats line yet, as a start has none: not "quiet"
        log = f"log shows a start in progress ({start_step(events)})"
    down = "; the server is DOWN" if live.down else ""
    return f"{log}, {http}{down}"


def _server_lines(snap: RunSnapshot) -> list[str]:
    lines: list[str] = []
    for i in range(max(1, len(snap.servers))):
        lines += _one_server(snap.for_server(i), snap.polled_for(i))
    if snap.total is not None:
        lines.append(_total_line(snap, snap.total))
    h = snap.http
    if h.url:
        why = f" ({h.url_why})" if h.url_why and h.url_source != "flag" else ""
        lines.append(f"server http {h.url}{why} [{h.state}]"
                     + (f" {h.reason}" if h.reason else "")
                     + (f" {h.latency_s * 1000:.0f} ms" if h.latency_s is not None else ""))
    return lines


def _total_line(snap: RunSnapshot, n: ServerNow) -> str:
    """`all servers gen … tok/s`; `1 of 2 servers …; not summed (log not live): node2` when
    some servers' logs went quiet; the age when every server's figures are old."""
    k, count = len(snap.total_from), len(snap.servers)
    who = "all servers" if k == count else f"{k} of {count} servers"
    line = (f"{who} gen {_num(n.gen_throughput)} tok/s, running "
            f"{_num(n.running_req, '{:.0f}')}, queue {_num(n.queue_req, '{:.0f}')}")
    stale, age_s = snap.figures_liveness
    if stale:
        line += f" ({_dur(age_s)} old)"
    left = [snap.servers[i].name or snap.servers[i].path or "?" for i in snap.left_out]
    if left:
        line += f"; not summed (log not live): {', '.join(left)}"
    return line


def _one_server(snap: RunSnapshot, polled_for: str | None = None) -> list[str]:
    s, live = snap.server, snap.liveness
    name = f"{s.name}: " if s.name else ""
    lines = [f"server      {name}{liveness_text(live, polled_for, s.events)}"]
    if s.path:
        lines.append(f"server log  {s.path} [{s.status}]" + (f" {s.role}" if s.role else "")
                     + (f" {s.status_message}" if s.status_message else ""))
    d = s.last_decode
    if d:
        old = f", {_dur(live.log_age_s)} old" if live.stale else ""
        lines.append(f"  last decode  gen {_num(d.get('gen_throughput'))} tok/s, running "
                     f"{d.get('running_req', '?')}, queue {d.get('queue_req', '?')}, "
                     f"token usage {_num(d.get('token_usage'), '{:.2f}')}  "
                     f"({d.get('ts') or '-'}{old})")
    p = s.last_prefill
    if p and not d:  # a prefill server (PD) prints no decode lines: its prefill ones tell
        old = f", {_dur(live.log_age_s)} old" if live.stale else ""
        lines.append(f"  last prefill {p.get('new_seq', '?')} new seqs, {p.get('new_token', '?')} "
                     f"new tokens, {p.get('cached_token', '?')} cached, running "
                     f"{p.get('running_req', '?')}, queue {p.get('queue_req', '?')}, token usage "
                     f"{_num(p.get('token_usage'), '{:.2f}')}{_input(p)}  ({p.get('ts') or '-'}{old})")
    lines += _rank_lines(s)
    if s.peak:
        lines.append(f"  peak         {s.peak.gen_throughput:.1f} tok/s at {s.peak.ts or '-'}")
    launch = server_line(snap.launches)
    if launch:
        lines.append(f"  launches     {launch}")
    clock = clock_text(s.clock)
    if clock:
        age = None if s.clock.last_line_at is None else max(0.0, snap.now - s.clock.last_line_at)
        lines.append(f"  clock        {clock}; last line {_dur(age)} ago")
    for ev in s.events[-5:]:
        lines.append(f"  event        {ev.get('event')}: {str(ev.get('message', ''))[:120]}")
    return lines


def _rank_lines(s: ServerLogSnapshot) -> list[str]:
    """The whole server's figures and each DP rank's, when it has several."""
    n = s.now
    if n is None or not n.multi:
        return []
    lines = [f"  server       gen {_num(n.gen_throughput)} tok/s, running "
             f"{_num(n.running_req, '{:.0f}')}, queue {_num(n.queue_req, '{:.0f}')}, token "
             f"usage {_num(n.token_usage, '{:.2f}')} (mean {_num(n.token_usage_mean, '{:.2f}')})"
             f" over {n.live_ranks} of {len(n.ranks)} ranks"]
    for r in n.ranks:
        lines.append(f"    {r.rank or '-':<10} gen {_num(r.gen_throughput)} tok/s, running "
                     f"{_num(r.running_req, '{:.0f}')}, queue {_num(r.queue_req, '{:.0f}')}, "
                     f"token usage {_num(r.token_usage, '{:.2f}')}"
                     + ("" if r.live else "  (stopped printing)"))
    return lines


def _partition_lines(snap: RunSnapshot) -> list[str]:
    lines: list[str] = []
    for glob in snap.unmatched_globs:
        lines.append(f"outputs     no file matches --outputs {glob!r}")
    if not snap.partitions:
        return lines
    stale = " (measured before the server went down)" if snap.liveness.down else ""
    lines.append("partitions" + stale)
    for p in snap.partitions:
        total = "?" if p.total is None else str(p.total)
        pct = "" if p.percent is None else f" {p.percent:5.1f}%"
        status = p.status if p.error is None else f"{p.status}: {p.error}"
        eta = "done" if p.status == "done" else _dur(p.eta_s)  # as the dashboard's table says
        over = f"; {p.over_total}" if p.over_total is not None else ""
        lines.append(f"  {p.name:<24} {p.done:>8}/{total:<8}{pct} [{status}] "
                     f"+{p.written} since start, {_num(p.rate_per_min)}/min, eta {eta}{over}")
        if p.quality is not None:
            lines.append(_quality_line(p.quality))
    t = snap.totals
    lines.append(f"  {'total':<24} {t.done:>8}/{'?' if t.total is None else t.total:<8} "
                 f"{_num(t.rate_per_min)}/min, eta {_dur(t.eta_s)}"
                 + (f", last to finish {t.last_to_finish}" if t.last_to_finish else ""))
    return lines


def _quality_line(q: QualitySnapshot) -> str:
    """What the dashboard's trunc, tok and err columns say: the recent samples' share cut at
    the token limit and median output tokens, the error records and invalid lines."""
    w = q.window
    trunc = "-" if w.truncated_ratio is None else f"{w.truncated_ratio:.0%}"
    tok = f"{w.tokens.median:,.0f}" if w.tokens.n and w.tokens.median is not None else "-"
    return (f"    {'':<22} last {w.samples:,} samples: {trunc} cut at the token limit, median "
            f"{tok} output tokens; {q.total.errors:,} error records, {q.total.invalid:,} "
            "invalid lines")


def _client_lines(snap: RunSnapshot) -> list[str]:
    lines: list[str] = []
    c = snap.client
    if c.log_path:
        if c.log_status != "ok":
            lines.append(f"client log  {c.log_path} [{c.log_status}] {c.log_message or ''}")
        else:
            prog = c.last_progress.text if c.last_progress else "no progress bar"
            lines.append(f"client log  {c.log_path} {_num(c.log_bytes, '{}')} bytes; {prog}")
    if c.processes is not None:
        pids = ", ".join(str(p.pid) for p in c.processes) or "none"
        lines.append(f"client proc {c.process_pattern!r}: {pids}")
    return lines


def _gpu_lines(snap: RunSnapshot) -> list[str]:
    g = snap.gpus
    lines = [] if g.available else [f"gpus        NVML unavailable: {g.reason}"]
    for gpu in g.gpus:
        used = "?" if gpu.memory_used is None else f"{gpu.memory_used / 2**30:.1f}"
        tot = "?" if gpu.memory_total is None else f"{gpu.memory_total / 2**30:.1f}"
        lines.append(f"gpu {gpu.index:<7} {used}/{tot} GiB, util {_num(gpu.util_gpu, '{:.0f}')}%")
    return lines


def _alert_lines(snap: RunSnapshot) -> list[str]:
    if not snap.alerts:
        return ["alerts      none"]
    lines: list[str] = []
    for inc in snap.incidents or ():
        for i, a in enumerate(inc.alerts):
            lead = "ALERT" if i == 0 else "  caused"
            lines.append(f"{lead} {a.severity:<4} {a.id}: {a.message}")
            if i == 0 and a.hint:
                lines.append(f"      hint: {a.hint}")
    if not snap.incidents:
        lines += [f"ALERT {a.severity:<4} {a.id}: {a.message}" for a in snap.alerts]
    return lines


_VALUE = re.compile(r"\S(?:\S| (?=\S))*  +")
"""A line's label and the spaces after it (`  last decode  `): where its value starts."""


def fit(line: str, width: int) -> list[str]:
    """`line` in rows of at most `width` columns, each further row indented to where the line's
    value starts (under `gen` in `  last decode  gen ...`; four columns in from the line's own
    indent where it has no label), so the labels stay a column: an event's message or an
    alert's evidence is wrapped whole, never cut (a report is read for what it says). A word
    longer than a row (a long path) is broken anywhere."""
    if len(line) <= width:
        return [line]
    start = len(line) - len(line.lstrip(" "))
    lead = _VALUE.match(line, start)
    indent = lead.end() if lead is not None else start + 4  # no label: a hanging indent
    if indent > width // 2:
        indent = 4
    return textwrap.wrap(line, width, subsequent_indent=" " * indent,
                         break_on_hyphens=False, drop_whitespace=True) or [line]


def render_text(snap: RunSnapshot, sample: str | None = None, width: int | None = None) -> str:
    """A readable report of one snapshot (what `kdash --once` prints); `width`: the terminal's
    columns, each line fitted to them (None: one line each, as a pipe or a script wants)."""
    when = time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(snap.now))
    lines = [f"kdash at {when}" + (f" ({sample})" if sample else "")]
    for part in (_server_lines, _partition_lines, _client_lines, _gpu_lines, _alert_lines):
        lines += part(snap)
    lines += [f"note  {n}" for n in snap.notices]
    if width is not None:
        lines = [row for line in lines for row in fit(line, width)]
    return "\n".join(lines) + "\n"
