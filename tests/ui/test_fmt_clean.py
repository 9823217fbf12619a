"""Text cut to fit says so: a cut without a mark reads as the whole line."""

from __future__ import annotations

from dash.ui import fmt


def test_a_cut_ends_in_an_ellipsis_and_keeps_the_limit() -> None:
    assert fmt.clean("whether a few very long requests", 20) == "whether a few very …"
    assert len(fmt.clean("x" * 500, 40)) == 40


def test_text_that_fits_is_left_whole() -> None:
    assert fmt.clean("all clear", 9) == "all clear"
    assert fmt.clean("a\x1b[31mred\x1b[0m", 20) == "ared"  # escapes go, the text stays
