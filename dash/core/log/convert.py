"""Value converters of stats fields: printed text -> record value, with a unit and a fast form.

One unit per kind of number: counts are ints >= 0, magnitudes (throughputs, lengths, sizes)
finite floats >= 0, and every ratio a fraction 0..1, whether the server printed `0.71` or
`71.20%` (a printed `%` is divided by 100). A converter reads any text a server prints for a
value (`41.7 tokens/s`, `10 reqs`, `5.0%`, `full=N` of the 0.4.9 SWA form, thousands
separators) and returns None for what is no number of its kind, out of range included: a
record never holds a negative count or a ratio above 1. `Conv.lo` / `Conv.hi` state that range
(the tests check every record against it).

Its fast form is a regex of the plain texts (`123`, `0.45`, `True`) for which a C builtin
(`int`, `float`, a dict lookup) gives exactly what the converter gives; a ratio has a second
one, its percents (`88.50` before a `%`), read as `to_ratio` reads them. The bulk (`dash.core.log.bulk`) reads lines whose values are all plain with those (`FAST`, by the
value's kind), the rest with the converter itself. `tests/core/test_parse_grammar.py`
checks the two agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from operator import truediv
from typing import Any


def _digits(v: str) -> int | None:
    """`1,234` / `full=12000` -> int; None for anything but ASCII digits (`²` is a digit to
    `str.isdigit` and no number to `int`)."""
    v = v.strip()
    if v.startswith("full="):  # 0.4.9 SWA form `#token: full=N, swa=M`
        v = v[5:]
    v = v.replace(",", "")
    return int(v) if v.isascii() and v.isdigit() else None


def to_int(v: str) -> int | None:
    try:
        n = int(v)  # the common case, at C speed
    except ValueError:
        return _digits(v)
    return n if n >= 0 else None


def _number(v: str) -> float | None:
    """The first word of a value as a finite float (`41.7 tokens/s`, `53.31 GB`, `11.12x`)."""
    v = v.strip().split(" ", 1)[0]
    v = v.rstrip(".%x").replace(",", "")
    if v.startswith("full="):
        v = v[5:]
    try:
        f = float(v)
    except ValueError:
        return None
    return f if f - f == 0 else None  # not nan / inf


def to_float(v: str) -> float | None:
    try:
        f = float(v)  # the common case, at C speed
    except ValueError:
        f2 = _number(v)
        return None if f2 is None or f2 < 0 else f2 + 0.0
    return f + 0.0 if f - f == 0 and f >= 0 else None  # not nan / inf / negative; no -0.0


def to_count(v: str) -> int | None:
    f = to_float(v)
    return int(f) if f is not None and f == int(f) else None


def to_bool(v: str) -> bool | None:
    v = v.strip()
    return True if v == "True" else False if v == "False" else None


def to_ratio(v: str) -> float | None:
    """A ratio as a fraction 0..1: `0.54` as printed, `71.20%` / `2.0%.` divided by 100."""
    word = v.strip().split(" ", 1)[0].rstrip(".")
    if word.endswith("%"):
        f = to_float(word[:-1])
        f = None if f is None else round(f / 100.0, 6)
    else:
        f = to_float(v)
    return f if f is not None and f <= 1.0 else None


def to_ratios(v: str) -> list[float] | None:
    """`0.812, 0.703, 0.621` (vLLM's per-position acceptance rates) -> fractions."""
    out: list[float] = []
    for part in v.split(","):
        r = to_ratio(part)
        if r is None:
            return None
        out.append(r)
    return out


BOOLS = {"True": True, "False": False, b"True": True, b"False": False}


PERCENT_DECIMALS = 4
"""The most decimals of a plain percent: `to_ratio` rounds a percent's fraction to 6 places, so
a percent of at most 4 decimals (SGLang prints 2, vLLM 1) is the fraction of its digits over a
power of ten, which one correctly rounded division gives exactly, 3x quicker than the rounding."""
PCT = {f"pct{d}": d for d in range(PERCENT_DECIMALS + 1)}
"""The kinds of plain percents, by their decimals."""


def percent_plain(decimals: int) -> str:
    """The regex of a plain percent's number (the text before its `%`) of these decimals: at
    most 100, as a ratio is."""
    if not decimals:
        return r"(?:[0-9]{1,2}|100)"
    return rf"(?:[0-9]{{1,2}}\.[0-9]{{{decimals}}}|100\.0{{{decimals}}})"


def percent_kind(number: str) -> str | None:
    """The kind of a percent's number as printed (`88.50`: "pct2"), or None when it has no
    fast form (the converter reads it)."""
    decimals = len(number) - number.index(".") - 1 if "." in number else 0
    if decimals > PERCENT_DECIMALS or not re.fullmatch(percent_plain(decimals), number):
        return None
    return f"pct{decimals}"


def _percent(decimals: int) -> Callable[[bytes | str], float]:
    scale = 10.0 ** (decimals + 2)

    def read(text: bytes | str) -> float:
        digits = text.replace(b".", b"") if isinstance(text, bytes) else text.replace(".", "")
        return float(digits) / scale

    return read


FAST: dict[str, Callable[[Any], Any]] = {
    "int": int, "float": float, "bool": BOOLS.__getitem__,
    **{kind: _percent(d) for kind, d in PCT.items()}}
"""A plain value's text (str or bytes) -> its record value, by the kind of its fast form."""
FLOATS = frozenset({"float", *PCT})
"""The kinds whose values are floats."""


def read_plain(kind: str, texts: list[bytes]) -> list[Any]:
    """Plain texts of one kind -> their record values, at C speed (`FAST` one at a time)."""
    d = PCT.get(kind)
    if d is None:
        return list(map(FAST[kind], texts))
    digits = map(bytes.replace, texts, repeat(b"."), repeat(b""))
    return list(map(truediv, map(float, digits), repeat(10.0 ** (d + 2))))


@dataclass(frozen=True)
class Conv:
    """A converter, its range, and the plain texts a builtin reads the same way.

    `kind` names the builtin: "int" (`int`; a plain text is also its own JSON), "float"
    (`float`), "bool" (`BOOLS`), or "text" (no fast form: the converter reads every value).
    `percent`: a ratio whose plain forms include a printed percent (`percent_kind`: its
    number is read, the `%` after it is a literal). `lo` / `hi`: the range of every number it
    returns (None: unbounded, or no number).
    """

    name: str
    read: Callable[[str], Any]
    kind: str = "text"
    plain: str = ""  # the regex of plain texts (no groups), "" for none
    percent: bool = False
    lo: float | None = None
    hi: float | None = None


# No leading zeros and a bounded length: the text is then what `json.dumps(int(text))` prints,
# and a float's digits stay far from overflowing to inf (which `to_float` refuses).
INT = Conv("int", to_int, "int", r"(?:0|[1-9][0-9]{0,17})", lo=0)
FLOAT = Conv("float", to_float, "float", r"[0-9]{1,15}\.[0-9]{1,15}", lo=0)
COUNT = Conv("count", to_count, "int", r"(?:0|[1-9][0-9]{0,14})", lo=0)
BOOL = Conv("bool", to_bool, "bool", r"(?:True|False)")
RATIO = Conv("ratio", to_ratio, "float", r"(?:0\.[0-9]{1,15}|1\.0{1,15})", True, lo=0, hi=1)
"""A fraction 0..1; its plain forms are a printed fraction and a printed percent up to 100
of up to `PERCENT_DECIMALS` decimals."""
RATIOS = Conv("ratios", to_ratios, lo=0, hi=1)
"""A comma-separated list of fractions (a list-valued field: `Field(..., many=True)`)."""
