"""Fixtures shared by every test tier."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dash.core.clock import FakeClock
from dash.core.log.grammar import GRAMMAR
from dash.core.log.syntax import Grammar

REPO = Path(__file__).resolve().parent.parent
REAL_LOGS = REPO.parent / "shared" / "real-logs"


@pytest.fixture(autouse=True)
def _own_state_dir(tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    """kdash's state directory (alert history, launches) is the test's own, never the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_750_000_000.0)


@pytest.fixture
def real_logs() -> Path:
    """The folder of verbatim server logs beside the checkout; tests skip where it is absent."""
    if not REAL_LOGS.is_dir():
        pytest.skip("../shared/real-logs is not present")
    return REAL_LOGS


Exported = Callable[..., list[dict[str, Any]]]


@pytest.fixture(params=[False, True], ids=["one-process", "processes"])
def exported(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
             capfdbinary: pytest.CaptureFixture[bytes]) -> Exported:
    """`kdash export --format jsonl`'s records of a log: read in this process, and by reading
    processes over small pieces (the bulk reader's two ways must give the same records)."""
    from dash.commands.export import run_export
    from dash.sources import logread

    def read(path: Path, grammar: Grammar = GRAMMAR) -> list[dict[str, Any]]:
        monkeypatch.setattr(logread, "PARALLEL_MIN", 0 if request.param else 1 << 60)
        monkeypatch.setattr(logread, "PIECE", 8192)
        monkeypatch.setenv("KDASH_PROCESSES", "2")
        run_export(path, "jsonl", grammar)
        return [json.loads(line) for line in capfdbinary.readouterr().out.splitlines()]

    return read
