"""Dotted field paths into a JSON record: `result.answer`, `choices[0].message.content`.

A path is a tuple of keys (str) and list indices (int); `choices.0.text` and `choices[0].text`
are the same path. `lookup` never raises: a path that does not lead anywhere gives `MISSING`.
"""

from __future__ import annotations

import re
from typing import Any, Final

from dash.core.errors import ConfigError

Path = tuple[str | int, ...]

MISSING: Final = object()
"""What `lookup` gives for a path that does not exist in the record."""

_PART = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def parse_path(text: str, where: str = "outputs") -> Path:
    """`"choices[0].message.content"` -> ("choices", 0, "message", "content"); ConfigError if bad."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: a field path must be a non-empty string, got {text!r}")
    parts: list[str | int] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        if text[pos] == "." and parts:
            pos += 1
        m = _PART.match(text, pos)
        if m is None:
            raise ConfigError(f"{where}: bad field path {text!r} (use dots: result.answer, "
                              "choices[0].text)")
        key, index = m.groups()
        if index is not None:
            parts.append(int(index))
        elif key.lstrip("-").isdigit():
            parts.append(int(key))
        else:
            parts.append(key)
        pos = m.end()
    return tuple(parts)


def lookup(obj: Any, path: Path) -> Any:
    """The value at `path` in `obj`, or MISSING."""
    for part in path:
        if isinstance(part, int):
            if not isinstance(obj, list) or not -len(obj) <= part < len(obj):
                return MISSING
            obj = obj[part]
        elif isinstance(obj, dict) and part in obj:
            obj = obj[part]
        else:
            return MISSING
    return obj


def show_path(path: Path) -> str:
    """A path as the user wrote it: `choices[0].text`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out
