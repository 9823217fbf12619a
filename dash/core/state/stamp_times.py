"""The epoch time of a log's stamps, as `dash.core.log.timestamps.ts_to_epoch` gives it: one
stamp (`epoch`), or all the distinct stamps of a piece of a log at once (`stamp_epochs`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from math import inf, nan
from operator import add, itemgetter

from dash.core.log.timestamps import normalise_ts, ts_to_epoch


def epoch(ts: object, ref: float) -> float | None:
    """One record's `ts` as epoch seconds, or None (`ref` supplies a missing date)."""
    if not isinstance(ts, str) or not ts:
        return None
    try:
        return ts_to_epoch(ts, ref)
    except (ValueError, TypeError, OverflowError):
        return None


_DATED = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\Z")


def stamp_epochs(texts: Iterable[str | None]) -> list[float]:
    """The time of each stamp whose date is printed (-inf: none, or no real time), NaN for
    one without a date (its time depends on the stamps before it). What `ts_to_epoch` gives:
    a log prints each second's stamp once or a few times, and the local time of a minute is
    worked out once (the seconds of a minute that a clock change falls in are worked out one
    by one)."""
    texts = list(texts)
    plain = _plain_epochs(texts)
    if plain is not None:
        return plain
    minutes: dict[str, float | None] = {}
    out: list[float] = []
    for ts in texts:
        if not ts:
            out.append(-inf)
        elif ts[4:5] != "-":
            out.append(nan)
        else:
            t = _dated(normalise_ts(ts), minutes)
            out.append(-inf if t is None else t)
    return out


# A piece's stamps as most logs print them: `YYYY-MM-DDTHH:MM:SS`, one per line when joined
_PLAIN = re.compile(r"(?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-5][0-9](?:\n|\Z))*\Z")
_MINUTE, _SECOND = itemgetter(slice(0, 16)), itemgetter(slice(17, 19))


def _plain_epochs(texts: list[str | None]) -> list[float] | None:
    """`stamp_epochs` of `[None, *stamps]` where every stamp is of the plain form and each
    minute a real one (what `_dated` gives them), worked out a minute at a time and the
    seconds added by `map`; None otherwise."""
    if not texts or texts[0] is not None:
        return None
    body = texts[1:]
    try:
        joined = "\n".join(body)  # type: ignore[arg-type]
    except TypeError:  # a None among them
        return None
    if _PLAIN.match(joined) is None:
        return None
    minutes = {key: _minute(int(key[:4]), int(key[5:7]), int(key[8:10]), int(key[11:13]),
                            int(key[14:16]))
               for key in dict.fromkeys(map(_MINUTE, body))}  # type: ignore[arg-type]
    if None in minutes.values():
        return None
    bases = map(minutes.__getitem__, map(_MINUTE, body))  # type: ignore[arg-type]
    return [-inf, *map(add, bases, map(int, map(_SECOND, body)))]  # type: ignore[arg-type]


def _dated(ts: str, minutes: dict[str, float | None]) -> float | None:
    m = _DATED.match(ts)
    if m is None or int(m.group(6)) > 59:
        return epoch(ts, 0.0)
    key = ts[:16]
    if key not in minutes:
        minutes[key] = _minute(*map(int, m.group(1, 2, 3, 4, 5)))
    base = minutes[key]
    if base is None:
        return epoch(ts, 0.0)
    frac = m.group(7)
    return base + int(m.group(6)) + (float("0." + frac) if frac else 0.0)


def _minute(y: int, mo: int, d: int, h: int, mi: int) -> float | None:
    """A minute's first second, local time; None when it names no real time or its seconds
    are not one apart (a clock change)."""
    try:
        first = datetime(y, mo, d, h, mi, 0).timestamp()
        last = datetime(y, mo, d, h, mi, 59).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
    return first if last - first == 59.0 else None
