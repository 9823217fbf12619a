"""Small helpers for the app's handlers: the raw log lines of a read, the peak reset, the bell.

Observations are folded into the run state by `dash.sources.collector.apply_*`, called from the handlers
on the main thread (the state's only owner).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import App

BELL_SEVERITIES = frozenset({"warn", "crit"})
PANE_LINES = 2000
"""At most this many raw lines of one read go to the log pane (a 4 MB backfill is ~40k lines)."""


def raw_lines(reading: Any) -> list[tuple[str, Sequence[str]]]:
    """The new raw lines of the server and client logs in a `FilesRead`, for the log pane."""
    out: list[tuple[str, Sequence[str]]] = []
    for source in ("server", "client"):
        follow = getattr(reading, source, None)
        lines = getattr(follow, "lines", None)
        if lines:
            out.append((source, lines[-PANE_LINES:]))
    return out


def reset_peak(state: Any) -> None:
    """Forget the throughput peak (after a deliberate change, e.g. a restart with new flags)."""
    fn = getattr(state, "reset_peak", None)
    if callable(fn):
        fn()
    else:
        state.server_log.reset_peak()


def ring_for(app: App[Any], changes: Any) -> None:
    """Ring the terminal bell once for new warn/crit alerts (unless `--no-bell`)."""
    new = getattr(changes, "new", None) or ()
    cfg = getattr(app, "cfg", None)
    if cfg is not None and cfg.bell and any(a.severity in BELL_SEVERITIES for a in new):
        app.bell()
