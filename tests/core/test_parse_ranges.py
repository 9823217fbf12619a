"""Arbitrary text never raises, and never yields a record with a value out of its range.

The ranges come from the grammar: each stats field's converter states its unit's range
(`Conv.lo`/`Conv.hi`: counts and magnitudes >= 0, ratios 0..1); head numbers are read by a
converter or `int` of digits; an event's numbers are sizes, counts and durations (>= 0), and
where an event carries a stats key (`token_usage` on the engine's last state) that key's range.
Every number is finite, every stamp names a real time. Lines are drawn from arbitrary text and
from the grammar's own pieces (its prefixes, heads, printed field names, phrase literals and
examples) glued at random, which is where a wrong number would come from.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.log.convert import FLOAT, Conv
from dash.core.log.grammar import GRAMMAR
from dash.core.log.parse import parse_line
from dash.core.log.timestamps import ts_to_epoch

KINDS = {"event", "unparsed", *(f.kind for f in GRAMMAR.families)}
REF = 1_709_208_000.0  # 2024-02-29 12:00 UTC: a leap year, for a stamp without a year
TEXT_KEYS = {"message", "text", "dtype", "model", "kv_cache_dtype", "phase", "graph", "reason",
             "component", "detail", "hint", "device", "op", "pool", "incomplete"}


def _ranges() -> dict[str, tuple[float | None, float | None]]:
    """Record key -> (lo, hi), from the converters of the grammar's fields and head fields."""
    out: dict[str, tuple[float | None, float | None]] = {}
    for fam in GRAMMAR.families:
        for f in fam.fields:
            out.setdefault(f.key, (f.conv.lo, f.conv.hi))
        for hf in fam.head_fields:
            conv = next((c for c in (FLOAT,) if c.read is hf.read), None)
            out.setdefault(hf.key, (conv.lo, conv.hi) if isinstance(conv, Conv) else (0, None))
    return out


RANGES = _ranges()
EVENT_RANGE = (0.0, None)


def _in_range(key: str, value: Any, event: bool) -> bool:
    lo, hi = RANGES.get(key, EVENT_RANGE if event else (None, None))
    values = value if isinstance(value, list) else [value]
    for v in values:
        if isinstance(v, bool) or v is None:
            continue
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            return False
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            return False
    return True


def check(rec: dict[str, Any] | None) -> None:
    if rec is None:
        return
    assert rec["kind"] in KINDS
    assert isinstance(rec["line"], int)
    json.dumps(rec, allow_nan=False)  # the export writes it as JSON
    ts = rec.get("ts")
    assert ts is None or ts_to_epoch(ts, REF) is not None, ts
    event = rec["kind"] == "event"
    for key, value in rec.items():
        if key in ("line", "args") or key in TEXT_KEYS or isinstance(value, str):
            continue
        if isinstance(value, (int, float, list)) or value is None:
            assert _in_range(key, value, event), (key, value, rec)


def _pieces() -> list[str]:
    """The grammar's own texts: prefixes, heads, field names, phrase literals and examples."""
    out = ["[2024-02-29 12:00:05 DP1 TP3] ", "[2025-13-45 99:00:00] ", "[04:40:55 TP0] ",
           "INFO 02-29 12:00:10 [x.py:1] ", "(Worker_DP1_TP0 pid=9) ", "(VllmWorker rank=3 pid=1) ",
           "2025-10-20T03:02:22.123456789Z ", "[2026-02-11T08:15:03Z] ", "Feb 30 08:15:03 h a[1]: ",
           "sglang-1  | ", "2026-02-11T08:15:03+0000 h a[1]: ", "> ", "$", ", ", ": ", ". ", " ",
           "%", "-", "-1", "1e999", "nan", "inf", "0", "1.5", "100.5%", "71.20%", "²", "٣",
           "\x1b[0m", "^[[", "^M", "\r", " tokens/s", " reqs", " GB", " GiB", "x", "=", "(", ")"]
    for fam in GRAMMAR.families:
        out += [*fam.triggers, *fam.starts, *fam.examples]
        out += [f.printed + ": " for f in fam.fields]
    for ph in GRAMMAR.phrases:
        out += [*ph.keywords(), *ph.examples]
    return out


PIECES = st.sampled_from(_pieces())
NUMBERS = st.one_of(st.integers(-10**20, 10**20).map(str),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.floats(-5, 200).map(lambda f: f"{f:.2f}"),
                    st.floats(-5, 200).map(lambda f: f"{f:.2f}%"),
                    st.sampled_from(["-0.0", "1e999", "nan", "inf", "full=-3", "1,234", "²", "٣",
                                     "1.00", "1.01", "0.5%.", "-1 reqs", "3x"]))
PREFIX = st.sampled_from(["", "[2024-02-29 12:00:05 DP1 TP3] ", "[04:40:55 TP0] ",
                          "INFO 02-29 12:00:10 [x.py:1] ", "(Worker_TP0 pid=9) ",
                          "2025-10-20T03:02:22.123456789Z ", "[gpu_id=0] ", "garbage "])


@st.composite
def stats_lines(draw: st.DrawFn) -> str:
    """A line of one family: its head, then any of its fields in any order with any value."""
    fam = draw(st.sampled_from(GRAMMAR.families))
    head = draw(st.sampled_from([*fam.triggers, *(ex[:40] for ex in fam.examples)]))
    fields = draw(st.lists(st.sampled_from(fam.fields), max_size=14)) if fam.fields else []
    items = [f"{f.printed}: {draw(NUMBERS)}{draw(st.sampled_from(['', f.unit]))}" for f in fields]
    glue = draw(st.sampled_from([". ", ", ", ": ", " "]))
    return draw(PREFIX) + head + glue + fam.sep.join(items)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(stats_lines())
def test_stats_lines_with_any_values_stay_in_range(text: str) -> None:
    check(parse_line(text, 1))


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.one_of(PIECES, NUMBERS), max_size=40).map("".join))
def test_grammar_pieces_glued_at_random_stay_in_range(text: str) -> None:
    check(parse_line(text, 1))


@settings(max_examples=800, deadline=None)
@given(st.text(max_size=600))
def test_arbitrary_text_never_raises_and_stays_in_range(text: str) -> None:
    check(parse_line(text, 1))


EXAMPLES = [ex for fam in GRAMMAR.families for ex in fam.examples] + [
    ex for ph in GRAMMAR.phrases for ex in ph.examples]


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(EXAMPLES), st.lists(NUMBERS, min_size=1, max_size=12), PREFIX)
def test_examples_with_other_numbers_stay_in_range(example: str, numbers: list[str],
                                                   prefix: str) -> None:
    """Each example, its numbers replaced by any others: never a value out of range."""
    pool = iter(numbers * 20)
    text = re.sub(r"[0-9]+(?:\.[0-9]+)?", lambda _m: next(pool), example)
    check(parse_line(prefix + text, 1))


def test_the_ranges_come_from_the_converters() -> None:
    assert RANGES["token_usage"] == (0, 1) and RANGES["cache_hit_rate"] == (0, 1)
    assert RANGES["accept_rate_per_pos"] == (0, 1) and RANGES["running_req"] == (0, None)
    assert RANGES["gen_throughput"] == (0, None) and RANGES["engine_index"] == (0, None)
