"""Reading samples from output files: the tail at first sight, appended lines only, partial and
invalid lines, rewrites, bursts within the budget, oversized lines, line numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from dash.core.samples.fieldspec import OutputFields
from dash.core.state.partitions import OutputCount
from dash.sources import samples as samples_mod
from dash.sources.samples import TAIL_LINES, SampleReader, SampleSource


def rec(i: int, finish: str = "stop", size: int = 0) -> str:
    return json.dumps({"text": "x" * size + f"answer {i}",
                       "meta_info": {"finish_reason": {"type": finish}, "completion_tokens": i,
                                     "prompt_tokens": 10}}) + "\n"


def write(path: Path, text: str, mode: str = "a") -> None:
    with path.open(mode, encoding="utf-8") as fh:
        fh.write(text)


def test_first_sight_reads_only_the_tail_and_numbers_its_lines(tmp_path: Path) -> None:
    p = tmp_path / "o.jsonl"
    write(p, "".join(rec(i) for i in range(1, 5001)))
    r = SampleReader("o", str(p), OutputFields())
    got = r.read(2 << 20, counted=(5000, p.stat().st_size))
    b = got.batch
    assert b is not None and b.restart and b.backfill
    assert b.lines == TAIL_LINES and got.used <= samples_mod.TAIL_BYTES
    assert [s.tokens for s in b.samples][-1] == 5000
    assert b.latest[-1].line == 5000 and b.latest[0].line == 5000 - len(b.latest) + 1


def test_a_big_file_costs_its_tail_only(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    write(p, "".join(rec(i, size=2000) for i in range(40_000)))  # ~80 MB
    r = SampleReader("big", str(p), OutputFields())
    got = r.read(2 << 20)
    assert got.used <= samples_mod.TAIL_BYTES and got.batch is not None
    assert got.batch.latest[-1].line is None  # not counted: the evidence gives byte offsets


def test_appended_lines_only_and_a_partial_line_is_not_invalid(tmp_path: Path) -> None:
    p = tmp_path / "o.jsonl"
    write(p, rec(1))
    r = SampleReader("o", str(p), OutputFields())
    r.read(2 << 20)
    write(p, rec(2) + '{"text": "half')  # a writer mid-line
    b = r.read(2 << 20).batch
    assert b is not None and (b.lines, b.invalid_count) == (1, 0)
    assert r.read(2 << 20).batch is None  # the partial line is read again, not counted
    write(p, ' a line", "meta_info": {}}\n{"crashed writer\n')
    b = r.read(2 << 20).batch
    assert b is not None and (b.lines, b.invalid_count, len(b.samples)) == (2, 1, 1)
    bad = b.invalid[0]
    assert bad.line == 4 and bad.head == '{"crashed writer' and "column" in bad.reason


def test_a_rewrite_in_place_restarts_the_figures(tmp_path: Path) -> None:
    p = tmp_path / "o.jsonl"
    write(p, "".join(rec(i) for i in range(1, 50)))
    r = SampleReader("o", str(p), OutputFields())
    r.read(2 << 20)
    # The same inode truncated and rewritten longer: the size never went below the offset.
    write(p, "".join(rec(i, "length") for i in range(1, 80)), mode="w")
    b = r.read(2 << 20).batch
    assert b is not None and b.restart and {s.finish for s in b.samples} == {"length"}


def test_a_burst_is_read_within_the_budget_over_several_reads(tmp_path: Path) -> None:
    p = tmp_path / "o.jsonl"
    write(p, rec(0))
    out = OutputCount("o", str(p), 1)
    src = SampleSource(OutputFields(), budget=64 * 1024)
    src.read([out])
    write(p, "".join(rec(i, size=1000) for i in range(1, 1001)))  # ~1 MB
    reads, lines = 0, 0
    while True:
        batches = src.read([out])
        reads += 1
        lines += sum(b.lines for b in batches)
        if not src.more:
            break
    assert lines == 1000 and reads >= 1_000_000 // (64 * 1024)


def test_far_behind_skips_to_the_tail(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(samples_mod, "SKIP_BEHIND", 100_000)
    p = tmp_path / "o.jsonl"
    write(p, rec(0))
    r = SampleReader("o", str(p), OutputFields())
    r.read(2 << 20)
    write(p, "".join(rec(i, size=500) for i in range(1, 2001)))
    b = r.read(2 << 20).batch
    assert b is not None and not b.restart and b.skipped_bytes > 0 and b.lines == TAIL_LINES


def test_an_oversized_line_is_skipped_and_counted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(samples_mod, "MAX_SAMPLE_BYTES", 10_000)
    p = tmp_path / "o.jsonl"
    write(p, rec(0))
    r = SampleReader("o", str(p), OutputFields())
    r.read(2 << 20)
    write(p, rec(1, size=50_000) + rec(2))
    total_over, samples = 0, []
    for _ in range(30):
        got = r.read(4096)
        if got.batch is not None:
            total_over += got.batch.oversized
            samples += got.batch.samples
    assert total_over == 1 and [s.tokens for s in samples] == [2]


def test_a_sample_longer_than_the_budget_is_still_read_whole(tmp_path: Path) -> None:
    p = tmp_path / "o.jsonl"
    write(p, rec(0))
    r = SampleReader("o", str(p), OutputFields())
    r.read(2 << 20)
    write(p, rec(1, size=1_000_000))  # a 1 MB string
    b = r.read(64 * 1024).batch
    assert b is not None and b.lines == 1 and len(b.latest[0].text) > 1_000_000


def test_nothing_to_read_is_one_stat(tmp_path: Path, monkeypatch) -> None:
    p = tmp_path / "o.jsonl"
    write(p, rec(0))
    r = SampleReader("o", str(p), OutputFields())
    r.read(2 << 20)
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    assert r.read(2 << 20).batch is None and opened == []


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_read_once_a_period_takes_every_line_since_and_a_burst_reads_on(tmp_path: Path) -> None:
    p = tmp_path / "o.jsonl"
    write(p, rec(0))
    out = OutputCount("o", str(p), 1)
    clock = _Clock()
    src = SampleSource(OutputFields(), budget=64 * 1024, every_s=5.0, clock=clock)
    assert [b.lines for b in src.read([out])] == [1]  # the first read is at once
    for i in range(1, 5):  # a poll a second: within the period, nothing is read
        clock.now += 1
        write(p, rec(i))
        assert src.read([out]) == ()
    clock.now += 1
    got = [s.tokens for b in src.read([out]) for s in b.samples]
    assert got == [1, 2, 3, 4]
    clock.now += 5
    write(p, "".join(rec(i, size=1000) for i in range(5, 500)))  # ~0.5 MB: a burst
    reads = 0
    while True:
        clock.now += 0.1
        batches = src.read([out])
        reads += 1
        got += [s.tokens for b in batches for s in b.samples]
        if not src.more:
            break
    assert got == list(range(1, 500)) and 1 < reads < 10  # on at once, not a period later


def test_a_rewrite_the_counter_saw_between_two_reads_restarts_the_figures(
        tmp_path: Path) -> None:
    p = tmp_path / "o.jsonl"
    write(p, "".join(rec(i) for i in range(1, 50)))
    clock = _Clock()
    src = SampleSource(OutputFields(), every_s=5.0, clock=clock)
    src.read([OutputCount("o", str(p), 49)])
    # Rewritten with the same bytes: only the counter's word says the file is new.
    write(p, "".join(rec(i) for i in range(1, 50)), mode="w")
    clock.now += 1
    assert src.read([OutputCount("o", str(p), 49, reset=True)]) == ()
    clock.now += 5
    (b,) = src.read([OutputCount("o", str(p), 49)])
    assert b.restart and b.lines == 49
