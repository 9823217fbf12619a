"""`kdash replay LOG [--outputs GLOB] [--speed X]`: a finished run through the dashboard.

The log is read once, streaming, in a worker thread (`load_timeline`): only its records are kept
(bounded, see `dash.core.replay.MAX_RECORDS`), each with its time from the log's own stamps. The
screen then runs on that log clock (`dash.ui.replay.ReplayApp`). A finished run's output files
are complete, so they are counted once (`count_outputs`) and shown with their final counts.
There is no HTTP polling and no NVML: nothing live is watched.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dash.cli import UsageError
from dash.config import Config, build_config
from dash.core.partitions import OutputCount, glob_error
from dash.core.replay import MAX_RECORDS, Timeline
from dash.report import LogError, Scan

REPLAY_REFRESH_S = 0.5
"""Screen refresh during a replay: at x60 the log clock moves 30 s a frame."""
COUNT_TIMEOUT_S = 120.0


def load_timeline(path: Path, *, cap: int = MAX_RECORDS,
                  progress: Callable[[int], None] | None = None) -> Timeline:
    """Every record of the log (up to `cap`) with its epoch time; raises LogError."""
    try:
        ref = path.stat().st_mtime
    except OSError:
        ref = time.time()
    timeline = Timeline(ref=ref, cap=cap)
    for rec in Scan(path):
        if not timeline.add(rec):
            break
        if progress is not None and len(timeline.records) % 65536 == 0:
            progress(len(timeline.records))
    timeline.finish()
    return timeline


def count_outputs(patterns: tuple[str, ...]) -> tuple[OutputCount, ...]:
    """The final line count of every output file the globs match (blocking; call from a thread)."""
    if not patterns:
        return ()
    from dash.sources.files import OutputsSource

    source = OutputsSource(patterns)
    try:
        counts, _ = source.read()
        deadline = time.monotonic() + COUNT_TIMEOUT_S
        while source.busy and time.monotonic() < deadline:
            time.sleep(0.05)
            counts, _ = source.read()
        return counts
    finally:
        source.close()


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
    cfg = replay_config(Path(ns.path), tuple(ns.outputs or ()))
    from dash.ui.replay import ReplayApp

    app = ReplayApp(cfg, speed=float(ns.speed), handle_signals=True)
    result = app.run()
    if app.load_error:
        print(f"kdash: {app.load_error}", file=sys.stderr)
        return 2
    return result if isinstance(result, int) else (app.return_code or 0)


__all__ = ["LogError", "count_outputs", "load_timeline", "replay_config", "run_replay"]
