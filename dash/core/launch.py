"""One server start as kdash remembers it: a `Launch`, frozen, and its plain-JSON form.

A launch runs from its `server_args` line (or its first startup line) to the next start, a
crash, a clean shutdown or the end of the log. It keeps what the start asked for (`args`, every
argument the server printed), what the server reported about its capacity (`capacity`), how it
ended (`outcome`) and what it achieved (`figures`): summaries and medians only, never the
records themselves. `dash.core.state.launches` builds them; the JSON form is what the state
directory keeps (`dash.sources.launch_store`) and `--once --json` prints.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dash.core.log.server_args import REDACTED, is_set_secret

OUTCOMES = ("running", "oom", "crash", "shutdown", "stopped", "log_ended")
"""How a launch ended: still `running`; died of `oom` or a `crash`; a clean `shutdown`;
`stopped` (the next start came, or the log was rewritten, with no end logged); `log_ended`
(a finished log read offline ends with it running)."""

CAPACITY_KEYS = ("max_total_num_tokens", "gpu_blocks", "kv_size_gb", "kv_dtype", "weights_gb",
                 "weights_avail_gb", "pool_avail_gb", "graph_avail_gb", "hicache_host_gb")
"""What the server reported at startup: KV tokens (vLLM V0: blocks) and GB, the KV dtype it
allocated, the weights' GB, the GPU memory left after the weights, after the KV pool and after
CUDA graph capture (the smallest across ranks: the first GPU to run out), the HiCache host
pool."""


@dataclass(frozen=True, slots=True)
class LaunchFigures:
    """What a launch achieved; None where the log did not say (or not for long enough)."""

    peak: float | None = None
    """The highest windowed median of generation throughput (tok/s), as the plateau rule
    judges a peak: single lines jump by tens of percent."""
    peak_at: float | None = None
    peak_line: float | None = None
    """The highest throughput at a single decode line (what the dashboard's peak shows: the
    whole server's, its DP ranks summed)."""
    steady: float | None = None
    """The median of the last stable stretch of windowed medians (tok/s)."""
    steady_s: float | None = None
    """How long that stretch lasted."""
    steady_note: str | None = None
    """Why there is no steady figure ("too short: 3 min of decode, 5 min needed")."""
    running: float | None = None
    """Median running requests (over the steady stretch where there is one, else the launch)."""
    queued: float | None = None
    usage: float | None = None
    """Median KV token usage, 0..1."""
    decode_s: float | None = None
    """Time from the first to the last decode line."""
    decode_lines: int = 0
    retractions: int = 0
    """Retraction events (each rank's copy of one counted once)."""
    retracted_reqs: int = 0
    prefix_hit: float | None = None
    """Prefix-cache hit ratio, 0..1: cached / (cached + new) prefill tokens, or vLLM's rate."""
    accept_len: float | None = None
    """Speculative decoding's mean acceptance length (None: no drafter)."""
    max_prefill: int | None = None
    """The largest prefill (new tokens in one prefill line)."""
    prefill_before_end: int | None = None
    """The largest prefill in the minute before the launch died."""


@dataclass(frozen=True, slots=True)
class Launch:
    """One server start."""

    key: str
    """Identity across sessions: the start's stamp (or line) and a digest of its arguments."""
    started_at: float | None = None
    start_ts: str | None = None
    start_line: int | None = None
    start_seen: bool = True
    """False: it began before the part of the log that was read (a backfill window)."""
    engine: str | None = None
    ready_at: float | None = None
    last_at: float | None = None
    """The time of its last record."""
    ended_at: float | None = None
    outcome: str = "running"
    reason: str | None = None
    """The failure's reason (`cuda_oom`, `exception`, `killed`...) or why it stopped
    (`next start`, `log rewritten`)."""
    component: str | None = None
    exception: str | None = None
    """A crash's cause: the Python exception it came with (`AttributeError`), as `server_crash`
    names it; None when the log printed none, or for another outcome."""
    args: Mapping[str, Any] = field(default_factory=dict)
    """Every argument the start printed, as printed (SGLang or vLLM names)."""
    capacity: Mapping[str, Any] = field(default_factory=dict)
    figures: LaunchFigures = LaunchFigures()
    source: str | None = None
    """The log it was read from."""
    earlier: bool = False
    """Remembered from an earlier kdash (the state directory), not read by this one."""

    @property
    def duration_s(self) -> float | None:
        """From its start to its end (or its last record)."""
        end = self.ended_at if self.ended_at is not None else self.last_at
        if self.started_at is None or end is None:
            return None
        return max(0.0, end - self.started_at)

    @property
    def ended(self) -> bool:
        return self.outcome != "running"

    @property
    def order(self) -> tuple[bool, float]:
        """Where it stands among launches in start order: its start, else the earliest time it
        has (a launch whose start is not in its log is placed by its lines, not put last);
        launches with no time at all come after every other."""
        times = [t for t in (self.started_at, self.ready_at, self.figures.peak_at, self.last_at,
                             self.ended_at) if t is not None]
        return (not times, min(times) if times else 0.0)


def span(seconds: float | None) -> str:
    """`45s`, `4m10s`, `2h05m`: a launch's durations (precise enough to tell 4 min from 5)."""
    if seconds is None or seconds != seconds:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def launch_to_json(launch: Launch) -> dict[str, Any]:
    """The launch as plain JSON values (what the state directory and `--json` carry)."""
    doc = {f.name: getattr(launch, f.name) for f in dataclasses.fields(launch)}
    doc["args"] = dict(launch.args)
    doc["capacity"] = {k: _finite(v) for k, v in launch.capacity.items()}
    doc["figures"] = {k: _finite(v) for k, v in dataclasses.asdict(launch.figures).items()}
    doc["duration_s"] = launch.duration_s
    return {k: _finite(v) for k, v in doc.items()}


_NUMBERS = (int, float)
_COUNTS = frozenset({"decode_lines", "retractions", "retracted_reqs"})


def _typed(doc: Mapping[str, Any], name: str, kinds: tuple[type, ...]) -> Any:
    value = doc.get(name)
    if isinstance(value, bool) or not isinstance(value, kinds):
        return None
    return value


def _figures(doc: Any) -> LaunchFigures:
    if not isinstance(doc, Mapping):
        return LaunchFigures()
    values: dict[str, Any] = {}
    for f in dataclasses.fields(LaunchFigures):
        if f.name == "steady_note":
            values[f.name] = _typed(doc, f.name, (str,))
        elif f.name in _COUNTS:
            values[f.name] = _typed(doc, f.name, (int,)) or 0
        else:
            values[f.name] = _finite(_typed(doc, f.name, _NUMBERS))
    return LaunchFigures(**values)


def _without_secrets(args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments read back, a secret kept as `***` (a file written before they were redacted
    at parse time still holds them)."""
    return {k: REDACTED if is_set_secret(k, v) else v
            for k, v in args.items()}


def launch_from_json(doc: Any) -> Launch | None:
    """A launch read back from its JSON form (remembered: `earlier`); None when it is not one
    (a damaged or foreign file)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("key"), str):
        return None
    outcome = doc.get("outcome")
    args, capacity = doc.get("args"), doc.get("capacity")
    return Launch(
        key=doc["key"], started_at=_typed(doc, "started_at", _NUMBERS),
        start_ts=_typed(doc, "start_ts", (str,)), start_line=_typed(doc, "start_line", (int,)),
        start_seen=doc.get("start_seen") is not False, engine=_typed(doc, "engine", (str,)),
        ready_at=_typed(doc, "ready_at", _NUMBERS), last_at=_typed(doc, "last_at", _NUMBERS),
        ended_at=_typed(doc, "ended_at", _NUMBERS),
        outcome=outcome if outcome in OUTCOMES else "stopped",
        reason=_typed(doc, "reason", (str,)), component=_typed(doc, "component", (str,)),
        exception=_typed(doc, "exception", (str,)),
        args=_without_secrets(args) if isinstance(args, Mapping) else {},
        capacity={k: v for k, v in capacity.items() if k in CAPACITY_KEYS}
        if isinstance(capacity, Mapping) else {},
        figures=_figures(doc.get("figures")), source=_typed(doc, "source", (str,)),
        earlier=True,
    )
