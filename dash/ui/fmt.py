"""Short human formats for the screen: durations, counts, bytes, rates. None becomes "-"."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from dash.core.alerts.model import fmt_duration
from dash.core.snapshot import Alert, HistoryEntry

GB = 1024**3
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""CSI and OSC escape sequences, lone escapes, and C0/C1 control characters (tab kept)."""
MAX_SHOWN = 1000
"""Longest line kept for display: the rest cannot fit on any screen."""


def clean(text: str, limit: int = MAX_SHOWN) -> str:
    """Text safe to put on the screen: capped (an ellipsis says where), escape sequences and
    control characters removed."""
    safe = _CONTROL.sub("", text[: limit * 2]).replace("\t", "    ")
    return safe if len(safe) <= limit else safe[:max(0, limit - 1)] + "…"


def dur(seconds: float | None) -> str:
    """`45s`, `12m`, `3h12m`, `2d04h`: seconds only under a minute.

    Coarse on purpose: text that changes every second repaints its panel every second.
    """
    if seconds is None or seconds != seconds:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def count(n: float | None) -> str:
    """1234 -> `1234`, 12345 -> `12.3k`, 1.2e6 -> `1.2M`."""
    if n is None:
        return "-"
    if abs(n) >= 1e6:
        return f"{n / 1e6:.1f}M"
    if abs(n) >= 1e4:
        return f"{n / 1e3:.1f}k"
    if n == int(n):
        return f"{int(n)}"
    return f"{n:.1f}"


def gb(n: float | None) -> str:
    """Bytes as GiB with one decimal."""
    return "-" if n is None else f"{n / GB:.1f}"


def pct(frac: float | None) -> str:
    """A 0..1 fraction as a percentage."""
    return "-" if frac is None else f"{100 * frac:.0f}%"


def num(v: float | None, unit: str = "", digits: int = 0) -> str:
    """A number with an optional unit, or `-`."""
    if v is None:
        return "-"
    return f"{v:.{digits}f}{unit}"


def bar(frac: float | None, width: int) -> tuple[str, str]:
    """The filled and empty parts of a bar of `width` cells (eighth-cell resolution)."""
    if frac is None or width <= 0:
        return "", " " * max(0, width)
    eighths = round(max(0.0, min(1.0, frac)) * width * 8)
    full, part = divmod(eighths, 8)
    filled = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    return filled, "·" * (width - len(filled))


_SPARKS = "▁▂▃▄▅▆▇█"


def spark(values: tuple[float, ...] | list[float]) -> str:
    """Values as a one-line sparkline, scaled from their lowest to their highest."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo
    top = len(_SPARKS) - 1
    return "".join(_SPARKS[round((v - lo) / span * top) if span else top // 2] for v in values)


def clock(t: float, now: float) -> str:
    """A clock time: `14:02`, or `Jun 14 14:02` when it is not today's (the local zone)."""
    local = time.localtime(t)
    if abs(now - t) >= 20 * 3600:
        return time.strftime("%b %d %H:%M", local)
    return time.strftime("%H:%M", local)


def line_time(at: object, ts: object, now: float | None = None) -> str:
    """A log line's time of day as the rest of the screen tells time (the alerts' `since`, the
    charts' axis): its clock time `at` in the box's zone, so a UTC log read in Tokyo does not
    show 06:32 beside `since 15:32`; the stamp's own time where the line has no clock time.
    Given `now`, a time 20 hours or more from it has its day too (`Sep 11 10:26`): an old
    log's `10:26:05` reads as this morning."""
    if isinstance(at, (int, float)) and not isinstance(at, bool):
        if now is not None and abs(now - at) >= 20 * 3600:
            return time.strftime("%b %d %H:%M", time.localtime(at))
        return time.strftime("%H:%M:%S", time.localtime(at))
    return clean(str(ts or ""), 19)[-8:]


def since(t: float, now: float) -> str:
    """`since 14:02 (12 min)`: when it started, and how long ago."""
    return f"since {clock(t, now)} ({fmt_duration(max(0.0, now - t))})"


def began(alert: Alert, history: Sequence[HistoryEntry], now: float) -> str:
    """When an alert's condition began (its `since`, from the log's time) and, when it fired
    later (it had to hold for a while first), when it fired: `began 14:02, fired 14:12 after
    holding 10 min`; else `since 14:02 (12 min)`. Said apart, a `since` before the history's
    `fired` time does not read as a contradiction."""
    fired = next((e.fired_at for e in reversed(history) if e.alert.key == alert.key
                  and e.cleared_at is None and not e.earlier), None)
    if fired is None or fired - alert.since < 60:
        return since(alert.since, now)
    if fired - alert.since > alert.hold_s + 60:
        # Older than its hold: the condition was in the log before kdash read it.
        return (f"began {clock(alert.since, now)} ({fmt_duration(now - alert.since)} ago, in "
                f"the log), fired {clock(fired, now)} when read")
    return (f"began {clock(alert.since, now)}, fired {clock(fired, now)} after holding "
            f"{fmt_duration(fired - alert.since)}")
