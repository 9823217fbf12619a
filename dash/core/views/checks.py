"""`kdash check`'s verdict on a snapshot: one line per problem, and a Nagios exit code.

Problems are the active warn and crit alerts (info alerts are news, not problems) and the
sources kdash could not read (UNKNOWN: it cannot tell). The exit code is the worst: CRIT (2)
over UNKNOWN (3) over WARN (1) over OK (0); a source it cannot read hides more than a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dash.core.snapshot import Alert, RunSnapshot

Level = Literal["OK", "WARN", "CRIT", "UNKNOWN"]
EXIT_CODES: dict[Level, int] = {"OK": 0, "WARN": 1, "CRIT": 2, "UNKNOWN": 3}
_WORST_FIRST: tuple[Level, ...] = ("CRIT", "UNKNOWN", "WARN", "OK")
MAX_LINE = 400


@dataclass(frozen=True, slots=True)
class Problem:
    level: Level
    what: str
    """An alert id (with its subject) or a source name."""
    text: str

    def line(self) -> str:
        return f"{self.level} {self.what}: {self.text}"[:MAX_LINE]


def source_problems(snap: RunSnapshot) -> list[Problem]:
    """Sources that could not be read: the check cannot vouch for them."""
    out: list[Problem] = []
    c = snap.client
    servers = snap.servers or (snap.server,)
    for s in servers:
        # Every server log counts, not only the primary's: a PD pair's missing decode log
        # leaves half the run unwatched while the other log is live.
        if s.path and s.status in ("waiting", "error", "not_a_log"):
            what = f"server_log[{s.name or s.path}]" if len(servers) > 1 else "server_log"
            out.append(Problem("UNKNOWN", what, s.status_message or f"{s.path}: {s.status}"))
    if c.log_path and c.log_status in ("waiting", "error"):
        out.append(Problem("UNKNOWN", "client_log",
                           c.log_message or f"{c.log_path}: {c.log_status}"))
    for glob in snap.unmatched_globs:
        out.append(Problem("UNKNOWN", "outputs", f"no file matches --outputs {glob!r}"))
    for p in snap.partitions:
        if p.error:
            out.append(Problem("UNKNOWN", f"outputs[{p.name}]", f"{p.path}: {p.error}"))
    return out


def problems(snap: RunSnapshot) -> list[Problem]:
    """Every problem, worst first: alerts (with their hint; an incident's root before what it
    caused), then unreadable sources."""
    out: list[Problem] = []
    # (alert, the root it follows from): what an OOM caused (the crash, the silent log) says
    # so, and leaves the fix to the root's line; its own fix ("idle if ..., hung if not")
    # would not be true of a server that died.
    pairs = ([(a, inc.root if a is not inc.root else None)
              for inc in snap.incidents for a in inc.alerts] if snap.incidents
             else [(a, None) for a in snap.alerts])
    for a, root in pairs:
        if a.severity == "info":
            continue
        if root is not None:
            text = f"{a.message} (follows from {_what(root)})"
        else:
            text = a.message + (f"; hint: {a.hint}" if a.hint else "")
        out.append(Problem("CRIT" if a.severity == "crit" else "WARN", _what(a), text))
    out += source_problems(snap)
    return sorted(out, key=lambda p: _WORST_FIRST.index(p.level))


def _what(a: Alert) -> str:
    return f"{a.id}[{a.subject}]" if a.subject else a.id


def verdict(found: list[Problem]) -> Level:
    """The worst level among the problems; OK when there are none."""
    return next((lvl for lvl in _WORST_FIRST if any(p.level == lvl for p in found)), "OK")


def ok_line(snap: RunSnapshot, sample: str) -> str:
    """The one line of a check that found nothing: what it saw, briefly."""
    parts = [f"log {snap.liveness.log}" if snap.liveness.log != "none" else "",
             f"http {snap.liveness.http}" if snap.liveness.http != "off" else ""]
    running = sum(1 for p in snap.partitions if p.status == "running")
    if snap.partitions:
        parts.append(f"{len(snap.partitions)} partitions ({running} running)")
    gen = snap.figures.get("gen_throughput")  # the whole server's (its DP ranks summed)
    if isinstance(gen, (int, float)) and not snap.liveness.stale:
        parts.append(f"{gen:.0f} tok/s")
    return "OK kdash: " + ", ".join(p for p in parts if p) + f" ({sample})"
