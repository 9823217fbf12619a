"""The launches view (`L`) and the server panel's launch line, on frozen launches."""

from __future__ import annotations

import dataclasses

from dash.ui.widgets.launches import LaunchesScreen, LaunchTableView
from dash.ui.widgets.server import ServerPanel
from ui.conftest import build_app
from ui.fake_run import snapshot, tuning_launches


def _rows(app) -> list[str]:
    return app.screen.query_one(LaunchTableView).plain_rows()


async def test_l_opens_the_launches_and_escape_or_q_goes_back() -> None:
    app = build_app(snapshot(launches=tuning_launches()))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("L")
        assert isinstance(app.screen, LaunchesScreen)
        rows = _rows(app)
        assert rows[0].split() == ["#1", "#2", "#3", "#4", "now"]
        mem = next(r for r in rows if "mem fraction" in r)
        assert mem.split()[2:] == ["0.85", "*0.93", "*0.88", "*0.90"]  # marked without colour
        await pilot.press("escape")
        assert not isinstance(app.screen, LaunchesScreen)
        await pilot.press("L")
        await pilot.press("q")  # closes the view, not kdash
        assert not isinstance(app.screen, LaunchesScreen) and app.is_running


async def test_at_80x24_the_newest_launches_fit_and_arrows_show_the_older_ones() -> None:
    many = tuning_launches() + tuple(dataclasses.replace(x, key=f"again{i}",
                                                         started_at=(x.started_at or 0) + 9000)
                                     for i, x in enumerate(tuning_launches()))
    app = build_app(snapshot(launches=many))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("L")
        assert _rows(app)[0].split() == ["#5", "#6", "#7", "#8", "now"]
        assert any("not shown: #1-#4 older" in r for r in _rows(app))
        await pilot.press("left")
        assert _rows(app)[0].split() == ["#4", "#5", "#6", "#7"]
        await pilot.press("right", "right")
        assert _rows(app)[0].split() == ["#5", "#6", "#7", "#8", "now"]


async def test_the_view_follows_the_refresh() -> None:
    app = build_app(snapshot(launches=tuning_launches()[:2]))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("L")
        assert "#3" not in _rows(app)[0]
        app.state.snap = snapshot(launches=tuning_launches())
        app.refresh_state()
        await pilot.pause()
        assert "#3" in _rows(app)[0]


async def test_without_launches_the_view_says_what_starts_one() -> None:
    app = build_app(snapshot(launches=()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("L")
        assert "No server start seen in this log yet" in " ".join(_rows(app))
        assert "launch" not in app.query_one("#server", ServerPanel).plain


async def test_the_server_panel_shows_the_launch_line() -> None:
    app = build_app(snapshot(launches=tuning_launches()))
    async with app.run_test(size=(160, 45)):
        text = " ".join(app.query_one("#server", ServerPanel).plain.split())
        assert "launch 4 of 4; previous: mem 0.88 -> 0.90, kv bf16 -> fp8_e4m3" in text
        assert "KV tokens 159K -> 376K; steady 609 -> 1,055" in text


async def test_with_several_servers_the_view_shows_the_selected_ones_launches() -> None:
    import dataclasses

    from ui.fake_run import pd_snapshot

    tuning = tuning_launches()
    snap = dataclasses.replace(pd_snapshot(), launches=tuning[:1],
                               server_launches=(tuning[:1], tuning))
    app = build_app(snap)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("L")
        assert _rows(app)[0].split() == ["#1"]  # the prefill server's one start
        await pilot.press("escape", "s", "L")  # the decode server, selected
        assert _rows(app)[0].split() == ["#1", "#2", "#3", "#4", "now"]
        assert "decode" in str(app.screen.query_one(LaunchTableView).border_title)
        await pilot.press("escape")
        text = " ".join(app.query_one("#server", ServerPanel).plain.split())
        assert "launch 4 of 4; previous: mem 0.88 -> 0.90" in text


async def test_a_quiet_log_says_its_newest_launch_may_have_stopped() -> None:
    """The table reads the log, which wrote no end: `now` and `running` would read as alive."""
    from dash.core.snapshot import Liveness

    quiet = Liveness(log="quiet", log_age_s=2400.0, stale=True)
    # set after the fixture settles its liveness from its figures
    app = build_app(dataclasses.replace(snapshot(launches=tuning_launches()), liveness=quiet))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("L")
        text = " ".join(_rows(app))
        assert "The log has been quiet for 40m" in text and "may have stopped" in text
    app = build_app(snapshot(launches=tuning_launches()))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("L")
        assert "quiet" not in " ".join(_rows(app))


async def test_the_server_panel_shows_what_the_server_estimates() -> None:
    """SGLang's `--enable-mfu-metrics` and device-timer figures, and the acceptance rate, on the
    rows the panel already has for them (a row only when the log prints them)."""
    from dash.core.series import SeriesView

    plain = snapshot()
    server = dataclasses.replace(
        plain.server, accept_len=SeriesView((1.0, 2.0), (2.2, 2.5)),
        perf={"accept_rate": 0.7, "tflops_per_gpu": 14.0, "read_gbps_per_gpu": 805.0,
              "write_gbps_per_gpu": 4.0, "fwd_occupancy": 0.89})
    app = build_app(dataclasses.replace(plain, server=server))
    async with app.run_test(size=(160, 45)):
        text = " ".join(app.query_one("#server", ServerPanel).plain.split())
        assert "accept len 2.50" in text and "mean 2.35 rate 70%" in text
        assert ("est. perf 14.0 TFLOP/s, 805 GB/s read, 4 GB/s write per GPU; fwd busy 89%"
                in text)
    app = build_app(plain)
    async with app.run_test(size=(160, 45)):
        assert "est. perf" not in app.query_one("#server", ServerPanel).plain
