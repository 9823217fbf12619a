"""The HTTP answer alerts (`http_auth`, `http_errors`) show their whole fix at 80x24, alone on
screen: a tired user sees that the server wants a key, and how to give it."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from dash.core.config import Config
from dash.core.snapshot import Alert
from dash.core.state.http_state import HttpSample
from dash.core.state.run import RunState
from dash.ui.app import DashApp
from ui.fake_run import screen_text, snapshot

T0 = 1_780_000_000.0
ROUTES = ("/metrics", "/ready", "/server_info", "/model_info")
CASES = {
    "every request 401": (dict.fromkeys(ROUTES, 401), False),
    "info routes 401": ({"/metrics": 200, "/ready": 200, "/server_info": 401,
                         "/model_info": 401}, False),
    "wrong key": (dict.fromkeys(ROUTES, 401), True),
    "403": (dict.fromkeys(ROUTES, 403), False),
    "503 for ever": (dict.fromkeys(ROUTES, 503), False),
    "/ready 503": ({"/metrics": 200, "/ready": 503}, False),
    "a route 500": ({"/metrics": 200, "/ready": 200, "/server_info": 500}, False),
    "502 everywhere": (dict.fromkeys(ROUTES, 502), False),
}


def _alert(answers: dict[str, int], key: bool) -> Alert:
    state = RunState(Config(url="http://127.0.0.1:30000",  # type: ignore[arg-type]
                            alerts={"unavailable_after_s": 0}))
    for i in range(4):
        at = T0 + 2 * i
        state.http.apply(HttpSample(at=at, reachable=True, error="HTTP error",
                                    answers=tuple(answers.items()), key_sent=key), at)
        snap = state.tick_and_snapshot(at)[1]
    [alert] = [a for a in snap.alerts if a.id in ("http_auth", "http_errors")]
    return alert


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_fix_fits_at_80x24(case: str, make_app: Callable[..., DashApp]) -> None:
    alert = _alert(*CASES[case])
    app = make_app(snapshot(alerts=(alert,)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = screen_text(app)
    text = " ".join(re.sub(r"[│┃]", " ", screen).split())
    assert " ".join(alert.message.split()[:6]) in text, screen
    assert " ".join(alert.hint.split()[-2:])[-18:] in text, f"{case}: fix cut at 80x24\n{screen}"
