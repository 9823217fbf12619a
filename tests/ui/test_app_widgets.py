"""The panels a refresh draws are looked up once, and are gone once they leave the app."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from textual.css.query import NoMatches

from dash.ui.app import DashApp
from dash.ui.widgets.server import ServerPanel

MakeApp = Callable[..., DashApp]


async def test_a_panel_is_looked_up_once_and_not_after_it_left(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        panel = app._widget("#server", ServerPanel)
        assert panel is app.query_one("#server", ServerPanel)
        assert app._widget("#server", ServerPanel) is panel
        await panel.remove()
        await pilot.pause()
        with pytest.raises(NoMatches):
            app._widget("#server", ServerPanel)
        app.refresh_state()  # a tick while panels are gone draws what is left, as before


async def test_quit_waits_for_alerts_being_delivered_but_not_for_long(make_app: MakeApp) -> None:
    app = make_app()
    done: list[str] = []

    async def deliver(seconds: float, name: str) -> None:
        await asyncio.sleep(seconds)
        done.append(name)

    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        app.run_worker(deliver(0.3, "history line"), group="alerts")
        app.run_worker(deliver(30.0, "hung webhook"), group="alerts")
        start = time.monotonic()
        await app.alerts_delivered(timeout=1.0)
        assert done == ["history line"]
        assert time.monotonic() - start < 3.0


async def test_at_80x24_without_outputs_the_focus_is_on_what_is_shown() -> None:
    """The partitions table is hidden there (the server's facts take its place): the keys go
    to the GPUs' table, and the tab chain does not pass through the hidden one."""
    from dash.ui.widgets.gpus import GpuTable
    from dash.ui.widgets.server import ServerPanel
    from ui.conftest import build_app
    from ui.fake_run import snapshot

    app = build_app(snapshot(partitions=(), alerts=(), history=()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.focused, GpuTable)
        assert "max tokens" in app.query_one("#server-mid", ServerPanel).plain
