"""A changed row is drawn from the text's own segments, without Rich's layout pass: the same
strips, cell for cell and style for style, as the layout gives (wrapped rows too, with or
without a hanging indent)."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from dash.ui.widgets.panel import (
    _hanging,
    _respell,
    _row_strip,
    cut_rows,
    line_rows,
    line_strips,
    row_spans,
    same_layout,
)

STYLES = st.sampled_from(["", "bold", "dim", "bold red", Style(color="green"),
                          Style(bold=True, dim=True), Style(italic=True, color="yellow")])
PIECES = st.sampled_from(["client log", " 9.6 KB", "█▏", "│", "über", "日本語", "  ", "x" * 30,
                          "-", "[bold]", " ", "…", "42%|████▏"])


def _laid_out(console: Console, line: Text, width: int, wrap: bool) -> list[Strip]:
    options = console.options.update(width=width, no_wrap=not wrap, overflow="ellipsis",
                                     highlight=False, markup=False)
    return [Strip(row) for row in console.render_lines(line, options, pad=False, new_lines=False)]


@settings(max_examples=400, deadline=None)
@given(base=STYLES, pieces=st.lists(st.tuples(PIECES, STYLES), max_size=8),
       width=st.integers(1, 80), wrap=st.booleans())
def test_a_row_is_what_rich_would_lay_out(base, pieces, width: int, wrap: bool) -> None:
    console = Console(width=200)
    line = Text(style=base)
    for text, style in pieces:
        line.append(text, style)
    ours, rich = line_strips(console, line, width, wrap), _laid_out(console, line, width, wrap)
    assert _cells(ours) == _cells(rich)
    assert [s.cell_length for s in ours] == [s.cell_length for s in rich]


def _cells(strips: list[Strip]) -> list[list[tuple[str, Style]]]:
    """Each row's characters with their style (no style and the null style are the same)."""
    return [[(ch, seg.style or Style()) for seg in strip for ch in seg.text] for strip in strips]


@settings(max_examples=400, deadline=None)
@given(base=STYLES, pieces=st.lists(st.tuples(PIECES, STYLES), min_size=1, max_size=16),
       width=st.integers(4, 60), indent=st.integers(1, 12))
def test_wrapped_rows_with_a_hanging_indent_are_what_rich_would_lay_out(
        base, pieces, width: int, indent: int) -> None:
    console = Console(width=200)
    line = Text(style=base)
    for text, style in pieces:
        line.append(text, style)
    assume(indent < width // 2 and line.cell_len > width)
    rows = Text("\n").join(_hanging(console, line, width, indent))
    options = console.options.update(width=width, no_wrap=True, overflow="ellipsis",
                                     highlight=False, markup=False)
    laid_out = [Strip(row) for row in console.render_lines(rows, options, pad=False,
                                                            new_lines=False)]
    assert _cells(line_strips(console, line, width, True, indent)) == _cells(laid_out)


ASCII = st.characters(min_codepoint=0x21, max_codepoint=0x7E)


@settings(max_examples=400, deadline=None)
@given(base=STYLES, pieces=st.lists(st.tuples(PIECES, STYLES), min_size=1, max_size=16),
       width=st.integers(4, 60), indent=st.integers(0, 12), data=st.data())
def test_a_line_of_the_same_layout_is_cut_where_the_one_before_was(
        base, pieces, width: int, indent: int, data: st.DataObject) -> None:
    """An age or a count that changes but keeps its digits: the new line is cut at the rows of
    the old one instead of wrapped again, and the rows are the ones wrapping would give."""
    console = Console(width=200)
    line = Text(style=base)
    for text, style in pieces:
        line.append(text, style)
    rows = line_rows(console, line, width, True, indent)
    assume(rows is not None and len(rows) > 1)
    assert rows is not None
    spans = row_spans(line, rows, indent if 0 < indent < width // 2 else 0)
    assume(spans is not None)
    assert spans is not None
    # Printable ASCII where printable ASCII was (spaces stay spaces), the same styles.
    plain = list(line.plain)
    for i in data.draw(st.lists(st.integers(0, len(plain) - 1), max_size=6)):
        if "!" <= plain[i] <= "~":
            plain[i] = data.draw(ASCII)
    changed = line.copy()
    changed.plain = "".join(plain)
    assert same_layout(line.plain, changed.plain)
    want = line_rows(console, changed, width, True, indent)
    assert want is not None
    got = cut_rows(changed, spans)
    assert [(r.plain, r.spans, r.style) for r in got] == [(r.plain, r.spans, r.style) for r in want]
    # ...and each row's strip, its characters put into the old row's segments, is the new row's.
    for was, row in zip(rows, want, strict=True):
        respelled = _respell(_row_strip(console, was, width), was.plain, row.plain)
        if respelled is not None:
            assert _cells([respelled]) == _cells([_row_strip(console, row, width)])
            assert respelled.cell_length == _row_strip(console, row, width).cell_length


def test_a_changed_space_or_width_is_not_the_same_layout() -> None:
    assert same_layout("since 13:05 (8 s) x", "since 13:05 (9 s) x")
    assert not same_layout("(9 s) x", "(10 s) x")  # longer
    assert not same_layout("a b", "ab ")  # a space moved
    assert not same_layout("ab", "a日")  # two cells
    assert not same_layout("aé", "ae")  # not ASCII on one side


async def test_the_partitions_box_says_when_rows_are_off_screen() -> None:
    """Eleven partitions and room for seven: nothing said that four more were there (and in
    the header's total). The box's title says which rows show, and follows the selection."""
    import dataclasses

    from dash.core.snapshot import PartitionSnapshot
    from ui.conftest import build_app
    from ui.fake_run import snapshot

    parts = tuple(PartitionSnapshot(f"P{i:02d}", f"out/P{i:02d}.jsonl", 10, 100, 0, 1.0, 5400.0,
                                    "running") for i in range(11))
    app = build_app(dataclasses.replace(snapshot(), partitions=parts))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        box = app.query_one("#parts-box")
        assert str(box.border_title).startswith("partitions  1-") and "of 11" in str(box.border_title)
        await pilot.press("end")
        await pilot.pause()
        assert str(box.border_title).endswith("-11 of 11  (up/down)")
    few = build_app(snapshot())
    async with few.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert few.query_one("#parts-box").border_title == "partitions"
    async with build_app(snapshot()).run_test(size=(80, 24)) as pilot:  # 8 GPUs, room for 3
        await pilot.pause()
        assert str(pilot.app.query_one("#gpus").border_title) == "GPUs  1-3 of 8  (g/G)"
