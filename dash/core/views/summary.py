"""A whole log's records folded into one summary (what `kdash summary` prints); pure, bounded.

Throughput figures are the whole server's: in a log of several DP ranks (or vLLM engines) each
sample is the sum of the ranks' latest lines (`dash.core.state.ranks`), worked out in file order
as the parts are merged, and the alert replay keeps every rank's first line of each 10 s.

A log is read in blocks; each block becomes a `Part` (counts, sums, the block's throughput
samples, its events, its alert candidates), built record by record (`PartBuilder`, the
reference) or a column at a time from the bulk reader's batch (`dash.core.views.summary_fold`). `LogSummary.merge` folds parts in file order and
gives exactly what feeding every record in order would: sums are added in the same order.
Memory stays constant however long the log: counters, the peak, the last decode record, capped
event lists and a throughput series that halves its resolution when it fills up.
"""

from __future__ import annotations

import operator
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import reduce
from itertools import islice
from typing import Any

from dash.core.log.parse import Record
from dash.core.log.timestamps import ts_to_epoch
from dash.core.state.ranks import rank_key
from dash.core.state.server_log import FOLD_BACK, STATS_KINDS, copy_of
from dash.core.views.summary_feed import AlertFeed, Candidate, ts_key
from dash.core.views.summary_ranks import RankedGens

MAX_EVENTS = 100
MAX_UNPARSED_SAMPLES = 5
MAX_POINTS = 512
_BASE_KINDS = ("decode", "prefill", "event", "unparsed")


class Downsampled:
    """(x of a bucket's first sample, mean y) points; when full, neighbouring buckets merge
    and the stride doubles. Only a bucket's first sample needs its x."""

    def __init__(self, max_points: int = MAX_POINTS) -> None:
        self.max_points = max_points
        self.stride = 1
        self.points: list[tuple[float, float]] = []
        self._x = 0.0
        self._sum = 0.0
        self._n = 0

    def extend(self, ys: Sequence[float], x_of: Callable[[int], float]) -> None:
        """Add `ys` in order; `x_of(i)` is the x of `ys[i]`, asked only at a bucket's start.
        Sums are sequential, as one `+=` per sample would give."""
        i, n = 0, len(ys)
        while i < n:
            if self._n == 0:
                self._x = x_of(i)
            take = min(self.stride - self._n, n - i)
            self._sum = reduce(operator.add, islice(ys, i, i + take), self._sum)
            self._n += take
            i += take
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


class _Mark(Enum):
    NO_DECODE = "no decode"


# `Part.last_key` of a part without decode records: an enum member, so that it is still itself
# in a part a reading process pickled (a bare `object()` would come back as another object)
_NO_DECODE = _Mark.NO_DECODE


