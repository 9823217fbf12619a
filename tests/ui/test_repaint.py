"""What one refresh repaints: only the rows whose text changed, never a whole panel or table.

kdash runs for days at one refresh a second; its cost is what Textual re-renders. These tests
change one value of the frozen run and check how many screen rows were marked for repaint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from dash.core.config import Config
from dash.core.snapshot import Alert, PartitionSnapshot
from dash.core.state.run import RunState
from dash.ui.app import DashApp
from dash.ui.widgets.alerts import AlertsPanel
from dash.ui.widgets.chart import BrailleChart
from dash.ui.widgets.gpus import GpuTable
from dash.ui.widgets.header import HeaderBar
from dash.ui.widgets.panel import Panel
from dash.ui.widgets.partitions import PartitionTable
from ui.fake_run import NOW, FrozenState, screen_text, settled, snapshot

SIZE = (160, 45)
MakeApp = Callable[..., DashApp]


def _repaints(app: DashApp) -> dict[str, int]:
    widgets = [*app.query(Panel), *app.query(BrailleChart), app.query_one(PartitionTable),
               app.query_one(GpuTable)]
    return {w.id or type(w).__name__: w.rows_repainted for w in widgets}


async def test_an_unchanged_snapshot_repaints_no_row(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = _repaints(app)
        for _ in range(3):
            app.refresh_state()
        await pilot.pause()
        assert _repaints(app) == before


async def test_one_changed_partition_repaints_its_row_only(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = _repaints(app)
        parts = list(state.snap.partitions)
        parts[2] = dataclasses.replace(parts[2], done=813)
        state.snap = dataclasses.replace(state.snap, partitions=tuple(parts))
        app.refresh_state()
        await pilot.pause()
        after = _repaints(app)
        assert after["partitions"] - before["partitions"] == 1
        assert {k: v for k, v in after.items() if k != "partitions"} == {
            k: v for k, v in before.items() if k != "partitions"}
        assert "813/5000" in screen_text(app)


async def test_a_new_cpu_figure_repaints_one_header_row(make_app: MakeApp) -> None:
    cpu = iter([0.4, 0.4, 1.7])
    app = make_app(cpu_meter=lambda: next(cpu, 1.7))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        header = app.query_one(HeaderBar)
        before = header.rows_repainted
        app.refresh_state()
        app.refresh_state()
        await pilot.pause()
        assert header.rows_repainted - before == 1
        assert "kdash CPU 1.7%" in screen_text(app)


async def test_a_new_throughput_in_the_title_repaints_the_title_row_only(make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        chart = app.query_one("#chart-throughput", BrailleChart)
        before = chart.rows_repainted
        server = state.snap.server
        last = {**(server.last_decode or {}), "gen_throughput": 611.0}
        state.snap = dataclasses.replace(
            state.snap, server=dataclasses.replace(server, last_decode=last))
        app.refresh_state()
        await pilot.pause()
        assert chart.rows_repainted - before == 1
        assert "gen tok/s 611" in screen_text(app)


async def test_a_new_alert_shows_after_one_refresh_and_repaints_only_what_names_it(
        make_app: MakeApp) -> None:
    state = FrozenState()
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = _repaints(app)
        alert = Alert("partition_stalled", "warn", NOW - 30.0,
                      "B3_agent has written nothing for 12 min", "last write 12 min ago",
                      "check the client log for an exception")
        state.snap = settled(dataclasses.replace(state.snap,
                                                 alerts=(*state.snap.alerts, alert)))
        app.refresh_state()
        await pilot.pause()
        assert "B3_agent has written nothing for 12 min" in screen_text(app)
        after = _repaints(app)
        changed = {k for k in after if after[k] != before[k]}
        assert "alerts" in changed
        assert changed <= {"alerts", "header"}  # the header counts the alerts


async def test_long_alert_hints_wrap_instead_of_being_cut(make_app: MakeApp) -> None:
    hint = ("KV-bound: lower --max-running-requests, or raise --mem-fraction-static if the "
            "GPUs have headroom; a plateau this far below the peak usually means the KV cache "
            "is full and requests are being retracted")
    alert = Alert("throughput_plateau", "warn", NOW - 420.0,
                  "gen throughput fell from peak 1316 to plateau 605 tok/s (-54%) over 7 m and "
                  "has stayed there", "token_usage 0.97, queue 212, running 128 (max 128)", hint)
    app = make_app(snapshot(alerts=(alert,)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel = app.query_one(AlertsPanel)
        rows = [r.strip() for r in panel.plain_rows()]
        assert "…" not in "".join(rows)
        joined = " ".join(rows)
        assert "over 7 m and has stayed there" in joined
        assert "requests are being retracted" in joined
        # Continuation rows are indented under the message, not under the severity.
        assert all(r.startswith("     ") for r in panel.plain_rows()[1:])


async def test_a_partition_without_an_output_file_is_listed(make_app: MakeApp) -> None:
    new = PartitionSnapshot("B6_expected", "/data/run7/out/B6_expected.jsonl", 0, 800, 0, None,
                            None, status="pending")
    app = make_app(snapshot(partitions=(*snapshot().partitions, new)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        text = screen_text(app)
        assert "B6_expected" in text and "0/800" in text
        assert app.partition == "B6_expected"


def test_tick_and_snapshot_equals_tick_then_snapshot() -> None:
    a, b = RunState(Config()), RunState(Config())
    changes, snap = a.tick_and_snapshot(1000.0)
    assert changes == b.tick(1000.0)
    assert snap == b.snapshot(1000.0)


async def test_a_wrapped_alert_whose_age_changes_repaints_one_row_as_a_fresh_render_would(
        make_app: MakeApp, monkeypatch) -> None:
    """A young alert's age changes every second: its first row is drawn again, cut where it was
    (the wrap is not worked out again), and the rows are those a new panel draws."""
    alert = Alert("outputs_truncated", "warn", NOW - 12.0,
                  "B3_agent: 12 of 110 recent samples (11%) stopped at the 16,384-token limit "
                  "and the rest of this message wraps onto the next rows of the panel",
                  "finish_reason length; limit 16,384 tokens (from the records); output tokens "
                  "median 2,573, max 16,384", "raise the client's max tokens", subject="B3_agent")
    state = FrozenState(snapshot(alerts=(alert,)))
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel = app.query_one(AlertsPanel)
        before, rows = panel.rows_repainted, panel.plain_rows()
        assert "(12 s)" in rows[0] and rows[1].startswith("     ")
        from dash.ui.widgets import panel as module

        wrapped: list[str] = []
        real = module.line_rows
        monkeypatch.setattr(module, "line_rows", lambda console, line, *a: (
            wrapped.append(line.plain), real(console, line, *a))[1])
        state.snap = dataclasses.replace(state.snap, now=NOW + 1.0)
        app.refresh_state()
        await pilot.pause()
        assert panel.rows_repainted - before == 1
        assert not [line for line in wrapped if "(13 s)" in line]  # cut where it was
        after = panel.plain_rows()
        assert "(13 s)" in after[0] and after[1:] == rows[1:]
        strips = list(panel._strips)
    fresh = make_app(state=FrozenState(dataclasses.replace(state.snap)))
    async with fresh.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert fresh.query_one(AlertsPanel)._strips == strips


async def test_an_alert_a_row_longer_does_not_lay_the_screen_out_again(
        make_app: MakeApp, monkeypatch) -> None:
    """The alerts panel's height is the screen's, not its text's: an evidence that takes one
    row more redraws the rows from there down, and the screen keeps its layout (a layout pass
    over every widget costs more than the whole rest of a refresh)."""
    from textual.screen import Screen

    def alert(i: int, evidence: str) -> Alert:
        return Alert("outputs_truncated", "warn", NOW - 600.0 - i, f"P{i}: 12 of 110 recent "
                     "samples (11%) stopped at the 16,384-token limit", evidence,
                     "raise the client's max tokens", subject=f"P{i}")

    short = "finish_reason length; output tokens median 2,573"
    longer = short + ", max 16,384; " + "a longer evidence that wraps onto one more row " * 2
    alerts = tuple(alert(i, short) for i in range(12))  # more than the panel shows: it scrolls
    state = FrozenState(snapshot(alerts=alerts))
    app = make_app(state=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel = app.query_one(AlertsPanel)
        assert panel.show_vertical_scrollbar
        height, before = panel.virtual_size.height, panel.rows_repainted
        layouts: list[object] = []
        real = Screen._refresh_layout
        monkeypatch.setattr(Screen, "_refresh_layout",
                            lambda self, *a, **k: (layouts.append(a), real(self, *a, **k))[1])
        state.snap = settled(dataclasses.replace(
            state.snap, alerts=(*alerts[:10], alert(10, longer), alerts[11])))
        app.refresh_state()
        await pilot.pause()
        assert panel.virtual_size.height > height
        assert layouts == []
        assert 0 < panel.rows_repainted - before < panel.virtual_size.height
        rows = panel.plain_rows()
    fresh = make_app(state=FrozenState(state.snap))
    async with fresh.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert fresh.query_one(AlertsPanel).plain_rows() == rows
