"""The column-at-a-time pieces of the summary's fold, against their one-at-a-time forms."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dash.core.log.passes import Pass
from dash.core.views.summary_feed import ts_key
from dash.core.views.summary_fold import keys_of

STAMPS = [
    ["2026-03-01T08:00:41", "2026-03-01T08:00:49", "2026-03-01T08:00:50"],
    ["08:00:41", "08:00:42"],
    ["03-01T08:00:41"],
    ["2026-03-01T08:00:41.123", "2026-03-01T08:00:41.9"],  # a fraction: not the last digit
    ["2025-10-20T03:02:22Z", "2026-02-11T08:15:03+01:00"],  # a zone
    ["2026-03-01T08:00:41", "2026-03-01T08:00:41.5"],  # one with a fraction among plain ones
    ["", "08:00:41"],
    ["no stamp", "12"],
    [],
]


@pytest.mark.parametrize("texts", STAMPS)
def test_keys_of_is_ts_key_of_each(texts: list[str]) -> None:
    assert keys_of(texts) == [ts_key(t) for t in texts]


@given(st.lists(st.text(alphabet="0123456789:.-TZ+ ", max_size=24), max_size=8))
def test_keys_of_any_text_is_ts_key_of_each(texts: list[str]) -> None:
    assert keys_of(texts) == [ts_key(t) for t in texts]


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=1, max_size=30),
       st.integers(1, 10_000))
def test_a_pass_numbers_its_rows_as_the_lines_they_are_on(layout: list[tuple[int, int]],
                                                        first: int) -> None:
    """Rows between runs of other lines (empty ones too): each row's number is its line's."""
    lines: list[bytes] = []
    for others, empties in layout:
        lines += [b"other line"] * others + [b""] * empties + [b"ROW 7"]
    text = b"\n" + b"\n".join(lines) + b"\n"
    p = Pass(re.compile(rb"ROW (7)"), 0, text, re.compile(rb"\n()()"))
    total = p.count_lines(first)
    assert total == len(lines) + 1  # the newline before the first line too
    assert p.lines == [first + i for i, line in enumerate(lines) if line == b"ROW 7"]
