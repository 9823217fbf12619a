"""A chart's column maxima, carried over between refreshes, equal the ones computed afresh."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.series import Series, SeriesView
from dash.ui.widgets.chart import ColumnCache, column_values

steps = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(1, 30), st.floats(0, 2000)),   # points arrive
    st.tuples(st.just("move"), st.integers(-5, 40), st.just(0.0)),        # the window moves
    st.tuples(st.just("other"), st.integers(0, 1), st.just(0.0)),         # another series
    st.tuples(st.just("cols"), st.integers(1, 80), st.just(0.0)),         # a resize
), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(steps)
def test_carried_over_columns_equal_fresh_ones(ops: list[tuple[str, int, float]]) -> None:
    # Small ring buffers, so that points also drop off the start inside the window.
    series = [Series(maxlen=50), Series(maxlen=70)]
    clock = [0.0, 0.0]
    which, start, cols = 0, 0.0, 40
    cache = ColumnCache()
    for op, n, value in ops:
        if op == "add":
            for i in range(n):
                clock[which] += 1.0
                series[which].append(clock[which], value + i % 7)
        elif op == "move":
            start = max(0.0, start + n)
        elif op == "other":
            which = n
        else:
            cols = n
        view = series[which].view()
        end = start + 60.0
        assert cache.values(view, start, end, cols) == column_values(view, start, end, cols)


def test_a_new_point_is_folded_into_the_last_column() -> None:
    cache = ColumnCache()
    t = tuple(float(i) for i in range(10))
    first = cache.values(SeriesView(t, (1.0,) * 10), 0.0, 20.0, 4)
    assert first == [1.0, 1.0, None, None]
    grown = cache.values(SeriesView((*t, 10.0), (*(1.0,) * 10, 9.0)), 0.0, 20.0, 4)
    assert grown == [1.0, 1.0, 9.0, None]


def test_an_empty_series_has_empty_columns() -> None:
    cache = ColumnCache()
    assert cache.values(SeriesView(), 0.0, 10.0, 3) == [None, None, None]
    assert cache.values(SeriesView((1.0,), (5.0,)), 0.0, 10.0, 3) == [5.0, None, None]
