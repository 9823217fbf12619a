"""Applying worker observations to the run state, on the main thread (the state's only owner).

The appliers live with the state (`RunState.apply_*`) or the collector module
(`dash.engine.apply_*`); this module is the one place the UI calls them, so the app's handlers stay
one line each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from textual.app import App

BELL_SEVERITIES = frozenset({"warn", "crit"})


def _applier(state: Any, kind: str) -> Callable[[Any, float], None] | None:
    method = getattr(state, f"apply_{kind}", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    try:
        from dash import engine
    except ImportError:
        return None
    fn = getattr(engine, f"apply_{kind}", None)
    if not callable(fn):
        return None
    return lambda obs, now: fn(state, obs, now)


def files(state: Any, reading: Any, now: float) -> None:
    """Feed one `FilesRead` (new server records, client log, output counts) to the state."""
    fn = _applier(state, "files")
    if fn is not None:
        fn(reading, now)


def gpus(state: Any, reading: Any, now: float) -> None:
    """Feed one NVML reading (GPU snapshots or `NvmlUnavailable`)."""
    fn = _applier(state, "gpus")
    if fn is not None:
        fn(reading, now)
    elif hasattr(state, "gpus") and hasattr(state.gpus, "apply"):
        state.gpus.apply(reading, now)


def http(state: Any, sample: Any, now: float) -> None:
    """Feed one HTTP poll result."""
    fn = _applier(state, "http")
    if fn is not None:
        fn(sample, now)
    elif hasattr(state, "http") and hasattr(state.http, "apply"):
        state.http.apply(sample, now)


def processes(state: Any, procs: Any, now: float) -> None:
    """Feed the client processes found."""
    fn = _applier(state, "processes")
    if fn is not None:
        fn(procs, now)


def raw_lines(reading: Any) -> list[tuple[str, Sequence[str]]]:
    """The new raw lines of the server and client logs in a `FilesRead`, for the log pane."""
    out: list[tuple[str, Sequence[str]]] = []
    for source in ("server", "client"):
        lines = getattr(reading, f"{source}_lines", None)
        if lines:
            out.append((source, lines))
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
