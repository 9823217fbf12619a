"""Complete JSONL lines (bytes) -> a `SampleBatch`: parse, detect fields, keep the last few.

Pure: the reader (`dash.sources.samples`) and `kdash outputs` hand it blocks of whole lines with
their byte offsets; it never sees a partial line (a partial last line is not invalid until it
is complete), and it never keeps more than the last few raw lines.

A block is decoded once and each line parsed in place (`_parse_block`): the lines are never
copied out of it, and the last few kept for the sample view are slices of that one text. A line
the fast way does not take whole (not UTF-8, not starting with `{` or `[`, not one JSON value)
is read as `json.loads` reads its bytes, so every figure and every invalid line's reason is
what `json.loads` of the line says.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from dash.core.samples.fields import Extractor
from dash.core.samples.model import InvalidLine, RawSample, Sample, SampleBatch

KEEP_INVALID = 4
"""Invalid lines described per batch (the rest are counted)."""
HEAD_CHARS = 120
"""Characters of an invalid line kept for the evidence."""

_DECODE_AT = json.JSONDecoder().raw_decode
"""`json.loads`' parser (the default decoder's settings) at an index of a longer text."""
_TRAILING = " \t\r"
"""JSON's whitespace that can follow a value on its line (the newline ends the line)."""


class LineSink:
    """Collects one read's lines of one file into a SampleBatch."""

    def __init__(self, name: str, path: str, extractor: Extractor, *, keep: int = 8) -> None:
        self.name = name
        self.path = path
        self.extractor = extractor
        self._keep = keep
        self._clear()

    def _clear(self) -> None:
        self.lines = 0
        self.samples: list[Sample] = []
        self.invalid: deque[InvalidLine] = deque(maxlen=KEEP_INVALID)
        self.invalid_count = 0
        self.unknown = 0
        self.latest: deque[tuple[bytes | str, int, int | None]] = deque(maxlen=self._keep)
        """The last valid lines: bytes (decoded as read, errors replaced) or text."""

    def add_block(self, data: bytes, offset: int, first_line: int | None) -> int:
        """Take `data`, whole lines each ending in a newline, that start at byte `offset`
        (`first_line`: the 1-based number of its first line, None when unknown); the number of
        lines taken."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return self._add_lines(data, offset, first_line)
        return self._add_text(text, data, offset, first_line)

    def _add_text(self, text: str, data: bytes, offset: int, first_line: int | None) -> int:
        """`data` decoded as `text`: each line parsed in place."""
        ascii_only = len(text) == len(data)
        kept: deque[tuple[int, int, int, int | None]] = deque(maxlen=self._keep)
        pos = bpos = n = 0
        size = len(text)
        while pos < size:
            nl = text.find("\n", pos)
            bnl = nl if ascii_only else data.find(b"\n", bpos)
            line = None if first_line is None else first_line + n
            n += 1
            obj = _MISS
            if text.startswith(("{", "["), pos):
                try:
                    obj, end = _DECODE_AT(text, pos)
                except ValueError:
                    obj = _MISS
                else:
                    if end != nl and (end > nl or text[end:nl].strip(_TRAILING)):
                        obj = _MISS
            if obj is _MISS:
                try:
                    obj = json.loads(data[bpos:bnl])
                except ValueError as exc:  # JSONDecodeError, and bytes that are not UTF-8
                    raw = data[bpos:bnl]
                    self._bad(raw, offset + bpos, line, _reason(exc, raw))
                    pos, bpos = nl + 1, bnl + 1
                    continue
            self._take(obj)
            kept.append((pos, nl, offset + bpos, line))
            pos, bpos = nl + 1, bnl + 1
        for start, stop, at, line in kept:
            self.latest.append((text[start:stop], at, line))
        self.lines += n
        return n

    def _take(self, obj: Any) -> None:
        """One decoded line's samples, or one more line of no shape kdash knows."""
        found = self.extractor.samples(obj)
        if found:
            self.samples.extend(found)
        else:
            self.unknown += 1

    def _add_lines(self, data: bytes, offset: int, first_line: int | None) -> int:
        """A block that is not all UTF-8: line by line, as `json.loads` reads each."""
        pos = 0
        n = 0
        for raw in data.split(b"\n")[:-1]:
            at = offset + pos
            pos += len(raw) + 1
            line = None if first_line is None else first_line + n
            n += 1
            try:
                obj = json.loads(raw)
            except ValueError as exc:  # JSONDecodeError, and bytes that are not UTF-8
                self._bad(raw, at, line, _reason(exc, raw))
                continue
            self._take(obj)
            self.latest.append((raw, at, line))
        self.lines += n
        return n

    def _bad(self, raw: bytes, at: int, line: int | None, reason: str) -> None:
        self.invalid_count += 1
        head = raw[:HEAD_CHARS * 4].decode("utf-8", errors="replace")[:HEAD_CHARS]
        self.invalid.append(InvalidLine(at, line, head, reason))

    def take(self, *, restart: bool = False, backfill: bool = False, oversized: int = 0,
             skipped_bytes: int = 0) -> SampleBatch:
        """The batch of everything added since the last `take`."""
        batch = SampleBatch(
            name=self.name, path=self.path, restart=restart, backfill=backfill,
            lines=self.lines, samples=tuple(self.samples), invalid=tuple(self.invalid),
            invalid_count=self.invalid_count, unknown=self.unknown, oversized=oversized,
            latest=tuple(RawSample(raw if isinstance(raw, str)
                                   else raw.decode("utf-8", errors="replace"), at, line)
                         for raw, at, line in self.latest),
            fields=self.extractor.take_hits(), skipped_bytes=skipped_bytes)
        self._clear()
        return batch


_MISS: Any = object()
"""Not parsed the fast way (yet)."""


def _reason(exc: ValueError, raw: bytes) -> str:
    if not raw.strip():
        return "blank line"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return "not UTF-8 text"