@dataclass
class Part:
    """What one block of lines adds to the summary; line numbers are absolute (see `shift`)."""

    lines: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    engines: Counter[str] = field(default_factory=Counter)
    first_ts: str | None = None
    last_ts: str | None = None
    gens: Sequence[float] = field(default_factory=list)  # gen throughput of decode records, in order
    gen_ts: Sequence[str | None] = field(default_factory=list)  # and their stamps
    gen_ranks: list[str | None] = field(default_factory=list)  # and ranks (empty: no ranks)
    gen_lines: Sequence[int] = field(default_factory=list)  # and their lines
    gen_lines_shift: int = 0  # what `shift` added to `gen_lines` (read where one is asked for)
    peak: tuple[int, int] | None = None  # (index into gens of the block's first maximum, line)
    last_decode: Record | None = None
    cached: int = 0
    new: int = 0
    events: list[Record] = field(default_factory=list)  # every event record, `args` included
    unparsed: list[Record] = field(default_factory=list)  # the block's first few
    incomplete: int = 0  # stats records missing a field their family always prints, or damaged
    incomplete_samples: list[Record] = field(default_factory=list)  # the block's first few
    accepts: list[float] = field(default_factory=list)  # speculative acceptance lengths, in order
    accept_rates: list[float] = field(default_factory=list)
    hit_rates: list[float] = field(default_factory=list)  # printed prefix-cache hit rates (vLLM)
    tflops: list[float] = field(default_factory=list)  # estimated decode TFLOP/s per GPU, in order
    occupancy: list[float] = field(default_factory=list)  # forward occupancy (0..1), in order
    candidates: list[Candidate] = field(default_factory=list)  # decode records for alerts
    first_key: object = _NO_DECODE  # thinning key of the block's first decode record
    last_key: object = _NO_DECODE  # and of its last
    last_ranks: set[str | None] = field(default_factory=set)  # ranks kept in its last bucket
    first_stats: Record | None = None  # the block's first decode or prefill record
    last_stats: Record | None = None  # and its last

    def shift(self, offset: int) -> None:
        """Add `offset` to every line number (a block counted from 1 by another process)."""
        if not offset:
            return
        if self.peak is not None:
            self.peak = (self.peak[0], self.peak[1] + offset)
        self.gen_lines_shift += offset
        recs = [self.last_decode, self.first_stats, self.last_stats, *self.events,
                *self.unparsed, *self.incomplete_samples]
        for cand in self.candidates:
            cand.shift(offset)
            if isinstance(cand.payload, dict):
                recs.append(cand.payload)
        seen: set[int] = set()
        for rec in recs:  # a record can be both the last decode and a candidate: shift it once
            if rec is not None and id(rec) not in seen:
                seen.add(id(rec))
                rec["line"] += offset


def fold_other(part: Part, rec: Record) -> None:
    """Fold a prefill, event, unparsed, spec or other stats record into `part` (counts and
    timestamps excepted)."""
    kind = rec["kind"]
    if kind == "prefill":
        part.cached += rec.get("cached_token") or 0
        part.new += rec.get("new_token") or 0
    elif kind == "event":
        part.events.append(rec)
    elif kind == "unparsed":
        if len(part.unparsed) < MAX_UNPARSED_SAMPLES:
            part.unparsed.append(rec)
    elif kind == "spec":
        fold_accept(part, rec)
    elif kind == "cache":  # vLLM V0's own line of the rate
        fold_hit_rate(part, rec)
    elif kind == "mfu":
        fold_perf(part, rec)


def fold_accept(part: Part, rec: Record) -> None:
    """A record's speculative-decoding acceptance (SGLang's decode line, vLLM's spec line)."""
    length, rate = rec.get("accept_len"), rec.get("accept_rate")
    if length is not None:
        part.accepts.append(length)
    if rate is not None:
        part.accept_rates.append(rate)


def fold_perf(part: Part, rec: Record) -> None:
    """What a server estimates of its decoding per GPU: SGLang's decode line
    (`--enable-mfu-metrics`, the device timer's `fwd occupancy`), vLLM's `MFU:` line."""
    tflops, occupancy = rec.get("tflops_per_gpu"), rec.get("fwd_occupancy")
    if tflops is not None:
        part.tflops.append(tflops)
    if occupancy is not None:
        part.occupancy.append(occupancy)


def fold_hit_rate(part: Part, rec: Record) -> None:
    """A printed prefix-cache hit rate (vLLM's `Prefix cache hit rate: 45.2%` in its stats
    line, V0's `Prefix cache hit rate: GPU: 45.20%, ...` line), a fraction once read."""
    rate = rec.get("prefix_hit_rate")
    if rate is not None:
        part.hit_rates.append(rate)


def fold_incomplete(part: Part, rec: Record) -> None:
    part.incomplete += 1
    if len(part.incomplete_samples) < MAX_UNPARSED_SAMPLES:
        part.incomplete_samples.append(rec)


