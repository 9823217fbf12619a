"""The server log as state: charts, peak, last decode/prefill, events, startup facts, restarts.

`ServerLogTracker.feed` takes parser records (`dash.core.log.parse.parse_line` output) in file order.
Series are stamped with each record's own time where the line has one, so a backfilled log draws
its real history; records without a timestamp take `now`. A live follower also says when the
file was last written (`written_at`): from that the tracker learns the log's clock
(`dash.core.state.log_clock`), and every time it keeps is on kdash's clock, whatever zone or
rate the stamps are in. The figures are the whole server's, its data-parallel ranks summed
(`dash.core.state.server_stats`). Everything is bounded (ring buffers, a capped event deque),
so a days-long log costs constant memory.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from dash.core.linenums import WINDOW_KEY, resolved
from dash.core.log.events import preempted
from dash.core.snapshot import Record, ServerLogSnapshot
from dash.core.state.launch_capacity import Allocations
from dash.core.state.log_clock import LogTimes
from dash.core.state.ranks import tag_indexes
from dash.core.state.server_stats import SERIES, ServerStats

__all__ = ["RANK_FOLD_S", "SERIES", "STATS_KINDS", "ServerLogTracker", "copy_of", "rank_copy"]

RANK_FOLD_S = 5.0
"""Copies of one event from several ranks within this many seconds are shown as one."""
FOLD_BACK = 16
"""How many recent events a copy may fold into: ranks interleave their startup lines (four
ranks' `KV Cache is allocated` among their `Memory pool end`), so the copy of an event is not
always the line just before it."""
STATS_KINDS = ("decode", "prefill")
PERF_KEYS = ("accept_rate", "tflops_per_gpu", "gbps_per_gpu", "read_gbps_per_gpu",
             "write_gbps_per_gpu", "fwd_occupancy")
"""Decoding figures a server estimates on its decode (SGLang), spec or MFU (vLLM) lines."""
_PERF_KINDS = ("decode", "spec", "mfu")  # a prefill line's TFLOPS is the prefill's
AHEAD_S = 60.0
"""A stamp this far ahead of the clock is another time zone's: its age cannot be told from it."""
NOT_A_LOG_LINES = 100
"""Lines read with no timestamp and no stats line among them before the file is called no
server log (the shortest real crash tail without stamps is a 14-line traceback)."""


def prefixed(rec: Mapping[str, Any]) -> bool:
    """A record whose line has a server log's prefix: a stamp or a rank tag."""
    return rec.get("ts") is not None or bool(rec.get("rank"))


def is_not_a_log(lines: int, events: int, logged: int) -> bool:
    """Many lines, events read off them, and not one line a server log would print (`logged`:
    stamped or rank-tagged lines and stats lines): its events are words in some other text (a
    README's table naming `CUDA out of memory`). One judgement for the dashboard, `summary`
    and `launches`."""
    return lines >= NOT_A_LOG_LINES and events > 0 and logged == 0

# Facts kept from startup events: event -> (record key, fact name). Memory figures are per rank;
# the smallest across ranks is the one that matters (the first GPU to run out).
_FACT_KEYS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "server_args": (("model", "model"), ("tp_size", "tp_size"), ("dp_size", "dp_size"),
                    ("mem_fraction_static", "mem_fraction_static"),
                    ("gpu_memory_utilization", "gpu_memory_utilization"),
                    ("kv_cache_dtype", "kv_cache_dtype"), ("hicache_size", "hicache_size"),
                    ("max_running_requests", "max_running_requests"),
                    ("context_length", "context_length"), ("port", "port")),
    "kv_cache": (("max_total_num_tokens", "max_total_num_tokens"), ("tokens", "kv_tokens"),
                 ("dtype", "kv_dtype"), ("kv_size_gb", "kv_size_gb"),
                 ("max_prefill_tokens", "max_prefill_tokens"),
                 ("max_running_requests", "max_running_requests"),
                 ("context_len", "context_length"), ("gpu_blocks", "gpu_blocks"),
                 ("hicache_host_gb", "hicache_host_gb"),
                 ("gpu_memory_utilization", "gpu_memory_utilization")),  # vLLM's memory profile
    "load_weights": (("mem_usage_gb", "weights_mem_gb"),),
}
_MIN_FACTS = {"avail_mem_gb", "load_avail_mem_gb", "available_gpu_mem_gb"}
_LAUNCH_FACTS = {*_MIN_FACTS, "mem_fraction_static", "gpu_memory_utilization",
                 "max_total_num_tokens", "kv_tokens", "kv_size_gb", "gpu_blocks",
                 "hicache_host_gb", "weights_mem_gb", "tp_seen", "dp_seen"}
