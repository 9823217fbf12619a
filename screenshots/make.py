"""Regenerate the screenshots in this folder (SVG, and PNG through cairosvg).

    .venv/bin/python screenshots/make.py           # all of them
    .venv/bin/python screenshots/make.py help      # only these (names without .svg)

Two kinds of picture, each drawn by the real app at a fixed size:
- `demo-*`: a simulated run (dash.sim, fixed seed and start time) read through the real
  Collector and RunState, stepped on the simulation's clock so alerts fire as they would live;
- the rest: the frozen run of tests/ui/fake_run.py, which the snapshot tests also use.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.pop("NO_COLOR", None)
os.environ["TZ"] = "UTC"  # clock times on screen ("since 14:02") are local: one zone, stable
time.tzset()

from ui.conftest import build_app  # noqa: E402
from ui.fake_run import (  # noqa: E402
    CLIENT_LINES,
    NOW,
    SERVER_LINES,
    FrozenState,
    dp_snapshot,
    pd_snapshot,
    server,
    snapshot,
)

from dash.core.clock import FakeClock  # noqa: E402
from dash.core.config import Config  # noqa: E402
from dash.core.snapshot import GpusSnapshot, HttpSnapshot, RunSnapshot  # noqa: E402
from dash.ui.app import DashApp  # noqa: E402
from dash.ui.widgets.alerts import AlertsPanel  # noqa: E402
from dash.ui.widgets.log_pane import LogPane  # noqa: E402

SIM_START = 1_780_000_000.0
"""The simulated run's first second (fixed, so the pictures are stable)."""
SIM_STEP_S = 5

Setup = Callable[[Any], Awaitable[None]]


async def _feed_logs(app: Any) -> None:
    app.query_one(LogPane).append("server", SERVER_LINES)
    app.query_one(LogPane).append("client", CLIENT_LINES)


async def _focus_alerts(app: Any) -> None:
    app.query_one(AlertsPanel).focus()


async def _scroll_back(app: Any) -> None:
    lines = [f"{SERVER_LINES[i % len(SERVER_LINES)]}  #{i}" for i in range(400)]
    app.query_one(LogPane).append("server", lines)


SCENARIOS: dict[str, tuple[tuple[int, int], Any, tuple[str, ...], Setup | None]] = {
    "dashboard": ((160, 45), None, (), None),
    "compact-80x24": ((80, 24), None, (), None),
    "log-pane": ((160, 45), None, ("l", "2", "g", "g", "plus"), _feed_logs),
    "server-down-no-nvml": ((160, 45), snapshot(
        server=dataclasses.replace(server(), last_record_at=NOW - 80.0),
        http=HttpSnapshot(url="http://127.0.0.1:30000", state="down", since=NOW - 75.0,
                          reason="connection refused", consecutive_failures=38,
                          last_ok_at=NOW - 77.0),
        gpus=GpusSnapshot(available=False, reason="NVML Shared Library Not Found"), alerts=(),
    ), (), None),
    "help": ((160, 45), None, ("question_mark",), None),
    "sample-view": ((160, 45), None, ("2", "o"), None),
    "alert-describe-80x24": ((80, 24), None, ("down", "enter"), _focus_alerts),
    "alerts-focused-80x24": ((80, 24), None, ("down", "down"), _focus_alerts),
    "alert-history": ((160, 45), None, ("h",), None),
    "log-pane-scrolled-back": ((160, 45), None, ("l", "tab", "tab", "pageup"), _scroll_back),
    "ranks": ((160, 45), dp_snapshot(), ("R",), None),
    "pd-servers": ((160, 45), pd_snapshot(), ("s",), None),
}


