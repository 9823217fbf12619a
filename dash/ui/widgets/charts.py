"""The row of charts: throughput (peak marked), running and queued, token usage, GPU memory.

The compact layout shows two of the four; `v` moves the pair along (`ChartsRow.show_charts`). A
chart of two series draws the second dotted and says so in its title (`─ running  ┈ queued`),
which reads without colour. While the log is not live, titles give their figures' age, dimmed.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal

from dash.core.series import SeriesView
from dash.core.snapshot import RunSnapshot
from dash.ui import fmt
from dash.ui.widgets.chart import BrailleChart, ChartData

WINDOWS: tuple[tuple[str, float | None], ...] = (
    ("5m", 300.0),
    ("15m", 900.0),
    ("1h", 3600.0),
    ("all", None),
)
"""The time windows `+`/`-` step through; None means everything kept."""


def window_bounds(series: tuple[SeriesView, ...], now: float, span: float | None) -> tuple[float, float]:
    """[start, end] of the chart's time axis."""
    if span is not None:
        return now - span, now
    firsts = [s.t[0] for s in series if s.t]
    start = min(firsts) if firsts else now - 300.0
    return start, max(now, start + 60.0)


CHART_IDS = ("chart-throughput", "chart-requests", "chart-usage", "chart-gpu-mem")
COMPACT_SHOWN = 2
"""Charts side by side in the compact layout."""


class ChartsRow(Horizontal):
    """Four charts side by side, or two of them in the compact layout (`show_charts`)."""

    def compose(self) -> ComposeResult:
        for chart_id in CHART_IDS:
            yield BrailleChart(id=chart_id)

    def show_charts(self, compact: bool, first: int = 0) -> None:
        """Show all four charts, or (compact) the two from `first` on, wrapping around."""
        shown = set(CHART_IDS) if not compact else {
            CHART_IDS[(first + i) % len(CHART_IDS)] for i in range(COMPACT_SHOWN)}
        for chart in self.query(BrailleChart):
            want = chart.id in shown
            if chart.display != want:
                chart.display = want

    def show(self, snap: RunSnapshot, window: int, gpu_index: int | None) -> None:
        """Point every chart at `snap` for the window `WINDOWS[window]`."""
        label, span = WINDOWS[window]
        srv = snap.server
        last = srv.last_decode or {}
        old = _old(snap)

        thr = (srv.gen_throughput,)
        start, end = window_bounds(thr, snap.now, span)
        title = Text(" gen tok/s ", "bold")
        current = last.get("gen_throughput")
        title.append(f"{current:.0f}" if isinstance(current, (int, float))
                     else _last(srv.gen_throughput, "{:.0f}"), old[1])
        title.append(old[0], "dim")
        peak = None
        if srv.peak is not None:
            title.append(f"  ▼ peak {srv.peak.gen_throughput:.0f}", "italic")
            if srv.peak.ts and not old[0]:  # an age takes the room of the peak's time
                title.append(f" {fmt.clean(srv.peak.ts, 19)[-8:]}", "dim")
            peak = (srv.peak.at, srv.peak.gen_throughput)
        self.query_one("#chart-throughput", BrailleChart).set_data(
            ChartData(title, thr, start, end, _num, peak=peak, window_label=f"-{label}")
        )

        reqs = (srv.running_req, srv.queue_req)
        start, end = window_bounds(reqs, snap.now, span)
        title = Text(" ─ running ", "bold")
        title.append(_last(srv.running_req, "{:.0f}"), old[1])
        title.append("  ┈ queued ", "bold")
        title.append(_last(srv.queue_req, "{:.0f}"), old[1])
        title.append(old[0], "dim")
        self.query_one("#chart-requests", BrailleChart).set_data(
            ChartData(title, reqs, start, end, _num, window_label=f"-{label}")
        )

        use = (srv.token_usage,)
        start, end = window_bounds(use, snap.now, span)
        title = Text(" token usage ", "bold")
        usage = last.get("token_usage")
        title.append(fmt.pct(usage) if isinstance(usage, (int, float))
                     else _last(srv.token_usage, "{:.2f}"), old[1])
        title.append(old[0], "dim")
        self.query_one("#chart-usage", BrailleChart).set_data(
            ChartData(title, use, start, end, fmt.pct, ymax=1.0, window_label=f"-{label}")
        )
        self._show_gpu(snap, gpu_index, span, label)

    def _show_gpu(self, snap: RunSnapshot, gpu_index: int | None, span: float | None, label: str) -> None:
        gpus = snap.gpus
        card = next((g for g in gpus.gpus if g.index == gpu_index), None)
        hist = gpus.memory_used_history.get(gpu_index, SeriesView()) if gpu_index is not None else SeriesView()
        start, end = window_bounds((hist,), snap.now, span)
        if not gpus.available:
            title = Text(" GPU memory: NVML unavailable", "bold")
        else:
            title = Text(f" GPU {gpu_index} memory GB ", "bold")
            if card is not None:
                title.append(f"{fmt.gb(card.memory_used)}/{fmt.gb(card.memory_total)}")
        total = card.memory_total if card is not None else None
        self.query_one("#chart-gpu-mem", BrailleChart).set_data(
            ChartData(title, (hist,), start, end, fmt.gb, ymax=float(total) if total else None,
                      window_label=f"-{label}")
        )


def _old(snap: RunSnapshot) -> tuple[str, str]:
    """(" 2m ago", "dim") for figures of a log that is not live; ("", "") for current ones."""
    live = snap.liveness
    if not live.stale:
        return "", ""
    age = f" {fmt.dur(live.log_age_s)} ago" if live.log_age_s is not None else " (old)"
    return age, "dim"


def _last(series: SeriesView, pattern: str) -> str:
    return "-" if series.last is None else pattern.format(series.last)


def _num(v: float) -> str:
    return fmt.count(round(v, 1) if v < 10 else round(v))
