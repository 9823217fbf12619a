"""What one launch achieved, from its stats lines, in bounded memory: `FiguresAccumulator`.

Throughput is judged as the plateau rule judges it (`dash.core.alerts.rules_throughput`): medians
over a window of decode lines (`plateau_window_s`, at least `plateau_min_points` lines), never
single lines, which jump by tens of percent from one to the next. Every `sample_s` of log time
the window's medians (throughput, running, queued, token usage) become one sample; the peak is
the highest sample, and the steady figure the median of the last stable stretch of samples (all
within `STEADY_BAND` of each other for at least `steady_min_s`). The samples are a bounded list
that halves its resolution when it fills up, so a days-long launch costs what an hour does.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping
from typing import Any

from dash.core.alerts.rules_throughput import window_median
from dash.core.launch import LaunchFigures, span
from dash.core.series import SeriesView
from dash.core.state.ranks import RankTable, rank_key
from dash.core.state.server_stats import fullest_pool

SAMPLE_S = 10.0
"""Log seconds between two samples of the windowed medians."""
MAX_SAMPLES = 720
"""Samples kept (two hours at 10 s); when full, every other one goes and the spacing doubles."""
STEADY_MIN_S = 300.0
"""A stretch shorter than this gives no steady figure: it may still be warming up or falling."""
STEADY_BAND = 1.25
"""A stable stretch: its highest windowed median at most this times its lowest (about +-11%)."""
MAX_WINDOW_POINTS = 4096
"""Decode lines kept for the current window (a very busy log prints hundreds a minute)."""
END_PREFILL_S = 60.0
"""A failure is told with the largest prefill of this many seconds before it."""
RANK_FOLD_S = 5.0
"""One retraction printed by several TP ranks within this many seconds counts once."""

_STATS = ("gen_throughput", "running_req", "queue_req", "token_usage")


def _num(rec: Mapping[str, Any], key: str) -> float | None:
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class _Mean:
    __slots__ = ("n", "total")

    def __init__(self) -> None:
        self.n, self.total = 0, 0.0

    def add(self, value: float | None) -> None:
        if value is not None:
            self.n += 1
            self.total += value

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None


class FiguresAccumulator:
    """Folds one launch's stats records (in file order, with their times) into its figures."""

    def __init__(self, window_s: float = 120.0, min_points: int = 5,
                 steady_min_s: float = STEADY_MIN_S) -> None:
        self.window_s = window_s
        self.min_points = min_points
        self.steady_min_s = steady_min_s
        self.sample_s = SAMPLE_S
        # One (times, values) pair of deques per series, trimmed to the window: a sample then
        # hands each to the plateau rule's median as a view, copied at C speed.
        self._window = tuple((deque[float](maxlen=MAX_WINDOW_POINTS),
                              deque[float](maxlen=MAX_WINDOW_POINTS)) for _ in _STATS)
        self._samples: list[tuple[float, tuple[float | None, ...]]] = []
        self._next_sample: float | None = None
        self._first_decode: float | None = None
        self._last_decode: float | None = None
        self._decodes = 0
        self._ranks = RankTable()
        """Each DP rank's latest line: with several, the figures are the whole server's sums
        (as the charts' are, `dash.core.state.server_stats`)."""
        self._top: float | None = None
        self._retractions = 0
        self._retracted = 0
        self._last_retract: tuple[float | None, set[str]] | None = None
        self._cached = self._new = 0
        self._hit_rate = _Mean()
        self._accept = _Mean()
        self._max_prefill: int | None = None
        self._recent_prefills: deque[tuple[float, int]] = deque(maxlen=256)
        self._before_end: int | None = None
        self._ended = False
        self._cache: LaunchFigures | None = None

    # -- feeding ----------------------------------------------------------------------------

    def decode(self, rec: Mapping[str, Any], t: float | None) -> None:
        self._cache = None
        self._decodes += 1
        self._accept.add(_num(rec, "accept_len"))
        self._hit_rate.add(_num(rec, "prefix_hit_rate"))
        if t is None:
            # A line without a stamp is placed nowhere in time (no window, no rank sums), but
            # the highest line needs none: its own figure, as `summary` and `--once` count it.
            gen = _num(rec, "gen_throughput")
            if gen is not None and (self._top is None or gen > self._top):
                self._top = gen
            return
        if self._first_decode is None:
            self._first_decode = t
        self._last_decode = t if self._last_decode is None else max(self._last_decode, t)
        figures = self._server_figures(rec, "decode", t)
        if figures is None:
            return
        gen = figures.get("gen_throughput")
        if gen is None or isinstance(gen, bool):
            return
        self._top = gen if self._top is None or gen > self._top else self._top
        oldest = t - self.window_s
        for key, (times, values) in zip(_STATS, self._window, strict=True):
            v = figures.get(key)
            if v is not None and not isinstance(v, bool):
                times.append(t)
                values.append(v)
            while times and times[0] < oldest:
                times.popleft()
                values.popleft()
        if self._next_sample is None or t >= self._next_sample:
            self._sample(t)

    def _server_figures(self, rec: Mapping[str, Any], kind: str,
                        t: float) -> Mapping[str, Any] | None:
        """The line's own figures while one rank prints; the live ranks' totals once several
        do (None: a line the rank table did not keep). A hybrid model's usage is its fullest
        pool's, as the dashboard's."""
        rec = fullest_pool(rec)
        ts = rec.get("ts")
        kept = self._ranks.update(rank_key(rec), t, ts if isinstance(ts, str) else None, kind,
                                  rec)
        if not self._ranks.multi:
            return rec
        if not kept:
            return None
        tot = self._ranks.totals()
        return {"gen_throughput": tot.gen_throughput, "running_req": tot.running_req,
                "queue_req": tot.queue_req, "token_usage": tot.token_usage}

    def prefill(self, rec: Mapping[str, Any], t: float | None) -> None:
        self._cache = None
        if t is not None:
            self._server_figures(rec, "prefill", t)  # a rank's running and queue are news too
        new, cached = rec.get("new_token"), rec.get("cached_token")
        if isinstance(new, int) and not isinstance(new, bool):
            self._new += new
            self._max_prefill = new if self._max_prefill is None else max(self._max_prefill, new)
            if t is not None and not self._ended:
                self._recent_prefills.append((t, new))
        if isinstance(cached, int) and not isinstance(cached, bool):
            self._cached += cached

    def cache(self, rec: Mapping[str, Any]) -> None:
        """vLLM V0's prefix-cache line (V1 prints the rate in its stats line)."""
        self._cache = None
        self._hit_rate.add(_num(rec, "prefix_hit_rate"))

    def spec(self, rec: Mapping[str, Any]) -> None:
        """vLLM's speculative decoding line (SGLang's acceptance is on its decode lines)."""
        self._cache = None
        self._accept.add(_num(rec, "accept_len"))

    def retract(self, rec: Mapping[str, Any], t: float | None) -> None:
        self._cache = None
        rank = str(rec.get("rank") or "")
        last = self._last_retract
        if (last is not None and rank and rank not in last[1] and t is not None
                and last[0] is not None and abs(t - last[0]) <= RANK_FOLD_S):
            last[1].add(rank)  # the same retraction, printed by the next rank
            return
        self._last_retract = (t, {rank})
        self._retractions += 1
        n = rec.get("retracted_req")
        if isinstance(n, int) and not isinstance(n, bool):
            self._retracted += n

    def ended(self, t: float | None) -> None:
        """The launch died at `t`: keep the largest prefill of the minute before."""
        self._cache = None
        if self._ended:
            return
        self._ended = True
        recent = [n for at, n in self._recent_prefills if t is None or at >= t - END_PREFILL_S]
        self._before_end = max(recent) if recent else None

    def _sample(self, t: float) -> None:
        self._next_sample = t + self.sample_s
        medians: list[float | None] = []
        for times, values in self._window:
            view = SeriesView(tuple(times), tuple(values))
            medians.append(window_median(view, self.window_s, self.min_points, end=t)
                           if view.t else None)
        if medians[0] is None:
            return
        self._samples.append((t, tuple(medians)))
        if len(self._samples) >= MAX_SAMPLES:
            self._samples = self._samples[::2]
            self.sample_s *= 2

    # -- reading ----------------------------------------------------------------------------

    def figures(self) -> LaunchFigures:
        """The figures so far (cached until the next record)."""
        if self._cache is None:
            self._cache = self._compute()
        return self._cache

    def _compute(self) -> LaunchFigures:
        samples = self._samples
        peak = max(samples, key=lambda s: s[1][0] or 0.0) if samples else None
        # A gap in the decode lines (an idle server) ends a stretch: it was not steady, it paused.
        gap = max(2 * self.window_s, 3 * self.sample_s)
        stretch = steady_stretch(samples, self.steady_min_s, max_gap=gap)
        over = samples[stretch[0]:stretch[1] + 1] if stretch else samples
        decode_s = (None if self._first_decode is None or self._last_decode is None
                    else self._last_decode - self._first_decode)
        total = self._cached + self._new
        hit = self._cached / total if total else self._hit_rate.mean
        return LaunchFigures(
            peak=peak[1][0] if peak else None, peak_at=peak[0] if peak else None,
            peak_line=self._top,
            steady=_median(over, 0) if stretch else None,
            steady_s=samples[stretch[1]][0] - samples[stretch[0]][0] if stretch else None,
            steady_note=None if stretch else self._why_not_steady(decode_s),
            **self._levels(over),
            decode_s=decode_s, decode_lines=self._decodes, retractions=self._retractions,
            retracted_reqs=self._retracted, prefix_hit=hit, accept_len=self._accept.mean,
            max_prefill=self._max_prefill, prefill_before_end=self._before_end,
        )

    def _levels(self, over: list[tuple[float, tuple[float | None, ...]]]) -> dict[str, float | None]:
        """Median running, queued and usage: of the windowed figures, or, for a launch too
        short for one (seven decode lines), of its lines as printed: `-` beside lines that
        print `#running-req: 1` reads as a figure the log lacks."""
        if over:
            return {"running": _median(over, 1), "queued": _median(over, 2),
                    "usage": _median(over, 3)}
        lines = [float(statistics.median(values)) if values else None
                 for _, values in self._window[1:]]
        return {"running": lines[0], "queued": lines[1], "usage": lines[2]}

    def _why_not_steady(self, decode_s: float | None) -> str:
        need = span(self.steady_min_s)
        if not self._samples:
            return "no throughput figures" if not self._decodes else \
                "too few decode lines for a windowed figure"
        covered = self._samples[-1][0] - self._samples[0][0]
        if covered < self.steady_min_s:
            if decode_s is None or self._first_decode is None:
                return f"too short: {span(covered)} of throughput figures, {need} needed"
            # The first windowed figure comes a window after the first decode line: count
            # that in what is needed, or "5m06s of decode lines, 5m00s needed" reads as a lie.
            lead = max(0.0, self._samples[0][0] - self._first_decode)
            return (f"too short: {span(decode_s)} of decode lines, "
                    f"{span(self.steady_min_s + lead)} needed")
        return f"never settled for {need}"


def _median(samples: list[tuple[float, tuple[float | None, ...]]], i: int) -> float | None:
    values = [x for _, v in samples if (x := v[i]) is not None]
    return float(statistics.median(values)) if values else None


def steady_stretch(samples: list[tuple[float, tuple[float | None, ...]]],
                   min_s: float, band: float = STEADY_BAND,
                   max_gap: float = float("inf")) -> tuple[int, int] | None:
    """(first, last) indexes of the most recent stretch of samples, at least `min_s` long,
    whose throughput medians stay within `band` (highest / lowest) of each other, with no two
    neighbours more than `max_gap` apart."""
    for end in range(len(samples) - 1, -1, -1):
        lo = hi = samples[end][1][0] or 0.0
        start = end
        while start > 0:
            g = samples[start - 1][1][0] or 0.0
            if (max(hi, g) > band * min(lo, g)
                    or samples[start][0] - samples[start - 1][0] > max_gap):
                break
            lo, hi, start = min(lo, g), max(hi, g), start - 1
        if samples[end][0] - samples[start][0] >= min_s:
            return start, end
        if start == 0:
            return None  # every earlier stretch is shorter than this one
    return None
