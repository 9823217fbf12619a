"""The client's one line under the partition details: processes, log growth, last progress."""

from __future__ import annotations

import dataclasses

from dash.core.snapshot import ClientSnapshot, ProcessInfo, RunSnapshot
from dash.ui.widgets.partitions import client_line
from ui.fake_run import NOW, snapshot


def _line(client: ClientSnapshot) -> str:
    return client_line(dataclasses.replace(snapshot(), client=client)).plain


def test_one_process_its_log_and_its_last_progress_bar() -> None:
    line = client_line(snapshot()).plain
    assert line.startswith("client pid 41822 up ")
    assert "log 17.6 MB, grew 3s ago" in line
    assert "4210/10000" in line


def test_an_empty_log_that_never_grew_is_said_plainly() -> None:
    line = _line(ClientSnapshot(log_path="/run/client.log", log_bytes=0))
    assert "log 0 B, never grew" in line


def test_none_or_two_matching_processes_are_counted() -> None:
    stale = ProcessInfo(1, "python", "python run_inference.py", NOW - 86_400)
    live = ProcessInfo(2, "python", "python run_inference.py", NOW - 60)
    assert "2 processes match 'run_inference'" in _line(
        ClientSnapshot(process_pattern="run_inference", processes=(stale, live)))
    assert "0 processes match 'run_inference'" in _line(
        ClientSnapshot(process_pattern="run_inference", processes=()))


def test_nothing_configured_says_how_to_watch_the_client() -> None:
    assert "not watched (--client-log, --process)" in client_line(RunSnapshot(now=NOW)).plain


def test_the_clients_last_error_is_named() -> None:
    """A traceback in the client log (the client died, or a request failed) was kept as an
    event that only `--once --json` showed; the line names its exception."""
    err = {"kind": "event", "event": "error", "line": 4410, "ts": None, "at": NOW,
           "message": "openai.APIConnectionError: Connection error."}
    line = _line(ClientSnapshot(log_path="/run/client.log", log_bytes=10, events=(err,)))
    assert "last error: openai.APIConnectionError: Connection error." in line


def test_the_selected_partitions_bar_is_shown_where_bars_are_labelled() -> None:
    """A client with a bar per partition draws them in turn: the line follows the selection
    instead of whichever bar was drawn last."""
    from dash.core.state.client import ClientTracker

    tracker = ClientTracker()
    tracker.feed(["B1_glaive:  10%|#         | 100/1000 [00:10<01:30, 10.0it/s]",
                  "B2_code:  42%|####      | 420/1000 [00:42<00:58, 10.0it/s]"], NOW)
    client = dataclasses.replace(tracker.snapshot(NOW), log_path="c.log", log_bytes=10)
    snap = dataclasses.replace(snapshot(), client=client)
    assert "100/1000" in client_line(snap, "B1_glaive").plain
    assert "420/1000" in client_line(snap, "B2_code").plain
    assert "420/1000" in client_line(snap, "B3_other").plain  # no bar of its own: the last
    assert "420/1000" in client_line(snap).plain
    assert [b.label for b in client.bars] == ["B1_glaive", "B2_code"]
    tracker.feed(["B1:  70%|#######   | 7/10 [00:07<00:03, 1.0it/s]",
                  "B10:  20%|##        | 2/10 [00:02<00:08, 1.0it/s]"], NOW)
    client = dataclasses.replace(tracker.snapshot(NOW), log_path="c.log", log_bytes=10)
    snap = dataclasses.replace(snapshot(), client=client)
    assert "7/10" in client_line(snap, "B1").plain  # its own label, not B10's


async def test_the_details_of_a_partition_past_its_total_say_so() -> None:
    from dash.ui.widgets.partitions import PartitionDetails
    from ui.conftest import build_app

    snap = snapshot()
    over = dataclasses.replace(snap.partitions[0], done=(snap.partitions[0].total or 0) + 778)
    app = build_app(dataclasses.replace(snap, partitions=(over, *snap.partitions[1:])))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("1")
        details = app.query_one(PartitionDetails).plain
        assert "(778 more than the total: duplicates, or a wrong total?)" in details
        assert "left)" not in details.splitlines()[1]
