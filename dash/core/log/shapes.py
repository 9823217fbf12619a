"""Compiled line shapes: one stats family's line in one field order, read by a single regex.

A busy log prints the same stats line over and over: the same prefix form, the same head, the
same fields in the same order, plain numbers. When the parser has read such a line (`learn`),
a `Shape` is compiled for it from the grammar alone: the prefix pattern the parser itself uses,
the head as printed, each field's name as printed and its converter's plain form. A line the
shape matches is then read without the parser and gives the record the parser would give:

- the literal parts are those of the line the parser read, so the same family claims it and
  the same head and items are found; values are plain (no comma, no letters), so the items
  split the same way, and plain values convert with a builtin exactly as their converter
  does (`dash.core.log.convert`); a ratio printed as a percent (`88.50%`) is its number, read
  and divided as `to_ratio` does, and a literal `%`;
- which item gives which key (the first of a key wins), the head numbers, fallbacks, the
  family's checks and its schema depend on the names alone, so they are settled once, here.

A field the grammar does not know (a newer server's) is matched as its name as printed and a
plain number, percent or flag, and not read, as the parser skips it. A line with anything else
(colour codes, carriage returns, a value the converter must work at, an unknown field of another
value, numbers inside the head) is never learned and stays with the parser.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from dash.core.log.convert import FLOATS, PCT, percent_kind, percent_plain
from dash.core.log.parser import LineParser, Record
from dash.core.log.stats import PAIR, claims, finish
from dash.core.log.syntax import StatsFamily

FORMS = ("bracket", "bare")
_TRAILING = ("", ",", ", ")
_NOISE = ("\r", "\x1b", "^[", "^M")
# The value of a field the grammar does not know, where it is a plain number, percent or flag:
# no separator, no name, no head or trigger can be in it, and the parser skips the item
_UNKNOWN = r"(?:[0-9]{1,18}(?:\.[0-9]{1,15})?%?|True|False)"


@dataclass(frozen=True)
class Shape:
    """One learned shape. `pattern`: bytes regex of the whole line (groups: stamp and tags for
    the bracket form, then one per value read); `keys`/`cols`: the record's stats keys in
    order, each from value group `cols[i]` (None: null); `kinds`: each value's fast form
    (`dash.core.log.convert.FAST`: "int", "float", "bool", or "pct2" for a ratio printed as
    a percent of 2 decimals, its number read and the `%` after it a literal)."""

    family: StatsFamily
    form: str
    pattern: bytes
    keys: tuple[str, ...]
    cols: tuple[int | None, ...]
    kinds: tuple[str, ...]
    body: bytes = b""
    """`pattern` after the prefix: what follows the bracket (all of it for the bare form)."""
    texts: tuple[bytes, ...] = ()
    """`body` around its values: `texts[0] (values[0]) texts[1] ... texts[-1]`."""
    values: tuple[bytes, ...] = ()
    """The plain form each value is read with."""

    def body_with(self, captured: frozenset[int]) -> bytes:
        """`body` with groups for the values of these indexes only."""
        out = [self.texts[0]]
        for i, (value, text) in enumerate(zip(self.values, self.texts[1:], strict=True)):
            out.append((b"(%s)" if i in captured else b"(?:%s)") % value)
            out.append(text)
        return b"".join(out)

    @property
    def prefix_groups(self) -> int:
        return 2 if self.form == "bracket" else 0

    @property
    def groups(self) -> int:
        return self.prefix_groups + len(self.kinds)

    def json_tail(self) -> bytes:
        """The JSON text of a record after its `"line":N`, as a `%` template over
        (ts, rank, values...) already in JSON form."""
        parts = [b',"ts":%s,"rank":%s,"engine":' + json.dumps(self.family.engine).encode()]
        for key, col in zip(self.keys, self.cols, strict=True):
            val = b"null" if col is None else b"%r" if self.kinds[col] in FLOATS else b"%s"
            parts.append(b"," + json.dumps(key).encode().replace(b"%", b"%%") + b":" + val)
        return b"".join(parts) + b"}\n"


def _noisy(line: str) -> bool:
    return any(n in line for n in _NOISE)


def learn(parser: LineParser, text: str, rec: Record) -> Shape | None:
    """The shape of a stats line the parser read into `rec`, or None when it has none (the
    caller checks that the shape reads the line back into `rec`)."""
    if rec["kind"] not in ("decode", "prefill") or _noisy(text) or len(text) > 2000:
        return None
    pre = parser.prefixes.split(text)
    if text.startswith("[") and pre.message != text:
        m = parser.prefixes.bracket.match(text)
        if m is None or text[m.end():] != pre.message:
            return None
        form, prefix = "bracket", parser.prefixes.bracket.pattern
    elif pre.message == text and (pre.ts, pre.rank, pre.engine) == (None, None, None):
        form, prefix = "bare", ""
    else:
        return None
    fam = next((f for f in parser.families if claims(f, pre.message)), None)
    if fam is None:
        return None
    return _compile(fam, form, prefix, pre.message)


def _compile(fam: StatsFamily, form: str, prefix: str, msg: str) -> Shape | None:
    head = fam.head_re.search(msg)
    if head is None or head.start() != 0 or any(head.groupdict().values()):
        return None
    body = msg[head.end():]
    items = PAIR.findall(body)
    rebuilt = ", ".join(f"{k}: {v}" for k, v in items)
    trailing = body[len(rebuilt):]
    if not body.startswith(rebuilt) or trailing not in _TRAILING:
        return None
    texts = [re.escape(msg[:head.end()])]
    values: list[str] = []
    kinds: list[str] = []
    first: dict[str, int] = {}
    for i, (printed, value) in enumerate(items):
        f = fam.field_for(printed)
        sep = ", " if i else ""
        if f is None and not fam.lists and re.fullmatch(_UNKNOWN, value):
            # a field the grammar does not know (one a newer server prints): matched, not read
            texts[-1] += re.escape(f"{sep}{printed}: ") + _UNKNOWN
            continue
        if f is None or not f.conv.plain:
            return None
        unit = f.unit if value.endswith(f.unit) and f.unit else ""
        number = value[:len(value) - len(unit)] if unit else value
        kind, regex = f.conv.kind, f.conv.plain
        if not re.fullmatch(regex, number):
            # a ratio printed as a percent: its number, the `%` a literal after it
            pct = percent_kind(number[:-1]) if f.conv.percent and number.endswith("%") else None
            if pct is None or unit:
                return None
            kind, regex, unit = pct, percent_plain(PCT[pct]), "%"
        if f.key in first:  # read again but not kept: the first item of a key wins
            texts[-1] += re.escape(f"{sep}{printed}: ") + regex + re.escape(unit)
            continue
        first[f.key] = len(kinds)
        kinds.append(kind)
        texts[-1] += re.escape(f"{sep}{printed}: ")
        values.append(regex)
        texts.append(re.escape(unit))
    texts[-1] += re.escape(trailing) + "(?=\n)"
    keys, cols = _settle(fam, first)
    if keys is None or cols is None:
        return None
    coded = tuple(t.encode() for t in texts)
    plain = tuple(v.encode() for v in values)
    shape = Shape(fam, form, b"", keys, cols, tuple(kinds), b"", coded, plain)
    whole = shape.body_with(frozenset(range(len(plain))))
    return replace(shape, pattern=prefix.encode() + whole, body=whole)


def _settle(fam: StatsFamily, first: dict[str, int]
            ) -> tuple[tuple[str, ...], tuple[int | None, ...]] | tuple[None, None]:
    """The record's stats keys and their value columns, as `stats.finish` would leave them
    for values that are never None."""
    probe: dict[str, Any] = {k: ("col", i) for k, i in first.items()}
    done = finish(fam, probe, None)
    if done is None:
        return None, None
    keys = tuple(done)
    cols = tuple(None if v is None else v[1] for v in done.values())
    return keys, cols
