"""The client log's `client_errors` alert shows its whole fix at 80x24, alone on screen."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from dash.core.config import Config
from dash.core.state.run import RunState
from dash.ui.app import DashApp
from ui.fake_run import screen_text, snapshot

T0 = 1_780_000_000.0


async def test_the_client_errors_fix_fits_at_80x24(make_app: Callable[..., DashApp]) -> None:
    state = RunState(Config(client_log=Path("client.log"), url=""))  # type: ignore[arg-type]
    state.client.feed([], T0)
    line = "openai.APITimeoutError: Request timed out. httpx.ReadTimeout: timed out"
    state.client.feed([line] * 5, T0 + 1)
    [alert] = [a for a in state.tick_and_snapshot(T0 + 1)[1].alerts if a.id == "client_errors"]
    app = make_app(snapshot(alerts=(alert,)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = screen_text(app)
    text = " ".join(re.sub(r"[│┃]", " ", screen).split())
    assert "requests time out" in text and " ".join(alert.hint.split()[-2:]) in text, screen
