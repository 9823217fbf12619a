"""Two server logs, one gone silent ten minutes ago (real SGLang lines, written in tmp_path):
the header and the server panel sum the live one only, and mark the silent one's figures old."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_servers import silent_node

from dash.core.clock import FakeClock
from dash.core.config import Config
from dash.core.state.run import RunState
from dash.sources.collector import Collector
from dash.ui.app import DashApp
from ui.fake_run import wait_screen


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_a_silent_server_counts_in_no_sum_on_screen(real_logs: Path, tmp_path: Path,
                                                          size: tuple[int, int]) -> None:
    now = float(int(time.time()))
    node1, node2 = silent_node(real_logs, tmp_path, now)
    cfg = Config(log=node1, more_logs=(node2,), url="", bell=False, alert_history=False)
    app = DashApp(cfg, state=RunState(cfg), collector=Collector(cfg), clock=FakeClock(now),
                  cpu_meter=lambda: 1.0)
    async with app.run_test(size=size) as pilot:
        text = await wait_screen(pilot, app, lambda t: "1 of 2 servers" in t)
        header = text.splitlines()[0]
        assert "82 tok/s  1 of 2 servers" in header and "5370" not in header
        if size == (160, 45):
            row = next(line for line in text.splitlines() if " node2 " in line)
            assert "5,288 tok/s" in row and "10m ago" in row and "not summed" in row
            total = next(line for line in text.splitlines() if "1 of 2 servers " in line and " run " in line)
            node1 = next(line for line in text.splitlines() if " node1 " in line)
            assert "82 tok/s  run    1  q    0" in node1 and "ago" not in node1
            assert "82 tok/s  run    1  q    0" in total  # the rows' figures, node1's alone
    app.stop_sources()


async def test_the_second_server_says_whose_url_is_polled_not_no_http(real_logs: Path,
                                                                      tmp_path: Path) -> None:
    # One --url is polled for the first server; the second server's panel said
    # `http off (--no-http)` though the flag was never given.
    now = float(int(time.time()))
    node1, node2 = silent_node(real_logs, tmp_path, now)
    cfg = Config(log=node1, more_logs=(node2,), url="http://127.0.0.1:9", bell=False,
                 alert_history=False)
    app = DashApp(cfg, state=RunState(cfg), collector=Collector(cfg), clock=FakeClock(now),
                  cpu_meter=lambda: 1.0)
    async with app.run_test(size=(160, 45)) as pilot:
        text = await wait_screen(pilot, app, lambda t: "http://127.0.0.1:9" in t)
        await pilot.press("s")
        text = await wait_screen(pilot, app, lambda t: "▶ node2" in t)
        row = next(line for line in text.splitlines() if "        http " in line)
        assert "--no-http" not in row and "node1's" in row, row
    app.stop_sources()
