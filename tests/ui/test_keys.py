"""Every key of the dashboard, driven through Textual's Pilot on the frozen fake run."""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Callable

import pytest
from textual.widgets import Input

from dash.core.snapshot import GpusSnapshot
from dash.ui.app import DashApp
from dash.ui.widgets.chart import BrailleChart
from dash.ui.widgets.gpus import GpuTable
from dash.ui.widgets.help import HelpScreen
from dash.ui.widgets.log_pane import LogPane, LogView
from dash.ui.widgets.partitions import PartitionTable
from ui.fake_run import CLIENT_LINES, SERVER_LINES, FrozenState, screen_text, settled, snapshot

SIZE = (160, 45)
MakeApp = Callable[..., DashApp]


async def test_q_quits_with_zero(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
    assert app.return_code == 0


async def test_ctrl_c_quits_with_zero(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
    assert app.return_code == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
async def test_a_signal_ends_the_app_with_128_plus_the_signal(make_app: MakeApp,
                                                             sig: signal.Signals) -> None:
    app = make_app(handle_signals=True)
    async with app.run_test(size=SIZE) as pilot:
        os.kill(os.getpid(), sig)
        for _ in range(50):
            if not app.is_running:
                break
            await pilot.pause(0.02)
    assert app.return_code == 128 + sig


async def test_question_mark_opens_help_and_any_key_closes_it(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for key in ("1 - 9", "g / G", "ctrl+l", "acknowledge", "reset the throughput peak"):
            assert key in text
        await pilot.press("x")
        assert not isinstance(app.screen, HelpScreen)
        assert app.is_running


async def test_help_scrolls_to_its_last_key_at_80x24(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert "ctrl+l" not in screen_text(app)  # more keys than 24 rows hold
        await pilot.press("pagedown", "down", "down")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)  # scrolling keys keep it open
        assert "ctrl+l" in screen_text(app) and "left to tmux" in screen_text(app)
        await pilot.press("x")
        assert not isinstance(app.screen, HelpScreen)


async def test_digits_select_partitions(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(PartitionTable)
        await pilot.press("2")
        assert table.cursor_row == 1
        assert app.partition == "B2_opencodeinstruct"
        assert "at start 1,374" in screen_text(app)
        await pilot.press("5")
        assert app.partition == "B5_synth"
        await pilot.press("9")  # only five partitions: nothing moves
        assert app.partition == "B5_synth"


async def test_up_down_move_in_the_partition_table(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        # the first selection is the partition being written, not the finished B1 above it
        assert app.partition == "B2_opencodeinstruct"
        await pilot.press("down", "down")
        assert app.partition == "B4_deepseek"
        await pilot.press("up")
        assert app.partition == "B3_agent"
        await pilot.press("home")
        assert app.partition == "B1_glaive"


async def test_g_and_shift_g_step_through_gpus_and_the_memory_chart_follows(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.gpu_index == 0
        await pilot.press("g")
        assert app.gpu_index == 1
        assert "GPU 1 memory" in screen_text(app)
        await pilot.press("G", "G")
        assert app.gpu_index == 7  # wraps around
        assert app.query_one(GpuTable).cursor_row == 7


async def test_tab_moves_focus_to_the_gpu_table(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.focused is app.query_one(PartitionTable)
        await pilot.press("tab")
        assert app.focused is app.query_one(GpuTable)
        await pilot.press("down")  # up/down now move the GPU selection
        assert app.gpu_index == 1


async def test_l_toggles_the_log_pane_in_place_of_the_server_facts(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        pane.append("server", SERVER_LINES)
        assert not pane.display
        await pilot.press("l")
        assert pane.display and not app.query_one("#server").display
        assert "Decode batch. #running-req: 128, #token: 1221377" in screen_text(app)
        await pilot.press("l")
        assert not pane.display and app.query_one("#server").display


async def test_c_switches_to_the_client_log(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        pane.append("server", SERVER_LINES)
        pane.append("client", CLIENT_LINES)
        await pilot.press("c")
        assert pane.display and pane.source == "client"
        text = screen_text(app)
        assert "Resuming: 1374 already done" in text
        assert "Decode batch" not in text
        await pilot.press("c")
        assert pane.source == "server"


async def test_slash_filters_live_enter_keeps_escape_clears(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        pane.append("server", SERVER_LINES)
        await pilot.press("slash")
        box = app.query_one("#log-filter", Input)
        assert box.display and app.focused is box
        await pilot.press(*"prefill")
        assert app.query_one("#log-view", LogView).count == 1
        assert "q" not in pane.filter  # letters typed into the filter are not keys
        await pilot.press("enter")
        assert pane.filter == "prefill" and not box.display and app.is_running
        await pilot.press("slash", "escape")
        assert pane.filter == ""
        assert app.query_one("#log-view", LogView).count == len(SERVER_LINES)


async def test_d_toggles_dimmed_decode_lines(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        await pilot.press("l")
        assert pane.dim_decode
        await pilot.press("d")
        assert not pane.dim_decode
        assert "dim decode off" in screen_text(app)


async def test_p_pauses_rendering_but_not_the_state(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        assert app.paused and "PAUSED" in screen_text(app)
        frames, ticks = app.frames, state.ticks
        app.refresh_state()
        assert app.frames == frames  # nothing re-rendered
        assert state.ticks == ticks + 1  # alerts still evaluated
        await pilot.press("p")
        assert not app.paused and "PAUSED" not in screen_text(app)


async def test_a_acknowledges_every_active_alert(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        assert "4 active" in screen_text(app)
        await pilot.press("a")
        assert sorted(state.acknowledged) == sorted(a.key for a in snapshot().alerts)
        text = screen_text(app)
        assert "0 active" in text and "4 ack'd" in text
        assert not app.query_one("#alerts").has_class("-crit")


async def test_plus_and_minus_change_the_chart_window(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        assert "-15m" in screen_text(app)
        await pilot.press("plus")
        assert "-1h" in screen_text(app)
        await pilot.press("plus", "plus")
        # "all" is what the series keep: the axis says how far back that goes, not "all"
        # (a long run's first hours are not on it).
        assert "-all" not in screen_text(app) and "(all kept)" in screen_text(app)
        assert "window all" in screen_text(app)
        await pilot.press("minus", "minus", "minus", "minus")
        assert "-5m" in screen_text(app) and "window 5m" in screen_text(app)


async def test_r_resets_the_peak(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        assert "peak 1317" in screen_text(app)
        await pilot.press("r")
        assert "peak 1317" not in screen_text(app)


async def test_ctrl_l_redraws_everything(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        chart = app.query_one("#chart-throughput", BrailleChart)
        builds = chart.builds
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert chart.builds == builds + 1
        assert app.is_running


async def test_an_unchanged_snapshot_costs_no_cell_writes_and_no_chart_builds(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tables = [app.query_one(PartitionTable), app.query_one(GpuTable)]
        writes = [t.cell_updates for t in tables]
        builds = [c.builds for c in app.query(BrailleChart)]
        for _ in range(5):
            app.refresh_state()
        await pilot.pause()
        assert [t.cell_updates for t in tables] == writes
        assert [c.builds for c in app.query(BrailleChart)] == builds


async def test_a_changed_partition_updates_only_its_cells(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(PartitionTable)
        before = table.cell_updates
        parts = list(state.snap.partitions)
        parts[2] = dataclasses.replace(parts[2], done=813)
        state.snap = dataclasses.replace(state.snap, partitions=tuple(parts))
        app.refresh_state()
        await pilot.pause()
        assert table.cell_updates - before == 1  # done/total; %, bar and the rest are unchanged
        assert "813/5000" in screen_text(app)


async def test_the_partition_table_and_its_details_show_the_same_count_every_tick(
        make_app: MakeApp) -> None:
    """The GPU table refreshes on its own period; the partition table keeps step with the
    details and the header beside it, also in a frame held by `p`."""
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        app.table_period = 3600.0  # only a key would refresh the GPU table
        app.refresh_state()
        parts = list(state.snap.partitions)
        i = 1  # the selected partition: the first one being written
        parts[i] = dataclasses.replace(parts[i], done=parts[i].done + 2)
        state.snap = dataclasses.replace(state.snap, partitions=tuple(parts))
        app.refresh_state()
        await pilot.pause()
        done = f"{parts[i].done}/{parts[i].total}"
        assert done in screen_text(app) and f"done {parts[i].done:,} of" in screen_text(app)
        parts[i] = dataclasses.replace(parts[i], done=parts[i].done + 3)
        state.snap = dataclasses.replace(state.snap, partitions=tuple(parts))
        app.refresh_state()
        await pilot.press("p")
        await pilot.pause()
        done = f"{parts[i].done}/{parts[i].total}"
        assert done in screen_text(app) and f"done {parts[i].done:,} of" in screen_text(app)


async def test_nvml_unavailable_shows_the_reason(make_app: MakeApp) -> None:
    snap = snapshot(gpus=GpusSnapshot(available=False, reason="NVML Shared Library Not Found"))
    app = make_app(snap)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")  # no GPUs: nothing to move to, nothing breaks
        assert "NVML unavailable: NVML Shared Library Not Found" in screen_text(app)


async def test_log_text_is_shown_literally(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(LogPane).append("server", SERVER_LINES)
        await pilot.press("l")
        text = screen_text(app)
        assert "user prompt says [bold red]hello[/] and red [/nonsense]" in text
        assert "\x1b" not in text


async def test_details_follow_partitions_that_arrive_after_the_first_frame(make_app: MakeApp) -> None:
    """A live run starts before the outputs are counted: rows arrive later, with no key pressed."""
    full = snapshot()
    state = FrozenState(dataclasses.replace(full, partitions=()))
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "no partitions yet" in screen_text(app)
        state.snap = full
        app.snap = full
        app.render_snapshot()
        await pilot.pause()
        first = next(p for p in full.partitions if p.status == "running")
        assert app.partition == first.name
        assert f"{first.name}  {first.path}" in screen_text(app)


async def test_each_notice_is_shown_once(make_app: MakeApp) -> None:
    """A non-fatal problem (an unreadable output file) is a toast, not one a second."""
    notice = "/data/run7/out/B1.jsonl: not a regular file"
    app = make_app(snapshot(notices=(notice,)))
    shown: list[str] = []
    app.notify = lambda message, **kw: shown.append(message)  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        app.refresh_state()
        app.refresh_state()
        await pilot.pause()
    assert shown == [notice]


async def test_an_output_file_gone_and_a_log_gone_say_so(make_app: MakeApp) -> None:
    full = snapshot()
    parts = list(full.partitions)
    parts[0] = dataclasses.replace(parts[0], status="missing", rate_per_min=None, eta_s=None)
    server = dataclasses.replace(full.server, status="waiting", status_message="gone")
    snap = settled(dataclasses.replace(full, partitions=tuple(parts), server=server))
    app = make_app(snap)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("1")
        text = screen_text(app)
        assert "missing" in text and f"not there any more (deleted or moved): {parts[0].done:,}" \
            in text
        assert "log not there any more" in text


async def test_the_selection_follows_the_partition_being_written_until_the_user_moves_it(
        make_app: MakeApp) -> None:
    """A client taking partitions in turn: when B2 is done and B3 written, the details and `o`
    move on to B3; once a key moved the cursor, it stays where the user put it."""
    state = FrozenState()
    app = make_app(state=state)

    def statuses(**status: str) -> None:
        parts = tuple(dataclasses.replace(p, status=status.get(p.name, "pending"))
                      for p in state.snap.partitions)
        state.snap = dataclasses.replace(state.snap, partitions=parts)
        app.refresh_state()

    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        statuses(B1_glaive="done", B2_opencodeinstruct="running")
        await pilot.pause()
        assert app.partition == "B2_opencodeinstruct"
        statuses(B1_glaive="done", B2_opencodeinstruct="done", B3_agent="running")
        await pilot.pause()
        table = app.query_one(PartitionTable)
        assert app.partition == "B3_agent" and table.cursor_row == 2
        await pilot.press("up")
        assert app.partition == "B2_opencodeinstruct"
        statuses(B3_agent="done", B4_deepseek="running")
        await pilot.pause()
        assert app.partition == "B2_opencodeinstruct"  # the user's choice stands


async def test_an_empty_partition_table_says_how_to_fill_it_in_its_title(
        make_app: MakeApp) -> None:
    """At 80x24 the details (which say it too) are hidden: the box's title names --outputs."""
    import dataclasses as dc

    from dash.core.config import Config

    app = make_app(dc.replace(snapshot(), partitions=()))
    app.cfg = Config()  # no --outputs given
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert str(app.query_one("#parts-box").border_title) == "partitions  none: --outputs GLOB"
