"""Output globs re-run only when a directory they read changed (or every half minute), on real
directories: new files, new sub-directories under `dir*/` and `**`, and a change within the
timestamp tick of the last look."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from dash.sources import counts as counts_module
from dash.sources.counts import OutputsSource
from dash.sources.globwatch import SAFETY_S, GlobWatch, glob_dirs

OLD_NS = 1_600_000_000 * 10**9
"""A time long past: directories set to it count as settled."""


def _settle(*dirs: Path, at: int = OLD_NS) -> None:
    for d in dirs:
        os.utime(d, ns=(at, at))


class _Source:
    """An OutputsSource on a fake monotonic clock that counts the runs of its globs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *patterns: str) -> None:
        self.clock = [1000.0]
        self.runs = 0
        real = counts_module._matches

        def counted(pats: tuple[str, ...], known: Mapping[str, str] | None = None
                    ) -> list[tuple[str, str]]:
            if pats:
                self.runs += 1
            return real(pats, known)

        monkeypatch.setattr(counts_module, "_matches", counted)
        self.src = OutputsSource(patterns, rescan_s=1.0, rescan_cost_factor=0.0,
                                 monotonic=lambda: self.clock[0])

    def names(self, after_s: float = 1.5) -> set[str]:
        self.clock[0] += after_s
        counts, _ = self.src.read()
        return {c.name for c in counts}


def test_a_settled_directory_is_not_listed_again_until_it_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "B1.jsonl").write_text('{"id": 1}\n')
    _settle(tmp_path)
    s = _Source(monkeypatch, str(tmp_path / "*.jsonl"))
    try:
        assert s.names() == {"B1"}
        runs = s.runs
        for _ in range(5):
            with (tmp_path / "B1.jsonl").open("a") as fh:
                fh.write('{"id": 2}\n')  # appending leaves the directory as it was
            assert s.names() == {"B1"}
        assert s.runs == runs  # five reads, one stat of the directory each, no glob
        (tmp_path / "B2.jsonl").write_text('{"id": 1}\n')
        _settle(tmp_path, at=OLD_NS + 10**9)  # moved, and already settled again
        assert s.names() == {"B1", "B2"}
        assert s.runs == runs + 1
    finally:
        s.src.close()


def test_a_change_that_left_the_mtime_as_it_was_is_seen_while_the_mtime_is_recent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two creations within one timestamp tick: the second leaves the mtime the look saw."""
    (tmp_path / "B1.jsonl").write_text("")
    s = _Source(monkeypatch, str(tmp_path / "*.jsonl"))
    try:
        assert s.names() == {"B1"}
        seen = os.stat(tmp_path).st_mtime_ns
        (tmp_path / "B2.jsonl").write_text("")
        os.utime(tmp_path, ns=(seen, seen))  # as a coarse tick leaves it
        assert s.names() == {"B1", "B2"}
    finally:
        s.src.close()


def test_the_safety_re_run_finds_what_the_directory_did_not_tell(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "B1.jsonl").write_text("")
    _settle(tmp_path)
    s = _Source(monkeypatch, str(tmp_path / "*.jsonl"))
    try:
        assert s.names() == {"B1"}
        (tmp_path / "B2.jsonl").write_text("")
        _settle(tmp_path)  # its mtime put back: nothing to see from the stat
        assert s.names() == {"B1"}
        assert s.names(after_s=SAFETY_S) == {"B1", "B2"}
    finally:
        s.src.close()


@pytest.mark.parametrize("pattern", ["dir*/x.jsonl", "**/*.jsonl", "*/x.jsonl", "**"])
def test_a_file_in_a_new_sub_directory_is_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str) -> None:
    (tmp_path / "dir1").mkdir()
    (tmp_path / "dir1" / "x.jsonl").write_text("")
    _settle(tmp_path, tmp_path / "dir1")
    s = _Source(monkeypatch, str(tmp_path / pattern))
    try:
        assert len(s.names()) == 1
        runs = s.runs
        assert len(s.names()) == 1 and s.runs == runs
        (tmp_path / "dir2").mkdir()
        (tmp_path / "dir2" / "x.jsonl").write_text("")
        _settle(tmp_path, tmp_path / "dir2", at=OLD_NS + 10**9)
        assert len(s.names()) == 2
        # A file that appears later in a directory the glob already walked through.
        (tmp_path / "dir2" / "sub").mkdir()
        (tmp_path / "dir2" / "sub" / "x.jsonl").write_text("")
        (tmp_path / "dir1" / "y.jsonl").write_text("")
        _settle(tmp_path / "dir2", tmp_path / "dir2" / "sub", tmp_path / "dir1",
                at=OLD_NS + 2 * 10**9)
        expected = {"dir*/x.jsonl": 2, "**/*.jsonl": 4, "*/x.jsonl": 2, "**": 4}[pattern]
        assert len(s.names()) == expected
    finally:
        s.src.close()


def test_a_directory_that_appears_later_is_watched(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    s = _Source(monkeypatch, str(tmp_path / "outputs" / "*.jsonl"))
    try:
        assert s.names() == set()
        (tmp_path / "outputs").mkdir()
        _settle(tmp_path / "outputs")
        (tmp_path / "outputs" / "B1.jsonl").write_text("")
        assert s.names() == {"B1"}
    finally:
        s.src.close()


def test_the_directories_a_glob_reads(tmp_path: Path) -> None:
    for d in ("a1/deep", "a2", "b"):
        (tmp_path / d).mkdir(parents=True)
    base = str(tmp_path)
    assert glob_dirs(f"{base}/*.jsonl", recursive=True) == [base]
    assert sorted(glob_dirs(f"{base}/a*/x.jsonl", recursive=True)) == sorted(
        [base, f"{base}/a1", f"{base}/a2"])
    assert sorted(glob_dirs(f"{base}/**/*.jsonl", recursive=True)) == sorted(
        [base, f"{base}/a1", f"{base}/a1/deep", f"{base}/a2", f"{base}/b"])
    # a last part of `**` matches files at every depth: every directory below is read
    assert sorted(glob_dirs(f"{base}/**", recursive=True)) == sorted(
        [base, f"{base}/a1", f"{base}/a1/deep", f"{base}/a2", f"{base}/b"])


def test_a_change_within_the_tick_of_the_run_is_seen_however_late_the_next_look(
        tmp_path: Path) -> None:
    """The glob ran in the tick its directory last changed in, and a file came within that tick
    after the listing (the mtime as the run saw it): the next look, whenever it comes (a slow
    glob's re-run, a long refresh), runs the glob again, and then the directory has settled."""
    (tmp_path / "B1.jsonl").write_text("")
    run_at = OLD_NS + 10 * 10**9
    _settle(tmp_path, at=run_at - 1_000_000)  # changed a millisecond before the run
    clock, wall = [1000.0], [run_at]
    watch = GlobWatch((str(tmp_path / "*.jsonl"),), recursive=True,
                      monotonic=lambda: clock[0], wall_ns=lambda: wall[0])
    watch.ran()
    (tmp_path / "B2.jsonl").write_text("")
    _settle(tmp_path, at=run_at - 1_000_000)  # the same tick: the mtime the run saw
    clock[0] += 5.0
    wall[0] += 5 * 10**9
    assert watch.due()
    watch.ran()
    clock[0] += 5.0
    wall[0] += 5 * 10**9
    assert not watch.due()  # looked at after the tick: settled
