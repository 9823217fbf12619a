"""Server facts from the startup lines (KV cache, memory, parallelism) and the last events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.style import Style
from rich.text import Text

from dash.core.series import SeriesView
from dash.core.snapshot import RunSnapshot
from dash.core.state.log_clock import clock_text
from dash.core.views.launch_advice import server_line
from dash.core.views.launch_table import hicache_text
from dash.ui import fmt
from dash.ui.widgets.panel import LineBuilder, Panel
from dash.ui.widgets.ranks import server_rows

FACTS: tuple[tuple[str, str, str], ...] = (
    ("max_total_num_tokens", "max tokens", "{:,}"),
    ("kv_dtype", "KV dtype", "{}"),
    ("kv_size_gb", "KV size", "{:.1f} GB"),
    ("avail_mem_gb", "avail mem", "{:.2f} GB"),
    ("mem_fraction_static", "mem fraction", "{}"),
    ("tp_size", "tp", "{}"),
    ("dp_size", "dp", "{}"),
    ("max_running_requests", "max running", "{}"),
    ("context_length", "context", "{:,}"),
    ("hicache_size", "hicache", "{}"),
)
EVENT_LEVEL = {"oom": "crit", "crash": "crit", "error": "crit", "restart": "warn", "retract": "warn",
               "shutdown": "warn", "ready": "ok"}
SHOWN_EVENTS = 6
SPARK_POINTS = 24


def _fact(facts: Mapping[str, Any], key: str, pattern: str) -> str:
    if key == "hicache_size" and isinstance(facts.get("hicache_host_gb"), (int, float)):
        return f"{facts['hicache_host_gb']:.1f} GB host"  # what the host pool got
    value = facts.get(key)
    if value is None and key in ("tp_size", "dp_size"):
        seen = facts.get(key.replace("_size", "_seen"))
        if isinstance(seen, int):
            return f"≥{seen} ranks"  # no arguments line: the rank tags the log printed
    if key == "hicache_size" and value is not None:  # the launches table's words, not "0"
        return hicache_text(facts)
    if value is None and key == "mem_fraction_static":
        value = facts.get("gpu_memory_utilization")  # vLLM's name for the same budget
    if value is None:
        return "-"
    try:
        return fmt.clean(pattern.format(value), 40)
    except (ValueError, TypeError):
        return fmt.clean(str(value), 40)


class ServerPanel(Panel):
    """Facts in two columns, then the most recent events (ready, restart, OOM). With several
    server logs, first one row per server; the facts and events are the selected one's."""

    COMPONENT_CLASSES = {"server--ok", "server--warn", "server--crit", "server--dim",
                         "server--key", "server--bar"}

    http_off = "off (--no-http)"
    """What the http row says when nothing is polled (a replay sets its own words)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._facts_for: tuple[object, ...] | None = None
        self._facts_lines: list[Text] = []
        self._shown: tuple[RunSnapshot, int] | None = None

    def on_resize(self) -> None:
        # Textual calls Panel's on_resize too (every class's handler): not called from here.
        # The facts' columns follow the width: shown again only when theirs changes.
        if self._shown is not None and self._facts_for is not None \
                and self._facts_for[2] != self._value_width():
            self.show(*self._shown)

    def _value_width(self) -> int:
        """The facts' values column: 16 wide, narrower (the compact layout's panel beside the
        GPUs) down to 9, where `1,245,184` and `fp8_e4m3` still fit."""
        return max(9, min(16, (self.size.width or 80) // 2 - 13))

    def _st(self, name: str) -> Style:
        return self.part_style(f"server--{name}") if name else Style()

    def show(self, snap: RunSnapshot, selected: int = 0) -> None:
        """Render facts and events from `snap` (of server `selected`, when there are several)."""
        self._shown = (snap, selected)
        t = LineBuilder()
        polled_for = snap.polled_for(selected)  # the server whose URL is, when not this one
        if len(snap.servers) > 1:
            server_rows(t, snap, selected, self._st)
            snap = snap.for_server(selected)
        t.add_lines(self._facts(snap.facts))
        self._launch(t, snap)
        srv = snap.server
        t.append(f"{'log':>12} ", self._st("dim"))
        t.append(f"{srv.lines:,} lines, {srv.records:,} records, {srv.unparsed} unparsed")
        clock = clock_text(srv.clock)
        if clock:
            t.append(f"; {clock}", self._st("dim"))
        if srv.status != "ok":
            t.append(f"  {srv.status}: {fmt.clean(srv.status_message or '', 60)}",
                     self._st("warn"))
        if len(srv.accept_len):
            self._accept(t, srv.accept_len, srv.perf.get("accept_rate"))
        self._perf(t, srv.perf)
        self._http(t, snap, polled_for)
        if snap.http.disagreement:
            t.append(f"\n{'':>12} {fmt.clean(snap.http.disagreement, 80)}",
                     self._st("warn"))
        t.append("\n")
        # Newest first: when the panel is short, what is cut is the oldest.
        shown = [(ev, fmt.line_time(ev.get("at"), ev.get("ts"), snap.now))
                 for ev in reversed(srv.events[-SHOWN_EVENTS:])]
        width = max((len(ts) for _, ts in shown), default=8)  # a day's events keep one column
        for ev, ts in shown:
            self._event(t, ev, f"{ts:>{width}}")
        self.show_lines(t.lines)

    def _facts(self, facts: Mapping[str, Any]) -> list[Text]:
        """The facts' rows, two to a row; the same lines while the figures are the same (they
        change at a start, not every second)."""
        pairs = tuple((label, _fact(facts, key, pat)) for key, label, pat in FACTS)
        dim = self._st("dim")
        value_w = self._value_width()  # two columns of 29 characters, or narrower
        if (pairs, dim, value_w) != self._facts_for:  # a theme's change redraws them too
            t = LineBuilder()
            for i in range(0, len(pairs), 2):
                for label, value in pairs[i : i + 2]:
                    t.append(f"{label:>12} ", dim)
                    t.append(f"{value:<{value_w}}")
                t.append("\n")
            self._facts_for, self._facts_lines = (pairs, dim, value_w), t.lines[:-1]
        return self._facts_lines

    def _launch(self, t: LineBuilder, snap: RunSnapshot) -> None:
        """`launch 4 of 4; previous: mem 0.88 -> 0.90, ...` over as many rows as it needs
        (two at most: the rest is in the launches view, `L`)."""
        line = server_line(snap.launches)
        if line is None:
            return
        room = max(20, (self.size.width or 80) - 14)
        rows = [""]
        for part in fmt.clean(line.removeprefix("launch "), 400).split("; "):
            joined = f"{rows[-1]}; {part}" if rows[-1] else part
            if len(joined) <= room or not rows[-1] or len(rows) == 2:
                rows[-1] = joined
            else:
                rows.append(part)
        for i, row in enumerate(rows):
            t.append(f"{'launch' if i == 0 else '':>12} ", self._st("dim"))
            t.append(row + "\n")

    def _accept(self, t: LineBuilder, series: SeriesView, rate: float | None) -> None:
        """Speculative decoding's acceptance length over time: the drafter's quality; and the
        share of drafted tokens accepted, where the server prints it."""
        recent = series.downsample(SPARK_POINTS).v[-SPARK_POINTS:]
        mean = sum(series.v) / len(series.v)
        t.append(f"\n{'accept len':>12} ", self._st("dim"))
        t.append(f"{series.v[-1]:.2f} ")
        t.append(fmt.spark(recent), self._st("ok"))
        t.append(f" mean {mean:.2f}", self._st("dim"))
        if rate is not None:
            t.append("  rate ", self._st("dim"))
            t.append(f"{rate:.0%}")

    def _perf(self, t: LineBuilder, perf: Mapping[str, float]) -> None:
        """What the server estimates it achieves per GPU (SGLang `--enable-mfu-metrics`, vLLM
        `MFU:`) and how much of the time its GPU runs a forward pass, as last printed."""
        parts = []
        if "tflops_per_gpu" in perf:
            parts.append(f"{perf['tflops_per_gpu']:,.1f} TFLOP/s")
        if "gbps_per_gpu" in perf:
            parts.append(f"{perf['gbps_per_gpu']:,.0f} GB/s")
        for key, word in (("read_gbps_per_gpu", "read"), ("write_gbps_per_gpu", "write")):
            if key in perf:
                parts.append(f"{perf[key]:,.0f} GB/s {word}")
        text = ", ".join(parts) + (" per GPU" if parts else "")
        if "fwd_occupancy" in perf:
            text += ("; " if text else "") + f"fwd busy {perf['fwd_occupancy']:.0%}"
        if text:
            t.append(f"\n{'est. perf':>12} ", self._st("dim"))
            t.append(fmt.clean(text, 120))

    def _http(self, t: LineBuilder, snap: RunSnapshot, polled_for: str | None = None) -> None:
        """Which URL is polled, and why that one (or that HTTP is off; or, on a server after
        the first, that the one URL is the first's)."""
        http = snap.http
        t.append(f"\n{'http':>12} ", self._st("dim"))
        if polled_for is not None:
            t.append(f"not polled: the one URL is {fmt.clean(polled_for, 40)}'s", self._st("dim"))
            return
        if snap.liveness.http == "off":
            t.append(self.http_off, self._st("dim"))
            return
        if http.url is None:
            t.append("not polled yet", self._st("dim"))
            return
        t.append(fmt.clean(http.url, 60))
        if http.url_why and http.url_source != "flag":
            t.append(f"  from {fmt.clean(http.url_why, 70)}", self._st("dim"))
        state = {"up": "ok", "down": "crit", "degraded": "warn"}.get(http.state, "dim")
        t.append(f"  {http.state}", self._st(state))

    def _event(self, t: LineBuilder, ev: Mapping[str, Any], ts: str) -> None:
        name = str(ev.get("event", "?"))
        level = EVENT_LEVEL.get(name, "dim")
        t.append(f"\n{ts} ", self._st("dim"))
        t.append(f"{name:<12} ", self._st(f"{level}"))
        ranks = ev.get("ranks")
        if ranks:
            t.append(f"x{len(ranks)} ", self._st("dim"))
        t.append(fmt.clean(str(ev.get("message", "")), 160))
