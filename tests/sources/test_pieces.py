"""How a large log is cut into pieces and handed to the reading processes."""

from __future__ import annotations

import pickle
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from dash.commands import summary as report
from dash.commands.summary import SummaryJob
from dash.core.log.grammar import GRAMMAR
from dash.sources import logread

LINE = b"[2026-03-01 08:00:00] INFO:     127.0.0.1:5000 - \"POST /v1 HTTP/1.1\" 200 OK\n"


def _log(tmp_path: Path, lines: int) -> Path:
    path = tmp_path / "server.log"
    path.write_bytes(b"".join(LINE.replace(b"5000", b"%d" % (5000 + i % 977)) for i in range(lines)))
    return path


def _sizes(bounds: list[int]) -> list[int]:
    return [b - a for a, b in zip(bounds, bounds[1:], strict=False)]


def test_pieces_for_several_processes_get_smaller_towards_the_end(tmp_path: Path) -> None:
    """The last pieces shrink (to a sixteenth of a piece), so that no process reads a whole
    piece alone at the end; every piece still starts at a line start."""
    path = _log(tmp_path, 20_000)
    size = path.stat().st_size
    piece = 64_000
    one = logread.cuts(path, size, piece)
    two = logread.cuts(path, size, piece, workers=2)
    data = path.read_bytes()
    for bounds in (one, two):
        assert bounds[0] == 0 and bounds[-1] == size
        assert all(data[b - 1:b] == b"\n" for b in bounds[1:])
    assert max(_sizes(one)[:-1]) - min(_sizes(one)[:-1]) < len(LINE) + 10  # evenly cut
    sizes = _sizes(two)
    assert sizes[0] >= piece and sizes[-2] < piece // 8
    assert min(sizes[:-1]) >= piece // 16
    assert len(two) < len(one) + 12


def test_the_shared_grammar_travels_with_a_piece_as_a_name() -> None:
    """A piece of the grammar every command reads with is a few bytes, and the process that
    reads it uses its own grammar (no copy to compare with the one its reader holds)."""
    task = logread._Task(SummaryJob(), GRAMMAR, Path("x.log"), 10, 20, 3)
    data = pickle.dumps(task)
    assert len(data) < 1000
    back = pickle.loads(data)
    assert back.grammar is GRAMMAR
    assert (back.path, back.start, back.end, back.first_line) == (Path("x.log"), 10, 20, 3)
    other = replace(GRAMMAR, families=GRAMMAR.families[:-1])
    copied = pickle.loads(pickle.dumps(replace(task, grammar=other)))
    assert copied.grammar is not other and copied.grammar == other


def test_summary_imports_its_report_only_once_the_reading_runs() -> None:
    """What the report needs after the reading (the alert replay, the launches) is not
    imported before the reading processes are started."""
    code = ("import sys, dash.commands.summary; "
            "print([m for m in ('dash.core.state.run', 'dash.core.views.launch_advice', "
            "'dash.core.alerts.model') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_the_report_is_loaded_while_the_pieces_are_read(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path, 3000)
    monkeypatch.setattr(logread, "PIECE", 20_000)
    monkeypatch.setattr(logread, "PARALLEL_MIN", 0)
    monkeypatch.setenv("KDASH_PROCESSES", "2")
    merged: list[int] = []
    loads: list[int] = []
    merge = report.LogSummary.merge

    def counted(self: report.LogSummary, part: report.Part) -> None:
        merged.append(part.lines)
        merge(self, part)

    monkeypatch.setattr(report.LogSummary, "merge", counted)
    monkeypatch.setattr(report, "load_report", lambda: loads.append(len(merged)))
    doc = report.summarize(path)
    assert doc["lines"] == 3000
    assert loads == [0]  # once, at the first piece, before the rest were merged
    assert len(merged) > 5
