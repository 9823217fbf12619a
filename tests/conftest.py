"""Fixtures shared by every test tier."""

from __future__ import annotations

from pathlib import Path

import pytest

from dash.core.clock import FakeClock

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
