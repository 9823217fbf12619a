"""FileFollower on real files: every complete line seen once, in order, whatever the file does."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dash.sources.files import MAX_READ_PER_POLL, FileFollower

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 5)),
        st.tuples(st.just("partial"), st.integers(1, 5)),
        st.tuples(st.just("poll"), st.just(0)),
        st.tuples(st.just("rotate"), st.just(0)),
        st.tuples(st.just("copytruncate"), st.just(0)),
        st.tuples(st.just("delete"), st.just(0)),
        st.tuples(st.just("recreate"), st.just(0)),
        st.tuples(st.just("rewrite_same_size"), st.just(0)),
        st.tuples(st.just("rewrite_larger"), st.integers(40, 300)),
    ),
    max_size=40,
)
SUFFIX = ", gen throughput (token/s): 84.20"
"""Every line ends alike, as decode lines do: only a wide window tells a rewrite apart."""


class Writer:
    """A logger writing numbered lines, and the file operations done to its log."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.n = 0
        self.written: list[str] = []
        self.partial = ""
        self.pieces = 0

    def _append(self, data: str) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(data)

    def append(self, k: int) -> None:
        lines = []
        for _ in range(k):
            self.n += 1
            lines.append(f"line {self.n} " + "x" * (self.n % 7) + SUFFIX)
        # A held partial line is finished by the first newline.
        text = "\n".join(lines) + "\n"
        self.written.append(self.partial + lines[0])
        self.written.extend(lines[1:])
        self.partial = ""
        self._append(text)

    def write_partial(self, k: int) -> None:
        self.pieces += 1
        piece = f"part{self.pieces}-{k}-"
        self.partial += piece
        self._append(piece)

    def rewrite(self, size: int) -> None:
        """Truncate the file and write numbered lines, `size` bytes of them (a restarted server
        writing over its old log: the same size, or larger)."""
        text = ""
        while len(text.encode()) < size:
            self.n += 1
            text += f"{self.n} rewritten" + SUFFIX + "\n"  # a line cut to fit keeps its number
        if size and len(text.encode()) > size:  # cut the last line to fit, newline kept
            text = text.encode()[:size - 1].decode() + "\n"
        with open(self.path, "r+", encoding="utf-8") as fh:
            fh.truncate(0)
            fh.write(text)
        self.written.extend(text.splitlines())

    def finish_partial(self) -> None:
        """Loggers write whole lines before a file is rotated; finish the one in progress."""
        if self.partial:
            self.written.append(self.partial)
            self.partial = ""
            self._append("\n")


