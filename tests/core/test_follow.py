"""The follower's pure state machine: decisions from stats, line splitting, caps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.follow import Decision, FileId, FollowState, LineSplitter
from dash.core.mark import HEAD_BYTES, WINDOW_BYTES, Mark


def test_partial_line_is_held_until_its_newline() -> None:
    s = LineSplitter()
    assert s.feed(b"abc") == []
    assert s.partial == "abc"
    assert s.feed(b"def\ng") == ["abcdef"]
    assert s.feed(b"\n\n") == ["g", ""]


def test_overlong_line_is_cut_and_the_rest_skipped_without_buffering() -> None:
    s = LineSplitter(max_line=8)
    for _ in range(1000):
        assert s.feed(b"0123456789" * 10) == []
        assert len(s.partial) <= 8
    out = s.feed(b"tail\nnext\n")
    assert out == ["01234567 [...]", "next"]
    assert s.feed(b"x" * 20 + b"\n") == ["xxxxxxxx [...]"]


def test_invalid_utf8_and_nul_survive() -> None:
    assert LineSplitter().feed(b"\xff\x00ok\n") == ["\ufffd\x00ok"]


def test_carriage_return_runs_keep_their_last_segment() -> None:
    s = LineSplitter(cr_breaks=True)
    assert s.feed(b"\r 1%\r 2%\r 3%") == [" 2%"]
    assert s.partial == " 3%"
    assert s.feed(b"\r100%\nerror: boom\r\n") == [" 3%", "100%", "error: boom"]


def test_decisions() -> None:
    st = FollowState()
    assert st.decide(None) is Decision.ABSENT
    a = FileId(1, 10, 100)
    assert st.decide(a) is Decision.OPEN
    assert st.opened(a) == 0
    st.feed(b"x" * 99 + b"\n")
    same = (st.mark.head, st.mark.tail)
    assert st.decide(FileId(1, 10, 100), same) is Decision.IDLE
    assert st.decide(FileId(1, 10, 150), same) is Decision.READ
    assert st.decide(FileId(1, 10, 150), (same[0], b"y" * 99 + b"\n")) is Decision.TRUNCATED
    assert st.decide(FileId(1, 10, 50)) is Decision.TRUNCATED
    assert st.decide(FileId(1, 11, 500)) is Decision.REPLACED
    assert st.decide(None) is Decision.REPLACED


def test_backfill_only_for_the_first_file_and_its_head_is_skipped() -> None:
    st = FollowState(backfill=10)
    assert st.opened(FileId(1, 1, 100)) == 90
    assert st.feed(b"tail\nline\n") == ["line"]
    st.closed()
    assert st.opened(FileId(1, 2, 100)) == 0  # a rotated-in file is read from its start


def test_truncation_and_close_flush_a_held_partial_line() -> None:
    st = FollowState()
    st.opened(FileId(1, 1, 0))
    st.feed(b"done\nhalf")
    assert st.truncated() == ["half"]
    assert st.offset == 0
    st.feed(b"x")
    assert st.closed() == ["x"]
    assert st.ident is None


def test_a_backfilled_client_log_of_only_carriage_returns_still_gives_its_bars() -> None:
    """tqdm into a redirected stderr writes `\\r` and never a newline: the backfill window's
    first partial segment is dropped at the first `\\r`, not at a newline that never comes."""
    bar = "B2:  42%|####      | {n}/10000 [3:12:01<6:42:14,  0.24it/s]"
    state = FollowState(backfill=64, cr_breaks=True)
    state.opened(FileId(1, 2, 10_000))  # a big file: reading starts inside the window
    lines = state.feed(("".join("\r" + bar.format(n=n) for n in range(4200, 4203))).encode())
    assert lines[-1] == bar.format(n=4201)
    assert state.splitter.partial == bar.format(n=4202)
    assert state.feed(("\r" + bar.format(n=4203)).encode()) == [bar.format(n=4202)]


def test_a_rewrite_to_the_same_size_is_told_apart_from_an_idle_file() -> None:
    """Decode lines all end in the same bytes: only a window over many lines, and the head,
    tell a restarted server's log from the one that was read."""
    line = b"[2025-09-03 18:33:%02d TP0] Decode batch. #running-req: 3, gen throughput (token/s): 84.20\n"
    old = b"".join(line % (i % 60) for i in range(100))
    new = b"".join(line % ((i + 7) % 60) for i in range(100))
    assert len(old) == len(new) and old[-16:] == new[-16:]
    st = FollowState()
    st.opened(FileId(1, 1, len(old)))
    st.feed(old)
    (h_at, h_len), (t_at, t_len) = st.mark.spans()
    assert (h_at, h_len, t_at + t_len) == (0, HEAD_BYTES, len(old)) and t_len == WINDOW_BYTES
    same = FileId(1, 1, len(old))
    assert st.decide(same, (old[:h_len], old[t_at:t_at + t_len])) is Decision.IDLE
    assert st.decide(same, (new[:h_len], new[t_at:t_at + t_len])) is Decision.TRUNCATED
    # The head alone also tells: a rewrite that ends like the old file but starts otherwise.
    assert st.decide(same, (new[:h_len], old[t_at:t_at + t_len])) is Decision.TRUNCATED


