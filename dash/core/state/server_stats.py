"""A server's stats lines as its charts: the series, the throughput peak, the ranks' figures.

Every decode or prefill line updates its rank's latest figures (`dash.core.state.ranks`); the
series get the whole server's: with one rank the line's own values (exactly what it printed),
with several the sums over the live ranks and the highest rank's token usage. The peak is the
whole server's too. Points are placed at the line's clock time; when the log's clock turns out
to be another (`dash.core.state.log_clock`), `remap` moves them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dash.core.series import Series, SeriesView
from dash.core.snapshot import Peak, ServerNow
from dash.core.state.ranks import RankTable, rank_key

SERIES = ("gen_throughput", "running_req", "queue_req", "token_usage", "accept_len")
"""The charts' series; acceptance length (speculative decoding) is each line's own, not a sum."""
ROLE_CHECKS = 64
"""Stats lines looked at for PD fields: a PD server prints them on every line."""
_LEVELS = ("running_req", "queue_req", "token_usage")
# Fields only a PD-disaggregated server prints (SGLang 0.4.6+), by the kind of line.
_ROLE_FIELDS = {
    "decode": ("decode", ("prealloc_req", "transfer_req", "prealloc_usage")),
    "prefill": ("prefill", ("bootstrap_req", "inflight_req", "unbootstrapped_req",
                            "transferring_req")),
}


def _num(rec: Mapping[str, Any], key: str) -> float | None:
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


_OTHER_POOLS = ("swa_token_usage", "mamba_usage")


def fullest_pool(rec: Mapping[str, Any]) -> Mapping[str, Any]:
    """A hybrid model's line prints each pool's usage; the record's `token_usage` is the full
    pool's (as printed). The charts, figures and `kv_saturated` take the fullest pool's, as
    SGLang's own gauge does (`get_max_pool_usage`): a sliding-window pool at 0.98 beside a
    full one at 0.20 is a cache that is full."""
    if not any(k in rec for k in _OTHER_POOLS):
        return rec
    values = [v for v in (rec.get("token_usage"), *map(rec.get, _OTHER_POOLS))
              if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return {**rec, "token_usage": max(values)} if values else rec


class ServerStats:
    """Series, peak and ranks of one server log. Use from one thread only."""

    def __init__(self, history: int = 4096) -> None:
        self.series = {name: Series(history) for name in SERIES}
        self.peak: Peak | None = None
        self.ranks = RankTable()
        self.role: str | None = None
        """"prefill" or "decode" once a PD-only field was seen."""
        self._role_checks = ROLE_CHECKS

    def add(self, rec: Mapping[str, Any], kind: str, t: float) -> None:
        """One decode or prefill record at clock time `t`."""
        rec = fullest_pool(rec)
        ts = rec.get("ts")
        ts = ts if isinstance(ts, str) else None
        kept = self.ranks.update(rank_key(rec), t, ts, kind, rec)
        if self._role_checks:
            self._note_role(rec, kind)
        values: Mapping[str, Any]
        if self.ranks.multi:
            if not kept:
                return
            tot = self.ranks.totals()
            values = {"gen_throughput": tot.gen_throughput, "running_req": tot.running_req,
                      "queue_req": tot.queue_req, "token_usage": tot.token_usage}
        else:
            values = rec  # one rank: the line's own figures, exactly as printed
        if kind == "decode":
            gen = _num(values, "gen_throughput")
            if gen is not None:
                self.series["gen_throughput"].append(t, gen)
                if self.peak is None or gen > self.peak.gen_throughput:
                    self.peak = Peak(gen, t, ts)
        for name in _LEVELS:
            value = _num(values, name)
            if value is not None:
                self.series[name].append(t, value)

    def _note_role(self, rec: Mapping[str, Any], kind: str) -> None:
        self._role_checks -= 1
        role, fields = _ROLE_FIELDS.get(kind, ("", ()))
        if any(f in rec for f in fields):
            self.role, self._role_checks = role, 0

    def restart(self) -> None:
        """The server started again: its ranks start over, and so does the peak."""
        self.ranks.clear()
        self.peak = None

    def remap(self, fn: Callable[[float], float]) -> None:
        """Every point placed so far moves to the log's newly learned clock."""
        for s in self.series.values():
            s.remap(fn)
        self.ranks.remap(fn)
        if self.peak is not None:
            self.peak = Peak(self.peak.gen_throughput, fn(self.peak.at), self.peak.ts)

    def views(self) -> dict[str, SeriesView]:
        return {name: s.view() for name, s in self.series.items()}

    def now(self) -> ServerNow | None:
        return self.ranks.snapshot()
