"""`kdash replay LOG [--outputs GLOB] [--speed X]`: a finished run through the dashboard.

The log is read once, streaming (`dash.sources.replay_read.load_timeline`, on a thread of the
app's; a large log's reading processes start before the app): only its records are kept
(bounded, see `dash.core.state.timeline.MAX_RECORDS`), each with its time from the log's own stamps. The
screen then runs on that log clock (`dash.ui.replay_app.ReplayApp`). A finished run's output files
are complete, so they are counted once (`dash.sources.counts.count_outputs`) and shown with their final counts.
There is no HTTP polling and no NVML: nothing live is watched.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dash.core.config import Config
from dash.core.errors import UsageError
from dash.core.state.partitions import glob_error
from dash.sources.config_files import build_config

if TYPE_CHECKING:
    from dash.ui.replay_app import ReplayApp

REPLAY_REFRESH_S = 0.5
"""Screen refresh during a replay: at x60 the log clock moves 30 s a frame."""


def replay_config(path: Path, outputs: tuple[str, ...], base: Config | None = None) -> Config:
    """The config file's thresholds and totals, with every live source and delivery turned off."""
    base = base if base is not None else build_config({})
    return dataclasses.replace(
        base, log=path, url="", client_log=None, outputs=outputs, inputs=(), process=None,
        refresh=REPLAY_REFRESH_S, bell=False, on_alert=None, webhook=None,
        alert_history=False, metrics_port=None,
    )


def _problem(ns: argparse.Namespace) -> str | None:
    path = Path(ns.path)
    if not path.exists():
        return f"{path}: no such file"
    if path.is_dir():
        return f"{path}: is a directory"
    if not (math.isfinite(ns.speed) and ns.speed > 0):
        return f"--speed must be a positive number, got {ns.speed:g}"
    for pattern in ns.outputs or ():
        why = glob_error(pattern)
        if why:
            return f"--outputs: {why}"
    return None


def run_replay(ns: argparse.Namespace) -> int:
    """`kdash replay`: the exit code (2 with one line on stderr for a bad argument)."""
    problem = _problem(ns)
    if problem:
        raise UsageError(problem)
    app = replay_app(Path(ns.path), tuple(ns.outputs or ()), float(ns.speed),
                     handle_signals=True)
    result = app.run()
    if app.load_error:
        print(f"kdash: {app.load_error}", file=sys.stderr)
        return 2
    code = result if isinstance(result, int) else (app.return_code or 0)
    broke_off = app.timeline.broke_off if app.timeline is not None else None
    if broke_off and code == 0:  # what came before was replayed; said again, as `zcat` would
        print(f"kdash: {broke_off}", file=sys.stderr)
        return 1
    return code


def replay_app(path: Path, outputs: tuple[str, ...], speed: float, **kwargs: Any) -> ReplayApp:
    """The replay's app, its log's reading already started: its processes (a large log's)
    start here, before the app's threads, so that they are forked where fork is available,
    and read while the screen's modules load and the app starts. Raises LogError."""
    from dash.sources.replay_read import start_reading

    cfg = replay_config(path, outputs)
    pieces = start_reading(path)  # before the app takes over standard error, too
    try:
        from dash.ui.replay_app import ReplayApp

        return ReplayApp(cfg, speed=speed, pieces=pieces, **kwargs)
    except BaseException:
        pieces.close()
        raise
