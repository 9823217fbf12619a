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
    Spans,
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
    line = _line(base, pieces)
    assume(len(line.plain) > 0)
    changes = data.draw(st.lists(st.tuples(st.integers(0, len(line.plain) - 1), ASCII),
                                 max_size=6))
    spans = _cut_where_the_one_before_was(line, width, indent, changes)
    assume(spans is not None)


def test_a_word_cut_with_an_ellipsis_is_not_cut_again_where_its_row_reads_the_same() -> None:
    """Thirty x and an ellipsis, six cells wide: the word's row is cut `xxxxx…`, which reads
    the same as the last five x and the ellipsis, so it was taken for a piece of the line from
    there; a first x changed to 0 was then drawn `xxxxx…` where wrapping gives `0xxxx…`."""
    line = _line("", [("client log", ""), (" ", ""), ("x" * 30, ""), ("…", "")])
    assert _cut_where_the_one_before_was(line, 6, 0, [(11, "0")]) is None
    # A count whose digits change in a line of words that all fit is still cut where it was.
    line = _line("", [("client log", ""), (" 12 of 110 recent samples", "bold")])
    assert _cut_where_the_one_before_was(line, 12, 2, [(11, "3"), (12, "7")]) is not None


def test_a_justified_line_is_not_cut_where_the_one_before_was() -> None:
    """Centred, a row of a folded word's trailing space is padding, not the space: where the
    next line makes that space bold, its row cut from the line would be bold, and wrapping
    draws it plain. A justified line is wrapped again."""
    console = Console(width=200)
    centred = Text("12  3", justify="center", overflow="fold")
    rows = line_rows(console, centred, 1, True, 0)
    assert rows is not None and [r.plain for r in rows] == ["1", "2", " ", " ", "3"]
    assert row_spans(centred, rows, 0) is None
    bold = centred.copy()
    bold.stylize("bold", 2, 3)
    assert cut_rows(bold, [(2, 3, 0)])[0].spans != line_rows(console, bold, 1, True, 0)[2].spans


def _line(base, pieces) -> Text:
    line = Text(style=base)
    for text, style in pieces:
        line.append(text, style)
    return line


def _cut_where_the_one_before_was(line: Text, width: int, indent: int,
                                  changes: list[tuple[int, str]]) -> Spans | None:
    """`line` wrapped at `width`, then changed at `changes` (printable ASCII where printable
    ASCII was: spaces stay spaces) and cut at the old rows' spans: the rows wrapping the new
    line gives, each row's strip too (the old one's segments reading the new characters).
    The spans (None: where the old rows were cut is not known, and nothing is checked)."""
    console = Console(width=200)
    rows = line_rows(console, line, width, True, indent)
    if rows is None:
        return None
    spans = row_spans(line, rows, indent if 0 < indent < width // 2 else 0)
    if spans is None:
        return None
    plain = list(line.plain)
    for i, char in changes:
        if "!" <= plain[i] <= "~":
            plain[i] = char
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
    return spans


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


async def test_a_panel_redraws_a_changed_line_as_a_new_panel_draws_it(monkeypatch) -> None:
    """Through `show_lines`: the changed line, drawn on the rows of the one before where it
    wraps alike, reads what a panel showing it from the start reads (the word cut with an
    ellipsis; a row that drops the line's trailing spaces; a folded word whose new line cuts
    it instead), and an age of as many digits is
    still redrawn on its old rows, one row repainted, without wrapping it again."""
    from textual.app import App, ComposeResult

    from dash.ui.widgets import panel as module
    from dash.ui.widgets.panel import Panel

    wraps: list[str] = []
    real = module.line_rows
    monkeypatch.setattr(module, "line_rows",
                        lambda console, line, *a: (wraps.append(line.plain), real(console, line, *a))[1])

    class Wrapped(Panel):
        WRAP = True
        DEFAULT_CSS = "Wrapped { width: 6; height: auto; scrollbar-size: 0 0; }"

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield Wrapped()

    repainted: list[int] = []
    rewrapped: list[int] = []

    async def rows(*lines: Text) -> list[str]:
        app = One()
        async with app.run_test(size=(20, 12)) as pilot:
            panel = app.query_one(Wrapped)
            for line in lines:
                before, wrapped = panel.rows_repainted, len(wraps)
                panel.show_lines([line])
                await pilot.pause()
                repainted.append(panel.rows_repainted - before)
                rewrapped.append(len(wraps) - wrapped)
            return panel.plain_rows()

    word = "client log " + "x" * 30 + "…"
    changed = word[:11] + "0" + word[12:]
    assert await rows(Text(word), Text(changed)) == await rows(Text(changed)) == [
        "client", "log ", "0xxxx…"]
    # One row, the line's trailing spaces dropped: not the whole line, which is cut `0xxxx…`.
    assert await rows(Text("xxxxxx   "), Text("0xxxxx   ")) == await rows(
        Text("0xxxxx   ")) == ["0xxxxx"]
    folded = Text("age (8 s) " + "y" * 10, overflow="fold")  # `yyyyyy`, `yyyy`: two pieces
    cut = Text("age (9 s) " + "y" * 10)
    assert await rows(folded, cut) == await rows(cut) == ["age (9", "s) ", "yyyyy…"]
    age = "since 13:05 (8 s) and more"
    repainted.clear()
    rewrapped.clear()
    assert await rows(Text(age), Text(age.replace("8", "9"))) == await rows(
        Text(age.replace("8", "9"))) == ["since ", "13:05 ", "(9 s) ", "and ", "more"]
    assert repainted[1] == 1
    assert rewrapped[1] == 0, rewrapped