"""Facts one launch measured or was sized with: a restart forgets them until the new start
prints its own, so nothing quotes the old server's figures as the new one's."""
_BEFORE_KEYS = {"mem_fraction_static", "gpu_memory_utilization", "avail_mem_gb",
                "max_total_num_tokens", "kv_dtype", "max_running_requests", "context_length",
                "tp_size", "dp_size", "port"}


def _num(rec: Mapping[str, Any], key: str) -> float | None:
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class ServerLogTracker:
    """Mutable state of one server log; `snapshot()` freezes it. Use from one thread only."""

    def __init__(self, path: str | None = None, *, history: int = 4096,
                 max_events: int = 200, name: str | None = None) -> None:
        self.path = path
        self.name = name
        """What the screen calls this server among several (None: the only one)."""
        self._stats = ServerStats(history)
        self._times = LogTimes()
        self._events: deque[Record] = deque(maxlen=max_events)
        self._frozen_events: tuple[Record, ...] | None = None  # shared by snapshots until it changes
        self._facts: dict[str, Any] = {}
        self._allocated = Allocations()  # this launch's KV pools and weights, per rank
        self._rank_tags: dict[str, tuple[tuple[str, int], ...]] = {}
        """Each rank tag's parallelism figures, worked out once (a log has a few tags)."""
        self._last_decode: Record | None = None
        self._last_prefill: Record | None = None
        self._perf: dict[str, float] = {}
        self._last_record_at: float | None = None
        self._arrived_at: float | None = None
        self._stamps_ahead = False
        self._fed_records = False
        self._reached_end = False
        """A follower's read has reached the file's end: reads before it (a backfill taken in
        several reads) are the log's history, not lines written while kdash watched."""
        self._last_stamp: tuple[float, str] | None = None
        """Time and text of the last timestamped record, for lines that carry none."""
        self._feeds = self._stamp_feed = 0
        self._file_at: float | None = None
        """When this read's lines were written at the latest (the file's last write): the time
        of a line with no stamp of its own, which a first read must not take as "now"."""
        self._engine: str | None = None
        self._engines: dict[str, int] = {}
        """Records per engine named: a line without a prefix (a traceback printed raw, its
        `torch.OutOfMemoryError` among them) is read as SGLang's, so the engine is the one
        most records name, or a vLLM server's OOM would be told SGLang's flags."""
        self._lines = self._records = self._unparsed = self._restarts = 0
        self._records_stats = 0
        self._stamped = 0
        """Records with a server log's prefix (a stamp, a rank tag), and reads whose
        last line was stamped: with the stats lines, what says the file is a server log."""
        self._started_at: float | None = None
        self._ready = False
        """The ready banner was seen since the last start."""
        self._busy = False
        """Ready banner or stats lines seen since the last server_args line."""
        self._status = "ok"
        self._status_message: str | None = None

    def feed(self, records: Iterable[Record | None], now: float, lines: int | None = None, *,
             written_at: float | None = None, last_stamp: str | None = None,
             file_at: float | None = None, stamp_last: bool = True) -> None:
        """Apply records in file order. None items are lines of no interest (counted as lines).

        `lines`: the number of raw lines these records came from, when the caller counted them.
        `written_at`: when the file was last written (clock time), when these records are the
        file's end as a follower read it: its last stamp was "now" on the log's clock then.
        `last_stamp`: that stamp, the last line's (of interest or not); without it, the last
        record's, when the last line is a stamped record.
        `file_at`: when the file was last written, even for a read that has not reached its end:
        no line read was written later, so a line without a stamp is placed there, not at `now`
        (a log with no stamps, last written an hour ago, is an hour old).
        `stamp_last`: `last_stamp` is the last line's (else lines without a stamp, a progress
        bar, came after it, and it was written some time before the file's last write).
        """
        self._file_at = None if file_at is None else min(file_at, now)
        if last_stamp is not None:
            self._stamped += 1  # a stamped line, of interest or not (vLLM's request lines)
        if written_at is not None:
            records = records if isinstance(records, (list, tuple)) else list(records)
            self._learn_clock(records, written_at, now, last_stamp, stamp_last)
        count = 0
        self._feeds += 1
        stats_before = self._records_stats
        # A follower's reads (they say when the file was written) are history until one reaches
        # the file's end: a backfill of 4 MB comes in two reads, and the second is no news.
        first = not self._fed_records or (file_at is not None and not self._reached_end)
        if written_at is not None:
            self._reached_end = True
        for rec in records:
            count += 1
            if rec is None or not isinstance(rec, Mapping):
                continue
            self._fed_records = True
            self._apply(rec, now)
        if self._records_stats != stats_before and not first:
            # Lines that arrive while kdash follows the log are news, whatever their stamps say
            # (a log in another time zone); the first read is history and goes by its stamps.
            self._arrived_at = now
        self._lines += count if lines is None else lines

    @property
    def restarts(self) -> int:
        """Server restarts seen in this log."""
        return self._restarts

    def note_file(self, status: str, message: str | None, now: float) -> None:
        """The log file's own state: "ok", "waiting" (not there yet), "missing", "rotated", ..."""
        self._status = status
        self._status_message = message

    def window_counted(self, base: int | None) -> None:
        """The lines before the backfill window were counted (`dash.core.linenums`): the kept
        records of the window get their true numbers (None: they never will)."""
        if self._last_decode is not None:
            self._last_decode = resolved(self._last_decode, base)
        if self._last_prefill is not None:
            self._last_prefill = resolved(self._last_prefill, base)
        events = [resolved(e, base) for e in self._events]
        if any(a is not b for a, b in zip(events, self._events, strict=True)):
            self._events = deque(events, maxlen=self._events.maxlen)
            self._frozen_events = None

    def reset_peak(self) -> None:
        """Forget the peak (the user pressed reset, or the server restarted)."""
        self._stats.peak = None

    def _learn_clock(self, records: Sequence[Record | None], written_at: float,
                     now: float, last_stamp: str | None, exact: bool = True) -> None:
        """The last stamp of a read against when the file was written: the log's clock.

        Only the last line's stamp will do: an idle server's log ends in HTTP access lines (a
        health check every few seconds), and its last stats line may be hours old."""
        ts = last_stamp
        if ts is None and records and isinstance(records[-1], Mapping):
            ts = records[-1].get("ts")
        if not exact and self._past_startup(records):
            # Lines without a stamp after the last stamped one put its write at some time
            # before the file's: a guess that holds while a server starts (a progress bar as
            # weights load, seconds after the line before). An idle server's last stats line
            # may be hours older than a warning appended now: 3h04m taught "UTC-3".
            return
        if isinstance(ts, str) and ts:
            moved = self._times.learn(ts, written_at, now, exact)
            if moved is not None:
                self._remap(moved)

    def _past_startup(self, records: Sequence[Record | None]) -> bool:
        """Whether the server has printed its ready banner or a stats line since its last
        start, counting these records (not applied yet)."""
        busy = self._busy
        for rec in records:
            if not isinstance(rec, Mapping):
                continue
            kind = rec.get("kind")
            if kind in STATS_KINDS:
                busy = True
            elif kind == "event":
                event = rec.get("event")
                busy = event == "ready" or (busy and event != "server_args")
        return busy

    def _remap(self, fn: Callable[[float], float]) -> None:
        """Move every time kept so far onto the log's newly learned clock."""
        self._stats.remap(fn)
        for name in ("_last_record_at", "_started_at"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, fn(value))
        if self._last_stamp is not None:
            self._last_stamp = (fn(self._last_stamp[0]), self._last_stamp[1])
        self._events = deque(({**e, "at": fn(e["at"])} if isinstance(e.get("at"), float) else e
                              for e in self._events), maxlen=self._events.maxlen)
        self._frozen_events = None

    def _time(self, rec: Mapping[str, Any], now: float) -> float:
        """The record's own time on kdash's clock (the log's clock as learned), else when the
        file was last written (else `now`); an event line without a stamp (a traceback's last
        line) takes the time of the stamped line before it, which is when it happened."""
        ts = rec.get("ts")
        unstamped = now if self._file_at is None else self._file_at
        if not isinstance(ts, str) or not ts:
            if rec.get("kind") == "event" and self._stamp_fresh():
                assert self._last_stamp is not None
                return self._last_stamp[0]
            return unstamped
        t = self._times.time_of(ts, now)
        if t is None:
            return unstamped
        self._last_stamp = (t, ts)
        self._stamp_feed = self._feeds
        return t

    def _stamp_fresh(self) -> bool:
        """The last stamped line came in this same read (not an hour ago on an idle server)."""
        return self._last_stamp is not None and self._stamp_feed == self._feeds

    def _apply(self, rec: Mapping[str, Any], now: float) -> None:
        kind = rec.get("kind")
        if kind == "unparsed" or rec.get("incomplete"):
            self._unparsed += 1  # an incomplete stats record is counted, and still read
        if kind not in ("decode", "prefill", "event", "spec", "mfu"):
            return
        self._records += 1
        if prefixed(rec):
            self._stamped += 1
        engine = rec.get("engine")
        if isinstance(engine, str):
            n = self._engines[engine] = self._engines.get(engine, 0) + 1
            if self._engine is None or n > self._engines.get(self._engine, 0):
                self._engine = engine
        t = self._time(rec, now)
        if self._started_at is None:
            self._started_at = t
        rank = rec.get("rank")
        if rank:
            self._note_rank(rank)
        if kind == "event":
            self._apply_event(dict(rec), t)
        elif kind in STATS_KINDS:
            self._apply_stats(rec, kind, t, now)
            retract = preempted(rec)
            if retract is not None:  # vLLM V1's preemptions, counted on its stats line
                self._apply_event(retract, t)
        self._accept(rec, t)

    def _accept(self, rec: Mapping[str, Any], t: float) -> None:
        """Speculative decoding's acceptance length: on SGLang's decode lines, vLLM's spec lines;
        and the last decoding figures the server estimates as printed (`PERF_KEYS`)."""
        length = _num(rec, "accept_len")
        if length is not None:
            self._stats.series["accept_len"].append(t, length)
        if rec.get("kind") in _PERF_KINDS:
            for key in PERF_KEYS:
                value = _num(rec, key)
                if value is not None:
                    self._perf[key] = value

    def _apply_stats(self, rec: Mapping[str, Any], kind: str, t: float, now: float) -> None:
        self._busy = True
        self._records_stats += 1
        record = dict(rec)
        if kind == "decode":
            self._last_decode = record
        else:
            self._last_prefill = record
        self._stats.add(rec, kind, t)
        # A log stamped ahead of our clock (another time zone) must not look fresher than now,
        # nor than the file's last write: no line in it was written later (a copy, or a zone
        # the stamps cannot be put in, is at least that old).
        written = self._file_at
        self._last_record_at = min(t, now if written is None else written)
        self._stamps_ahead = written is None and t > now + AHEAD_S

    def _apply_event(self, rec: Record, t: float) -> None:
        event = rec.get("event")
        if event == "server_args":
            if self._busy or self._ready:
                self._restart(rec, t, "server started again")
            self._busy = False
            # a start that died before it was ready is no restart, yet its pools were its own
            self._allocated = Allocations()
        elif event == "ready":
            if self._ready:
                self._restart(rec, t, "ready banner again")
            self._ready = self._busy = True
            self._started_at = t
        elif event == "restart":
            self._restart(rec, t, str(rec.get("message") or "restart"))
            return
        self._merge_facts(rec)
        rec["at"] = t
        if not rec.get("ts") and self._stamp_fresh():
            assert self._last_stamp is not None
            rec["near_ts"] = self._last_stamp[1]  # the stamp of the line before, for showing
        self._append_event(rec)

    def _append_event(self, rec: Record) -> None:
        """Keep an event; the same event from the next TP rank moments later folds into it.

        With TP 8 every startup line comes eight times; kept apart they would push everything
        else out of the short list of recent events. The folded event lists its ranks.
        """
        i = copy_of(self._events, rec, rec["at"])
        if i is not None:
            last = self._events[i]
            ranks = (*last.get("ranks", (last["rank"],)), rec.get("rank"))
            self._events[i] = {**last, "ranks": ranks}  # replaced, not mutated: snapshots share it
        else:
            self._events.append(rec)
        self._frozen_events = None

    def _restart(self, rec: Mapping[str, Any], t: float, why: str) -> None:
        """A new server start after one was up: count it, keep totals, reset peak and baselines."""
        self._restarts += 1
        self._ready = self._busy = False
        self._started_at = t
        self._stats.restart()
        self._perf.clear()
        # What the server that ended ran with: the incident line after a crash names it, and the
        # new start's lines replace these facts.
        before = {k: v for k, v in self._facts.items() if k in _BEFORE_KEYS}
        for key in _LAUNCH_FACTS:
            self._facts.pop(key, None)
        self._allocated = Allocations()
        self._frozen_events = None
        event = {
            "kind": "event", "event": "restart", "line": rec.get("line"), "ts": rec.get("ts"),
            "rank": None, "engine": rec.get("engine"), "at": t, "restarts": self._restarts,
            "message": f"server restarted ({why}); restart #{self._restarts}", "before": before,
        }
        if WINDOW_KEY in rec:
            event[WINDOW_KEY] = rec[WINDOW_KEY]
        self._events.append(event)

    def _merge_facts(self, rec: Mapping[str, Any]) -> None:
        event = str(rec.get("event"))
        for key, fact in _FACT_KEYS.get(event, ()):
            value = rec.get(key)
            if value is not None:
                self._facts[fact] = value
        # Several pools or models on a GPU (a sliding-window model's two pools, a draft model
        # after its target): the memory is their sum, the tokens the largest pool's but a draft's
        if event == "kv_cache" and "pool" in rec and self._allocated.add_pool(rec):
            self._facts["kv_size_gb"] = self._allocated.kv_gb()
            tokens = self._allocated.kv_tokens()
            if tokens is not None:
                self._facts["kv_tokens"] = tokens
            self._merge_memory(rec, event)
            return
        if event == "load_weights" and self._allocated.add_weights(rec):
            self._facts["weights_mem_gb"] = self._allocated.weights_gb()
        if event == "server_args" and isinstance(rec.get("args"), Mapping):
            self._facts.setdefault("model", rec["args"].get("model_path"))
            _args_facts(self._facts, rec["args"])
        if event == "kv_cache" and "kv_size_gb" not in rec:
            k, v = _num(rec, "k_size_gb"), _num(rec, "v_size_gb")
            if k is not None and v is not None:
                self._facts["kv_size_gb"] = round(k + v, 2)
        self._merge_memory(rec, event)

    def _merge_memory(self, rec: Mapping[str, Any], event: str) -> None:
        """The GPU memory left at each stage of the start, the smallest across ranks."""
        if event == "cuda_graph" and rec.get("phase") == "end":
            self._min_fact("avail_mem_gb", _num(rec, "avail_mem_gb"))
        elif event == "load_weights":
            self._min_fact("load_avail_mem_gb", _num(rec, "avail_mem_gb"))
        elif event == "kv_cache":
            self._min_fact("available_gpu_mem_gb", _num(rec, "available_gpu_mem_gb"))
            if rec.get("tokens") is not None:  # a pool sized after capture: what is left now
                self._min_fact("avail_mem_gb", _num(rec, "avail_mem_gb"))
        if "avail_mem_gb" not in self._facts and "available_gpu_mem_gb" in self._facts:
            # The capacity line's figure is taken after CUDA graph capture too.
            self._facts["avail_mem_gb"] = self._facts["available_gpu_mem_gb"]
        if event == "server_args" and rec.get("kv_cache_dtype"):
            # What this start asked for; a later `KV Cache is allocated. dtype: ...` line (0.5.13+)
            # says what it got. Set on every start, so a restart with fp8 KV does not show `auto`.
            self._facts["kv_dtype"] = rec["kv_cache_dtype"]

    def _note_rank(self, rank: str) -> None:
        """The parallelism the log's rank tags show (`TP7` -> `tp_seen` 8, `DP3` -> `dp_seen`
        4): at least that many, the facts beside a server whose arguments are not in the log
        (an excerpt, a log begun after the start). `TP0` alone says nothing (tp 1 prints it)."""
        seen = self._rank_tags.get(rank)
        if seen is None:
            seen = tuple((f"{kind.lower()}_seen", n + 1) for kind, n in tag_indexes(rank))
            if len(self._rank_tags) < 4096:  # tags repeat; a bounded cache of their figures
                self._rank_tags[rank] = seen
        for fact, n in seen:
            if n > 1 and n > self._facts.get(fact, 0):
                self._facts[fact] = n

    def _min_fact(self, name: str, value: float | None) -> None:
        if value is None:
            return
        old = self._facts.get(name)
        self._facts[name] = value if old is None else min(old, value)

    def not_a_log(self) -> bool:
        """Many lines, events read off them, and not one line a server log would print: none
        stamped or tagged with a rank, no stats line. Its events are words in some
        other text (a README's table naming `CUDA out of memory`): a server's log has stamps,
        and a crash tail without them is a few lines of traceback."""
        return is_not_a_log(self._lines, self._records, self._stamped + self._records_stats)

    def snapshot(self, now: float) -> ServerLogSnapshot:
        """A frozen copy of the current state."""
        if self.not_a_log():
            return ServerLogSnapshot(
                name=self.name, path=self.path, lines=self._lines, records=self._records,
                unparsed=self._unparsed, status="not_a_log" if self._status == "ok" else self._status,
                status_message=(f"none of its {self._lines:,} lines has a timestamp or a stats "
                                "line: is this the server's log?") if self._status == "ok"
                else self._status_message, clock=self._times.view(now))
        views = self._stats.views()
        if self._frozen_events is None:
            self._frozen_events = tuple(self._events)
        role = self._facts.get("disaggregation_mode") or self._stats.role
        return ServerLogSnapshot(
            name=self.name, role=role if isinstance(role, str) else None, now=self._stats.now(),
            clock=self._times.view(now),
            path=self.path, engine=self._engine, last_decode=self._last_decode,
            last_prefill=self._last_prefill, perf=MappingProxyType(dict(self._perf)), peak=self._stats.peak, events=self._frozen_events,
            facts=MappingProxyType(dict(self._facts)), last_record_at=self._last_record_at,
            last_record_arrived_at=self._arrived_at, stamps_ahead=self._stamps_ahead,
            lines=self._lines, records=self._records, unparsed=self._unparsed,
            restarts=self._restarts, started_at=self._started_at, status=self._status,
            status_message=self._status_message, **views,
        )


