"""The sample view's text: JSON escapes and every character a terminal could act on are shown as
escapes, strings break after their newlines, long strings fold (and unfold)."""

from __future__ import annotations

import json

from dash.core.samples.pretty import FOLD_CHARS, escape, pretty_lines


def test_risky_characters_are_escapes() -> None:
    text = "a\x1b[31mb\x07c\x9bd\u202ee\u200bf\u2028g[bold]h"
    out = escape(text)
    assert out == "a\\u001b[31mb\\u0007c\\u009bd\\u202ee\\u200bf\\u2028g[bold]h"
    assert all(c.isprintable() for c in out)


def test_strings_break_after_newlines_and_long_ones_fold() -> None:
    raw = json.dumps({"text": "one\ntwo", "big": "y" * (FOLD_CHARS + 10), "n": [1, None]})
    lines, long_strings = pretty_lines(raw)
    assert long_strings == 1
    assert lines[1] == '  "text": "one\\n' and lines[2] == '    two",'
    assert any("more characters: f unfolds" in line for line in lines)
    unfolded, _ = pretty_lines(raw, fold=False)
    assert "".join(unfolded).count("y") == FOLD_CHARS + 10


def test_text_that_is_not_json_is_shown_escaped() -> None:
    lines, _ = pretty_lines('{"cut": "\x1b')
    assert lines[0] == "(not JSON; shown as text)" and "\\u001b" in lines[1]
