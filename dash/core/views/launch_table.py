"""Launches side by side: the rows of the table the launches view and `kdash launches` show.

One column per launch, in start order; rows grouped in sections: how it went (start, time run,
outcome), the arguments that matter for capacity and speed (then every other argument that
differs between the launches shown), the capacity the server reported, and what it achieved. A
cell is `changed` when its value differs from the launch before (an argument changed between
the two starts); the screen highlights it and marks it `*`, so it shows without colour too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dash.core.launch import Launch, span

MARK = "*"
"""Put before a changed argument's value: the highlight that works without colour."""
NOISE_ARGS = frozenset({"random_seed"})
"""Arguments that differ between starts without anyone changing them (SGLang draws a seed)."""


@dataclass(frozen=True, slots=True)
class Cell:
    text: str
    changed: bool = False


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    section: str
    """"run", "args", "capacity", "achieved"."""
    cells: tuple[Cell, ...]


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """An argument that matters, by the names SGLang and vLLM print it under."""

    label: str
    short: str
    """Its name in the one-line comparison (`mem 0.88 -> 0.90`)."""
    names: tuple[str, ...]


KEY_ARGS = (
    ArgSpec("model", "model", ("model_path", "model")),
    ArgSpec("tp size", "tp", ("tp_size", "tensor_parallel_size")),
    ArgSpec("dp size", "dp", ("dp_size", "data_parallel_size")),
    ArgSpec("ep size", "ep", ("ep_size", "expert_parallel_size", "enable_expert_parallel")),
    ArgSpec("mem fraction", "mem", ("mem_fraction_static", "gpu_memory_utilization")),
    ArgSpec("kv dtype", "kv", ("kv_cache_dtype",)),
    ArgSpec("hicache", "hicache", ("hicache_size", "hicache_ratio", "enable_hierarchical_cache")),
    ArgSpec("max running", "max running", ("max_running_requests", "max_num_seqs")),
    ArgSpec("chunked prefill", "chunked prefill", ("chunked_prefill_size",
                                                    "max_num_batched_tokens")),
    ArgSpec("context", "context", ("context_length", "max_model_len")),
    ArgSpec("cuda graph bs", "cuda graph bs", ("cuda_graph_max_bs", "max_cudagraph_capture_size",
                                                "max_seq_len_to_capture")),
    ArgSpec("spec algorithm", "spec", ("speculative_algorithm", "speculative_config",
                                       "speculative_model")),
    ArgSpec("draft tokens", "draft tokens", ("speculative_num_draft_tokens",
                                             "num_speculative_tokens")),
    ArgSpec("dp attention", "dp attention", ("enable_dp_attention",)),
)
_COVERED = frozenset(n for spec in KEY_ARGS for n in spec.names)


def show_value(value: Any) -> str:
    """An argument's value as the table shows it: None is `auto`, booleans `on`/`off`."""
    if value is None:
        return "auto"
    if value is True:
        return "on"
    if value is False:
        return "off"
    if isinstance(value, float):
        if 0 < value < 1 and round(value, 2) == value:
            return f"{value:.2f}"  # 0.9 as it is typed, --mem-fraction-static 0.90
        return f"{value:g}"
    return str(value)


def _spec_config(args: Mapping[str, Any], key: str) -> Any:
    conf = args.get("speculative_config")
    return conf.get(key) if isinstance(conf, Mapping) else None


