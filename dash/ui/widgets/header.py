"""The two header lines: server state, model, uptime, throughput; run totals, alerts, kdash CPU."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from dash.core.snapshot import RunSnapshot
from dash.core.state.liveness import start_step
from dash.core.state.log_clock import clock_text
from dash.ui import fmt
from dash.ui.widgets.panel import Panel


@dataclass(frozen=True, slots=True)
class HeaderState:
    """What the header needs beyond the snapshot."""

    cpu_percent: float | None
    paused: bool
    window: str
    extra_title: str | None = None


def server_state(snap: RunSnapshot) -> tuple[str, str, float | None]:
    """(label, level, since) of the server: what its log says, and what its URL says, apart.

    A live log is a working server whatever HTTP says; HTTP's "up" needs no log to back it.
    """
    live, http = snap.liveness, snap.http
    if live.log == "crashed":
        return "server crashed (log)", "crit", live.down_since
    # A state kdash found at its first poll began before kdash: no duration for it (the
    # header's uptime, from the log, says how long the server has run).
    seen = http.since if http.since_seen else None
    if http.state == "up":
        return "server up", "ok", seen
    if live.log == "live":
        return "server running (log live)", "ok", snap.server.started_at
    if live.starting is not None:  # its URL answers after the ready banner, not before
        began = live.starting.get("at")
        return (f"server starting: {start_step(snap.server.events)}", "warn",
                float(began) if isinstance(began, (int, float)) else None)
    if http.state in ("down", "degraded"):
        level = "crit" if http.state == "down" and live.http_ever_up else "warn"
        label = "server down" if http.state == "down" else "server degraded"
        if http.state == "down" and not live.http_ever_up:
            label = "no answer"
        if http.reason:
            label += f" ({fmt.clean(http.reason, 40)})"
        return label, level, seen
    if live.log == "waiting":
        return _not_there(snap), "warn", None
    if live.log == "error":
        return "log unreadable", "crit", None
    if live.log == "none" and live.http == "off":
        return "no server watched (--log, --url)", "dim", None
    if live.log == "quiet" and live.log_age_s is None:  # stamps that tell no age (ahead)
        return "log quiet", "warn", None
    if live.log_age_s is None:
        return "server ?", "dim", None
    return f"log quiet {fmt.dur(live.log_age_s)}", "warn", None


_WORSE = {"crit": 3, "warn": 2, "dim": 1, "ok": 0}


def servers_state(snap: RunSnapshot) -> tuple[str, str, float | None]:
    """`server_state` of a run of several server logs: each one's state, and the worst said
    with its server's name (`decode.log: log quiet 12m`, `and 1 more` when others are not
    well either); the first's when all are well. The first server's alone would call a PD
    pair whose decode server died `server up`, or a quiet first log the whole run's state."""
    if len(snap.servers) < 2:
        return server_state(snap)
    states = [server_state(snap.for_server(i)) for i in range(len(snap.servers))]
    worst = max(range(len(states)), key=lambda i: (_WORSE.get(states[i][1], 0), -i))
    label, level, since = states[worst]
    if _WORSE.get(level, 0) == 0:
        return states[0]
    others = sum(1 for i, st in enumerate(states) if i != worst and _WORSE.get(st[1], 0))
    name = fmt.clean(snap.servers[worst].name or snap.servers[worst].path or "?", 24)
    return f"{name}: {label}" + (f" (and {others} more)" if others else ""), level, since


def http_note(snap: RunSnapshot) -> tuple[str, str] | None:
    """A second fact when the first does not cover it: a live log with a URL that does not
    answer (`no answer at :30000`), or an HTTP server up while its log is quiet."""
    live, http = snap.liveness, snap.http
    if live.log == "live" and http.state == "down":
        url = fmt.clean((http.url or "").removeprefix("http://"), 40)
        return f"no answer at {url}", "warn"
    if http.state == "up" and live.log in ("quiet", "waiting", "error"):
        age = f" {fmt.dur(live.log_age_s)}" if live.log_age_s is not None else ""
        return {"quiet": f"log quiet{age}", "waiting": _not_there(snap),
                "error": "log unreadable"}[live.log], "warn"
    return None


def uptime_from(snap: RunSnapshot, level: str, since: float | None) -> float | None:
    """Where the header's uptime counts from, when it shows one: only for a server seen running
    (its URL answers, or its log is live). A quiet or dead server's uptime is not running on:
    an old log of events only, its URL refused, said `uptime 635d`. One within a minute of the
    state's own "for" says the same thing twice; with several servers and one not well, the
    state names that one, and the first's uptime beside it would read as its."""
    started = snap.server.started_at
    live = snap.liveness
    if started is None or level == "crit" or (live.http != "up" and live.log != "live"):
        return None
    if len(snap.servers) > 1 and level != "ok":
        return None
    if since is not None and abs(since - started) < 60:
        return None
    return started


def _not_there(snap: RunSnapshot) -> str:
    """A log not there: not yet (a server still starting), or not any more (deleted, moved)."""
    return "log not there any more" if snap.server.lines else "log not found yet"


