"""Times of day on the screen are the box's: a container's log stamped in UTC, read on a box
in Tokyo, shows its events and its peak at the box's time, as the alerts' `since` and the
charts' axis do (a real SGLang-shaped log in tmp_path, the box's zone set for the test)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.log import timestamps
from dash.core.state.run import RunState
from dash.sources.collector import Collector
from dash.ui.app import DashApp
from ui.fake_run import wait_screen


@pytest.fixture
def tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    timestamps._full_stamp_to_epoch.cache_clear()  # it keeps times of the zone before
    yield
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    timestamps._full_stamp_to_epoch.cache_clear()


def _utc_log(path: Path, now: float) -> None:
    def stamp(t: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))

    lines = [f"[{stamp(now - 130)}] The server is fired up and ready to roll!"]
    for k in range(30):
        t = now - 122 + 4 * k
        gen = 1500.0 if k == 10 else 1000.0
        lines.append(f"[{stamp(t)} TP0] Decode batch, #running-req: 30, #token: 9000, token "
                     f"usage: 0.30, cuda graph: True, gen throughput (token/s): {gen:.2f}, "
                     "#queue-req: 0")
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (now - 6, now - 6))  # the last line's time: written then


async def test_a_utc_log_on_a_tokyo_box_shows_the_boxs_times(tmp_path: Path, tokyo: None) -> None:
    now = float(int(time.time()))
    log = tmp_path / "server.log"
    _utc_log(log, now)
    cfg = Config(log=log, url="", bell=False, alert_history=False)
    app = DashApp(cfg, state=RunState(cfg), collector=Collector(cfg), clock=FakeClock(now),
                  cpu_meter=lambda: 1.0)
    local = time.strftime("%H:%M:%S", time.localtime(now - 130))  # the box's (UTC+9)
    utc = time.strftime("%H:%M:%S", time.gmtime(now - 130))
    peak = time.strftime("%H:%M:%S", time.localtime(now - 122 + 40))
    async with app.run_test(size=(160, 45)) as pilot:
        text = await wait_screen(pilot, app, lambda t: " ready " in t and "UTC+9" in t)
        ready = next(line for line in text.splitlines() if " ready " in line)
        assert local in ready and utc not in ready
        title = next(line for line in text.splitlines() if "▼ peak 1500" in line)
        assert peak in title
    app.stop_sources()
