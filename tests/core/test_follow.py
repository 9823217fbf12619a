"""The follower's pure state machine: decisions from stats, line splitting, caps."""

from __future__ import annotations

from dash.core.follow import Decision, FileId, FollowState, LineSplitter


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
    assert st.decide(FileId(1, 10, 100), st.sig) is Decision.IDLE
    assert st.decide(FileId(1, 10, 150), st.sig) is Decision.READ
    assert st.decide(FileId(1, 10, 150), b"something else!!") is Decision.TRUNCATED
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
