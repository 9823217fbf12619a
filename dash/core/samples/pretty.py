"""A sample record as lines to read: pretty-printed JSON, long strings folded, all of it literal.

Strings are written as JSON writes them (`\\"`, `\\u001b` for an escape character, `\\t`), and
also every other character a terminal could act on (C1 controls, bidirectional overrides, line
and paragraph separators, zero-width marks) as `\\uXXXX`: an ESC or a `[bold]` in a sample is
text on the screen, never a command. A string breaks onto a new line after each `\\n` it holds,
so a reasoning trace reads as lines; one longer than `FOLD_CHARS` shows its head and tail and
how much was left out, unless unfolded.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

FOLD_CHARS = 4000
"""Strings longer than this are folded (unless unfolded)."""
HEAD_CHARS = 3000
TAIL_CHARS = 500
INDENT = "  "
_RISKY = re.compile(r"[\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
                    r"\ufff9-\ufffb]")
"""What json.dumps(ensure_ascii=False) leaves raw and a terminal may act on or hide."""


def escape(text: str) -> str:
    """`text` as the inside of a JSON string, with every risky character as `\\uXXXX`."""
    out = json.dumps(text, ensure_ascii=False)[1:-1]
    if out.isascii() and out.isprintable():
        return out
    out = _RISKY.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return "".join(c if c.isprintable() or c == " " or unicodedata.category(c) != "Cf"
                   else f"\\u{ord(c):04x}" for c in out)


def _string(value: str, fold: bool) -> list[str]:
    """The lines of one string value (the first without indent, quotes included)."""
    left_out = 0
    if fold and len(value) > FOLD_CHARS:
        left_out = len(value) - HEAD_CHARS - TAIL_CHARS
        pieces = [value[:HEAD_CHARS], value[-TAIL_CHARS:]]
    else:
        pieces = [value]
    lines: list[str] = []
    for i, piece in enumerate(pieces):
        if i:
            lines.append(f"[... {left_out:,} more characters: f unfolds ...]")
        parts = piece.split("\n")
        lines += [escape(p) + ("\\n" if j < len(parts) - 1 else "") for j, p in enumerate(parts)]
    lines[0] = '"' + lines[0]
    lines[-1] += '"'
    return lines


def _value(value: Any, depth: int, fold: bool) -> list[str]:
    pad = INDENT * (depth + 1)
    if isinstance(value, str):
        first, *rest = _string(value, fold)
        return [first, *(pad + line for line in rest)]
    if isinstance(value, dict) and value:
        out = ["{"]
        items = list(value.items())
        for n, (key, item) in enumerate(items):
            first, *rest = _value(item, depth + 1, fold)
            comma = "," if n < len(items) - 1 else ""
            lines = [f'{pad}"{escape(str(key))}": {first}', *rest]
            lines[-1] += comma
            out += lines
        return [*out, INDENT * depth + "}"]
    if isinstance(value, list) and value:
        out = ["["]
        for n, item in enumerate(value):
            first, *rest = _value(item, depth + 1, fold)
            lines = [pad + first, *rest]
            lines[-1] += "," if n < len(value) - 1 else ""
            out += lines
        return [*out, INDENT * depth + "]"]
    return [json.dumps(value)]


def pretty_lines(raw: str, fold: bool = True) -> tuple[list[str], int]:
    """The lines of one raw JSONL line, and how many of its strings are long enough to fold;
    text that is not JSON is shown escaped, as one string."""
    try:
        value = json.loads(raw)
    except ValueError:
        return ["(not JSON; shown as text)", *_string(raw, fold)], int(len(raw) > FOLD_CHARS)
    return _value(value, 0, fold), _long_strings(value)


def _long_strings(value: Any) -> int:
    stack = [value]
    n = 0
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            n += len(v) > FOLD_CHARS
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return n