def test_the_mark_of_a_backfilled_file_is_what_the_io_side_read_at_the_offset() -> None:
    data = b"".join(b"line %06d\n" % i for i in range(2000))
    st = FollowState(backfill=1000)
    off = st.opened(FileId(1, 1, len(data)))
    (h_at, h_len), (t_at, t_len) = Mark.spans_at(off)
    st.marked(data[h_at:h_at + h_len], data[t_at:t_at + t_len])
    st.feed(data[off:])
    assert st.mark.head == data[:HEAD_BYTES] and st.mark.tail == data[-WINDOW_BYTES:]
    assert st.mark.end == st.offset == len(data)


class _MemFile:
    """A file in memory: its bytes and its inode."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.ino = 1


def _poll(st: FollowState, f: _MemFile) -> list[str]:
    """What the I/O side does for one poll of a file that is never replaced."""
    at = FileId(1, f.ino, len(f.data))
    back = None
    if st.ident is not None and len(f.data) >= st.offset:
        (h_at, h_len), (t_at, t_len) = st.mark.spans()
        back = (bytes(f.data[h_at:h_at + h_len]), bytes(f.data[t_at:t_at + t_len]))
    decision = st.decide(at, back)
    out: list[str] = []
    if decision is Decision.OPEN:
        st.opened(at)
    elif decision is Decision.TRUNCATED:
        out += st.truncated()
    out += st.feed(bytes(f.data[st.offset:]))
    return out


REWRITES = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 60)),
    st.tuples(st.just("partial"), st.integers(1, 30)),
    st.tuples(st.just("poll"), st.just(0)),
    st.tuples(st.just("rewrite_same_size"), st.just(0)),
    st.tuples(st.just("rewrite_larger"), st.integers(1, 400)),
    st.tuples(st.just("truncate"), st.just(0)),
), max_size=50)


@settings(max_examples=300, deadline=None)
@given(ops=REWRITES)
def test_every_complete_line_once_whatever_rewrites_happen_between_polls(
        ops: list[tuple[str, int]]) -> None:
    """Lines are numbered and end alike, as decode lines do; a rewrite happens between two
    polls, after the follower has read what was there (what it never saw is not its to see).
    After every step, what was seen is what the file held, in order, each line once."""
    f, st_ = _MemFile(), FollowState()
    written: list[bytes] = []
    seen: list[str] = []
    n = 0

    def lines_of(size: int) -> bytes:
        nonlocal n
        out = bytearray()
        while len(out) < size:
            n += 1
            out += b"%d, gen throughput (token/s): 84.20\n" % n
        return bytes(out)

    def finish() -> None:
        if f.data and not f.data.endswith(b"\n"):
            f.data += b"\n"

    for op, k in ops:
        if op in ("append", "partial"):
            n += 1
            f.data += lines_of(k) if op == "append" else b"p%d-%d-" % (n, k)
        elif op == "poll":
            seen += _poll(st_, f)
            continue
        else:
            finish()
            seen += _poll(st_, f)
            written += bytes(f.data).splitlines()
            size = len(f.data)
            new = b"" if op == "truncate" else lines_of(size + (k if op == "rewrite_larger" else 0))
            if op == "rewrite_same_size":
                new = new[:size - 1] + b"\n" if size else b""
            f.data = bytearray(new)
        written_now = written + bytes(f.data).splitlines()[:bytes(f.data).count(b"\n")]
        assert seen == [x.decode() for x in written_now][:len(seen)]
    finish()
    seen += _poll(st_, f)
    assert seen == [x.decode() for x in written + bytes(f.data).splitlines()]
