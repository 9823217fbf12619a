"""A file that is no server log (a README, notes) is said to be one, not read for alerts: its
words name failures (`CUDA out of memory` in a table) without a server having had them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dash.commands.cli import main
from dash.core.log.parse import parse_line
from dash.core.state.server_log import NOT_A_LOG_LINES, ServerLogTracker

MARKDOWN = [
    "# Alerts",
    "",
    "| id | level | when |",
    "|---|---|---|",
    "| `server_oom` | crit | `torch.OutOfMemoryError: CUDA out of memory` in the log |",
    "| `server_crash` | crit | scheduler exception, `Scheduler hit an exception`, `Killed` |",
    "The server prints `KV Cache is allocated. #tokens: 463000, K size: 28.26 GB` at startup.",
]


def _notes(lines: int) -> list[str]:
    prose = [f"Paragraph {i}: kdash reads the log and shows what it says." for i in range(lines)]
    return MARKDOWN + prose[: max(0, lines - len(MARKDOWN))]


def _tracker(lines: list[str]) -> ServerLogTracker:
    t = ServerLogTracker()
    t.feed([parse_line(text, i + 1) for i, text in enumerate(lines)], 100.0)
    return t


def test_many_lines_without_a_stamp_or_stats_are_no_log() -> None:
    snap = _tracker(_notes(NOT_A_LOG_LINES)).snapshot(101.0)
    assert snap.status == "not_a_log" and "is this the server's log?" in (snap.status_message or "")
    assert snap.events == () and snap.engine is None and not snap.facts


def test_a_short_crash_tail_without_stamps_is_still_read() -> None:
    """A traceback of a few lines, printed raw (sglang-4547), is a log's tail."""
    tail = ["Traceback (most recent call last):", '  File "x.py", line 1, in f',
            "RuntimeError: CUDA error: out of memory"]
    snap = _tracker(tail).snapshot(101.0)
    assert snap.status == "ok" and [e["event"] for e in snap.events][-1] == "oom"


def test_one_stamped_line_makes_it_a_log() -> None:
    lines = _notes(NOT_A_LOG_LINES) + ["[2026-12-01 10:00:00] Load weight begin. avail mem=70.02 GB"]
    assert _tracker(lines).snapshot(101.0).status == "ok"


@pytest.fixture()
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "NOTES.md"
    path.write_text("\n".join(_notes(150)) + "\n")
    return path


def test_once_and_summary_say_so_and_raise_nothing(notes: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--once", "--log", str(notes), "--no-http", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["server"]["status"] == "not_a_log" and doc["alerts"] == []
    assert main(["summary", str(notes)]) == 0
    out = capsys.readouterr().out
    assert "not a log" in out and "is this the server's log?" in out and "CRIT" not in out
    assert main(["summary", "--json", str(notes)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["not_a_log"] and doc["alerts"] == [] and doc["launches"] == []


def test_a_log_of_stamped_lines_kdash_does_not_read_is_a_log() -> None:
    """vLLM with --disable-log-stats and request logging: hundreds of stamped lines no record
    is read off; nothing says they are no log, and no event is there to judge."""
    lines = [f"INFO 01-10 10:00:{i % 60:02d} [logger.py:43] Received request cmpl-{i}: prompt: "
             "'hello'" for i in range(150)]
    t = ServerLogTracker()
    t.feed([parse_line(text, i + 1) for i, text in enumerate(lines)], 100.0,
           last_stamp="01-10 10:00:29")
    assert t.snapshot(101.0).status == "ok"


def test_launches_reads_no_launch_off_a_notes_file(notes: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["launches", "--json", str(notes)]) == 0
    assert json.loads(capsys.readouterr().out)["launches"] == []
