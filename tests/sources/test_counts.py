"""Counting output files on real files: incremental, background first counts, globs."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dash.sources import counts as counts_module
from dash.sources.bgcount import CountJob
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
        monkeypatch.setattr("dash.sources.bgcount.shutil.which", lambda _name: None)
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
                        (str(tmp_path / "prepared/*/prompts.jsonl"),), rescan_s=0.0, rescan_cost_factor=0.0)
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


class _Meddled(LineCounter):
    """A counter whose file is changed by the test between its stat and its open."""

    def __init__(self, path: Path, pool: ThreadPoolExecutor,
                 meddle: Callable[[Path], object] | None) -> None:
        super().__init__(path, pool)
        self.meddle = meddle

    def _read_more(self, ident: tuple[int, int], size: int) -> bool:
        if self.meddle is not None:
            meddle, self.meddle = self.meddle, None
            meddle(self.path)
        return super()._read_more(ident, size)


def _to_directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def test_an_output_replaced_by_a_directory_is_an_error_value_and_comes_back(tmp_path: Path) -> None:
    p = tmp_path / "B1.jsonl"
    p.write_text("{}\n" * 3)
    with ThreadPoolExecutor(1) as pool:
        c = LineCounter(p, pool)
        assert c.count().lines == 3
        _to_directory(p)
        r = c.count()
        assert (r.lines, r.exists, r.reset, r.error) == (None, False, True, "not a regular file")
        p.rmdir()
        p.write_text("{}\n" * 2)
        assert c.count().lines == 2


def test_an_output_replaced_by_a_directory_between_stat_and_open(tmp_path: Path) -> None:
    p = tmp_path / "B1.jsonl"
    p.write_text("{}\n" * 3)
    with ThreadPoolExecutor(1) as pool:
        c = _Meddled(p, pool, _to_directory)
        r = c.count()
        assert (r.lines, r.exists, r.error) == (None, False, "not a regular file")
        p.rmdir()
        p.write_text("{}\n")
        assert c.count().lines == 1


def test_an_output_that_vanishes_between_stat_and_open_is_absent(tmp_path: Path) -> None:
    p = tmp_path / "B1.jsonl"
    p.write_text("{}\n" * 3)
    with ThreadPoolExecutor(1) as pool:
        c = _Meddled(p, pool, None)
        assert c.count().lines == 3
        with open(p, "a") as fh:
            fh.write("{}\n")
        c.meddle = Path.unlink
        r = c.count()
        assert (r.lines, r.exists, r.reset, r.error) == (None, False, True, None)
        p.write_text("{}\n" * 5)
        assert c.count().lines == 5


def test_an_output_replaced_by_another_file_between_stat_and_open_is_counted_next(
        tmp_path: Path) -> None:
    p = tmp_path / "B1.jsonl"
    p.write_text("{}\n" * 3)

    def replace(path: Path) -> None:
        (tmp_path / "new").write_text("{}\n" * 7)
        (tmp_path / "new").replace(path)

    with ThreadPoolExecutor(1) as pool:
        c = _Meddled(p, pool, replace)
        assert c.count().lines is None  # not the file that was stat'ed: nothing counted from it
        r = c.count()
        assert r.lines == 7 and r.error is None


def test_one_bad_output_or_prompt_file_leaves_the_others_counted(tmp_path: Path) -> None:
    for name in ("B1", "B2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "responses.jsonl").write_text("{}\n" * 3)
        (tmp_path / name / "prompts.jsonl").write_text("{}\n" * 10)
    src = OutputsSource((str(tmp_path / "*/responses.jsonl"),),
                        (str(tmp_path / "*/prompts.jsonl"),), rescan_s=0.0, rescan_cost_factor=0.0)
    try:
        src.read()
        _to_directory(tmp_path / "B1" / "responses.jsonl")
        _to_directory(tmp_path / "B2" / "prompts.jsonl")
        with open(tmp_path / "B2" / "responses.jsonl", "a") as fh:
            fh.write("{}\n")
        counts, totals = src.read()
        assert [(c.name, c.lines) for c in counts] == [("B1", None), ("B2", 4)]
        assert totals == {"B1": 10}
        assert src.last_read_errors == (
            f"{tmp_path / 'B1' / 'responses.jsonl'}: not a regular file",
            f"{tmp_path / 'B2' / 'prompts.jsonl'}: not a regular file")
    finally:
        src.close()


def test_a_slow_glob_is_rerun_less_often(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A glob over a big tree that takes 50 ms is not re-run for 20 times that (1 s), and is
    re-run once that has passed. The clock is the test's: each glob advances it by 25 ms."""
    clock = [1000.0]
    calls: list[float] = []
    real = counts_module._matches

    def slow(patterns: tuple[str, ...], known: Mapping[str, str] | None = None
             ) -> list[tuple[str, str]]:
        calls.append(clock[0])
        clock[0] += 0.025  # outputs and inputs: 50 ms a scan
        return real(patterns, known)

    monkeypatch.setattr(counts_module, "_matches", slow)
    src = OutputsSource((str(tmp_path / "*.jsonl"),), (str(tmp_path / "*.txt"),), rescan_s=0.0,
                        monotonic=lambda: clock[0])
    try:
        src.read()
        assert len(calls) == 2
        clock[0] += 0.9
        src.read()
        assert len(calls) == 2  # 0.95 s after the scan began: within 20 x 50 ms
        clock[0] += 0.1
        src.read()
        assert len(calls) == 4  # 1.05 s after: re-run
        assert calls[2] - calls[0] == pytest.approx(1.05)
    finally:
        src.close()


