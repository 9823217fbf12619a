"""Log timestamps: normalise the text a line prints, and turn it into epoch seconds.

Records keep the timestamp as ISO-ish text, as much as the line had: `2025-02-27T04:46:39`,
`04:40:55` (SGLang 0.2.14-0.3.3 prints no date), `01-22T18:27:20` (vLLM prints no year),
`2026-06-07T10:59:31.659`. Logs carry local time without a zone; a collector's stamp (kubectl,
docker, CI, journald `short-iso`) carries its zone, kept in the text
(`2025-10-20T03:02:22.123456789Z`, `2026-02-11T08:15:03+01:00`), and needs no guess.
"""

from __future__ import annotations

import functools
import re
import time
from datetime import datetime, timedelta

_FULL = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?\Z"
)
_MONTH_DAY = re.compile(r"(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\Z")
_TIME_ONLY = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\Z")

# A month-day stamp takes the latest year that puts it no more than this after the reference:
# a log is read after it was written, so `12-11` read on 2 December is last year's, and `01-01`
# after a line of 31 December is the next year's; two days leave room for any zone difference
# between the log's clock and the reader's.
_YEAR_AHEAD_S = 2 * 86400.0
# A time-only stamp more than this far after the reference belongs to the day before.
_DAY_SLACK_S = 3600.0


def normalise_ts(text: str) -> str:
    """`2025-02-27 04:46:39,123` -> `2025-02-27T04:46:39.123` (date and time joined by `T`);
    a zone is kept, `+0000` written `+00:00` (ISO 8601, as `datetime.fromisoformat` reads it)."""
    text = text.strip().replace(",", ".").replace(" ", "T", 1)
    if len(text) > 19 and text[-5] in "+-" and text[-4:].isdigit():
        text = f"{text[:-2]}:{text[-2:]}"
    return text


# Stamps `normalise_ts` changes by its two replacements alone: no outer space, at most one
# space (between date and time), nothing after the seconds but a fraction, so no zone
# (removing every line that is one leaves nothing: a third quicker than matching their repeat)
_PLAIN_STAMP = re.compile(rb"(?:[0-9]{4}-)?(?:[0-9]{2}-[0-9]{2} )?[0-9]{2}:[0-9]{2}:[0-9]{2}"
                          rb"(?:[.,][0-9]{1,9})?(?:\n|\Z)")


_DIGITS = bytes.maketrans(b"123456789", b"000000000")


def normalised_joined(stamps: list[bytes]) -> bytes | None:
    """`normalise_ts` of each of these ASCII stamp texts, joined by newlines, where all are of
    the plain forms a bracket prints: both replacements are made on them joined, at C speed
    (a log has one stamp a second, and each is worked out); None for other forms."""
    joined = b"\n".join(stamps)
    if not _one_plain_form(stamps, joined) and _PLAIN_STAMP.sub(b"", joined):
        return None
    return joined.replace(b",", b".").replace(b" ", b"T")


def _one_plain_form(stamps: list[bytes], joined: bytes) -> bool:
    """Whether every stamp is the first one's plain form with other digits (a block's stamps
    mostly are: their digits made zeros, they are one text, checked once), at C speed."""
    if not stamps:
        return False
    form = stamps[0].translate(_DIGITS)
    return (joined.translate(_DIGITS) == b"\n".join([form] * len(stamps))
            and _PLAIN_STAMP.fullmatch(form) is not None)


def normalise_stamps(stamps: list[bytes]) -> list[str]:
    """`normalise_ts` of each of these ASCII stamp texts (`normalised_joined`)."""
    if not stamps:
        return []
    joined = normalised_joined(stamps)
    if joined is None:
        return [normalise_ts(s.decode("ascii")) for s in stamps]
    return joined.decode("ascii").split("\n")


def _frac(digits: str | None) -> float:
    return float("0." + digits) if digits else 0.0


def _local_epoch(y: int, mo: int, d: int, h: int, mi: int, s: int) -> float | None:
    try:
        return datetime(y, mo, d, h, mi, s).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def _full_to_epoch(m: re.Match[str]) -> float | None:
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    zone = m.group(8)
    if zone is None:
        base = _local_epoch(y, mo, d, h, mi, s)
        return None if base is None else base + _frac(m.group(7))
    try:
        text = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}"
        aware = datetime.fromisoformat(text + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return None
    return aware.timestamp() + _frac(m.group(7))


_NOT_FULL = object()


@functools.lru_cache(maxsize=4096)
def _full_stamp_to_epoch(ts: str) -> float | None | object:
    """A dated stamp's epoch (None if it names no real time), or `_NOT_FULL`. Cached: a log
    repeats each second's stamp on many lines, and a replay reads every stamp twice."""
    m = _FULL.match(ts)
    return _full_to_epoch(m) if m else _NOT_FULL


def _ref_parts(ref: float) -> tuple[int, int, int]:
    t = time.localtime(ref)
    return t.tm_year, t.tm_mon, t.tm_mday


def ts_to_epoch(ts: str | None, ref: float) -> float | None:
    """A record's `ts` as epoch seconds (local time); `ref` supplies a missing date or year."""
    if not ts:
        return None
    ts = normalise_ts(ts)
    full = _full_stamp_to_epoch(ts)
    if full is not _NOT_FULL:
        return full  # type: ignore[return-value]
    m = _MONTH_DAY.match(ts)
    if m:
        year, ref_month, _ = _ref_parts(ref)
        mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 6))
        # Newest first; only a January stamp read in December can be the next year's, so the
        # usual stamp costs one date. 29 February looks back to the last leap year.
        first = year + 1 if (mo, ref_month) == (1, 12) else year
        epoch = next((e for y in range(first, year - 5, -1)
                      if (e := _local_epoch(y, mo, d, h, mi, s)) is not None
                      and e - ref <= _YEAR_AHEAD_S), None)
        return None if epoch is None else epoch + _frac(m.group(6))
    m = _TIME_ONLY.match(ts)
    if m:
        y, mo, d = _ref_parts(ref)
        h, mi, s = (int(m.group(i)) for i in range(1, 4))
        epoch = _local_epoch(y, mo, d, h, mi, s)
        if epoch is None:
            return None
        if epoch - ref > _DAY_SLACK_S:
            day_before = datetime(y, mo, d) - timedelta(days=1)
            epoch = _local_epoch(day_before.year, day_before.month, day_before.day, h, mi, s)
            if epoch is None:
                return None
        return epoch + _frac(m.group(4))
    return None
