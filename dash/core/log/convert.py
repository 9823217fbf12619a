"""Value converters of stats fields: printed text -> record value, with a fast form each.

A converter reads any text a server prints for a value (`41.7 tokens/s`, `10 reqs`, `5.0%`,
`full=N` of the 0.4.9 SWA form, thousands separators) and returns None for what is no number.
Its fast form is a regex of the plain texts (`123`, `0.45`, `True`) for which a C builtin
(`int`, `float`, a dict lookup) gives exactly what the converter gives; the bulk reader
(`dash.core.log.bulk`) reads lines whose values are all plain with those builtins, the rest
with the converter itself. `tests/core/test_parse_grammar.py` checks the two agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def to_int(v: str) -> int | None:
    try:
        return int(v)  # the common case, at C speed
    except ValueError:
        pass
    v = v.strip()
    if v.startswith("full="):  # 0.4.9 SWA form `#token: full=N, swa=M`
        v = v[5:]
    v = v.replace(",", "")
    return int(v) if v.isdigit() else None


def to_float(v: str) -> float | None:
    try:
        f = float(v)  # the common case, at C speed
        return f if f - f == 0 else None  # not nan / inf
    except ValueError:
        pass
    v = v.strip().split(" ", 1)[0]  # `41.7 tokens/s`, `10 reqs`, `53.31 GB`
    v = v.rstrip(".%x").replace(",", "")
    if v.startswith("full="):
        v = v[5:]
    try:
        f = float(v)
    except ValueError:
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def to_count(v: str) -> int | None:
    f = to_float(v)
    return int(f) if f is not None and f == int(f) else None


def to_bool(v: str) -> bool | None:
    v = v.strip()
    return True if v == "True" else False if v == "False" else None


def to_fraction_of_percent(v: str) -> float | None:
    f = to_float(v)
    return None if f is None else round(f / 100.0, 6)


BOOLS = {"True": True, "False": False, b"True": True, b"False": False}


@dataclass(frozen=True)
class Conv:
    """A converter, and the plain texts a builtin reads the same way.

    `kind` names the builtin: "int" (`int`; a plain text is also its own JSON), "float"
    (`float`), "bool" (`BOOLS`), or "text" (no fast form: the converter reads every value).
    """

    name: str
    read: Callable[[str], Any]
    kind: str = "text"
    plain: str = ""  # the regex of plain texts (no groups), "" for none


# No leading zeros and a bounded length: the text is then what `json.dumps(int(text))` prints,
# and a float's digits stay far from overflowing to inf (which `to_float` refuses).
INT = Conv("int", to_int, "int", r"(?:0|[1-9][0-9]{0,17})")
FLOAT = Conv("float", to_float, "float", r"[0-9]{1,15}\.[0-9]{1,15}")
COUNT = Conv("count", to_count, "int", r"(?:0|[1-9][0-9]{0,14})")
BOOL = Conv("bool", to_bool, "bool", r"(?:True|False)")
PERCENT = Conv("percent", to_fraction_of_percent)
