"""The servers and their data-parallel ranks, one row each: what the server's figures sum.

`R` opens the ranks screen: for each server its ranks' latest lines (throughput, running,
queued, token usage with a bar, how long ago), then the total the dashboard shows. A rank that
stopped printing is marked and left out of the total; a rank far fuller than the others stands
out in its bar (and `rank_imbalance` fires). With several server logs the server panel starts
with one row per server (`server_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen

from dash.core.snapshot import RankNow, RunSnapshot, ServerLogSnapshot, ServerNow
from dash.core.state.log_clock import clock_text
from dash.ui import fmt
from dash.ui.widgets.panel import LineBuilder, Panel

BAR = 12
"""Cells of a rank's usage bar."""
HOT = 0.9
"""A rank at or above this usage is drawn as a warning."""

Styler = Callable[[str], Style]


def _num(v: float | None, width: int, digits: int = 0) -> str:
    return f"{'-' if v is None else f'{v:,.{digits}f}':>{width}}"


def _rank_row(t: Text, r: RankNow, now: float, st: Styler) -> None:
    level = "warn" if not r.live else ("crit" if (r.token_usage or 0) >= HOT else "")
    t.append(f"  {fmt.clean(r.rank or '(one)', 12):<12}", st(level) if level else Style())
    t.append(f"{_num(r.gen_throughput, 10, 1)}{_num(r.running_req, 8)}{_num(r.queue_req, 7)}  ")
    full, empty = fmt.bar(r.token_usage, BAR)
    t.append(full, st("crit" if (r.token_usage or 0) >= HOT else "bar"))
    t.append(empty, st("dim"))
    t.append(f" {fmt.pct(r.token_usage):>4}")
    age = fmt.dur(now - r.at)
    t.append(f"  {age:>5} ago", st("dim"))
    if not r.live:
        t.append("  stopped: not summed", st("warn"))
    t.append("\n")


def _total_row(t: Text, n: ServerNow, st: Styler) -> None:
    t.append(f"  {'total':<12}", st("key"))
    t.append(f"{_num(n.gen_throughput, 10, 1)}{_num(n.running_req, 8)}{_num(n.queue_req, 7)}  ")
    mean = "" if n.token_usage_mean is None else f", mean {fmt.pct(n.token_usage_mean)}"
    t.append(f"usage max {fmt.pct(n.token_usage)}{mean}\n", st("key"))


def server_block(t: Text, s: ServerLogSnapshot, now: float, st: Styler) -> None:
    """One server: a heading, each rank's row, the total."""
    title = s.name or s.path or "server"
    t.append(f" {fmt.clean(title, 40)}", st("key"))
    if s.role:
        t.append(f"  {s.role}", st("dim"))
    clock = clock_text(s.clock)
    if clock:
        t.append(f"  {clock}", st("dim"))
    t.append("\n")
    n = s.now
    if n is None:
        t.append("  no stats lines yet\n", st("dim"))
        return
    live = n.live_ranks
    what = (f"{len(n.ranks)} ranks, {live} printing" if n.multi
            else "one rank: its lines are the server's figures")
    t.append(f"  {what}\n", st("dim"))
    t.append(f"  {'rank':<12}{'gen tok/s':>10}{'running':>8}{'queue':>7}  {'token usage':<{BAR + 5}}"
             f"  {'last line':>9}\n", st("dim"))
    for r in n.ranks:
        _rank_row(t, r, now, st)
    if n.multi:
        _total_row(t, n, st)