def _args_facts(facts: dict[str, Any], args: Mapping[str, Any]) -> None:
    """Parallelism and PD role from a server-args dump (its top-level keys cover the rest)."""
    mode = args.get("disaggregation_mode")
    if mode in ("prefill", "decode"):
        facts["disaggregation_mode"] = mode
    attn_dp = args.get("attn_dp_size")  # 0.5.22+: DP attention's group count
    if isinstance(attn_dp, int) and attn_dp > 1:
        facts["dp_size"] = attn_dp
    if "enable_hierarchical_cache" in args:  # with hicache_size 0, the ratio sizes the pool
        facts["enable_hierarchical_cache"] = bool(args["enable_hierarchical_cache"])
        if isinstance(args.get("hicache_ratio"), (int, float)):
            facts["hicache_ratio"] = args["hicache_ratio"]


_FIGURES = re.compile(r"\d+(?:[.,]\d+)*")


def copy_of(events: Sequence[Mapping[str, Any]], rec: Mapping[str, Any], at: float | None,
            when: Callable[[Mapping[str, Any]], float | None] = lambda e: e.get("at")
            ) -> int | None:
    """The index of the recent event (one of the last `FOLD_BACK`) that `rec` is another
    rank's copy of (`rank_copy`), or None."""
    if not rec.get("rank"):
        return None
    n = len(events)
    for i in range(n - 1, max(-1, n - 1 - FOLD_BACK), -1):
        if rank_copy(events[i], rec, when(events[i]), at):
            return i
    return None


def rank_copy(last: Mapping[str, Any], rec: Mapping[str, Any], last_at: float | None,
              at: float | None) -> bool:
    """Whether `rec` is another rank's copy of the event `last` (its `ranks` so far, or its
    `rank`): the same event and wording, from a rank not yet in it, within `RANK_FOLD_S`."""
    rank = rec.get("rank")
    return bool(rank and last.get("rank") and last.get("event") == rec.get("event")
                and _wording(last) == _wording(rec)
                and rank not in last.get("ranks", (last.get("rank"),))
                and last_at is not None and at is not None and abs(at - last_at) <= RANK_FOLD_S)


def _wording(event: Mapping[str, Any]) -> str:
    """An event's message without its figures: each rank prints the same line with its own
    numbers (free memory), while one kind of event has several lines (a KV cache's size, then
    its memory pool's end), which must not fold into one."""
    return _FIGURES.sub("#", str(event.get("message", "")))[:120]