COUNT_OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 40)),
    st.tuples(st.just("partial"), st.integers(1, 30)),
    st.tuples(st.just("count"), st.just(0)),
    st.tuples(st.just("rewrite_same_size"), st.just(0)),
    st.tuples(st.just("rewrite_larger"), st.integers(1, 3000)),
    st.tuples(st.just("rewrite_smaller"), st.integers(0, 100)),
    st.tuples(st.just("replace"), st.integers(0, 20)),
    st.tuples(st.just("delete"), st.just(0)),
), max_size=30)


def _jsonl(n0: int, size: int) -> bytes:
    """Output lines numbered from `n0`, of varied lengths, `size` bytes of them, the last one
    cut to fit (a partial line)."""
    out = bytearray()
    n = n0
    while len(out) < size:
        n += 1
        out += b'{"id": %d, "response": "%s", "finish_reason": "stop"}\n' % (n, b"t" * (n % 37))
    return bytes(out[:size])


@pytest.mark.parametrize("big", [1 << 30, 512])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(ops=COUNT_OPS)
def test_counts_equal_wc_l_after_every_step(ops: list[tuple[str, int]], big: int) -> None:
    """Whatever happens to the file between two polls (appends, a partial line, a truncation
    and rewrite to the same size, larger or smaller, a replacement, a deletion), the count is
    what `wc -l` says. `big=512` sends most counts to the background (`wc -l` itself)."""
    with tempfile.TemporaryDirectory() as d, ThreadPoolExecutor(1) as pool:
        p = Path(d) / "B1.jsonl"
        p.write_bytes(b"")
        c = LineCounter(p, pool, big=big)
        n = 0
        for op, k in ops:
            n += 1000  # every write has lines of its own: a rewrite never repeats the old bytes
            old = p.read_bytes() if p.exists() else b""
            if op == "append":
                with open(p, "ab") as fh:
                    fh.write(b"".join(b'{"id": %d}\n' % (n + i) for i in range(k)))
            elif op == "partial":
                with open(p, "ab") as fh:
                    fh.write(b'{"id": %d, "resp' % (n + k))
            elif op == "count":
                got = _wait_counted(c)
                assert got.lines == (old.count(b"\n") if p.exists() else None)
            elif op.startswith("rewrite") and p.exists():
                size = {"rewrite_same_size": len(old), "rewrite_larger": len(old) + k,
                        "rewrite_smaller": len(old) * k // 101}[op]
                with open(p, "r+b") as fh:  # the same inode, truncated and written again
                    fh.truncate(0)
                    fh.write(_jsonl(n, size))
            elif op == "replace":
                (Path(d) / "new").write_bytes(_jsonl(n, k * 60))
                os.replace(Path(d) / "new", p)
            elif op == "delete" and p.exists():
                p.unlink()
        got = _wait_counted(c)
        assert got.lines == (p.read_bytes().count(b"\n") if p.exists() else None)
        c.close()


@pytest.mark.parametrize("use_wc", [True, False])
def test_an_exact_count_stops_at_its_end_while_the_file_grows_past_it(
        tmp_path: Path, use_wc: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines before a backfill window: `wc -l` reads to the end of the file; what lies past
    the window's start is taken off again."""
    if not use_wc:
        monkeypatch.setattr("dash.sources.bgcount.shutil.which", lambda _name: None)
    p = tmp_path / "server.log"
    p.write_bytes(b"a line\n" * 1000 + b"half a li" + b"ne\n" * 500)
    end = 7 * 1000 + 4
    job = CountJob(end, exact=True)
    st_ = p.stat()
    job.run(p, (st_.st_dev, st_.st_ino))
    assert job.result == (p.read_bytes()[:end].count(b"\n"), end) == (1000, end)
    assert job.error is None


def test_a_settled_file_is_not_read_back_until_its_stat_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a file's last change lies a while back, a poll that finds the same size, mtime and
    ctime opens nothing; any write moves them, and the bytes are checked again."""
    monkeypatch.setattr(counts_module, "SETTLED_NS", 0)  # every look counts as settled
    opened: list[Path] = []
    real = counts_module._open_regular

    def spy(path: Path):  # type: ignore[no-untyped-def]
        opened.append(path)
        return real(path)

    monkeypatch.setattr(counts_module, "_open_regular", spy)
    p = tmp_path / "B1.jsonl"
    p.write_bytes(_jsonl(0, 3000))
    with ThreadPoolExecutor(1) as pool:
        c = LineCounter(p, pool)
        assert c.count().lines == p.read_bytes().count(b"\n")
        opened.clear()
        for _ in range(3):
            c.count()
        assert opened == []
        time.sleep(0.05)  # past a timestamp tick
        with open(p, "r+b") as fh:
            fh.truncate(0)
            fh.write(_jsonl(5000, 3000))
        got = c.count()
        assert opened and got.lines == p.read_bytes().count(b"\n") and got.reset