def ranks_text(snap: RunSnapshot, st: Styler) -> Text:
    """Every server's ranks (what the ranks screen shows)."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append("ranks  ", st("key"))
    t.append("sums over the ranks still printing; usage: the highest rank's  (R/esc closes)\n\n",
             st("dim"))
    for s in snap.servers or (snap.server,):
        server_block(t, s, snap.now, st)
        t.append("\n")
    return t


def server_rows(t: Text | LineBuilder, snap: RunSnapshot, selected: int, st: Styler) -> None:
    """One row per server (several logs): name, role, figures; the selected one marked. A
    server whose log is not live has its figures dimmed with their age, and `not summed` when
    the total leaves it out; the total says how many servers it sums."""
    left_out = snap.left_out
    names = [fmt.clean(s.name or s.path or "?", 14) for s in snap.servers]
    # Columns as wide as their longest entry, and the figures' own padding as the gap after
    # them: the panel is narrow, and a silent server's row needs room for its age and
    # `not summed`.
    label = ("all servers" if len(snap.total_from) == len(names)
             else f"{len(snap.total_from)} of {len(names)} servers")
    wide = max(len(n) for n in [*names, label if snap.total is not None else ""])
    role_w = max((len(s.role) + 1 for s in snap.servers if s.role), default=0)
    # A PD prefill server prints no decode lines: its figure is its input throughput, marked
    # `in` (the total sums generated tokens only, so the row must not read as one of them).
    unit_w = 8 if any(_input_only(s.figures) is not None for s in snap.servers) else 5
    for i, s in enumerate(snap.servers):
        f = s.figures
        shown, unit = f.get("gen_throughput"), "tok/s"
        if (inp := _input_only(f)) is not None:
            shown, unit = inp, "tok/s in"
        live = snap.server_liveness[i] if i < len(snap.server_liveness) else None
        old = live is not None and live.stale
        mark = "▶" if i == selected % len(snap.servers) else " "
        t.append(f"{mark} {names[i]:<{wide}}", st("key" if mark != " " else ""))
        t.append(f" {(s.role or ''):<{role_w - 1}}" if role_w else "", st("dim"))
        t.append(f"{_num(shown, 8)} {unit:<{unit_w}}  run {_num(f.get('running_req'), 4)}"
                 f"  q {_num(f.get('queue_req'), 4)}  kv {fmt.pct(f.get('token_usage')):>4}",
                 st("dim" if old else ""))
        if old and live is not None and live.log_age_s is not None:
            t.append(f"  {fmt.dur(live.log_age_s)} ago", st("dim"))
        if i in left_out:
            t.append("  not summed", st("warn"))
        if s.now is not None and s.now.multi:
            t.append(f"  {s.now.live_ranks}/{len(s.now.ranks)} ranks", st("dim"))
        if s.status != "ok":
            t.append(f"  {s.status}", st("warn"))
        t.append("\n")
    if snap.total is not None:
        _servers_total(t, snap, f"{label:<{wide + role_w}}", st, unit_w)


def _input_only(figures: Mapping[str, Any]) -> float | None:
    """The input throughput of a server that has no generation figure (a PD prefill server)."""
    if figures.get("gen_throughput") is not None:
        return None
    value = figures.get("input_throughput")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def _servers_total(t: Text | LineBuilder, snap: RunSnapshot, label: str, st: Styler, unit_w: int = 5) -> None:
    """`all servers` (`1 of 2 servers` when some are left out: `label`, as wide as the rows'
    name and role columns) and the sums."""
    n = snap.total
    if n is None:
        return
    t.append(f"  {label}{_num(n.gen_throughput, 8)} {'tok/s':<{unit_w}}  run "
             f"{_num(n.running_req, 4)}  q {_num(n.queue_req, 4)}", st("dim"))
    stale, age_s = snap.figures_liveness
    if stale and age_s is not None:
        t.append(f"  {fmt.dur(age_s)} ago", st("dim"))
    t.append("\n")


class RanksPanel(Panel):
    """The ranks screen's text."""

    COMPONENT_CLASSES = {"ranks--key", "ranks--dim", "ranks--warn", "ranks--crit", "ranks--bar"}

    def _st(self, name: str) -> Style:
        return self.part_style(f"ranks--{name}") if name else Style()

    def show(self, snap: RunSnapshot) -> None:
        self.show_text(ranks_text(snap, self._st))


class RanksScreen(ModalScreen[None]):
    """Per-rank rows of every server, redrawn with each snapshot; R or escape closes it."""

    def __init__(self, snap: RunSnapshot) -> None:
        super().__init__()
        self._snap = snap

    def compose(self) -> ComposeResult:
        with Vertical(id="ranks-box"):
            yield RanksPanel(id="ranks")

    def on_mount(self) -> None:
        self.show(self._snap)

    def show(self, snap: RunSnapshot) -> None:
        self._snap = snap
        self.query_one("#ranks", RanksPanel).show(snap)

    def on_key(self, event: events.Key) -> None:
        if event.key in ("R", "escape"):
            event.stop()
            event.prevent_default()
            self.dismiss(None)
