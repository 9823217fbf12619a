"""Regenerate the screenshots in this folder (SVG, and PNG through cairosvg) from the fake run.

    .venv/bin/python screenshots/make.py

Each scenario is the frozen run of tests/ui/fake_run.py, drawn by the real app at a fixed size,
so the pictures change only when the screen does.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.pop("NO_COLOR", None)

from ui.conftest import build_app  # noqa: E402
from ui.fake_run import CLIENT_LINES, NOW, SERVER_LINES, snapshot  # noqa: E402

from dash.core.snapshot import GpusSnapshot, HttpSnapshot  # noqa: E402
from dash.ui.widgets.log_pane import LogPane  # noqa: E402

Setup = Callable[[Any], Awaitable[None]]


async def _feed_logs(app: Any) -> None:
    app.query_one(LogPane).append("server", SERVER_LINES)
    app.query_one(LogPane).append("client", CLIENT_LINES)


SCENARIOS: dict[str, tuple[tuple[int, int], Any, tuple[str, ...], Setup | None]] = {
    "dashboard": ((160, 45), None, (), None),
    "compact-80x24": ((80, 24), None, (), None),
    "log-pane": ((160, 45), None, ("l", "2", "g", "g", "plus"), _feed_logs),
    "server-down-no-nvml": ((160, 45), snapshot(
        http=HttpSnapshot(url="http://127.0.0.1:30000", state="down", since=NOW - 75.0,
                          reason="connection refused", consecutive_failures=38),
        gpus=GpusSnapshot(available=False, reason="NVML Shared Library Not Found"), alerts=(),
    ), (), None),
    "help": ((160, 45), None, ("question_mark",), None),
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

    for name, (size, snap, keys, setup) in SCENARIOS.items():
        svg = asyncio.run(shoot(name, size, snap, keys, setup))
        png = svg.with_suffix(".png")
        cairosvg.svg2png(url=str(svg), write_to=str(png), output_width=size[0] * 10)
        print(f"{svg.relative_to(REPO)}  {png.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
