"""Launches an earlier kdash saw, merged with the ones this kdash reads (pure).

The same launch read again (the same key: start stamp and arguments) is replaced by what is
read now. A launch whose start this kdash did not see (its log was read from a backfill window
that begins after the start) continues the last remembered launch when that one was still
running: it is the same server, seen again. A remembered launch that was running and has a
later one after it ended while no kdash was watching.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TypeVar

from dash.core.launch import Launch, LaunchFigures

NOT_WATCHED = "ended while kdash was not watching"
N = TypeVar("N", int, float)


def merge_remembered(remembered: Sequence[Launch], session: Iterable[Launch]) -> tuple[Launch, ...]:
    """Remembered launches and this session's, one per key, in start order."""
    merged: dict[str, Launch] = {x.key: x for x in remembered}
    for launch in session:
        last = next(reversed(merged.values()), None) if merged else None
        if launch.key in merged:
            merged[launch.key] = launch
        elif (not launch.start_seen and last is not None and last.earlier
              and last.outcome == "running" and _after(launch, last)):
            merged[last.key] = continued(last, launch)
        else:
            merged[launch.key] = launch
    ordered = sorted(merged.values(),
                     key=lambda x: x.order)
    out = []
    for i, launch in enumerate(ordered):
        if launch.earlier and launch.outcome == "running" and i + 1 < len(ordered):
            launch = dataclasses.replace(launch, outcome="stopped", reason=NOT_WATCHED,
                                         ended_at=launch.last_at)
        out.append(launch)
    return tuple(out)


def _after(new: Launch, old: Launch) -> bool:
    first = new.started_at
    return first is None or old.started_at is None or first >= old.started_at


def continued(old: Launch, new: Launch) -> Launch:
    """The remembered launch `old`, with what this session read of it since (`new`)."""
    a, b = old.figures, new.figures
    steady = b if b.steady is not None else a
    peak = a if (a.peak or 0.0) >= (b.peak or 0.0) else b
    figures = LaunchFigures(
        peak=peak.peak, peak_at=peak.peak_at, peak_line=_most(a.peak_line, b.peak_line),
        steady=steady.steady, steady_s=steady.steady_s,
        steady_note=steady.steady_note,
        running=_first(steady.running, b.running, a.running),
        queued=_first(steady.queued, b.queued, a.queued),
        usage=_first(steady.usage, b.usage, a.usage),
        decode_s=_most(a.decode_s, b.decode_s), decode_lines=max(a.decode_lines, b.decode_lines),
        retractions=max(a.retractions, b.retractions),
        retracted_reqs=max(a.retracted_reqs, b.retracted_reqs),
        prefix_hit=_first(b.prefix_hit, a.prefix_hit),
        accept_len=_first(b.accept_len, a.accept_len),
        max_prefill=_most(a.max_prefill, b.max_prefill),
        prefill_before_end=b.prefill_before_end,
    )
    return dataclasses.replace(
        old, last_at=_most(old.last_at, new.last_at), ended_at=new.ended_at,
        outcome=new.outcome, reason=new.reason, component=new.component, exception=new.exception,
        capacity={**old.capacity, **new.capacity}, figures=figures, earlier=False,
        source=new.source or old.source)


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _most(a: N | None, b: N | None) -> N | None:
    if a is None or b is None:
        return a if b is None else b
    return max(a, b)
