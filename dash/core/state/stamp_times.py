"""The epoch time of a log's stamps, as `dash.core.log.timestamps.ts_to_epoch` gives it: one
stamp (`epoch`), or all the distinct stamps of a piece of a log at once (`stamp_epochs`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from math import inf, nan

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
