"""A simulated inference run (server log, outputs, client log, HTTP, GPUs) for demo and tests.

`from dash.sim import SimRun`; scenarios and their timings are in `dash.sim.scenarios`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SimRun"]


def __getattr__(name: str) -> Any:
    # Lazy, so that `kdash sim --help` and the CLI's import of dash.commands.sim stay cheap.
    if name == "SimRun":
        from dash.sim.run import SimRun

        return SimRun
    raise AttributeError(name)