def _run(ops: list[tuple[str, int]], tmp: Path, *, late: bool,
         max_read: int = MAX_READ_PER_POLL) -> None:
    path = tmp / "server.log"
    w = Writer(path)
    if not late:
        w.append(2)
    f = FileFollower(path, backfill=None, max_read=max_read)
    seen: list[str] = []
    has_current = False  # whether the follower has opened the file now at the path

    def poll() -> None:
        nonlocal has_current
        while True:
            r = f.poll()
            assert r.status in ("ok", "waiting")
            seen.extend(r.lines)
            if not r.more:
                break
        has_current = path.exists()

    for op, k in ops:
        if op == "append":
            w.append(k)
        elif op == "partial":
            w.write_partial(k)
        elif op == "poll":
            poll()
        elif op in ("rotate", "delete") and path.exists():
            w.finish_partial()
            if not has_current:
                poll()  # a file that lives and dies between two polls cannot be seen
            if op == "rotate":
                os.replace(path, tmp / "server.log.1")
            else:
                path.unlink()
            has_current = False
        elif op == "copytruncate" and path.exists():
            w.finish_partial()
            poll()  # bytes written after the copy's last poll are in the copy, not here
            shutil.copyfile(path, tmp / "server.log.1")
            os.truncate(path, 0)
        elif op in ("rewrite_same_size", "rewrite_larger") and path.exists():
            w.finish_partial()
            poll()  # what was there is read; the rewrite comes between this poll and the next
            size = path.stat().st_size
            w.rewrite(size + (k if op == "rewrite_larger" else 0))
        elif op == "recreate":
            w.finish_partial()
            if path.exists():
                poll()
                path.unlink()
            path.touch()
            has_current = False
    w.finish_partial()
    poll()
    f.close()
    assert seen == w.written


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, late=st.booleans())
def test_every_line_once_in_order(ops: list[tuple[str, int]], late: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        _run(ops, Path(d), late=late)


def test_rotation_without_a_poll_between_drains_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("1\n")
    f = FileFollower(path)
    assert f.poll().lines == ("1",)
    with open(path, "a") as fh:
        fh.write("2\n3")
    os.rename(path, tmp_path / "a.log.1")
    path.write_text("4\n")
    r = f.poll()
    assert r.lines == ("2", "3", "4")
    assert r.events == ("rotated", "opened")


def test_the_same_file_moved_back_is_read_on_not_again(tmp_path: Path) -> None:
    # `mv server.log server.log.1; mv server.log.1 server.log`: reading it again from 0
    # counted every start, OOM and event twice, and its old lines "arrived": a live server.
    path, aside = tmp_path / "a.log", tmp_path / "a.log.1"
    path.write_text("".join(f"line {i}{SUFFIX}\n" for i in range(50)))
    f = FileFollower(path)
    assert len(f.poll().lines) == 50
    os.rename(path, aside)
    assert f.poll().events == ("deleted",)
    os.rename(aside, path)
    with open(path, "a") as fh:
        fh.write(f"line 50{SUFFIX}\n")
    r = f.poll()
    assert r.lines == (f"line 50{SUFFIX}",) and r.events == ("opened",)


def test_a_copy_over_the_file_holding_its_bytes_is_read_on(tmp_path: Path) -> None:
    # rsync (or an editor) writes a copy and renames it over the log: the same bytes up to
    # where kdash read, and more; a copy whose bytes differ is another log, read from 0.
    path, tmp = tmp_path / "a.log", tmp_path / ".a.log.tmp"
    old = "".join(f"line {i}{SUFFIX}\n" for i in range(50))
    path.write_text(old)
    f = FileFollower(path)
    assert len(f.poll().lines) == 50
    tmp.write_text(old + f"line 50{SUFFIX}\n")
    os.rename(tmp, path)
    r = f.poll()
    assert r.lines == (f"line 50{SUFFIX}",) and r.events == ("opened",)
    tmp.write_text(old.replace("line 3", "line 9") + f"line 50{SUFFIX}\nline 51{SUFFIX}\n")
    os.rename(tmp, path)
    r = f.poll()
    assert len(r.lines) == 52 and r.events == ("rotated", "opened")


def test_rewrite_that_grew_past_the_offset_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("old server line one\n")
    f = FileFollower(path)
    f.poll()
    # A restart truncates the log and writes more than was there before.
    with open(path, "w") as fh:
        fh.write("new server started, first line\nsecond\n")
    r = f.poll()
    assert r.events == ("truncated",)
    assert r.lines == ("new server started, first line", "second")


def test_backfill_starts_at_a_line_boundary_near_the_end(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"".join(b"line %06d\n" % i for i in range(10000)))
    f = FileFollower(path, backfill=1000)
    r = f.poll()
    assert 80 <= len(r.lines) <= 83  # 12-byte lines in 1000 bytes, the first one cut
    assert r.lines[-1] == "line 009999"
    assert all(x.startswith("line 0") and len(x) == 11 for x in r.lines)
    with open(path, "ab") as fh:
        fh.write(b"next\n")
    assert f.poll().lines == ("next",)


def test_late_file_is_read_from_its_start_not_backfilled(tmp_path: Path) -> None:
    path = tmp_path / "late.log"
    f = FileFollower(path, backfill=4)
    assert f.poll().status == "waiting"
    path.write_text("first line is long\nsecond\n")
    assert f.poll().lines == ("first line is long", "second")


def test_garbage_bytes_nul_and_a_10mb_line_are_survived(tmp_path: Path) -> None:
    path = tmp_path / "g.log"
    path.write_bytes(b"ok\n\xff\xfe bad \x00 nul\n")
    f = FileFollower(path, max_line=1024)
    r = f.poll()
    assert r.lines[0] == "ok"
    assert "\x00" in r.lines[1] and "\ufffd" in r.lines[1]
    with open(path, "ab") as fh:
        for _ in range(160):
            fh.write(b"z" * 65536)  # 10 MB and no newline
    r = f.poll()
    while r.more:
        r = f.poll()
    assert len(f.state.splitter.partial) <= 1024
    with open(path, "ab") as fh:
        fh.write(b"zz\nafter\n")
    lines = f.poll().lines
    assert lines[1] == "after"
    assert lines[0].startswith("z" * 1000) and len(lines[0]) < 1100


def test_client_log_carriage_returns_end_lines_and_keep_the_last(tmp_path: Path) -> None:
    path = tmp_path / "client.log"
    path.write_bytes(b"Resuming: 5 already done\n\r 10%|#| 1/10\r 20%|#| 2/10\r 30%|##| 3/10")
    f = FileFollower(path, cr_breaks=True)
    r = f.poll()
    assert r.lines == ("Resuming: 5 already done", " 20%|#| 2/10")
    assert r.partial == " 30%|##| 3/10"


def test_missing_directory_and_a_directory_path_are_values(tmp_path: Path) -> None:
    assert FileFollower(tmp_path / "no" / "such.log").poll().status == "waiting"
    r = FileFollower(tmp_path).poll()
    assert r.status == "error" and r.message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_file_is_an_error_value(tmp_path: Path) -> None:
    path = tmp_path / "secret.log"
    path.write_text("x\n")
    path.chmod(0)
    r = FileFollower(path).poll()
    assert r.status == "error" and "ermission" in (r.message or "")


def test_watched_files_are_byte_identical_and_keep_their_mtime(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(b"a\nb\npartial")
    os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    before = (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_size)
    f = FileFollower(path, backfill=3)
    for _ in range(3):
        f.poll()
    f.close()
    f2 = FileFollower(path, cr_breaks=True)
    f2.poll()
    f2.close()
    after = (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_size)
    assert after == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, late=st.booleans())
def test_every_line_once_in_order_when_each_poll_reads_a_few_bytes(
        ops: list[tuple[str, int]], late: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        _run(ops, Path(d), late=late, max_read=16)


@pytest.mark.parametrize("gone", ["rotated", "deleted"])
def test_a_rotated_file_bigger_than_a_poll_is_read_over_several_polls(tmp_path: Path,
                                                                      gone: str) -> None:
    path = tmp_path / "a.log"
    path.write_text("start\n")
    f = FileFollower(path, max_read=1000)
    assert f.poll().lines == ("start",)
    burst = [f"burst line {i:05d}" for i in range(500)]  # 17 bytes each: 8500 in all
    with open(path, "a") as fh:
        fh.write("\n".join(burst) + "\n")
    if gone == "rotated":
        os.replace(path, tmp_path / "a.log.1")
        path.write_text("new file line\n")
    else:
        path.unlink()
    seen: list[str] = []
    events: list[str] = []
    polls = 0
    while polls < 50:
        polls += 1
        r = f.poll()
        # Still reading the old file is "ok"; once a deleted one is drained the path waits.
        assert r.status == ("ok" if r.more or gone == "rotated" else "waiting")
        assert r.bytes_read <= 1000
        seen.extend(r.lines)
        events.extend(r.events)
        if not r.more:
            break
    assert polls >= 9  # 8500 bytes at 1000 a poll, not all at once
    assert seen == burst + (["new file line"] if gone == "rotated" else [])
    assert events == ([gone, "opened"] if gone == "rotated" else [gone])


def _count_preads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.pread

    def counted(fd: int, n: int, at: int) -> bytes:
        calls.append(at)
        return real(fd, n, at)

    monkeypatch.setattr(os, "pread", counted)
    return calls


def test_a_settled_file_is_one_stat_a_poll_until_it_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its mark's bytes are not read back while its stat stays as it was; a rewrite to the same
    size moves its ctime, and is then seen by the bytes as before."""
    path = tmp_path / "server.log"
    path.write_text("a line\n" * 100)
    old = 1_600_000_000 * 10**9
    os.utime(path, ns=(old, old))  # ctime is now, though: not settled yet
    f = FileFollower(path)
    try:
        assert len(f.poll().lines) == 100
        preads = _count_preads(monkeypatch)
        f.poll()
        assert preads  # ctime recent: the bytes are checked
        monkeypatch.setattr("dash.sources.files.SETTLED_NS", -10**12)  # as if seconds passed
        f.poll()  # nothing new, and settled: kept
        preads.clear()
        for _ in range(5):
            r = f.poll()
            assert r.status == "ok" and not r.lines and r.size == 700
        assert preads == []
        path.write_text("b line\n" * 100)  # rewritten to the same size
        r = f.poll()
        assert "truncated" in r.events and len(r.lines) == 100 and r.lines[0] == "b line"
        with path.open("a") as fh:
            fh.write("c line\n")
        assert f.poll().lines == ("c line",)
    finally:
        f.close()
