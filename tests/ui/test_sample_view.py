"""The sample view: `o` opens the selected partition's last samples, `n`/`p` step, `f` unfolds,
`escape` closes; content is drawn literally; a partition with no sample read says so."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Log

from dash.ui.app import DashApp
from dash.ui.sample_view import SampleScreen, wrap
from ui.fake_run import screen_text

SIZE = (160, 45)
MakeApp = Callable[..., DashApp]


async def test_o_opens_the_last_sample_and_keys_step_through(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "o")
        screen = app.screen
        assert isinstance(screen, SampleScreen) and screen.index == 7
        text = screen_text(app)
        assert "sample 8 of the last 8 (newest when opened)" in text and "line 4,210" in text
        # Markup and escapes are text: shown as written, nothing restyled or sent to the tty.
        assert "[bold red]hello[/]" in text and "\\u001b[31mred" in text
        assert "\\u009b2J" in text and "\\u202etxt.exe" in text and "\x1b" not in text
        assert "more characters: f unfolds" in text
        folded = app.screen.query_one("#sample-body", Log).line_count
        await pilot.press("f")
        assert app.screen.query_one("#sample-body", Log).line_count > folded * 50  # 1 MB, wrapped
        await pilot.press("p", "p")
        assert screen.index == 5 and "sample 6 of the last 8" in screen_text(app)
        await pilot.press("n")
        assert screen.index == 6
        await pilot.press("escape")
        assert not isinstance(app.screen, SampleScreen)


async def test_o_on_a_partition_without_samples_says_so(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "o")
        await pilot.pause()
        assert not isinstance(app.screen, SampleScreen)
        assert any("no sample of B4_deepseek read yet" in str(n.message)
                   for n in app._notifications)


def test_wrap_keeps_the_indentation_of_a_cut_line() -> None:
    lines = wrap(["    " + "x" * 30], 12)
    assert lines == ["    xxxxxxxx", "    xxxxxxxx", "    xxxxxxxx", "    xxxxxx"]
