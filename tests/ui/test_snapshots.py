"""Screen snapshots of the frozen fake run (pytest-textual-snapshot).

The app gets a fixed clock, a fixed CPU figure, no sources and no refresh timer, so each frame is
a pure function of the fixture. Update baselines with `pytest tests/ui --snapshot-update` after a
deliberate change, and look at `snapshot_report.html` when one fails.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from dash.core.snapshot import GpusSnapshot
from dash.core.snapshot import HttpSnapshot as Http
from dash.ui.app import DashApp
from dash.ui.widgets.alerts import AlertsPanel
from dash.ui.widgets.log_pane import LogPane
from ui.fake_run import (
    NOW,
    SERVER_LINES,
    dp_snapshot,
    pd_snapshot,
    server,
    snapshot,
    tuning_launches,
)

SnapCompare = Callable[..., bool]
MakeApp = Callable[..., DashApp]


def test_full_layout(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(), terminal_size=(160, 45))


def test_compact_layout(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(), terminal_size=(80, 24))


def test_log_pane_with_markup_in_lines(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    async def feed(pilot: Pilot[Any]) -> None:
        pilot.app.query_one(LogPane).append("server", SERVER_LINES)

    assert snap_compare(make_app(), terminal_size=(160, 45), run_before=feed,
                        press=["l", "2", "g", "g", "plus"])


def test_server_down_and_no_nvml(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    # Down for real: the URL that answered no longer does, and the log went quiet with it.
    snap = snapshot(
        server=dataclasses.replace(server(), last_record_at=NOW - 80.0),
        http=Http(url="http://127.0.0.1:30000", state="down", since=NOW - 75.0, since_seen=True,
                  reason="connection refused", consecutive_failures=38, last_ok_at=NOW - 77.0),
        gpus=GpusSnapshot(available=False, reason="NVML Shared Library Not Found"),
        alerts=(),
    )
    assert snap_compare(make_app(snap), terminal_size=(160, 45))


def test_compact_without_outputs_shows_the_server(snap_compare: SnapCompare,
                                                  make_app: MakeApp) -> None:
    """Only a log given: no empty partitions box at 80x24; the GPUs take the rows they need and
    the server's facts and events the rest, beside the (clear) alerts."""
    snap = snapshot(partitions=(), alerts=(), history=())
    assert snap_compare(make_app(snap), terminal_size=(80, 24))


def test_help_compact(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(), terminal_size=(80, 24), press=["question_mark"])


def test_alert_described_compact(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    async def focus_alerts(pilot: Pilot[Any]) -> None:
        pilot.app.query_one(AlertsPanel).focus()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=focus_alerts,
                        press=["down", "enter"])


def test_alerts_focused_compact(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    async def focus_alerts(pilot: Pilot[Any]) -> None:
        pilot.app.query_one(AlertsPanel).focus()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=focus_alerts,
                        press=["down", "down"])


def test_alert_history(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(), terminal_size=(160, 45), press=["h"])


def test_log_pane_scrolled_back(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    async def feed(pilot: Pilot[Any]) -> None:
        pane = pilot.app.query_one(LogPane)
        pane.append("server", [f"{SERVER_LINES[i % len(SERVER_LINES)]} #{i}" for i in range(200)])
        pilot.app.query_one("#log-view").focus()

    assert snap_compare(make_app(), terminal_size=(160, 45), run_before=feed,
                        press=["l", "pageup"])


def test_ranks_of_a_dp_server(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(dp_snapshot()), terminal_size=(160, 45), press=["R"])


def test_ranks_compact(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(dp_snapshot()), terminal_size=(80, 24), press=["R"])


def test_a_prefill_and_a_decode_server(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(pd_snapshot()), terminal_size=(160, 45), press=["s"])


def test_launches_view(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(snapshot(launches=tuning_launches())), terminal_size=(160, 45),
                        press=["L"])


def test_launches_view_compact(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(snapshot(launches=tuning_launches())), terminal_size=(80, 24),
                        press=["L"])


def test_sample_view_shows_hostile_content_literally(snap_compare: SnapCompare,
                                                    make_app: MakeApp) -> None:
    # B2's newest sample holds markup, escape sequences, control characters and a 1 MB string.
    assert snap_compare(make_app(), terminal_size=(160, 45), press=["2", "o"])


def test_sample_view_compact_older_sample(snap_compare: SnapCompare, make_app: MakeApp) -> None:
    assert snap_compare(make_app(), terminal_size=(80, 24), press=["2", "o", "p"])