def arg_text(launch: Launch, spec: ArgSpec) -> str:
    """The value of one argument that matters, for one launch; `-` where it was not printed
    (no arguments line, or vLLM's non-default list without it: the default)."""
    args = launch.args
    if not args:
        return "-"
    if spec.short == "kv":
        asked = args.get("kv_cache_dtype")
        got = launch.capacity.get("kv_dtype")
        if isinstance(got, str) and asked in (None, "auto"):
            return got  # what `auto` resolved to, as the KV pool line says
        return "-" if asked is None else show_value(asked)
    if spec.short == "hicache":
        return hicache_text(args)
    if spec.short == "context":
        asked = next((args[n] for n in spec.names if n in args), None)
        got = launch.capacity.get("context_len")
        if asked in (-1, "-1", "auto") and isinstance(got, int):
            return f"auto: {got}"  # vLLM's `--max-model-len -1`, and the length it fit
        return "-" if asked is None else show_value(asked)
    if spec.short == "model":
        value = next((args[n] for n in spec.names if n in args), None)
        return "-" if value is None else str(value).rstrip("/").rsplit("/", 1)[-1]
    if spec.short == "spec":
        method = _spec_config(args, "method") or args.get("speculative_algorithm") \
            or args.get("speculative_model")
        return "off" if method is None else str(method)
    if spec.short == "draft tokens":
        n = _spec_config(args, "num_speculative_tokens")
        if n is None:
            n = next((args[k] for k in spec.names if k in args), None)
        return "-" if n is None else show_value(n)
    for name in spec.names:
        if name in args:
            return show_value(args[name])
    return "-"


def hicache_text(args: Mapping[str, Any]) -> str:
    """What a HiCache setting amounts to: `200 GB`, `ratio 2`, `off` (`-`: not printed)."""
    if not any(n in args for n in ("hicache_size", "enable_hierarchical_cache")):
        return "-"
    size = args.get("hicache_size")
    if isinstance(size, (int, float)) and not isinstance(size, bool) and size > 0:
        return f"{size:g} GB"
    if args.get("enable_hierarchical_cache"):
        ratio = args.get("hicache_ratio")
        return f"ratio {show_value(ratio)}"
    return "off"


def other_differing(launches: Sequence[Launch]) -> list[str]:
    """Arguments outside the ones that matter whose values differ between the launches."""
    names: dict[str, None] = {}
    for launch in launches:
        names.update(dict.fromkeys(launch.args))
    out = []
    for name in names:
        if name in _COVERED or name in NOISE_ARGS:
            continue
        values = {show_value(x.args[name]) if name in x.args else "-" for x in launches
                  if x.args}
        if len(values) > 1:
            out.append(name)
    return out


def _cells(texts: Sequence[str], marks: bool) -> tuple[Cell, ...]:
    return tuple(Cell(t, marks and i > 0 and t != texts[i - 1]) for i, t in enumerate(texts))


