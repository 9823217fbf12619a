"""Panels made of lines appended piece by piece read as the same text joined and split."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from rich.style import Style
from rich.text import Text

from dash.ui.app import DashApp
from dash.ui.widgets.panel import LineBuilder
from dash.ui.widgets.server import ServerPanel
from ui.fake_run import FrozenState

SIZE = (160, 45)
MakeApp = Callable[..., DashApp]
PIECES: list[tuple[str, str | Style | None]] = [
    ("  max tokens ", "dim"), ("2,614,272       ", None), ("\n", None), ("\n  log ", "bold"),
    ("1,204 lines", Style(color="red")), ("", "dim"), ("\n\n", None), ("tail\nnext ", "italic"),
    ("end\n", None),
]


def test_lines_built_are_the_whole_split() -> None:
    built = LineBuilder()
    whole = Text(no_wrap=True, overflow="ellipsis")
    for text, style in PIECES:
        built.append(text, style)
        whole.append(text, style)
    split = list(whole.split("\n", allow_blank=True))
    assert [line.plain for line in built.lines] == [line.plain for line in split]
    for ours, theirs in zip(built.lines, split, strict=True):
        assert ours == theirs and ours.style == theirs.style
        assert ours.overflow == theirs.overflow and ours.no_wrap == theirs.no_wrap


def test_whole_lines_are_kept_as_given() -> None:
    built = LineBuilder()
    kept = [Text("a"), Text("b")]
    built.add_lines(kept)
    built.append("c\n")
    assert built.lines[0] is kept[0] and built.lines[1] is kept[1]
    assert [line.plain for line in built.lines] == ["a", "b", "c", ""]


async def test_the_server_panel_keeps_its_facts_rows_while_they_stay(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.refresh_state()  # after the first styles' update, which makes the rows again
        await pilot.pause()
        panel = app.query_one("#server", ServerPanel)
        rows = list(panel._given[:5])
        server = dataclasses.replace(state.snap.server, lines=state.snap.server.lines + 9)
        state.snap = dataclasses.replace(state.snap, server=server)
        before = panel.rows_repainted
        app.refresh_state()
        await pilot.pause()
        assert all(a is b for a, b in zip(panel._given[:5], rows, strict=True))
        assert panel.rows_repainted - before == 1  # the log's line count
        assert f"{server.lines:,} lines" in panel.plain
        facts = dict(state.snap.server.facts)
        facts["kv_dtype"] = "fp8_e5m2"
        server = dataclasses.replace(state.snap.server, facts=facts)
        state.snap = dataclasses.replace(state.snap, server=server)
        app.refresh_state()
        await pilot.pause()
        assert "fp8_e5m2" in panel.plain