class HeaderBar(Panel):
    """Top of the screen. Styles come from the component classes in dash.tcss."""

    COMPONENT_CLASSES = {"header--ok", "header--warn", "header--crit", "header--dim", "header--key"}

    def show(self, snap: RunSnapshot, extra: HeaderState) -> None:
        """Render the header for `snap`."""
        self.show_lines([self._line1(snap, extra), self._line2(snap, extra)])

    def _st(self, name: str) -> Style:
        return self.part_style(f"header--{name}")

    def _line1(self, snap: RunSnapshot, extra: HeaderState) -> Text:
        label, level, since = servers_state(snap)
        t = Text(overflow="ellipsis")
        t.append(" kdash ", self._st("key"))
        if extra.extra_title:
            t.append(f" {fmt.clean(extra.extra_title, 30)}", self._st("dim"))
        t.append(f" ● {label}", self._st(level))
        if since is not None:
            t.append(f" for {fmt.dur(snap.now - since)}", self._st("dim"))
        note = http_note(snap)
        if note is not None:
            t.append(f"  ○ {note[0]}", self._st(note[1]))
        thr = snap.figures.get("gen_throughput")  # the whole server's (the live servers')
        stale, age_s = snap.figures_liveness
        if isinstance(thr, (int, float)):
            if stale:  # a quiet or dead server's last figure is history, not news
                age = f" {fmt.dur(age_s)} ago" if age_s is not None else ""
                t.append(f"  last {thr:.0f} tok/s{age}", self._st("dim"))
            else:
                t.append(f"  {thr:.0f} tok/s")
            if snap.server.peak is not None and snap.total is None:
                t.append(f" (peak {snap.server.peak.gen_throughput:.0f})", self._st("dim"))
        t.append_text(self._parallel(snap))
        if snap.totals.output_tokens_per_s is not None:
            # The samples' own rate beside the server's: aborted or retried requests, or a
            # client that cannot keep up, show as a gap between the two.
            # Two significant figures: a rate over a minute of arrivals moves every second, and
            # a header that changes repaints.
            t.append(f"  samples {_two_figures(snap.totals.output_tokens_per_s)} tok/s",
                     self._st("dim"))
        started = uptime_from(snap, level, since)
        if started is not None:
            t.append(f"  uptime {fmt.dur(snap.now - started)}", self._st("dim"))
        facts = snap.facts
        if facts.get("model"):
            t.append(f"  {fmt.clean(str(facts['model']), 48)}")
        if facts.get("tp_size"):
            t.append(f"  tp {facts['tp_size']}", self._st("dim"))
        if snap.server.restarts:
            t.append(f"  {snap.server.restarts} restart(s)", self._st("warn"))
        clock = clock_text(snap.server.clock)
        if clock:
            t.append(f"  {clock}", self._st("dim"))
        return t

    def _parallel(self, snap: RunSnapshot) -> Text:
        """`8 ranks` (`7/8 ranks` when one stopped printing), `2 servers` (`1 of 2 servers`
        when one went quiet): what the figure sums."""
        t = Text(no_wrap=True)
        now = snap.server.now
        if len(snap.servers) > 1:
            n, k = len(snap.servers), len(snap.total_from)
            label = f"{n} servers" if snap.total is None or k == n else f"{k} of {n} servers"
            t.append(f"  {label}", self._st("dim" if label == f"{n} servers" else "warn"))
        elif now is not None and now.multi:
            live, n = now.live_ranks, len(now.ranks)
            label = f"{n} ranks" if live == n else f"{live}/{n} ranks"
            t.append(f"  {label}", self._st("dim" if live == n else "warn"))
        return t

    def _line2(self, snap: RunSnapshot, extra: HeaderState) -> Text:
        tot = snap.totals
        t = Text(overflow="ellipsis")
        t.append(" run ", self._st("dim"))
        total = f"{tot.total:,}" if tot.total else "?"
        t.append(f"{tot.done:,}/{total}")
        if tot.total:
            t.append(f" {100 * tot.done / tot.total:.0f}%")
        pace = Text(no_wrap=True)
        if tot.rate_per_min is not None:
            pace.append(f"  {tot.rate_per_min:.1f}/min", self._st("dim"))
        pace.append("  ETA ", self._st("dim"))
        if snap.liveness.down and tot.eta_s is not None:  # measured while the server ran
            pace.append(f"{fmt.dur(tot.eta_s)} (before the server went down)", self._st("dim"))
        else:
            pace.append(fmt.dur(tot.eta_s))
        counts = self._alert_counts(snap)
        # The alert counts before the pace where the line would not hold both (80 columns
        # cut `2 crit` to `2 c…` behind a down server's long ETA)
        width = self.size.width
        narrow = 0 < width < t.cell_len + pace.cell_len + counts.cell_len + len("  window 15m")
        t.append_text(counts if narrow else pace)
        t.append_text(pace if narrow else counts)
        t.append(f"  window {extra.window}", self._st("dim"))
        if extra.paused:
            t.append("  PAUSED (p)", self._st("warn"))
        cpu = "-" if extra.cpu_percent is None else f"{extra.cpu_percent:.1f}%"
        t.append(f"  kdash CPU {cpu}", self._st("dim"))
        return t

    def _alert_counts(self, snap: RunSnapshot) -> Text:
        t = Text(no_wrap=True)
        live = [a for a in snap.alerts if not a.acknowledged]
        if not snap.alerts:
            t.append("  no alerts", self._st("ok"))
            return t
        for sev, level in (("crit", "crit"), ("warn", "warn"), ("info", "dim")):
            n = sum(1 for a in live if a.severity == sev)
            if n:
                t.append(f"  {n} {sev}", self._st(level))
        acked = len(snap.alerts) - len(live)
        if acked:
            t.append(f"  {acked} ack'd", self._st("dim"))
        return t


def _two_figures(value: float) -> str:
    """`588` -> `590`, `1328` -> `1300`, `7.4` -> `7.4`: two significant figures."""
    if value <= 0:
        return "0"
    return f"{float(f'{value:.2g}'):g}" if value < 1e5 else f"{value:,.0f}"

