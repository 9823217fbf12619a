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


def test_an_event_from_another_day_shows_its_day(tokyo: None) -> None:
    """An old log's `10:26:05 ready` would read as this morning's: a day or more away, the
    events list says which day, and every row keeps one column for the time."""
    from dash.ui import fmt

    at = time.mktime((2025, 9, 11, 10, 26, 5, 0, 0, -1))
    assert fmt.line_time(at, "x", now=at + 3600) == "10:26:05"
    assert fmt.line_time(at, "x", now=at + 447 * 86400) == "Sep 11 10:26"
    assert fmt.line_time(at, "x") == "10:26:05"  # no `now`: the time of day, as before
    assert fmt.line_time(None, "2025-09-11T10:26:05", now=at) == "10:26:05"


async def test_the_events_list_keeps_one_column_for_times_of_several_days() -> None:
    import dataclasses

    from dash.ui.widgets.server import ServerPanel
    from ui.conftest import build_app
    from ui.fake_run import NOW, server, snapshot

    events = ({"kind": "event", "event": "ready", "message": "fired up", "at": NOW - 3 * 86400,
               "ts": "x", "rank": None},
              {"kind": "event", "event": "retract", "message": "pool full", "at": NOW - 60,
               "ts": "y", "rank": None})
    app = build_app(snapshot(server=dataclasses.replace(server(), events=events)))
    async with app.run_test(size=(160, 45)):
        rows = app.query_one("#server", ServerPanel).plain.splitlines()
    old = next(r for r in rows if "fired up" in r)
    new = next(r for r in rows if "pool full" in r)
    assert old.index("ready") == new.index("retract")  # one column for both
    assert time.strftime("%b %d", time.localtime(NOW - 3 * 86400)) in old
    assert time.strftime("%H:%M:%S", time.localtime(NOW - 60)) in new
