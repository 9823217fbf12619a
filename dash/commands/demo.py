"""`kdash demo`: the simulated run and the dashboard on it, in one process (no GPU needed).

The simulator stays headless (`dash.sim`); this command is where it meets the UI. The demo's own
state (its alert history) goes in the run's directory, never in the user's state directory: a
demo's simulated OOM must not show up in the history of real runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import tempfile
from pathlib import Path

from dash.commands.sim import check_arguments
from dash.core.errors import UsageError


def run_demo(ns: argparse.Namespace) -> int:
    """The simulator in this process and the dashboard on it, with the simulated GPUs."""
    from dash.sim.run import SimRun

    problem = check_arguments(ns)
    if problem:
        raise UsageError(f"demo: {problem}")
    temp = ns.dir is None
    where = Path(tempfile.mkdtemp(prefix="kdash-demo-")) if temp else Path(ns.dir).expanduser()
    run = SimRun(where, ns.scenario, speed=ns.speed, gpus=ns.gpus)
    try:
        run.start()
        from dash.ui.app import run_dashboard

        cfg = dataclasses.replace(run.config(), state_dir=where / "kdash-state")
        return run_dashboard(cfg, nvml_module=run.nvml, clock=run.clock(),
                             extra_title=f"demo: {ns.scenario}")
    finally:
        run.stop()
        if temp:
            shutil.rmtree(where, ignore_errors=True)
