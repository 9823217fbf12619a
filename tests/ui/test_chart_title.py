"""A chart title narrower than its text gives up its least important parts, never a figure."""

from __future__ import annotations

from dash.ui.widgets.chart import fit_title, part

NAME = part((" sglang-17392-dp-tp-ep-prefix-pd-decode:", "bold"), keep=3, shrink=True)
TPUT = part((" gen tok/s ", "bold"), ("4779", "bold"))
AGE = part((" 208d10h ago", "dim"), keep=4)
PEAK = part(("  ▼ peak 4779", "italic"), keep=5)


def test_a_wide_chart_shows_every_part() -> None:
    title = fit_title((NAME, TPUT, AGE, PEAK), 200)
    assert title.plain == " sglang-17392-dp-tp-ep-prefix-pd-decode: gen tok/s 4779 208d10h ago  ▼ peak 4779"


def test_the_name_is_cut_with_an_ellipsis_before_anything_goes() -> None:
    title = fit_title((NAME, TPUT, AGE, PEAK), 60).plain
    assert len(title) <= 60 and title.startswith(" sglang-") and "…: gen tok/s 4779" in title
    assert title.endswith("208d10h ago  ▼ peak 4779")


def test_a_narrow_chart_keeps_the_figure_whole() -> None:
    for width in range(16, 60):
        title = fit_title((NAME, TPUT, AGE, PEAK), width).plain
        assert len(title) <= width and "gen tok/s 4779" in title, width


def test_a_label_goes_with_its_figure() -> None:
    running = part((" ─ running ", "bold"), ("62", "bold"))
    queued = part(("  ┈ queued ", "bold"), ("0", "bold"), keep=6)
    assert fit_title((running, queued), 20).plain == " ─ running 62"
