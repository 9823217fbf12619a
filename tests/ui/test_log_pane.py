"""The log pane: scrolling back, following the end, long lines, and a cost that stays with the
rows on screen however many lines arrive."""

from __future__ import annotations

from collections.abc import Callable

from dash.ui.app import DashApp
from dash.ui.widgets.log_pane import KEEP_LINES, LogPane, LogView
from ui.fake_run import screen_text

SIZE = (160, 45)
MakeApp = Callable[..., DashApp]


def _lines(start: int, n: int) -> list[str]:
    return [f"[2025-06-15 17:46:{i % 60:02d} TP0] line {i:06d} of the server log"
            for i in range(start, start + n)]


async def _open(app: DashApp, pilot: object) -> tuple[LogPane, LogView]:
    await pilot.press("l")  # type: ignore[attr-defined]
    pane = app.query_one(LogPane)
    view = app.query_one(LogView)
    view.focus()
    await pilot.pause()  # type: ignore[attr-defined]
    return pane, view


async def test_it_follows_the_end_then_stays_put_when_scrolled_back(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane, view = await _open(app, pilot)
        pane.append("server", _lines(0, 500))
        await pilot.pause()
        assert view.following and "line 000499" in screen_text(app)
        assert "● following" in screen_text(app)
        await pilot.press("pageup")
        assert not view.following
        text = screen_text(app)
        assert "line 000499" not in text and "▲ scrolled back" in text
        top = view.row_text(int(view.scroll_y))
        pane.append("server", _lines(500, 200))  # more lines arrive while the user reads
        await pilot.pause()
        assert view.row_text(int(view.scroll_y)) == top  # the same line stays on top
        assert "line 000699" not in screen_text(app)
        await pilot.press("home")
        assert "line 000000" in screen_text(app)
        await pilot.press("end")
        await pilot.pause()
        assert view.following and "line 000699" in screen_text(app)
        pane.append("server", _lines(700, 5))
        await pilot.pause()
        assert "line 000704" in screen_text(app)


async def test_up_and_down_scroll_a_line_and_the_bottom_follows_again(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane, view = await _open(app, pilot)
        pane.append("server", _lines(0, 300))
        await pilot.pause()
        await pilot.press("up", "up")
        assert not view.following
        await pilot.press("down", "down")
        assert view.following  # back at the end: following again


async def test_scrolled_back_lines_keep_their_place_as_old_lines_fall_off(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane, view = await _open(app, pilot)
        pane.append("server", _lines(0, KEEP_LINES))
        await pilot.pause()
        await pilot.press("pageup", "pageup")
        top = view.row_text(int(view.scroll_y))
        pane.append("server", _lines(KEEP_LINES, 300))  # the 300 oldest are dropped
        await pilot.pause()
        assert view.row_text(int(view.scroll_y)) == top
        assert view.count == KEEP_LINES


async def test_long_lines_scroll_sideways(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane, view = await _open(app, pilot)
        pane.append("server", ["start " + "x" * 300 + " THE-END"])
        await pilot.pause()
        assert "THE-END" not in screen_text(app)
        for _ in range(8):  # half a pane a press, as `less` does
            await pilot.press("right")
        assert "THE-END" in screen_text(app)
        for _ in range(20):  # past the longest line's end it stays at its end
            await pilot.press("right")
        assert "THE-END" in screen_text(app)


async def test_only_the_rows_on_screen_are_rendered(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane, view = await _open(app, pilot)
        for batch in range(20):  # 20 reads of 2,000 lines: a busy log
            pane.append("server", _lines(batch * 2000, 2000))
            await pilot.pause()
        assert view.rows_rendered <= 20 * view.size.height + view.size.height
        hidden_before = view.rows_rendered
        await pilot.press("l")  # hidden: new lines are kept, none rendered
        pane.append("server", _lines(40_000, 2000))
        await pilot.pause()
        assert view.rows_rendered == hidden_before
        await pilot.press("l")
        await pilot.pause()
        assert "line 041999" in screen_text(app)


async def test_a_filter_scrolls_over_the_matching_lines_only(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane, view = await _open(app, pilot)
        pane.append("server", _lines(0, 1000))
        pane.set_filter("99 of")  # lines 99, 199, ... 999
        await pilot.pause()
        assert view.count == 10
        pane.append("server", _lines(1000, 1000))  # and 1099 ... 1999
        await pilot.pause()
        assert view.count == 20 and "line 001999" in screen_text(app)
        assert "line 001998" not in screen_text(app)
