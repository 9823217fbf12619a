"""Helpers for the simulator tests: a run stepped on simulated time, its log parsed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dash.sim.run import SimRun

START = 1_750_000_000.0


def _parse_log(path: Path) -> list[dict[str, Any]]:
    from dash.core.log.parse import parse_line

    records = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            rec = parse_line(line.rstrip("\n"), n)
            if rec is not None:
                records.append(rec)
    return records


@pytest.fixture
def parse_log() -> Callable[[Path], list[dict[str, Any]]]:
    """Every record of a server log, through the project's own parser."""
    return _parse_log


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., SimRun]:
    """A SimRun in a fresh directory, stopped at teardown."""
    runs: list[SimRun] = []

    def make(scenario: str = "healthy", **kw: Any) -> SimRun:
        kw.setdefault("start_epoch", START)
        run = SimRun(tmp_path / f"run{len(runs)}", scenario, **kw)
        runs.append(run)
        return run

    yield make
    for run in runs:
        run.stop()
