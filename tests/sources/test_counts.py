"""Counting output files on real files: incremental, background first counts, globs."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dash.sources.counts import LineCounter, OutputsSource


def _wait_counted(counter, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    c = counter.count()
    while c.counting and time.monotonic() < deadline:
        time.sleep(0.02)
        c = counter.count()
    return c


def test_incremental_count_ignores_the_partial_last_line_and_sees_truncation(tmp_path: Path) -> None:
    p = tmp_path / "B1.jsonl"
    p.write_text('{"a": 1}\n{"a": 2}\n{"a"')
    with ThreadPoolExecutor(1) as pool:
        c = LineCounter(p, pool)
        assert c.count().lines == 2
        with open(p, "a") as fh:
            fh.write(': 3}\n')
        assert c.count().lines == 3
        assert c.offset == p.stat().st_size
        p.write_text("x\n")
        r = c.count()
        assert (r.lines, r.reset) == (1, True)
        p.unlink()
        r = c.count()
        assert (r.lines, r.exists) == (None, False)


@pytest.mark.parametrize("use_wc", [True, False])
def test_big_first_count_runs_in_the_background_with_progress(tmp_path: Path, use_wc: bool,
                                                              monkeypatch) -> None:
    if not use_wc:
        monkeypatch.setattr("dash.sources.counts.shutil.which", lambda _name: None)
    p = tmp_path / "big.jsonl"
    line = b'{"text": "' + b"y" * 90 + b'"}\n'
    p.write_bytes(line * 50_000 + b'{"partial')
    with ThreadPoolExecutor(1) as pool:
        c = LineCounter(p, pool, big=1024)
        first = c.count()
        assert first.counting and first.lines is None
        done = _wait_counted(c)
        assert done.lines == 50_000 and not done.counting
        with open(p, "ab") as fh:
            fh.write(b'"}\n' + line)
        assert c.count().lines == 50_002


def test_outputs_source_names_partitions_and_finds_new_files(tmp_path: Path) -> None:
    for name in ("B1", "B2"):
        (tmp_path / "prepared" / name).mkdir(parents=True)
        (tmp_path / "prepared" / name / "responses.jsonl").write_text("{}\n" * 3)
        (tmp_path / "prepared" / name / "prompts.jsonl").write_text("{}\n" * 10)
    src = OutputsSource((str(tmp_path / "prepared/*/responses.jsonl"),),
                        (str(tmp_path / "prepared/*/prompts.jsonl"),), rescan_s=0.0)
    try:
        counts, totals = src.read()
        assert [(c.name, c.lines, c.appeared_later) for c in counts] == [("B1", 3, False),
                                                                         ("B2", 3, False)]
        assert totals == {"B1": 10, "B2": 10}
        (tmp_path / "prepared" / "B3").mkdir()
        (tmp_path / "prepared" / "B3" / "responses.jsonl").write_text("{}\n")
        counts, _ = src.read()
        assert counts[-1].name == "B3" and counts[-1].appeared_later
    finally:
        src.close()
