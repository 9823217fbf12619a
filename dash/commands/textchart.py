"""The one place that drives plotext: a small line chart rendered to plain text.

plotext 5 keeps one global figure, so every call clears it first; call from one thread only.
The output has no colour codes unless `color=True` (a terminal that wants them).
"""

from __future__ import annotations

from collections.abc import Sequence

import plotext as plt


def render_chart(
    t: Sequence[float], v: Sequence[float], width: int, height: int, title: str,
    *, color: bool = False,
) -> str:
    """A line chart of `v` over `t`, `width` x `height` characters, as text."""
    plt.clear_figure()
    plt.plotsize(max(20, width), max(5, height))
    plt.title(title)
    if t and v and len(t) == len(v):
        plt.plot(list(t), list(v), marker="braille")
    if not color:
        plt.theme("clear")
    text = str(plt.build())
    plt.clear_figure()
    return text if color else plt.uncolorize(text)
