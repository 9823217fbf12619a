"""`kdash outputs` on globs it cannot scan: one line on stderr naming the glob, exit 2, as
`summary` says of a path it cannot read."""

from __future__ import annotations

from pathlib import Path

import pytest

from dash.commands.cli import main


@pytest.mark.parametrize(("arg", "says"), [
    ("nothing/*.jsonl", "no file matches '{d}/nothing/*.jsonl'"),
    ("out/*.jsnl", "no file matches '{d}/out/*.jsnl'"),
    ("out", "{d}/out: is a directory"),
    ("out/", "glob names a directory, not files: '{d}/out/'"),
])
def test_a_glob_with_no_file_is_a_one_line_error(tmp_path: Path, capsys, arg: str,
                                                 says: str) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "B1.jsonl").write_text('{"text": "a", "finish_reason": "stop"}\n')
    (tmp_path / "out" / "sub.jsonl").mkdir()  # a directory the glob matches is not a file
    assert main(["outputs", f"{tmp_path}/{arg}"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == f"kdash: {says.format(d=tmp_path)}\n"


def test_every_glob_must_match(tmp_path: Path, capsys) -> None:
    (tmp_path / "B1.jsonl").write_text('{"text": "a", "finish_reason": "stop"}\n')
    assert main(["outputs", str(tmp_path / "*.jsonl")]) == 0
    assert "B1" in capsys.readouterr().out
    assert main(["outputs", str(tmp_path / "*.jsonl"), str(tmp_path / "gone/*.jsonl")]) == 2
    assert "no file matches" in capsys.readouterr().err


def test_finish_shares_say_what_they_are_of_when_some_records_name_none() -> None:
    """Three error records of 30 name no finish reason: `stop 27 (100.0%)` read as wrong."""
    from dash.core.samples.dist import summarize
    from dash.core.samples.stats import QualityFigures
    from dash.core.views.outputs_report import figures_text

    fig = QualityFigures(samples=30, finish=(("stop", 27),), errors=3, tokens=summarize([]),
                         chars=summarize([20] * 27), prompt_tokens=summarize([]))
    assert figures_text(fig)[0] == "samples 30  finish (27 name one) stop 27 (100.0%)"
