"""The C line scanner against the same step written in Python: which lines are kept, their
numbers, the line count, the strict prefill lines it sums; and its refusals of a bad range."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.views import fastscan

scanner = fastscan.scanner
pytestmark = pytest.mark.skipif(scanner is None, reason="the C line scanner is not built here")
ACCESS = re.compile(rb"\[.{19}\] INFO:     \d")  # what fastscan._ROW skips at a line start
# What fastscan._ROW reads as a strict prefill line, with a stamp in digits and numbers of at
# most 15 digits (longer ones are left to the pattern).
PREFILL = re.compile(
    rb"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\] | " + fastscan._TAG + rb"(?: " + fastscan._TAG
    + rb")*\] )Prefill batch[.,] #new-seq: \d{1,15}, #new-token: (\d{1,15}), "
    rb"#cached-token: (\d{1,15})(?:, .*)?\Z"
)
# what makes fastscan refuse a block with such a line in it: those lines are left to it
REFUSED = (b"\r", b"\x1b", b"^[", b"Decode batch")
Scanned = tuple[int, bytes, list[int], Any]


def reference(block: bytes, first_line: int) -> Scanned:
    lines = block[1:].split(b"\n")[:-1]
    kept: list[tuple[int, bytes]] = []
    pre: list[tuple[int, re.Match[bytes]]] = []
    for n, line in enumerate(lines, first_line):
        m = PREFILL.match(line)
        if m is not None and not any(bad in line for bad in REFUSED):
            pre.append((n, m))
        elif line and not ACCESS.match(line):
            kept.append((n, line))
    prefill = None
    if pre:
        prefill = (len(pre), sum(int(m[2]) for _, m in pre), sum(int(m[3]) for _, m in pre),
                   pre[0][0], pre[0][1][1], pre[-1][0], pre[-1][1][1])
    text = b"".join(b"\n" + line for _, line in kept) + b"\n"
    return len(lines), text, [n for n, _ in kept], prefill


def scan(block: bytes | bytearray, first_line: int = 1, start: int = 0,
         end: int | None = None) -> Scanned:
    assert scanner is not None
    stop = len(block) if end is None else end
    total, kept, numbers, prefill = scanner.scan(block, start, stop, first_line)
    return total, kept, memoryview(numbers).cast("q").tolist(), prefill


STAMP = b"[2026-03-01 08:00:00]"
PRE = STAMP + b" Prefill batch, #new-seq: 1, #new-token: 300, #cached-token: 100"
_samples = [
    STAMP + b' INFO:     127.0.0.1:5 - "POST /v1 HTTP/1.1" 200 OK', STAMP + b" INFO:     7",
    STAMP + b" INFO:     x", STAMP + b" INFO:    7", b"[2026-03-01T08:00:00] INFO:     1",
    b"[a]bcdefghijklmnopqr] INFO:     1", STAMP + b" Decode batch, #running-req: 1", b"",
    b"\r", b"Killed", "[2026-03-01 08:00:00] é INFO:     1".encode(), STAMP[:-1] + b" INFO:     1",
    PRE, PRE + b", token usage: 0.10, #running-req: 0", PRE.replace(b"batch,", b"batch."),
    PRE + b", Decode batch", PRE + b"\r", PRE + b" ^[[0m", PRE + b"\x1b[0m", PRE + b"x",
    PRE.replace(b"300", b"1" * 15), PRE.replace(b"300", b"1" * 16), PRE.replace(b"300", b""),
    PRE.replace(b"2026-03-01 08", b"2026-03-01T08"), PRE.replace(b"00]", b"00 TP0]"),
    PRE.replace(b"00]", b"00 DP1 TP3 EP3]"), PRE.replace(b"00]", b"00 ATTN_CP12 MOE_DP7]"),
    PRE.replace(b"00]", b"00 TP12345]"), PRE.replace(b"00]", b"00 XP0]"), PRE.replace(b"00]", b"00 TP]"),
    PRE.replace(b"00]", b"00  TP0]"), PRE.replace(b"00]", b"00 TP0 ]"), PRE.replace(b"00]", b"00 TP0"),
    PRE.replace(b"seq: 1", b"seq: " + b"9" * 20), PRE + b", ", PRE + b",x", PRE[:-1],
]
_lines = st.one_of(st.sampled_from(_samples),
                   st.binary(max_size=50).map(lambda b: b.replace(b"\n", b"")))


@settings(max_examples=400, deadline=None)
@given(st.lists(_lines, max_size=40), st.integers(1, 10**12))
def test_scan_does_what_the_pattern_would(lines: list[bytes], first: int) -> None:
    block = b"\n" + b"".join(line + b"\n" for line in lines)
    assert scan(block, first) == reference(block, first)
    assert scan(bytearray(block), first) == reference(block, first)


def test_scan_sums_strict_prefill_lines_and_keeps_their_first_and_last() -> None:
    later = PRE.replace(b"300", b"5").replace(b"08:00:00", b"08:00:09")
    block = b"\n" + b"\n".join([PRE, b"Killed", later, STAMP + b" INFO:     1"]) + b"\n"
    assert scan(block, 10) == (4, b"\nKilled\n", [11],
                               (2, 305, 200, 10, b"2026-03-01 08:00:00", 12, b"2026-03-01 08:00:09"))


def test_scan_sums_prefill_lines_with_rank_tags() -> None:
    """TP 8 servers tag their lines: `[... TP0] Prefill batch, ...`."""
    tagged = PRE.replace(b"00]", b"00 TP0]"), PRE.replace(b"00]", b"00 DP1 TP3 EP3]")
    block = b"\n" + b"\n".join([*tagged, PRE.replace(b"00]", b"00 TP12345]")]) + b"\n"
    total, kept, numbers, prefill = scan(block)
    assert (total, numbers) == (3, [3]) and kept.startswith(b"\n[2026-03-01 08:00:00 TP12345]")
    assert prefill == (2, 600, 200, 1, b"2026-03-01 08:00:00", 2, b"2026-03-01 08:00:00")


def test_scan_reads_only_its_range_of_a_larger_buffer() -> None:
    block = b"\n" + STAMP + b" INFO:     1\nKilled\n\nhello\n"
    buf = b"xx" + block + b"unread"
    assert scan(buf, 5, start=2, end=2 + len(block)) == (4, b"\nKilled\nhello\n", [6, 8], None)


def test_scan_of_only_access_lines_keeps_nothing() -> None:
    block = b"\n" + (STAMP + b" INFO:     1\n") * 3
    assert scan(block) == (3, b"\n", [], None)


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


def test_a_scanner_from_an_older_build_is_ignored() -> None:
    """An editable install keeps its compiled module across `git pull`: one whose `scan` does
    not match what fastscan reads is left alone, and the `re` path is used."""
    code = ("import sys, types; old = types.ModuleType('dash.core._linescan'); old.ABI = 1; "
            "sys.modules['dash.core._linescan'] = old; "
            "from dash.core.views import fastscan; print(fastscan.scanner is None)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "True"
