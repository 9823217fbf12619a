"""The one place that drives plotext: a small line chart rendered to plain text.

plotext 5 keeps one global figure, so every call clears it first; call from one thread only.
The output has no colour codes unless `color=True` (a terminal that wants them).
"""

from __future__ import annotations

from collections.abc import Sequence

import plotext as plt


def render_chart(
    t: Sequence[float], v: Sequence[float], width: int, height: int, title: str,
    *, color: bool = False, gap: float | None = None,
) -> str:
    """A line chart of `v` over `t`, `width` x `height` characters, as text. Points further
    apart than `gap` are not joined: a server down for an hour is not a ramp."""
    plt.clear_figure()
    plt.plotsize(max(20, width), max(5, height))
    plt.title(title)
    if t and v and len(t) == len(v):
        for lo, hi in _segments(t, gap):
            plt.plot(list(t[lo:hi]), list(v[lo:hi]), marker="braille", color="blue")
        if min(t) == max(t):  # one instant: plotext centres it on -1..1, seconds before it
            plt.xlim(t[0], t[0] + 1.0)
        # From zero, as the dashboard's charts: plotext fits the axis to the data, and a
        # steady 10.93 tok/s drawn over 10.92-10.94 looks like a server swinging wildly
        top = max(v)
        plt.ylim(min(0.0, min(v)), top * 1.1 if top > 0 else 1.0)
    if not color:
        plt.theme("clear")
    text = str(plt.build())
    plt.clear_figure()
    return text if color else plt.uncolorize(text)


def _segments(t: Sequence[float], gap: float | None) -> list[tuple[int, int]]:
    """[lo, hi) index ranges of `t` with no step wider than `gap`."""
    cuts = [i for i in range(1, len(t)) if gap is not None and t[i] - t[i - 1] > gap]
    bounds = [0, *cuts, len(t)]
    return list(zip(bounds, bounds[1:], strict=False))
