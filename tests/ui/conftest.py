"""UI test fixtures: a DashApp on the frozen fake run, with colours on and no live timers."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.snapshot import RunSnapshot
from dash.ui.app import DashApp
from ui.fake_run import NOW, FrozenState

# Clock times on screen ("since 14:02") are local: snapshots are taken in one zone.
os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture(autouse=True)
def _colour_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots and screenshots are taken with colours, whatever the calling shell says."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TEXTUAL_FILTERS", raising=False)


def build_app(snap: RunSnapshot | None = None, **kwargs: Any) -> DashApp:
    """A DashApp on the frozen run: fixed clock, fixed CPU figure, no sources, no refresh timer."""
    state = kwargs.pop("state", None) or FrozenState(snap)
    kwargs.setdefault("live", False)
    kwargs.setdefault("cpu_meter", lambda: 0.4)
    return DashApp(Config(), state=state, clock=FakeClock(NOW), **kwargs)


@pytest.fixture
def make_app() -> Callable[..., DashApp]:
    return build_app
