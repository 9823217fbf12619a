"""A summary's throughput samples as the whole server's, in a log of several DP ranks.

Each sample that names a rank (a `DP3` tag, a vLLM engine index) becomes the sum of every
rank's latest line at that point (`dash.core.state.ranks`), worked out in file order as the
summary's parts are merged; samples before the first named rank are as printed, the last few of
them seeding the ranks. Every path a block takes (one process or several, the record-by-record
fold or the column one) gives the same samples this way.

The mean leaves out the ramp-in: until a rank prints its second line, not every rank has
printed, and the sums of those first lines are part of the server (DP0 alone, then DP0 and
DP2, ...): the first round's last sum, with every rank in it, is the first the mean counts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from dash.core.log.timestamps import ts_to_epoch
from dash.core.state.ranks import GAPS_KEPT, RankTable

Peak = tuple[int, int]
"""(index of the highest sample, its line)."""


class RankedGens:
    """The ranks seen so far, and the samples they turn into totals."""

    def __init__(self, ref: float) -> None:
        self._table = RankTable()
        self._keys: set[str | None] = set()
        self._ranked = False  # a sample named a rank: from then on every sample is a total
        self._unranked: deque[tuple[float, str | None]] = deque(maxlen=GAPS_KEPT + 1)
        self._clock = ref  # supplies the day a time-only stamp lacks
        self._round: set[str | None] = set()  # the ranks of the first round, until one repeats
        self._round_done = False
        self._round_last: float | None = None  # the first round's latest sum, not yet counted
        self.ramp_in = 0
        """Sums of the first round the mean leaves out (every rank's line not in them yet)."""

    def fold(self, gens: Sequence[float], gen_ts: Sequence[str | None],
             gen_ranks: Sequence[str | None], gen_lines: Sequence[int]
             ) -> tuple[list[float], Peak, list[float]] | None:
        """A part's samples as the server's totals, their peak (its line as `gen_lines` holds
        it) and the totals the mean counts, in order; None while the log has named no rank
        (its samples are the server's as printed)."""
        if not gen_ranks and not self._ranked:
            self._keys.add(None)
            keep = GAPS_KEPT + 1
            self._unranked.extend(zip(gens[-keep:], gen_ts[-keep:], strict=True))
            return None
        self._keys.update(gen_ranks or (None,))
        out: list[float] = []
        counted: list[float] = []
        ranks = gen_ranks or [None] * len(gens)
        for gen, ts, rank in zip(gens, gen_ts, ranks, strict=True):
            if not self._ranked:
                if rank is None:
                    self._unranked.append((gen, ts))
                    out.append(gen)
                    counted.append(gen)
                    continue
                self._ranked = True
                for seed_gen, seed_ts in self._unranked:
                    self._add(None, seed_gen, seed_ts)
            self._add(rank, gen, ts)
            total = self._table.total_gen() or 0.0
            out.append(total)
            if not self._round_done:
                if rank not in self._round:
                    self._round.add(rank)
                    if self._round_last is not None:
                        self.ramp_in += 1  # the sum before this one lacked this rank
                    self._round_last = total
                    continue
                self._round_done = True  # a rank's second line: every rank has printed
                if self._round_last is not None:
                    counted.append(self._round_last)
                    self._round_last = None
            counted.append(total)
        top = out.index(max(out))
        return out, (top, gen_lines[top] if gen_lines else 0), counted

    def pending(self) -> float | None:
        """The first round's last sum where no rank has printed twice yet (a short log): the
        mean's only sample then."""
        return self._round_last

    def _add(self, rank: str | None, gen: float, ts: str | None) -> None:
        t = ts_to_epoch(ts, self._clock) if ts else None
        self._clock = self._clock if t is None else t
        self._table.update(rank, self._clock, ts, "decode", {"gen_throughput": gen})

    def ranks(self) -> list[str]:
        """The DP ranks (vLLM engines) whose throughput is summed; empty with one."""
        if len(self._keys) < 2:
            return []
        now = self._table.snapshot()
        named = [r.rank for r in now.ranks if r.rank is not None] if now else []
        return named or sorted(k for k in self._keys if k is not None)