async def simulated(scenario: str, until: int) -> tuple[RunSnapshot, list[str], list[str]]:
    """A simulated run's snapshot at `until` s, and the last lines of its server and client logs."""
    import tempfile

    from dash.core.state.run import RunState
    from dash.sim import SimRun
    from dash.sources.collector import Collector, apply_files, apply_gpus, apply_http

    with tempfile.TemporaryDirectory() as tmp:
        run = SimRun(Path(tmp), scenario, seed=0, gpus=8, start_epoch=SIM_START)
        run.start(background=False)
        cfg = run.config()
        collector = Collector(cfg, nvml_module=run.nvml)
        state = RunState(cfg)
        try:
            for t in range(0, until + 1, SIM_STEP_S):
                run.advance_to(t)
                now = SIM_START + t
                read = collector.read_files()
                apply_files(state, read, now)
                while read.more or read.counting:
                    collector.wait_counts()
                    read = collector.read_files()
                    apply_files(state, read, now)
                apply_gpus(state, collector.sample_gpus(), now)
                if t % 10 == 0:
                    apply_http(state, await collector.poll_http(), now)
                state.tick(now)
            snap = state.tick_and_snapshot(SIM_START + until)[1]
            server = run.server_log.read_text().splitlines()[-300:]
            client = run.client_log.read_text().replace("\r", "\n").splitlines()[-50:]
        finally:
            collector.close()
            await collector.aclose()
            run.stop()
    return snap, server, client


def _sim_app(snap: RunSnapshot) -> DashApp:
    return DashApp(Config(), state=FrozenState(snap), clock=FakeClock(snap.now), live=False,
                   cpu_meter=lambda: 1.8)


async def shoot_sim(name: str, scenario: str, until: int, keys: tuple[str, ...],
                    size: tuple[int, int]) -> Path:
    snap, server, client = await simulated(scenario, until)
    app = _sim_app(snap)
    async with app.run_test(size=size) as pilot:
        app.query_one(LogPane).append("server", server)
        app.query_one(LogPane).append("client", client)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
        await pilot.pause()
        svg = HERE / f"{name}.svg"
        svg.write_text(app.export_screenshot(title=f"kdash demo --scenario {scenario}"),
                       encoding="utf-8")
    return svg


SIMULATED: dict[str, tuple[str, int, tuple[str, ...], tuple[int, int]]] = {
    "demo-peak-plateau": ("peak-plateau", 1500, ("plus",), (160, 45)),
    "demo-oom-crash-restart": ("oom-crash-restart", 340, (), (160, 45)),
    "demo-oom-crash-restart-80x24": ("oom-crash-restart", 340, (), (80, 24)),
    "demo-oom-20-min-after-restart": ("oom-crash-restart", 360 + 1200, (), (160, 45)),
    "demo-buffered-client-log": ("buffered-client-log", 600, ("l", "c"), (160, 45)),
    "demo-tuning-session": ("tuning-session", 2400, (), (160, 45)),
    "demo-launches": ("tuning-session", 2400, ("L",), (160, 45)),
    "demo-launches-80x24": ("tuning-session", 2400, ("L",), (80, 24)),
    "demo-truncated-outputs": ("truncated-outputs", 900, ("2",), (160, 45)),
}


async def shoot(name: str, size: tuple[int, int], snap: Any, keys: tuple[str, ...],
                setup: Setup | None) -> Path:
    app = build_app(snap)
    async with app.run_test(size=size) as pilot:
        if setup is not None:
            await setup(app)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
        await pilot.pause()
        svg = HERE / f"{name}.svg"
        svg.write_text(app.export_screenshot(title=f"kdash - {name}"), encoding="utf-8")
    return svg


def main() -> int:
    import cairosvg

    only = set(sys.argv[1:])  # names to regenerate; none: all
    shots = [(asyncio.run(shoot_sim(name, *args)), args[3][0]) for name, args in SIMULATED.items()
             if not only or name in only]
    for name, (size, snap, keys, setup) in SCENARIOS.items():
        if only and name not in only:
            continue
        shots.append((asyncio.run(shoot(name, size, snap, keys, setup)), size[0]))
    for svg, columns in shots:
        png = svg.with_suffix(".png")
        cairosvg.svg2png(url=str(svg), write_to=str(png), output_width=columns * 10)
        print(f"{svg.relative_to(REPO)}  {png.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
