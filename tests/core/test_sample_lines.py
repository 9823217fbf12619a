"""A block of lines is parsed in place (one decode, no line copied out): the batch it gives is
the one `json.loads` of each line's bytes gives, invalid lines and their reasons included; the
think-marker search finds in place what slicing and stripping found."""

from __future__ import annotations

import json
import re
import sys
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.samples import reasoning
from dash.core.samples.fields import Extractor
from dash.core.samples.lines import HEAD_CHARS, KEEP_INVALID, LineSink, _reason
from dash.core.samples.model import InvalidLine, RawSample, SampleBatch
from dash.core.samples.reasoning import (
    _HARMONY_DEGRADED,
    _OTHER_ENDS,
    _STARTS,
    _TAG_ENDS,
    PAIRS,
    START_WINDOW,
)


def lines_one_by_one(data: bytes, offset: int, first_line: int | None,
                     keep: int = 8) -> SampleBatch:
    """What a block gave when each line was split out and read by `json.loads`."""
    extract = Extractor().samples
    samples, unknown, count = [], 0, 0
    invalid: deque[InvalidLine] = deque(maxlen=KEEP_INVALID)
    latest: deque[RawSample] = deque(maxlen=keep)
    pos = 0
    for n, raw in enumerate(data.split(b"\n")[:-1]):
        at = offset + pos
        pos += len(raw) + 1
        line = None if first_line is None else first_line + n
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            count += 1
            head = raw[:HEAD_CHARS * 4].decode("utf-8", errors="replace")[:HEAD_CHARS]
            invalid.append(InvalidLine(at, line, head, _reason(exc, raw)))
            continue
        found = extract(obj)
        samples.extend(found)
        unknown += not found
        latest.append(RawSample(raw.decode("utf-8", errors="replace"), at, line))
    return SampleBatch("p", "p.jsonl", lines=data.count(b"\n"), samples=tuple(samples),
                       invalid=tuple(invalid), invalid_count=count, unknown=unknown,
                       latest=tuple(latest))


def in_place(data: bytes, offset: int, first_line: int | None) -> SampleBatch:
    sink = LineSink("p", "p.jsonl", Extractor())
    assert sink.add_block(data, offset, first_line) == data.count(b"\n")
    return sink.take()


RECORDS = [
    {"text": "<think>\nso</think>\n\n4", "meta_info": {"finish_reason": {"type": "stop"},
                                                      "completion_tokens": 7}},
    {"choices": [{"message": {"content": "héllo ✓ 中文"}, "finish_reason": "length"}],
     "usage": {"completion_tokens": 3, "prompt_tokens": 2}},
    {"response": "x" * 300, "finish_reason": "stop"},
    [{"text": "a", "meta_info": {}}, {"text": "b", "meta_info": {}}],
    {"id": 1},
]
LINES = [
    *(json.dumps(r, ensure_ascii=False).encode() for r in RECORDS),
    json.dumps(RECORDS[1]).encode(),  # \u escapes
    b'  {"response": "led by spaces"}', b'{"response": "crlf"}\r', b'{"response": "t"} \t',
    b"", b"   ", b"42", b'"a string"', b"null", b"[1, 2]", b"{}", b"[]",
    b'{"text": "half', b'{"a": 1} {"b": 2}', b'{"a": 1},', b"{", b"[", b'{"a":', b"[1,",
    b'"b": 2}', b"1]", b"\xef\xbb\xbf" + b'{"response": "after a BOM"}', b'{"response": "\xff"}',
    b'{"response": "\xed\xa0\x80"}', b"not json at all", b'{"a": NaN}', b'{"response": "\x01"}',
    b"\x00{}", b'{"text": "nested", "meta_info": {"x": [1, {"y": [2, 3]}]}}',
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=14), st.integers(0, 10_000),
       st.none() | st.integers(1, 500))
def test_a_block_parsed_in_place_gives_what_each_line_read_alone_gives(
        lines: list[bytes], offset: int, first_line: int | None) -> None:
    data = b"".join(line + b"\n" for line in lines)
    assert in_place(data, offset, first_line) == lines_one_by_one(data, offset, first_line)


def test_a_value_that_runs_on_past_its_line_is_that_line_s_error() -> None:
    # Scanned from the block, `{"a":` would go on into the next line and parse.
    data = b'{"a":\n1}\n{"response": "ok"}\n'
    got = in_place(data, 0, 1)
    assert got == lines_one_by_one(data, 0, 1)
    assert [(i.line, i.reason) for i in got.invalid] == [
        (1, "Expecting value at column 6"), (2, "Extra data at column 2")]
    assert got.latest == (RawSample('{"response": "ok"}', 9, 3),)


def test_byte_offsets_hold_after_multibyte_text() -> None:
    data = ('{"response": "中文 ✓"}\n' * 3 + "{oops\n").encode()
    got = in_place(data, 100, None)
    width = len('{"response": "中文 ✓"}\n'.encode())
    assert [r.offset for r in got.latest] == [100, 100 + width, 100 + 2 * width]
    assert got.invalid[0].offset == 100 + 3 * width


def old_split(text: str) -> tuple[str, str]:
    """The think-marker search as it was, slicing and stripping copies of the text."""
    head = text[:START_WINDOW].lstrip()
    end = _TAG_ENDS.search(text)
    if end is None:
        other = next((e for s, e in _OTHER_ENDS.items() if head.startswith(s)), None)
        end = re.search(re.escape(other), text) if other is not None else None
    if end is not None:
        inside = text[:end.start()]
        for start in _STARTS:
            at = inside.find(start)
            if at >= 0:
                inside = inside[at + len(start):]
                break
        state = "present" if inside.strip() else "empty"
        last = text.rfind(end.group(0))
        answer = text[last + len(end.group(0)):]
        return state, "" if answer.lstrip().startswith(_STARTS) else answer
    if head.startswith("analysis"):
        m = _HARMONY_DEGRADED.match(head if len(text) <= START_WINDOW else text.lstrip())
        if m is not None:
            inside = m.group(0)[len("analysis"):-len("assistantfinal")]
            return ("present" if inside.strip() else "empty"), text.lstrip()[m.end():]
    if head.startswith(_STARTS):
        return "open", ""
    return "absent", text


PIECES = [m for pair in PAIRS for m in pair] + [
    "analysis", "assistantfinal", "<", "</", "<|", "<b>", "a < b", "x", "answer.", " ", "\n",
    "\t", "\u00a0", "\u2003", "\u3000", "\x1c", "中", "y" * 300, "<" * 12]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16))
def test_the_marker_search_in_place_finds_what_slicing_found(pieces: list[str]) -> None:
    text = "".join(pieces)
    state, answer = reasoning.split(text)
    assert (state, answer) == old_split(text)
    assert reasoning.answered(text) == (state, bool(answer.strip()))


def test_past_the_first_few_tags_the_regex_search_takes_over() -> None:
    text = "a < b " * 50 + "<think>x</think>answer"
    assert reasoning.split(text) == ("present", "answer")
    assert reasoning.split("<b>" * 20) == ("absent", "<b>" * 20)


@pytest.mark.parametrize("ch", [chr(c) for c in range(sys.maxunicode + 1)
                                if chr(c).isspace() or chr(c) in "\x85\u200b\ufeff"])
def test_the_regex_s_whitespace_is_strip_s(ch: str) -> None:
    # `answered` looks for the first non-space with `\S`; `split`'s callers stripped.
    assert reasoning.answered(f"<think>a</think>{ch}") == ("present", bool(ch.strip()))
