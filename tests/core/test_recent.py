"""RecentSet: said-once memory that stays bounded, and RunState's notices built on it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dash.core.config import Config
from dash.core.recent import RecentSet
from dash.core.state.run import MAX_NOTICES, SHOWN_NOTICES, RunState


def test_an_item_is_news_once_and_order_is_first_seen() -> None:
    seen: RecentSet[str] = RecentSet(3)
    assert seen.add("a") and seen.add("b")
    assert not seen.add("a")  # already said
    assert list(seen) == ["a", "b"] and "a" in seen and "z" not in seen


def test_the_oldest_is_forgotten_first_and_is_news_again() -> None:
    seen: RecentSet[int] = RecentSet(3)
    for i in range(5):
        seen.add(i)
    assert list(seen) == [2, 3, 4] and len(seen) == 3
    assert seen.add(0)  # forgotten, so news again
    assert seen.newest(2) == (4, 0) and seen.newest(10) == (3, 4, 0) and seen.newest(0) == ()


@given(st.lists(st.integers(0, 30), max_size=200), st.integers(1, 12))
def test_bounded_and_news_means_not_remembered(items: list[int], maxlen: int) -> None:
    seen: RecentSet[int] = RecentSet(maxlen)
    for item in items:
        was_there = item in seen
        assert seen.add(item) is not was_there
        assert item in seen and len(seen) <= maxlen
    assert seen.newest(maxlen) == tuple(seen)


def test_run_state_notices_stay_bounded_over_a_long_run() -> None:
    state = RunState(Config())
    for i in range(10 * MAX_NOTICES):
        state.add_notice(f"/out/part-{i}.jsonl: permission denied")
        state.add_notice(f"/out/part-{i}.jsonl: permission denied")  # the same poll after poll
    assert len(state.notices) == MAX_NOTICES
    notices = state.snapshot(0.0).notices
    assert len(notices) == SHOWN_NOTICES
    assert notices[-1] == f"/out/part-{10 * MAX_NOTICES - 1}.jsonl: permission denied"