class PartBuilder:
    """A `Part` from records fed in file order (the reference path; any log shape)."""

    def __init__(self) -> None:
        self.part = Part()

    def feed_all(self, records: Iterable[Record]) -> Part:
        for rec in records:
            self.feed(rec)
        return self.part

    def feed(self, rec: Record) -> None:
        p = self.part
        kind = rec["kind"]
        p.kinds[kind] += 1
        p.engines[rec.get("engine") or "sglang"] += 1
        ts = rec.get("ts")
        if ts:
            p.first_ts = p.first_ts or ts
            p.last_ts = ts
        if kind in STATS_KINDS:  # a log of prefill lines only still ran from its first to last
            p.first_stats = p.first_stats or rec
            p.last_stats = rec
        if kind == "decode":
            self._decode(rec, ts)
            fold_accept(p, rec)
            fold_hit_rate(p, rec)
            fold_perf(p, rec)
        else:
            fold_other(p, rec)
        if rec.get("incomplete"):
            fold_incomplete(p, rec)

    def _decode(self, rec: Record, ts: str | None) -> None:
        p = self.part
        p.last_decode = rec
        key, rank = ts_key(ts), rank_key(rec)
        if p.first_key is _NO_DECODE or key != p.last_key:
            if p.first_key is _NO_DECODE:
                p.first_key = key
            p.last_ranks = set()
        if rank not in p.last_ranks:  # the first line of each rank in each 10 s
            p.last_ranks.add(rank)
            p.candidates.append(Candidate(rec["line"], key, rec, rank))
        p.last_key = key
        gen = rec.get("gen_throughput")
        if gen is None:
            return
        if p.peak is None or gen > p.gens[p.peak[0]]:
            p.peak = (len(p.gens), rec["line"])
        if rank is not None or p.gen_ranks:
            p.gen_ranks.extend([None] * (len(p.gens) - len(p.gen_ranks)))
            p.gen_ranks.append(rank)
        p.gen_lines.append(rec["line"])  # type: ignore[attr-defined]  # a builder's: a list
        p.gens.append(gen)  # type: ignore[attr-defined]
        p.gen_ts.append(ts)  # type: ignore[attr-defined]  # a builder's part holds a list


