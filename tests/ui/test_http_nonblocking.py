"""While the server hangs, the UI's timers keep ticking: the poll never blocks the event loop."""

from __future__ import annotations

import time

from fixtures.http.fakeserver import FakeServer, Route, recorded
from textual.app import App, ComposeResult
from textual.widgets import Static

from dash.core.state.http_state import HttpSample
from dash.sources.http import HttpPoller

TICK_S = 0.05


class PollApp(App[None]):
    """A timer ticks every TICK_S while an async worker polls a hung server."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.poller = HttpPoller(url, connect_timeout=0.5, read_timeout=1.0)
        self.ticks: list[float] = []
        self.sample: HttpSample | None = None
        self.poll_started = self.poll_ended = 0.0

    def compose(self) -> ComposeResult:
        yield Static("polling")

    def on_mount(self) -> None:
        self.set_interval(TICK_S, lambda: self.ticks.append(time.monotonic()))
        self.run_worker(self._poll(), group="http", exclusive=True)

    async def _poll(self) -> None:
        self.poll_started = time.monotonic()
        self.sample = await self.poller.poll(time.time())
        self.poll_ended = time.monotonic()
        await self.poller.aclose()


async def test_timer_keeps_ticking_while_the_server_hangs() -> None:
    routes = {p: Route(hang_s=10.0, body=r.body) for p, r in recorded("sglang-0.5.23").items()}
    with FakeServer(routes) as srv:
        app = PollApp(srv.url)
        async with app.run_test() as pilot:
            while app.sample is None:
                await pilot.pause(0.05)
    assert app.sample.error == "timeout"
    during = [t for t in app.ticks if app.poll_started <= t <= app.poll_ended]
    hung_for = app.poll_ended - app.poll_started
    expected = hung_for / TICK_S
    assert hung_for < 5.0  # the client gave up long before the server's 10 s
    assert len(during) >= 0.6 * expected, f"{len(during)} ticks in {hung_for:.2f}s"
    gaps = [b - a for a, b in zip(during, during[1:], strict=False)]
    assert max(gaps) < 10 * TICK_S  # no long stall at any point of the hang