def _gb(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{v:.2f} GB"


def _int(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{v:,.0f}"


def ran_text(launch: Launch) -> str:
    """`4m10s`; `>4m10s` for a launch begun before the log (it ran at least that), `-` when
    the log holds no time of it."""
    d = launch.duration_s
    if launch.start_seen:
        return span(d)
    return f">{span(d)}" if d else "-"


def ready_text(launch: Launch) -> str:
    """How long the start took to its ready banner (loading, pools, graph capture, compile):
    what a flag costs at every restart; `-` without both lines in the log (a launch whose
    arguments line is not there began before its first line seen)."""
    if (not launch.start_seen or not launch.args or launch.started_at is None
            or launch.ready_at is None):
        return "-"
    return span(max(0.0, launch.ready_at - launch.started_at))


def outcome_text(launch: Launch) -> str:
    """`running`, `OOM 4m10s in`, `crash 2h05m in`, `shutdown`, `stopped`, `log ended`."""
    o = launch.outcome
    if o in ("oom", "crash"):
        when = launch.duration_s if launch.start_seen else None  # how long in: not known
        name = "OOM" if o == "oom" else "crash"
        return f"{name} {span(when)} in" if when is not None else name
    return {"log_ended": "log ended"}.get(o, o)


def start_text(launch: Launch, launches: Sequence[Launch]) -> str:
    """The start's clock time; with its date when the launches span more than one day."""
    ts = launch.start_ts
    if launch.started_at is None:
        return ts or ("before the log" if not launch.start_seen else "-")
    days = {time.strftime("%Y%m%d", time.localtime(x.started_at)) for x in launches
            if x.started_at is not None}
    pattern = "%m-%d %H:%M" if len(days) > 1 else "%H:%M:%S"
    text = time.strftime(pattern, time.localtime(launch.started_at))
    return text if launch.start_seen else f"<{text}"


_CAPACITY: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("KV tokens", "max_total_num_tokens", _int),
    ("KV blocks", "gpu_blocks", _int),
    ("KV size", "kv_size_gb", _gb),
    ("weights", "weights_gb", _gb),
    ("mem after weights", "weights_avail_gb", _gb),
    ("mem after KV pool", "pool_avail_gb", _gb),
    ("mem after graphs", "graph_avail_gb", _gb),
    ("hicache host", "hicache_host_gb", _gb),
)


def _steady(x: Launch) -> str:
    """The steady figure, or in a word why there is none."""
    f = x.figures
    if f.steady is not None:
        return _int(f.steady)
    if not f.decode_lines:
        return "-"
    if (f.steady_note or "").startswith(("too short", "too few")):
        return "not yet" if x.outcome == "running" else "too short"
    return "not yet" if x.outcome == "running" else "unsettled"


def _achieved(x: Launch) -> list[tuple[str, str]]:
    f = x.figures
    retract = str(f.retractions) + (f" ({f.retracted_reqs} reqs)" if f.retracted_reqs else "")
    return [
        # the peak of the windowed medians, as the plateau rule judges one; the header's
        # `peak` is the top single line's, the row below
        ("peak tok/s", _int(f.peak)),
        ("top line tok/s", _int(f.peak_line)),
        ("steady tok/s", _steady(x)),
        ("running", _int(f.running)), ("queued", _int(f.queued)),
        ("token usage", "-" if f.usage is None else f"{f.usage:.2f}"),
        ("retractions", retract if f.decode_lines or f.retractions else "-"),
        ("prefix hit", "-" if f.prefix_hit is None else f"{f.prefix_hit:.0%}"),
        ("accept len", "-" if f.accept_len is None else f"{f.accept_len:.2f}"),
    ]


def table(launches: Sequence[Launch]) -> list[Row]:
    """Every row of the launches table, in display order."""
    rows = [Row("start", "run", _cells([start_text(x, launches) for x in launches], False)),
            Row("ran", "run", _cells([ran_text(x) for x in launches], False)),
            Row("outcome", "run", _cells([outcome_text(x) for x in launches], False))]
    ready = [ready_text(x) for x in launches]
    if any(t != "-" for t in ready):
        rows.insert(2, Row("ready after", "run", _cells(ready, False)))
    if len({x.source for x in launches}) > 1:
        names = [(x.source or "-").rsplit("/", 1)[-1] for x in launches]
        rows.insert(0, Row("log", "run", _cells(names, False)))
    for spec in KEY_ARGS:
        texts = [arg_text(x, spec) for x in launches]
        if set(texts) == {"-"}:
            continue  # no launch printed it (no arguments line)
        if spec.short in ("ep", "dp", "spec", "draft tokens", "dp attention", "cuda graph bs",
                          "hicache") and set(texts) <= {"-", "1", "off", "auto"}:
            continue  # not in use in any of them: a row of dashes says nothing
        rows.append(Row(spec.label, "args", _cells(texts, True)))
    for name in other_differing(launches):
        texts = [show_value(x.args[name]) if name in x.args else "-" for x in launches]
        rows.append(Row(name, "args", _cells(texts, True)))
    for label, key, show in _CAPACITY:
        texts = [show(x.capacity.get(key)) for x in launches]
        if any(t != "-" for t in texts):
            rows.append(Row(label, "capacity", _cells(texts, False)))
    achieved = [_achieved(x) for x in launches]
    for i, (label, _) in enumerate(achieved[0] if achieved else ()):
        texts = [a[i][1] for a in achieved]
        if label in ("accept len", "prefix hit") and set(texts) == {"-"}:
            continue
        rows.append(Row(label, "achieved", _cells(texts, False)))
    return rows
