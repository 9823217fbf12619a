"""The row of charts: throughput (peak marked), running and queued, token usage, GPU memory.

The compact layout shows two of the four; `v` moves the pair along (`ChartsRow.show_charts`). A
chart of two series draws the second dotted and says so in its title (`─ running  ┈ queued`),
which reads without colour. While the log is not live, titles give their figures' age, dimmed.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal

from dash.core.series import SeriesView
from dash.core.snapshot import RunSnapshot
from dash.ui import fmt
from dash.ui.widgets.chart import BrailleChart, ChartData, part

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


def log_end(snap: RunSnapshot, series: tuple[SeriesView, ...], span: float | None) -> float | None:
    """Where the log's charts end when its figures are history: the last stats line's time,
    where "now" would leave them empty (a finished log, or one quiet longer than the window)
    or, over all that is kept, a speck at the left of a silence (None: they end now)."""
    live = snap.liveness
    last = max((s.t[-1] for s in series if s.t), default=None)
    if not live.stale or last is None or last >= snap.now:
        return None
    if span is not None:
        return last if snap.now - last >= span else None
    first = min(s.t[0] for s in series if s.t)
    return last if snap.now - last > last - first else None


def log_bounds(snap: RunSnapshot, series: tuple[SeriesView, ...],
               span: float | None) -> tuple[float, float, str]:
    """[start, end] of a log chart's time axis, and its right end's label."""
    end = log_end(snap, series, span)
    if end is None:
        return (*window_bounds(series, snap.now, span), "now")
    start, stop = window_bounds(series, end, span)
    return start, stop, "last line"


def axis_label(label: str, span: float | None, start: float, end: float) -> str:
    """The left end of the time axis: the window, or for "all" how far back the points kept
    go (each series keeps its last few thousand points: hours of a long run, not all of it)."""
    return f"-{label}" if span is not None else f"-{fmt.dur(end - start)} (all kept)"


CHART_IDS = ("chart-throughput", "chart-requests", "chart-usage", "chart-gpu-mem")
COMPACT_SHOWN = 2
"""Charts side by side in the compact layout."""


class ChartsRow(Horizontal):
    """Four charts side by side, or two of them in the compact layout (`show_charts`)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._charts = {chart_id: BrailleChart(id=chart_id) for chart_id in CHART_IDS}
        """The four charts, made once (no query of the DOM for each one every refresh)."""

    def compose(self) -> ComposeResult:
        yield from self._charts.values()

    def show_charts(self, compact: bool, first: int = 0) -> None:
        """Show all four charts, or (compact) the two from `first` on, wrapping around."""
        shown = set(CHART_IDS) if not compact else {
            CHART_IDS[(first + i) % len(CHART_IDS)] for i in range(COMPACT_SHOWN)}
        for chart in self.query(BrailleChart):
            want = chart.id in shown
            if chart.display != want:
                chart.display = want

    def show(self, snap: RunSnapshot, window: int, gpu_index: int | None) -> None:
        """Point every chart at `snap` for the window `WINDOWS[window]`: the charts are of
        `snap.server` (the whole of it: its DP ranks summed, usage the highest rank's)."""
        label, span = WINDOWS[window]
        srv = snap.server
        last = srv.figures
        # Titles are bold throughout; a stale figure and its age dimmed.
        old_text, stale = _old(snap)
        value = f"bold {stale}".strip()
        age = (part((old_text, "bold dim"), keep=2),) if old_text else ()  # the header has it too
        who = (part((f" {fmt.clean(srv.name, 40)}:", "bold"), keep=3, shrink=True),) \
            if srv.name else ()

        thr = (srv.gen_throughput,)
        start, end, right = log_bounds(snap, thr, span)
        current = last.get("gen_throughput")
        parts = [*who, part((" gen tok/s ", "bold"), (
            f"{current:.0f}" if isinstance(current, (int, float))
            else _last(srv.gen_throughput, "{:.0f}"), value)), *age]
        peak = None
        if srv.peak is not None:
            parts.append(part((f"  ▼ peak {srv.peak.gen_throughput:.0f}", "bold italic"), keep=5))
            if srv.peak.ts and not old_text:  # an age takes the room of the peak's time
                parts.append(part((f" {fmt.line_time(srv.peak.at, srv.peak.ts)}", "bold dim"),
                                  keep=1))
            peak = (srv.peak.at, srv.peak.gen_throughput)
        self._charts["chart-throughput"].set_data(
            ChartData(tuple(parts), thr, start, end, _num, peak=peak,
                      window_label=axis_label(label, span, start, end), end_label=right)
        )

        reqs = (srv.running_req, srv.queue_req)
        start, end, right = log_bounds(snap, reqs, span)
        parts = [part((" ─ running ", "bold"), (_last(srv.running_req, "{:.0f}"), value)),
                 part(("  ┈ queued ", "bold"), (_last(srv.queue_req, "{:.0f}"), value), keep=6),
                 *age]
        self._charts["chart-requests"].set_data(
            ChartData(tuple(parts), reqs, start, end, _num,
                      window_label=axis_label(label, span, start, end), end_label=right)
        )

        use = (srv.token_usage,)
        start, end, right = log_bounds(snap, use, span)
        usage = last.get("token_usage")
        parts = [part((" token usage ", "bold"), (
            fmt.pct(usage) if isinstance(usage, (int, float))
            else _last(srv.token_usage, "{:.2f}"), value))]
        if srv.now is not None and srv.now.multi and srv.now.token_usage_mean is not None:
            parts.append(part((f" max, {fmt.pct(srv.now.token_usage_mean)} mean", "bold dim"),
                              keep=5))
        parts += age
        self._charts["chart-usage"].set_data(
            ChartData(tuple(parts), use, start, end, fmt.pct, ymax=1.0,
                      window_label=axis_label(label, span, start, end), end_label=right)
        )
        self._show_gpu(snap, gpu_index, span, label)

    def _show_gpu(self, snap: RunSnapshot, gpu_index: int | None, span: float | None, label: str) -> None:
        gpus = snap.gpus
        card = next((g for g in gpus.gpus if g.index == gpu_index), None)
        hist = gpus.memory_used_history.get(gpu_index, SeriesView()) if gpu_index is not None else SeriesView()
        start, end = window_bounds((hist,), snap.now, span)
        if not gpus.available:
            title = (part((" GPU memory: NVML unavailable", "bold")),)
        else:
            gb = (f"{fmt.gb(card.memory_used)}/{fmt.gb(card.memory_total)}", "bold") \
                if card is not None else ("", "")
            title = (part((f" GPU {gpu_index} memory GB ", "bold"), gb),)
        total = card.memory_total if card is not None else None
        self._charts["chart-gpu-mem"].set_data(
            ChartData(title, (hist,), start, end, fmt.gb, ymax=float(total) if total else None,
                      window_label=axis_label(label, span, start, end))
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
