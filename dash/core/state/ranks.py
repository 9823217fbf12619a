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
import statistics
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
# `DP3` in `DP3 TP3 EP3`, `Worker_DP1_TP0`, `EngineCore_DP0`; not `MOE_DP2` (MoE data parallel)
# nor `ATTN_DP`-like dimensions with a prefix.
_DP = re.compile(r"(?<![A-Za-z0-9])(?<!MOE_)DP(\d+)(?![0-9])")
_KEYS: dict[str, str | None] = {}


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
        m = _DP.search(tag)
        key = f"DP{int(m.group(1))}" if m else None
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

    def update(self, t: float, ts: str | None, kind: str, rec: Mapping[str, Any]) -> None:
        self.at, self.ts = t, ts
        self.lines += 1
        for name in _FIELDS:
            if name == "gen_throughput" and kind != "decode":
                continue  # a prefill line says nothing of decoding
            value = _num(rec, name)
            if value is not None:
                self.values[name] = value
        usage = self.values.get("token_usage")
        if usage is not None and _num(rec, "token_usage") is not None:
            self.usage.append(t, usage)
        if kind == "decode":
            if self.last_decode_at is not None and t >= self.last_decode_at:
                self.gaps.append(t - self.last_decode_at)
                if len(self.gaps) >= 2:
                    self.interval = max(1.0, statistics.median(self.gaps))
            self.last_decode_at = t


@dataclass(frozen=True, slots=True)
class Totals:
    """The server's figures at one line (what its series get)."""

    gen_throughput: float | None
    running_req: float | None
    queue_req: float | None
    token_usage: float | None
    token_usage_mean: float | None
    tokens: float | None


class RankTable:
    """Each rank's latest stats line; `totals()` is the server's figures over the live ones."""

    def __init__(self) -> None:
        self._ranks: dict[str | None, _Rank] = {}
        self._newest = float("-inf")

    @property
    def multi(self) -> bool:
        """More than one rank has printed stats."""
        return len(self._ranks) > 1

    def clear(self) -> None:
        """Forget every rank (the server restarted: its ranks start over)."""
        self._ranks.clear()
        self._newest = float("-inf")

    def remap(self, fn: Callable[[float], float]) -> None:
        """Move every time kept to the log's newly learned clock."""
        for r in self._ranks.values():
            r.at = fn(r.at)
            if r.last_decode_at is not None:
                r.last_decode_at = fn(r.last_decode_at)
            r.usage.remap(fn)
        if self._ranks:
            self._newest = max(r.at for r in self._ranks.values())

    def update(self, key: str | None, t: float, ts: str | None, kind: str,
               rec: Mapping[str, Any]) -> bool:
        """Take one stats record of rank `key` at clock time `t`; False when it was not kept."""
        rank = self._ranks.get(key)
        if rank is None:
            if len(self._ranks) >= MAX_RANKS:
                return False
            rank = self._ranks[key] = _Rank(at=t)
        rank.update(t, ts, kind, rec)
        self._newest = max(self._newest, t)
        return True

    def _default_interval(self) -> float:
        known = [r.interval for r in self._ranks.values() if r.interval is not None]
        return statistics.median(known) if known else DEFAULT_INTERVAL_S

    def _live(self, rank: _Rank, default: float) -> bool:
        interval = rank.interval if rank.interval is not None else default
        return self._newest - rank.at <= max(MIN_DROP_S, DROP_INTERVALS * interval)

    def totals(self) -> Totals:
        """Sums over the live ranks; usage the highest and the mean."""
        default = self._default_interval()
        live = [r.values for r in self._ranks.values() if self._live(r, default)]
        sums: dict[str, float | None] = {}
        for name in ("gen_throughput", "running_req", "queue_req", "tokens"):
            known = [v[name] for v in live if name in v]
            sums[name] = sum(known) if known else None
        usage = [v["token_usage"] for v in live if "token_usage" in v]
        return Totals(sums["gen_throughput"], sums["running_req"], sums["queue_req"],
                      max(usage) if usage else None,
                      sum(usage) / len(usage) if usage else None, sums["tokens"])

    def snapshot(self) -> ServerNow | None:
        """The frozen figures and every rank's latest line; None before the first line."""
        if not self._ranks:
            return None
        default = self._default_interval()
        ranks = tuple(
            RankNow(rank=key, at=r.at, ts=r.ts, gen_throughput=r.values.get("gen_throughput"),
                    running_req=r.values.get("running_req"), queue_req=r.values.get("queue_req"),
                    token_usage=r.values.get("token_usage"), tokens=r.values.get("tokens"),
                    interval_s=r.interval, live=self._live(r, default), lines=r.lines,
                    token_usage_history=r.usage.view())
            for key, r in sorted(self._ranks.items(), key=lambda kv: _order(kv[0])))
        t = self.totals()
        return ServerNow(at=self._newest, gen_throughput=t.gen_throughput,
                         running_req=t.running_req, queue_req=t.queue_req,
                         token_usage=t.token_usage, token_usage_mean=t.token_usage_mean,
                         tokens=t.tokens, ranks=ranks)
