"""Data-parallel ranks as one server: each rank's latest stats line, and the server's figures.

With `--dp N` (SGLang, DP attention or not) every DP rank prints its own `Decode batch` line,
tagged `DP3 TP3 EP3`; vLLM prints one stats line per engine (`Engine 003:`). The server's
throughput and its running and queued requests are the sums over the ranks' latest lines, and
its token usage is the highest rank's, the one that runs out of KV cache first. A rank that
stopped printing while the others go on drops out of the sums after a few of its own logging
intervals (SGLang prints every 40 decode steps, vLLM every 10 s), measured against the newest
line of any rank, so a server that went idle keeps its last figures rather than dropping all.

A log without ranks has one, keyed None, and its figures are its lines' own.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dash.core.series import Series
from dash.core.snapshot import RankNow, ServerNow

DROP_INTERVALS = 3.0
"""A rank drops out when its latest line is this many of its intervals older than the newest."""
MIN_DROP_S = 10.0
"""Never sooner than this (stamps have whole seconds; fast decoders print every second)."""
DEFAULT_INTERVAL_S = 10.0
"""A rank's interval before two of its decode lines are known (vLLM's own default)."""
GAPS_KEPT = 8
"""Decode-line gaps per rank whose median is its interval."""
MAX_RANKS = 256
"""Ranks kept per server; lines of further ones count in nothing (a garbled tag, not a rank)."""
HISTORY = 512
"""Token-usage points kept per rank (the imbalance rule's window)."""

_FIELDS = ("gen_throughput", "running_req", "queue_req", "token_usage", "tokens")
# `DP3` and `TP3` in `DP3 TP3 EP3`, `Worker_DP1_TP0`, `EngineCore_DP0`; not `MOE_DP2` (MoE
# data parallel) nor `ATTN_DP`-like dimensions with a prefix.
_TAG = re.compile(r"(?<![A-Za-z0-9])(?<!MOE_)(DP|TP)(\d+)(?![0-9])")
_KEYS: dict[str, str | None] = {}


def tag_indexes(tag: str) -> tuple[tuple[str, int], ...]:
    """The data- and tensor-parallel indexes a rank tag names: `DP1 TP3` -> (DP, 1), (TP, 3)."""
    return tuple((m.group(1), int(m.group(2))) for m in _TAG.finditer(tag))


def rank_key(rec: Mapping[str, Any]) -> str | None:
    """The rank a stats record belongs to: vLLM's engine index, else the DP part of the tag."""
    index = rec.get("engine_index")
    if isinstance(index, int) and not isinstance(index, bool):
        return f"engine {index}"
    tag = rec.get("rank")
    if not isinstance(tag, str):
        return None
    key = _KEYS.get(tag, "")
    if key == "":
        dp = next((n for kind, n in tag_indexes(tag) if kind == "DP"), None)
        key = None if dp is None else f"DP{dp}"
        if len(_KEYS) < 4096:  # tags repeat; a bounded cache of their keys
            _KEYS[tag] = key
    return key


_TAIL = re.compile(r"(\d+)$")


def _order(key: str | None) -> tuple[str, int]:
    """`DP2` before `DP10`; the rank-less server first."""
    if key is None:
        return ("", -1)
    m = _TAIL.search(key)
    return (key[:m.start()], int(m.group(1))) if m else (key, 0)


def _num(rec: Mapping[str, Any], key: str) -> float | None:
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


_KIND_FIELDS = {
    "decode": _FIELDS,
    # Prefill says nothing of decoding; its input throughput is a PD prefill server's figure.
    "prefill": (*(f for f in _FIELDS if f != "gen_throughput"), "input_throughput"),
}


def _median(values: deque[float]) -> float:
    """statistics.median, without its overhead (it runs for every decode line of a rank)."""
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


@dataclass
class _Rank:
    at: float
    ts: str | None = None
    values: dict[str, float] = field(default_factory=dict)
    gaps: deque[float] = field(default_factory=lambda: deque(maxlen=GAPS_KEPT))
    last_decode_at: float | None = None
    interval: float | None = None
    lines: int = 0
    usage: Series = field(default_factory=lambda: Series(HISTORY))

    def update(self, t: float, ts: str | None, kind: str, rec: Mapping[str, Any]) -> bool:
        """Take one line; True when its interval changed."""
        self.at, self.ts = t, ts
        self.lines += 1
        values = self.values
        for name in _KIND_FIELDS.get(kind, ()):
            value = rec.get(name)
            if value is not None and not isinstance(value, bool) and isinstance(value, (int, float)):
                values[name] = float(value)
                if name == "token_usage":
                    self.usage.append(t, values[name])
        if kind != "decode":
            return False
        last, self.last_decode_at = self.last_decode_at, t
        if last is None or t < last:
            return False
        self.gaps.append(t - last)
        if len(self.gaps) < 2:
            return False
        interval = max(1.0, _median(self.gaps))
        changed, self.interval = interval != self.interval, interval
        return changed


@dataclass(frozen=True, slots=True)
class Totals:
    """The server's figures at one line (what its series get)."""

    gen_throughput: float | None
    running_req: float | None
    queue_req: float | None
    token_usage: float | None
    token_usage_mean: float | None
    tokens: float | None
    input_throughput: float | None = None


class RankTable:
    """Each rank's latest stats line; `totals()` is the server's figures over the live ones.

    While one rank prints (no DP: almost every log) only its last lines are kept, at the cost of
    a few stores a line; the second rank to print starts the bookkeeping the sums need."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._ranks: dict[str | None, _Rank] = {}
        self._newest = float("-inf")
        self._default: float | None = None  # the ranks' median interval, while it holds
        self._one: str | None = None  # the one rank's key, until a second prints
        self._one_seen = False  # (a flag, not a sentinel: replay checkpoints pickle this)
        self._one_lines = 0
        self._one_last: dict[str, tuple[int, float, str | None, Mapping[str, Any]]] = {}
        """The one rank's last line of each kind (with its order), while it is the only one."""
        self._one_at: tuple[float, str | None] = (0.0, None)

    @property
    def multi(self) -> bool:
        """More than one rank has printed stats."""
        return len(self._ranks) > 1

    def clear(self) -> None:
        """Forget every rank (the server restarted: its ranks start over)."""
        self._reset()

    def remap(self, fn: Callable[[float], float]) -> None:
        """Move every time kept to the log's newly learned clock."""
        for r in self._ranks.values():
            r.at = fn(r.at)
            if r.last_decode_at is not None:
                r.last_decode_at = fn(r.last_decode_at)
            r.usage.remap(fn)
        self._one_last = {k: (n, fn(t), ts, rec) for k, (n, t, ts, rec) in self._one_last.items()}
        self._one_at = (fn(self._one_at[0]), self._one_at[1])
        if self._newest != float("-inf"):
            self._newest = fn(self._newest)

    def update(self, key: str | None, t: float, ts: str | None, kind: str,
               rec: Mapping[str, Any]) -> bool:
        """Take one stats record of rank `key` at clock time `t`; False when it was not kept."""
        if t > self._newest:
            self._newest = t
        if not self._ranks:
            if not self._one_seen:
                self._one, self._one_seen = key, True
            if key == self._one:
                self._one_lines += 1
                self._one_last[kind] = (self._one_lines, t, ts, rec)
                self._one_at = (t, ts)
                return True
            self._promote()
        rank = self._ranks.get(key)
        if rank is None:
            if len(self._ranks) >= MAX_RANKS:
                return False
            rank = self._ranks[key] = _Rank(at=t)
        if rank.update(t, ts, kind, rec):
            self._default = None
        return True

    def _promote(self) -> None:
        """A second rank printed: the first one's last lines become its bookkeeping."""
        first = self._ranks[self._one] = _Rank(at=self._one_at[0], ts=self._one_at[1])
        for kind, (_, t, ts, rec) in sorted(self._one_last.items(), key=lambda kv: kv[1][0]):
            first.update(t, ts, kind, rec)
        first.at, first.ts, first.lines = self._one_at[0], self._one_at[1], self._one_lines
        self._one_last.clear()

    def _default_interval(self) -> float:
        if self._default is None:
            known = [r.interval for r in self._ranks.values() if r.interval is not None]
            self._default = _median(deque(known)) if known else DEFAULT_INTERVAL_S
        return self._default

    def _live(self, rank: _Rank, default: float) -> bool:
        interval = rank.interval if rank.interval is not None else default
        return self._newest - rank.at <= max(MIN_DROP_S, DROP_INTERVALS * interval)

    def total_gen(self) -> float | None:
        """The live ranks' throughput summed (what a summary's samples are)."""
        if not self._ranks:
            last = self._one_last.get("decode")
            return None if last is None else _num(last[3], "gen_throughput")
        default = self._default_interval()
        gens = [r.values["gen_throughput"] for r in self._ranks.values()
                if "gen_throughput" in r.values and self._live(r, default)]
        return sum(gens) if gens else None

    def totals(self) -> Totals:
        """Sums over the live ranks; usage the highest and the mean."""
        if not self._ranks:  # one rank (or none yet): its own figures
            one = self._one_rank() if self._one_seen else RankNow(None, 0.0)
            return Totals(one.gen_throughput, one.running_req, one.queue_req, one.token_usage,
                          one.token_usage, one.tokens, one.input_throughput)
        default = self._default_interval()
        sums: dict[str, float] = {}
        usage: list[float] = []
        for r in self._ranks.values():
            if not self._live(r, default):
                continue
            for name, value in r.values.items():
                if name == "token_usage":
                    usage.append(value)
                else:
                    sums[name] = sums.get(name, 0.0) + value
        return Totals(sums.get("gen_throughput"), sums.get("running_req"), sums.get("queue_req"),
                      max(usage) if usage else None,
                      sum(usage) / len(usage) if usage else None, sums.get("tokens"),
                      sums.get("input_throughput"))

    def _one_rank(self) -> RankNow:
        """The one rank's latest figures: its last decode line's, and the levels (running,
        queue, usage) of whichever line came last."""
        values: dict[str, float] = {}
        for kind, (_, _, _, rec) in sorted(self._one_last.items(), key=lambda kv: kv[1][0]):
            for name in _KIND_FIELDS.get(kind, ()):
                value = _num(rec, name)
                if value is not None:
                    values[name] = value
        at, ts = self._one_at
        return RankNow(rank=self._one, at=at, ts=ts,
                       gen_throughput=values.get("gen_throughput"),
                       running_req=values.get("running_req"), queue_req=values.get("queue_req"),
                       token_usage=values.get("token_usage"), tokens=values.get("tokens"),
                       input_throughput=values.get("input_throughput"), lines=self._one_lines)

    def snapshot(self) -> ServerNow | None:
        """The frozen figures and every rank's latest line; None before the first line."""
        if not self._ranks:
            if not self._one_seen:
                return None
            one = self._one_rank()
            return ServerNow(at=self._newest, gen_throughput=one.gen_throughput,
                             running_req=one.running_req, queue_req=one.queue_req,
                             token_usage=one.token_usage, token_usage_mean=one.token_usage,
                             tokens=one.tokens, input_throughput=one.input_throughput,
                             ranks=(one,))
        default = self._default_interval()
        ranks = tuple(
            RankNow(rank=key, at=r.at, ts=r.ts, gen_throughput=r.values.get("gen_throughput"),
                    running_req=r.values.get("running_req"), queue_req=r.values.get("queue_req"),
                    token_usage=r.values.get("token_usage"), tokens=r.values.get("tokens"),
                    input_throughput=r.values.get("input_throughput"), interval_s=r.interval, live=self._live(r, default), lines=r.lines,
                    token_usage_history=r.usage.view())
            for key, r in sorted(self._ranks.items(), key=lambda kv: _order(kv[0])))
        t = self.totals()
        return ServerNow(at=self._newest, gen_throughput=t.gen_throughput,
                         running_req=t.running_req, queue_req=t.queue_req,
                         token_usage=t.token_usage, token_usage_mean=t.token_usage_mean,
                         tokens=t.tokens, input_throughput=t.input_throughput, ranks=ranks)
