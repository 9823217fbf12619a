"""The C line scanner against the same step written in Python: which lines are kept, their
numbers, the line count; and its refusals of a malformed range."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core import fastscan

scanner = fastscan.scanner
pytestmark = pytest.mark.skipif(scanner is None, reason="the C line scanner is not built here")
ACCESS = re.compile(rb"\[.{19}\] INFO:     \d")  # what fastscan._ROW skips at a line start


def reference(block: bytes, first_line: int) -> tuple[int, bytes, list[int]]:
    lines = block[1:].split(b"\n")[:-1]
    kept = [(n, line) for n, line in enumerate(lines, first_line)
            if line and not ACCESS.match(line)]
    return len(lines), b"".join(b"\n" + line for _, line in kept) + b"\n", [n for n, _ in kept]


def scan(block: bytes | bytearray, first_line: int = 1, start: int = 0,
         end: int | None = None) -> tuple[int, bytes, list[int]]:
    assert scanner is not None
    total, kept, numbers = scanner.scan(block, start, len(block) if end is None else end,
                                        first_line)
    return total, kept, memoryview(numbers).cast("q").tolist()


STAMP = b"[2026-03-01 08:00:00]"
_lines = st.one_of(
    st.sampled_from([
        STAMP + b' INFO:     127.0.0.1:5 - "POST /v1 HTTP/1.1" 200 OK', STAMP + b" INFO:     7",
        STAMP + b" INFO:     x", STAMP + b" INFO:    7", b"[2026-03-01T08:00:00] INFO:     1",
        b"[a]bcdefghijklmnopqr] INFO:     1", STAMP + b" Decode batch, #running-req: 1", b"",
        b"\r", b"Killed", "[2026-03-01 08:00:00] é INFO:     1".encode(), STAMP[:-1] + b" INFO:     1",
    ]),
    st.binary(max_size=50).map(lambda b: b.replace(b"\n", b"")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines, max_size=40), st.integers(1, 10**12))
def test_scan_keeps_what_the_pattern_would_not_skip(lines: list[bytes], first: int) -> None:
    block = b"\n" + b"".join(line + b"\n" for line in lines)
    assert scan(block, first) == reference(block, first)
    assert scan(bytearray(block), first) == reference(block, first)


def test_scan_reads_only_its_range_of_a_larger_buffer() -> None:
    block = b"\n" + STAMP + b" INFO:     1\nKilled\n\nhello\n"
    buf = b"xx" + block + b"unread"
    assert scan(buf, 5, start=2, end=2 + len(block)) == (4, b"\nKilled\nhello\n", [6, 8])


def test_scan_of_only_access_lines_keeps_nothing() -> None:
    block = b"\n" + (STAMP + b" INFO:     1\n") * 3
    assert scan(block) == (3, b"\n", [])


@pytest.mark.parametrize(("block", "start", "end"), [
    (b"x\n", 0, 2),  # buf[start] is not a newline
    (b"\nabc", 0, 4),  # buf[end - 1] is not a newline
    (b"\nabc\n", 0, 9),  # end past the buffer
    (b"\nabc\n", 3, 3),  # empty range
    (b"\nabc\n", -1, 5),
])
def test_scan_refuses_a_malformed_range(block: bytes, start: int, end: int) -> None:
    assert scanner is not None
    with pytest.raises(ValueError):
        scanner.scan(block, start, end, 1)


def test_scan_refuses_what_is_not_a_buffer() -> None:
    assert scanner is not None
    with pytest.raises(TypeError):
        scanner.scan("\nabc\n", 0, 5, 1)  # type: ignore[arg-type]
    assert sys.getrefcount(scanner) > 0  # the module is still there
