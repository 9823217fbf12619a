"""One Prometheus metric family as plain frozen data (built by the views, written by sources)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class Family:
    """One metric family: a name, its help text, its type, and (labels, value) samples."""

    name: str
    doc: str
    kind: Literal["gauge", "counter", "summary"] = "gauge"
    labels: tuple[str, ...] = ()
    samples: tuple[tuple[tuple[str, ...], float], ...] = field(default=())
    extra: tuple[tuple[str, tuple[str, ...], float], ...] = field(default=())
    """A summary's `_sum` and `_count` samples: (suffix, label values without the quantile,
    value); its `samples` are the quantiles (the last label is `quantile`)."""
