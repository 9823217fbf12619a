"""A whole log's records folded into one summary (what `kdash summary` prints); pure, bounded.

Memory stays constant however long the log: counters, the peak, the last decode record, a
capped list of events and a throughput series that halves its resolution when it fills up.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any

from dash.core.parse import Record
from dash.core.timestamps import ts_to_epoch

MAX_EVENTS = 100
MAX_UNPARSED_SAMPLES = 5
MAX_POINTS = 512


class Downsampled:
    """(x of a bucket's first sample, mean y) points; when full, neighbouring buckets merge
    and the stride doubles. Only a bucket's first sample needs its x (`needs_x`), which
    spares converting a timestamp per sample."""

    def __init__(self, max_points: int = MAX_POINTS) -> None:
        self.max_points = max_points
        self.stride = 1
        self.points: list[tuple[float, float]] = []
        self._x = 0.0
        self._sum = 0.0
        self._n = 0

    def needs_x(self) -> bool:
        return self._n == 0

    def add(self, x: float | None, y: float) -> None:
        if self._n == 0:
            self._x = x if x is not None else float(len(self.points) * self.stride)
        self._sum += y
        self._n += 1
        if self._n < self.stride:
            return
        self.points.append((self._x, self._sum / self._n))
        self._n, self._sum = 0, 0.0
        if len(self.points) >= self.max_points:
            pairs = zip(self.points[0::2], self.points[1::2], strict=False)
            self.points = [(a[0], (a[1] + b[1]) / 2) for a, b in pairs]
            self.stride *= 2

    def series(self) -> list[tuple[float, float]]:
        tail = [(self._x, self._sum / self._n)] if self._n else []
        return self.points + tail


class LogSummary:
    """Fold records in file order with `feed`; read the result with `to_dict`."""

    def __init__(self, ref: float) -> None:
        self.ref = ref  # supplies the date a time-only timestamp lacks
        self.lines = 0
        self.kinds: Counter[str] = Counter()
        self.engines: Counter[str] = Counter()
        self.event_counts: Counter[str] = Counter()
        self.events: deque[Record] = deque(maxlen=MAX_EVENTS)
        self.unparsed_samples: list[Record] = []
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.peak: Record | None = None
        self.last_decode: Record | None = None
        self._gen_sum = 0.0
        self._gen_n = 0
        self._cached = 0
        self._new = 0
        self.throughput = Downsampled()

    def feed(self, rec: Record) -> None:
        kind = rec["kind"]
        self.kinds[kind] += 1
        self.engines[rec.get("engine") or "sglang"] += 1
        ts = rec.get("ts")
        if ts:
            self.first_ts = self.first_ts or ts
            self.last_ts = ts
        if kind == "decode":
            self._decode(rec)
        elif kind == "prefill":
            self._cached += rec.get("cached_token") or 0
            self._new += rec.get("new_token") or 0
        elif kind == "event":
            self.event_counts[rec["event"]] += 1
            self.events.append({k: v for k, v in rec.items() if k != "args"})
        elif len(self.unparsed_samples) < MAX_UNPARSED_SAMPLES:
            self.unparsed_samples.append(rec)

    def _decode(self, rec: Record) -> None:
        self.last_decode = rec
        gen = rec.get("gen_throughput")
        if gen is None:
            return
        self._gen_sum += gen
        self._gen_n += 1
        if self.peak is None or gen > self.peak["gen_throughput"]:
            self.peak = {"gen_throughput": gen, "ts": rec.get("ts"), "line": rec["line"]}
        x = None
        if self.throughput.needs_x():
            x = ts_to_epoch(rec.get("ts"), self.ref)
        self.throughput.add(float(self._gen_n) if x is None else x, gen)

    def engine(self) -> str:
        decode_engines = self.engines.most_common(1)
        return decode_engines[0][0] if decode_engines else "unknown"

    def to_dict(self) -> dict[str, Any]:
        total = self._cached + self._new
        return {
            "engine": self.engine(),
            "lines": self.lines,
            "records": {k: self.kinds.get(k, 0) for k in ("decode", "prefill", "event", "unparsed")},
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "gen_throughput": {
                "peak": self.peak,
                "mean": round(self._gen_sum / self._gen_n, 2) if self._gen_n else None,
                "samples": self._gen_n,
            },
            "last_decode": self.last_decode,
            "prefill": {
                "cached_tokens": self._cached,
                "new_tokens": self._new,
                "cache_hit_ratio": round(self._cached / total, 4) if total else None,
            },
            "event_counts": dict(self.event_counts),
            "events": list(self.events),
            "unparsed": self.kinds.get("unparsed", 0),
            "unparsed_samples": [r.get("text") for r in self.unparsed_samples],
            "alerts": [],
        }
