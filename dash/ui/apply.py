"""Applying worker observations to the run state, on the main thread (the state's only owner).

The appliers themselves live in `dash.engine`; this module is the one place the UI calls them, so
the app's handlers stay one line each, and it picks the raw log lines out for the log pane.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import App

from dash import engine

BELL_SEVERITIES = frozenset({"warn", "crit"})
PANE_LINES = 2000
"""At most this many raw lines of one read go to the log pane (a 4 MB backfill is ~40k lines)."""


def files(state: Any, reading: Any, now: float) -> None:
    """Feed one `FilesRead` (new server records, client log, output counts) to the state."""
    engine.apply_files(state, reading, now)


def gpus(state: Any, reading: Any, now: float) -> None:
    """Feed one NVML reading (GPU snapshots or `NvmlUnavailable`)."""
    engine.apply_gpus(state, reading, now)


def http(state: Any, sample: Any, now: float) -> None:
    """Feed one HTTP poll result."""
    engine.apply_http(state, sample, now)


def processes(state: Any, procs: Any, now: float) -> None:
    """Feed the client processes found (or the error listing them)."""
    engine.apply_processes(state, procs, now)


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
