"""Server log lines -> records (DESIGN.md "Record schema"); pure, one line at a time.

`parse_line` returns a record dict with `kind` in {"decode", "prefill", "event", "unparsed"}
and the common keys `line`, `ts`, `rank`, `engine`, or None for a line of no interest
(uvicorn access lines, progress bars, blank lines). A line that looks like stats but does not
parse is an `unparsed` record, so format drift shows instead of vanishing. Lines are capped in
length before any regex runs; no input makes it raise.

`INTEREST` / `INTEREST_BYTES` name every keyword a record can come from: a line without one
of them is never a record, which lets a reader skip the bulk of a large log at C speed.
"""

from __future__ import annotations

import re
from typing import Any

from dash.core.log.events import parse_event
from dash.core.log.prefix import Prefix, clean, split_prefix
from dash.core.log.stats import parse_decode, parse_prefill, parse_vllm_stats

Record = dict[str, Any]

MAX_LINE_CHARS = 32_768  # server_args dumps run to ~10 KB; anything longer is cut
MAX_TEXT_CHARS = 2_000  # `message` / `text` kept in a record

# Every record comes from a line holding one of these (checked on the raw line).
KEYWORDS = (
    "batch", "#running-req", "throughput", "server_args", "ServerArgs", "non-default args",
    "Load weight end", "model weights took", "loading took", "KV Cache", "KV cache",
    "max_total_num_tokens", "blocks: ", "Maximum concurrency", "Capture ", "ready to roll",
    "vLLM API server", "memory", "Memory", "Traceback", "Error", "ERROR", "error",
    "Exception", "exception", "CRITICAL", "FATAL", "atchdog", "sigquit", "SIGQUIT", "SIGTERM",
    "Killed", "Shutting down", "Finished server process", "Retract", "retraction",
    "preempted", "crashed", "died unexpectedly", "fatal", "Health check failed",
)
INTEREST = re.compile("|".join(re.escape(k) for k in KEYWORDS))
INTEREST_BYTES = re.compile("|".join(re.escape(k) for k in KEYWORDS).encode())

_STATS_HINTS = ("Decode batch", "Prefill batch", "#running-req", "gen throughput",
                "Avg prompt throughput", "Avg generation throughput")


def _base(kind: str, lineno: int, pre: Prefix, engine: str) -> Record:
    return {"kind": kind, "line": lineno, "ts": pre.ts, "rank": pre.rank, "engine": engine}


def _stats(msg: str) -> tuple[str, dict[str, Any], str] | None:
    """(kind, fields, engine) for a stats message, or None."""
    if "Decode batch" in msg or msg.startswith("#running-req"):
        fields = parse_decode(msg)
        return ("decode", fields, "sglang") if fields else None
    if "Prefill batch" in msg:
        fields = parse_prefill(msg)
        return ("prefill", fields, "sglang") if fields else None
    if "Avg prompt throughput" in msg:
        fields = parse_vllm_stats(msg)
        return ("decode", fields, "vllm") if fields else None
    return None


def parse_line(text: str, lineno: int = 0) -> Record | None:
    """One log line -> a record, or None for a line of no interest. Never raises."""
    raw = text[:MAX_LINE_CHARS]
    if "batch" not in raw and not INTEREST.search(raw):
        return None
    line = clean(raw)
    pre = split_prefix(line)
    msg = pre.message
    stats = _stats(msg)
    if stats is not None:
        kind, fields, engine = stats
        rec = _base(kind, lineno, pre, pre.engine or engine)
        rec.update(fields)
        return rec
    event = parse_event(msg, pre.level)
    if event is not None:
        rec = _base("event", lineno, pre, pre.engine or "sglang")
        rec["event"] = event.pop("event")
        rec["message"] = msg.strip()[:MAX_TEXT_CHARS]
        rec.update(event)
        return rec
    if any(h in msg for h in _STATS_HINTS):
        rec = _base("unparsed", lineno, pre, pre.engine or "sglang")
        rec["text"] = line[:MAX_TEXT_CHARS]
        return rec
    return None
