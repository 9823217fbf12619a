"""A glob the shell expanded (`--outputs out/*.jsonl`, unquoted) leaves files over: the error
says so and how to quote it, instead of argparse's bare `unrecognized arguments`."""

from __future__ import annotations

from pathlib import Path

import pytest

from dash.commands.cli import main


def _outputs(tmp_path: Path) -> list[str]:
    paths = []
    for name in ("a", "b", "c", "d", "e"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("{}\n")
        paths.append(str(path))
    return paths


def test_an_expanded_glob_is_named_with_the_quoting_that_fixes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, *rest = _outputs(tmp_path)
    assert main(["--once", "--no-http", "--outputs", first, *rest]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unrecognized arguments" in err
    assert "the shell expanded a glob" in err and "--outputs 'out/*.jsonl'" in err
    assert "(and 1 more)" in err
    assert main(["check", "--no-http", "--outputs", first, *rest]) == 3
    assert "the shell expanded a glob" in capsys.readouterr().err


def test_a_stray_word_that_is_no_file_gets_no_glob_hint(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--once", "--no-http", "no-such-word"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: no-such-word" in err and "glob" not in err
