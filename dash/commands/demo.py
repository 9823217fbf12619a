"""`kdash demo`: the simulated run and the dashboard on it, in one process (no GPU needed).

The simulator stays headless (`dash.sim`); this command is where it meets the UI. The demo's own
state (its alert history, the launches it sees) goes in the run's directory, never in the user's
state directory: a demo's simulated OOM must not show up in the history of real runs, nor its
simulated starts beside a real log's.
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
    run = SimRun(where, ns.scenario, speed=ns.speed, gpus=ns.gpus, dp=ns.dp)
    try:
        run.start()
        from dash.ui.app import run_dashboard

        state = where / "kdash-state"
        # The simulator writes its log afresh: what an earlier demo in this directory saw of it
        # (its launches) is not this run's.
        shutil.rmtree(state, ignore_errors=True)
        cfg = dataclasses.replace(run.config(), state_dir=state)
        return run_dashboard(cfg, nvml_module=run.nvml, clock=run.clock(),
                             extra_title=f"demo: {ns.scenario}")
    finally:
        run.stop()
        if temp:
            shutil.rmtree(where, ignore_errors=True)
