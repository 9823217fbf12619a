"""A `.gz` log cut short (a copy interrupted, a file still being compressed) or damaged: the
lines before the break are read, then one line says where it broke off (exit 1, as `zcat`)."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from dash.commands.cli import main
from dash.sources.logread import LogCut, LogError, Scan

LINE = ("[2026-03-01 08:00:{s:02d}] Decode batch. #running-req: 12, #token: 4096, "
        "token usage: 0.20, gen throughput (token/s): 600.00, #queue-req: 0\n")


def _log(tmp_path: Path, lines: int = 40_000) -> tuple[Path, bytes]:
    text = "".join(LINE.format(s=i % 60) for i in range(lines)).encode()
    whole = gzip.compress(text)
    path = tmp_path / "server.log.gz"
    path.write_bytes(whole[: len(whole) // 2])
    return path, text


def _zcat_lines(path: Path) -> int:
    out = subprocess.run(["zcat", str(path)], capture_output=True, check=False).stdout
    return out.count(b"\n")


def test_a_cut_gz_reads_every_whole_line_before_the_break(tmp_path: Path) -> None:
    path, _text = _log(tmp_path)
    scan = Scan(path)
    records = [r for r in scan if r["kind"] == "decode"]
    assert scan.cut and "ended before" in scan.cut
    assert len(records) == scan.lines == _zcat_lines(path) > 1000
    assert records[-1]["line"] == scan.lines


def test_summary_and_export_show_what_came_before_and_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _text = _log(tmp_path)
    lines = _zcat_lines(path)
    assert main(["summary", "--json", str(path)]) == 1
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["lines"] == lines and doc["read_error"].startswith(str(path))
    assert f"breaks off after line {lines:,}" in err and err.count("\n") == 1
    assert main(["export", "--format", "jsonl", str(path)]) == 1
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == lines and "breaks off" in err


def test_a_whole_gz_has_no_read_error(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ok.log.gz"
    path.write_bytes(gzip.compress(LINE.format(s=1).encode() * 10))
    assert main(["summary", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["read_error"] is None


def test_a_file_that_is_not_gzip_at_all_is_still_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "plain.log.gz"
    path.write_text(LINE.format(s=1))
    with pytest.raises(LogError) as err:
        list(Scan(path))
    assert not isinstance(err.value, LogCut) and "Not a gzipped file" in str(err.value)


def test_launches_show_the_starts_before_the_break_and_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _text = _log(tmp_path)
    lines = _zcat_lines(path)
    assert main(["launches", "--json", str(path)]) == 1
    out, err = capsys.readouterr()
    (launch,) = json.loads(out)["launches"]
    assert launch["figures"]["decode_lines"] == lines and launch["outcome"] == "log_ended"
    assert f"breaks off after line {lines:,}" in err and err.count("\n") == 1
    assert main(["launches", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("1 launch in 1 log") and "breaks off" in err