class LogSummary:
    """Fold parts in file order with `merge`; read the result with `to_dict`."""

    def __init__(self, ref: float) -> None:
        self.ref = ref  # supplies the date a time-only timestamp lacks
        self.lines = 0
        self.kinds: Counter[str] = Counter()
        self.engines: Counter[str] = Counter()
        self.event_counts: Counter[str] = Counter()
        """Each event once: the copies TP/DP ranks print of one (a retraction by 5 ranks) are
        folded as the dashboard folds them (`rank_copy`)."""
        self._counted: deque[Record] = deque(maxlen=FOLD_BACK)
        """The last events counted, each with its ranks so far and its time (`_at`)."""
        self.events: deque[Record] = deque(maxlen=MAX_EVENTS)
        self.unparsed_samples: list[Record] = []
        self.incomplete = 0
        self.incomplete_samples: list[Record] = []
        self.accept = _Mean()
        self.accept_rate = _Mean()
        self.tflops = _Mean()
        self.occupancy = _Mean()
        self.hit_rate = _Mean()
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.peak: dict[str, Any] | None = None
        self.last_decode: Record | None = None
        self.first_stats: Record | None = None
        self.last_stats: Record | None = None
        self._gen_sum = 0.0
        self._gen_n = 0
        self._mean_n = 0  # the samples in `_gen_sum`: a DP log's ramp-in is left out
        self._cached = 0
        self._new = 0
        self._last_key: object = _NO_DECODE
        self._last_ranks: set[str | None] = set()
        self._ranked = RankedGens(ref)
        self.throughput = Downsampled()
        self.alerts = AlertFeed()

    def _count_event(self, ev: Record) -> None:
        """Count an event, and list it, once: another rank's copy of one counted adds to its
        listed line's `rank_copies` (the list showed 11 lines under `retract 2`)."""
        at = ts_to_epoch(ev.get("ts"), self.ref)
        i = copy_of(self._counted, ev, at, lambda e: e["_at"])
        if i is not None:
            last = self._counted[i]
            self._counted[i] = {**last, "ranks": (*last.get("ranks", (last["rank"],)), ev["rank"])}
            listed = last["_listed"]
            listed["rank_copies"] = listed.get("rank_copies", 0) + 1
            return
        self.event_counts[ev["event"]] += 1
        listed = {k: v for k, v in ev.items() if k != "args"}
        self.events.append(listed)
        self._counted.append({**ev, "_at": at, "_listed": listed})

    def merge(self, part: Part) -> None:
        self.lines += part.lines
        self.kinds.update(part.kinds)
        self.engines.update(part.engines)
        self.first_ts = self.first_ts or part.first_ts
        self.last_ts = part.last_ts or self.last_ts
        self._cached += part.cached
        self._new += part.new
        self.last_decode = part.last_decode or self.last_decode
        self.first_stats = self.first_stats or part.first_stats
        self.last_stats = part.last_stats or self.last_stats
        for ev in part.events:
            self._count_event(ev)
        room = MAX_UNPARSED_SAMPLES - len(self.unparsed_samples)
        self.unparsed_samples.extend(part.unparsed[:max(0, room)])
        self.incomplete += part.incomplete
        room = MAX_UNPARSED_SAMPLES - len(self.incomplete_samples)
        self.incomplete_samples.extend(part.incomplete_samples[:max(0, room)])
        self.accept.extend(part.accepts)
        self.accept_rate.extend(part.accept_rates)
        self.tflops.extend(part.tflops)
        self.occupancy.extend(part.occupancy)
        self.hit_rate.extend(part.hit_rates)
        self._gens(part)
        cands = part.candidates
        if cands and part.first_key == self._last_key:
            # continues the previous block's 10-second bucket: its ranks have their line there
            lead = 0
            while lead < len(cands) and cands[lead].key == part.first_key:
                lead += 1
            cands = [c for c in cands[:lead] if c.rank not in self._last_ranks] + cands[lead:]
        self.alerts.add(cands, part.events)
        if part.last_key is not _NO_DECODE:
            if part.last_key == self._last_key and part.first_key == part.last_key:
                self._last_ranks |= part.last_ranks
            else:
                self._last_ranks = set(part.last_ranks)
            self._last_key = part.last_key

    def _gens(self, part: Part) -> None:
        gens = part.gens
        if not gens:
            return
        peak = part.peak
        totals = self._ranked.fold(gens, part.gen_ts, part.gen_ranks, part.gen_lines)
        counted: Sequence[float] = gens
        if totals is not None:  # named DP ranks: each sample is the server's total
            gens, (top, line), counted = totals
            peak = (top, line + part.gen_lines_shift)
        if peak is not None:
            i, line = peak
            if self.peak is None or gens[i] > self.peak["gen_throughput"]:
                self.peak = {"gen_throughput": gens[i], "ts": part.gen_ts[i], "line": line}
        base = self._gen_n

        def x_of(i: int) -> float:
            x = ts_to_epoch(part.gen_ts[i], self.ref)
            return float(base + i + 1) if x is None else x

        self.throughput.extend(gens, x_of)
        self._gen_sum = reduce(operator.add, counted, self._gen_sum)
        self._gen_n += len(gens)
        self._mean_n += len(counted)

    def ranks(self) -> list[str]:
        """The DP ranks (vLLM engines) whose throughput is summed; empty with one."""
        return self._ranked.ranks()

    def _gen_doc(self) -> dict[str, Any]:
        """Peak and mean of the server's throughput; `samples`: its decode lines' sums;
        `ramp_in`: the first of them the mean leaves out (several DP ranks, not all printed
        yet: `dash.core.views.summary_ranks`)."""
        total, n = self._gen_sum, self._mean_n
        pending = self._ranked.pending()
        if pending is not None:  # no rank printed twice: the last sum of the one round
            total, n = total + pending, n + 1
        return {"peak": self.peak, "mean": round(total / n, 2) if n else None,
                "samples": self._gen_n, "ramp_in": self._ranked.ramp_in}

    def _spec(self) -> dict[str, Any] | None:
        """Speculative decoding's acceptance over the log (None when the server ran none)."""
        if not self.accept.n and not self.accept_rate.n:
            return None
        return {"accept_len": self.accept.to_dict(), "accept_rate": self.accept_rate.to_dict()}

    def _perf(self) -> dict[str, Any] | None:
        """What the server estimated of its decoding per GPU over the log (None when it printed
        nothing of it): TFLOP/s and forward occupancy."""
        if not self.tflops.n and not self.occupancy.n:
            return None
        return {"tflops_per_gpu": self.tflops.to_dict(),
                "fwd_occupancy": self.occupancy.to_dict()}

    def prefix_hit(self) -> dict[str, Any] | None:
        """The prefix cache's hit ratio over the log, as `kdash launches` works it out: cached
        over prefill tokens where prefill lines count them (SGLang), else the mean of the rates
        the stats lines print (vLLM); None when the log says neither."""
        total = self._cached + self._new
        if total:
            return {"ratio": round(self._cached / total, 4), "source": "prefill_tokens",
                    "tokens": total}
        if self.hit_rate.n:
            return {"ratio": round(self.hit_rate.total / self.hit_rate.n, 4),
                    "source": "printed_rate", "lines": self.hit_rate.n,
                    "last": self.hit_rate.last}
        return None

    def engine(self) -> str:
        """The engine most records came from (a tie goes to the first name, alphabetically)."""
        counts = sorted(self.engines.items(), key=lambda kv: (-kv[1], kv[0]))
        return counts[0][0] if counts and counts[0][1] else "unknown"

    def to_dict(self) -> dict[str, Any]:
        total = self._cached + self._new
        return {
            "engine": self.engine(),
            "lines": self.lines,
            "records": {**{k: self.kinds.get(k, 0) for k in ("decode", "prefill", "event", "unparsed")},
                        **{k: n for k, n in sorted(self.kinds.items()) if k not in _BASE_KINDS}},
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "gen_throughput": self._gen_doc(),
            "ranks": self.ranks(),
            "last_decode": self.last_decode,
            "prefill": {
                "cached_tokens": self._cached,
                "new_tokens": self._new,
                "cache_hit_ratio": round(self._cached / total, 4) if total else None,
            },
            "prefix_hit": self.prefix_hit(),
            "event_counts": dict(self.event_counts),
            "events": list(self.events),
            "unparsed": self.kinds.get("unparsed", 0),
            "unparsed_samples": [r.get("text") for r in self.unparsed_samples],
            "incomplete": self.incomplete,
            "incomplete_samples": [{"line": r.get("line"), "text": r.get("text"),
                                    "incomplete": r.get("incomplete")}
                                   for r in self.incomplete_samples],
            "spec": self._spec(),
            "perf": self._perf(),
            "alerts": [],
        }


class _Mean:
    """Mean and last of a stream of numbers, summed in order."""

    def __init__(self) -> None:
        self.total = 0.0
        self.n = 0
        self.last: float | None = None

    def extend(self, values: list[float]) -> None:
        if values:
            self.total = reduce(operator.add, values, self.total)
            self.n += len(values)
            self.last = values[-1]

    def to_dict(self) -> dict[str, Any] | None:
        if not self.n:
            return None
        return {"mean": round(self.total / self.n, 4), "last": self.last, "samples": self.n}


def summarize_records(records: Iterable[Record], ref: float, lines: int = 0) -> LogSummary:
    """The summary of a record stream, one record at a time (the reference for the fast path)."""
    summary = LogSummary(ref)
    part = PartBuilder().feed_all(records)
    part.lines = lines
    summary.merge(part)
    return summary
