"""kdash's configuration schema: one frozen `Config` and the alert thresholds, validated.

Pure: values come in as layers of raw settings (a TOML file's table, the flags) and `merge_layers`
turns them into a `Config`, later layers winning. Reading the files, the user's directories and
the environment is `dash.sources.config_files`. A bad value raises `ConfigError` with a one-line
message; the CLI prints it and exits 2.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dash.core.errors import ConfigError, did_you_mean
from dash.core.samples.fieldspec import OutputFields, parse_outputs_table

DEFAULT_URL = "http://127.0.0.1:30000"
"""SGLang's default address: what is polled when neither `--url` nor the log says otherwise."""
DEFAULT_PORTS = {"sglang": 30000, "vllm": 8000}
"""Each engine's default HTTP port."""

MIN_REFRESH_S = 0.2
MIN_NVML_INTERVAL_S = 0.5


@dataclass(frozen=True, slots=True)
class Config:
    """What to watch and how. Every field can be set in TOML under the same name."""

    log: Path | None = None
    """The server log (SGLang or vLLM stdout/stderr redirected to a file), or a glob of them;
    in TOML also a list. The first when there are several (`logs` has them all)."""
    more_logs: tuple[Path, ...] = ()
    """The logs after the first: each is a server of its own (PD prefill and decode, nodes)."""
    url: str | None = None
    """The server's base URL. None: host and port from the log's server_args, else the engine's
    default port; an empty string (`--no-http`) turns HTTP polling off."""
    api_key: str | None = field(default=None, repr=False)
    """The server's API key (its `--api-key`), sent as `Authorization: Bearer KEY`; in TOML
    `[http] api_key`. None: `VLLM_API_KEY` from the environment, where set. Never shown."""
    client_log: Path | None = None
    """The inference client's stdout/stderr log."""
    outputs: tuple[str, ...] = ()
    """Globs of per-partition JSONL output files (or an `[outputs]` table: see `output_fields`)."""
    output_fields: OutputFields = OutputFields()
    """From the `[outputs]` table: field paths, the known token limit, what is expected."""
    inputs: tuple[str, ...] = ()
    """Globs of per-partition prompt files (their line counts are the totals)."""
    expect: Mapping[str, int] = field(default_factory=dict)
    """Partition name -> expected total."""
    process: str | None = None
    """A pattern matched against process command lines (the client script)."""
    gpus: tuple[int, ...] | None = None
    """GPU indices to show; None means all (or CUDA_VISIBLE_DEVICES where set)."""
    refresh: float = 1.0
    """Seconds between screen refreshes."""
    poll: bool = False
    """Poll files instead of inotify (NFS, overlay filesystems)."""
    backfill_bytes: int = 4 * 1024 * 1024
    """How much of the server log's end to read at start, so charts have history at once."""
    http_interval: float = 2.0
    nvml_interval: float = 1.0
    nvml_process_interval: float = 5.0
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    bell: bool = True
    """Ring the terminal bell on a new warn or crit alert."""
    on_alert: str | None = None
    """A command run (without a shell) for each new alert, with the alert as JSON on stdin."""
    webhook: str | None = None
    """A URL that receives a Slack-compatible `{"text": ...}` POST for each new alert."""
    alert_history: bool = True
    """Append alerts as JSONL to the state directory (and read the last ones back at start)."""
    state_dir: Path | None = None
    """Where kdash keeps its own files (the alert history, the launches of each log); None: the
    user state directory."""
    alerts: Mapping[str, Any] = field(default_factory=dict)
    """Alert thresholds by name (see README "Alerts")."""

    @property
    def logs(self) -> tuple[Path, ...]:
        """Every server log (or glob) configured, in the order given."""
        return (self.log, *self.more_logs) if self.log is not None else self.more_logs

    def is_empty(self) -> bool:
        """True when nothing to watch is configured."""
        return not (self.log or self.url or self.client_log or self.outputs or self.process)

    @property
    def http_enabled(self) -> bool:
        """Whether the server is polled over HTTP (`url = ""` and `--no-http` turn it off)."""
        return self.url != ""


_PATH_FIELDS = {"log", "client_log", "state_dir"}
_GLOB_FIELDS = {"outputs", "inputs"}
_FLOAT_FIELDS = {"refresh", "http_interval", "nvml_interval", "nvml_process_interval"}
_INT_FIELDS = {"backfill_bytes", "metrics_port"}
_BOOL_FIELDS = {"poll", "bell", "alert_history"}
_STR_FIELDS = {"url", "process", "metrics_host", "on_alert", "webhook"}
FIELD_NAMES = (frozenset(f.name for f in dataclasses.fields(Config))
               - {"more_logs", "output_fields"}) | {"http"}
"""The settings a file or a flag may name (`log` sets `more_logs` too; `output_fields` comes from
the `[outputs]` table; the `[http]` table holds `api_key`)."""
HTTP_TABLE = frozenset({"api_key"})
"""What the `[http]` table may hold."""
MAX_LOGS = 32
"""Server logs one kdash follows (a glob matching more is cut there, and says so)."""


def finite_number(value: Any) -> float | None:
    """`value` as a finite float (a number, or text of one), else None (bools, inf, nan)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def whole_number(value: Any) -> int | None:
    """`value` as an int when it is a whole, finite number (or text of one), else None."""
    number = finite_number(value)
    if number is None or number != int(number):
        return None
    return int(number)


def _http_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _coerce(name: str, value: Any, where: str) -> Any:
    """Turn a raw TOML or flag value into the field's type, or say in one line why not."""
    def bad(kind: str) -> ConfigError:
        return ConfigError(f"{where}: {name} must be {kind}, got {value!r}")

    if value is None:
        return None
    if name == "api_key":  # before the others: no error message may repeat a secret
        if not isinstance(value, str):
            raise ConfigError(f"{where}: api_key must be a string (the server's --api-key)")
        return api_key_of(value, where)
    if name == "log" and isinstance(value, (list, tuple)):
        if not value or not all(isinstance(v, (str, Path)) and str(v) for v in value):
            raise bad("a path, a glob or a list of them")
        return tuple(Path(os.path.expanduser(str(v))) for v in value)
    if name in _PATH_FIELDS:
        if not isinstance(value, (str, Path)) or not str(value):  # "" would be the cwd
            raise bad("a path")
        return Path(os.path.expanduser(str(value)))
    if name in _GLOB_FIELDS:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise bad("a glob or a list of globs")
        return tuple(os.path.expanduser(v) for v in value)
    if name in _FLOAT_FIELDS:
        fvalue = finite_number(value)
        if fvalue is None or fvalue <= 0:
            raise bad("a positive number of seconds")
        return fvalue
    if name in _INT_FIELDS:
        ivalue = whole_number(value)
        if ivalue is None:
            raise bad("a whole number")
        if name == "metrics_port" and not 0 <= ivalue <= 65535:
            raise bad("a port number (0-65535)")
        if ivalue < 0:
            raise bad("a whole number >= 0")
        return ivalue
    if name in _BOOL_FIELDS:
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if name in _STR_FIELDS:
        if not isinstance(value, str):
            raise bad("a string")
        if name in ("url", "webhook") and value and not _http_url(value):
            raise bad("an http:// or https:// URL")
        return value
    if name == "expect":
        return parse_expect(value, where)
    if name == "gpus":
        return parse_gpus(value, where)
    if name == "alerts":
        if not isinstance(value, Mapping):
            raise bad("a table")
        AlertConfig.from_mapping(value, f"{where} [alerts]")  # the file in the error, not later
        return dict(value)
    raise ConfigError(f"{where}: unknown setting {name!r}")  # pragma: no cover


def api_key_of(value: str, where: str) -> str | None:
    """The key as sent in a header: one line of visible characters; "" is no key. The error
    never repeats the value (it is a secret)."""
    key = value.strip()
    if key.lower().startswith("bearer "):
        key = key[7:].strip()  # the whole header value pasted: the key is what follows
    if any(not 0x20 < ord(c) < 0x7f for c in key):
        raise ConfigError(f"{where}: api_key must be printable ASCII with no spaces "
                          "(the server's --api-key)")
    return key or None


def _http_table(value: Any, where: str) -> dict[str, Any]:
    """The `[http]` table's settings, checked: only `api_key` for now."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: http must be a table ([http] api_key = \"...\")")
    for name in value:
        if name not in HTTP_TABLE:
            raise ConfigError(f"{where}: unknown setting {name!r} in [http]"
                              f"{did_you_mean(str(name), HTTP_TABLE)}")
    return dict(value)


def parse_expect(value: Any, where: str = "--expect") -> dict[str, int]:
    """`{"B1": 10000}` from a TOML table, or from flags `["B1=10000", ...]`."""
    out: dict[str, int] = {}
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = []
        for item in value:
            name, sep, n = str(item).partition("=")
            if not sep or not name:
                raise ConfigError(f"{where}: expected NAME=N, got {item!r}")
            items.append((name, n))
    else:
        raise ConfigError(f"{where}: expected NAME=N pairs, got {value!r}")
    for name, n in items:
        count = whole_number(n)
        if count is None:
            raise ConfigError(f"{where}: total for {name!r} must be a whole number, got {n!r}")
        if count < 0:
            raise ConfigError(f"{where}: total for {name!r} must be >= 0, got {count}")
        out[str(name)] = count
    return out


def parse_gpus(value: Any, where: str = "--gpus") -> tuple[int, ...]:
    """`0,3` or `[0, 3]` -> (0, 3)."""
    parts: list[object]
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        parts = [value]
    else:
        raise ConfigError(f"{where}: expected GPU indices like 0,3, got {value!r}")
    indices = [whole_number(p) for p in parts]
    out = tuple(i for i in indices if i is not None)
    if not out or len(out) != len(indices) or any(i < 0 for i in out):
        raise ConfigError(f"{where}: expected GPU indices like 0,3, got {value!r}")
    return out


@dataclass(frozen=True, slots=True)
class AlertConfig:
    """Every alert threshold; set any of them in TOML under `[alerts]` by the same name."""

    clear_after_s: float = 60.0
    """An active alert clears only after its condition has been false this long (hysteresis);
    a confirmed recovery (the server answers again, a stats line arrives) clears it at once."""
    down_polls: int = 3
    """`server_down`: consecutive failed HTTP polls before the server counts as down."""
    silent_after_s: float = 300.0
    """`server_silent`: no decode/prefill line for this long while requests were running."""
    restart_show_s: float = 900.0
    """`server_restarted`: how long the info alert stays up after a restart."""
    incident_show_s: float = 3600.0
    """`server_restarted` after an OOM or crash: the incident line stays at least this long,
    and after that until acknowledged."""
    http_error_polls: int = 3
    """`http_auth` / `http_errors`: polls in a row in which a route's last answer was the same
    error (401, 403, 5xx) before the alert fires."""
    unavailable_after_s: float = 120.0
    """`http_errors` for a 503 ("not ready", overloaded): how much longer it must last after
    those polls; never while the log shows the server starting (a warm-up answers 503)."""
    log_live_s: float = 60.0
    """A decode/prefill line at most this old means the server is running: an unreachable URL is
    then `http_unreachable` (a warning about the URL), not `server_down`."""
    buffered_after_s: float = 120.0
    """`client_log_buffered`: the client log has not grown for this long while an output grew."""
    buffered_min_lines: int = 5
    """`client_log_buffered`: lines an output must gain (since kdash started) to count as growing."""
    plateau_drop: float = 0.30
    """`throughput_plateau`: fractional fall from the peak that counts (0.30 = 30 % below peak)."""
    plateau_after_s: float = 600.0
    """`throughput_plateau`: how long the fall must hold before the alert fires."""
    plateau_window_s: float = 120.0
    """`throughput_plateau`: medians are taken over this window, so single lines cannot fire it."""
    plateau_min_peak: float = 50.0
    """`throughput_plateau`: peaks below this (tok/s) are too small to compare against."""
    plateau_min_points: int = 5
    """`throughput_plateau`: decode lines a window needs before its median counts."""
    kv_bound_usage: float = 0.85
    """`throughput_plateau`: token usage at or above this, with a queue, reads as KV-bound."""
    kv_usage: float = 0.90
    """`kv_saturated`: token usage at or above this (median over `kv_window_s`)."""
    kv_after_s: float = 300.0
    """`kv_saturated`: how long saturation with a growing queue must hold."""
    kv_window_s: float = 120.0
    """`kv_saturated`: window for the usage median and the queue trend."""
    rank_imbalance_usage: float = 0.90
    """`rank_imbalance`: one DP rank's token usage at or above this (median over `rank_window_s`)..."""
    rank_imbalance_gap: float = 0.40
    """`rank_imbalance`: ...while the other ranks' median usage is at least this much lower."""
    rank_imbalance_after_s: float = 180.0
    """`rank_imbalance`: how long the imbalance must hold before the alert fires."""
    rank_window_s: float = 120.0
    """`rank_imbalance`: the window of each rank's usage median."""
    retract_window_s: float = 600.0
    """`retractions`: the window retraction events are counted over."""
    retract_min_events: int = 3
    """`retractions`: events in the window that fire the alert."""
    gpu_free_min_gb: float = 1.0
    """`gpu_headroom_low`: free memory (NVML) below this on any GPU."""
    cuda_graph_min_gb: float = 1.0
    """`gpu_headroom_low`: avail mem after CUDA graph capture (server log) below this."""
    gpu_after_s: float = 30.0
    """`gpu_headroom_low`: how long low free memory must hold."""
    truncated_share: float = 0.10
    """`outputs_truncated`: share of the recent samples that stopped at the token limit."""
    errors_share: float = 0.02
    """`outputs_errors`: share of the recent samples that are error records."""
    empty_share: float = 0.05
    """`outputs_empty`: share of the recent samples with no answer."""
    reasoning_missing_share: float = 0.10
    """`reasoning_missing`: share of the recent samples without reasoning that should have it."""
    invalid_lines: int = 1
    """`outputs_invalid`: complete lines that are not JSON (since start) that fire the alert."""
    outputs_min_samples: int = 20
    """Recent samples a partition needs before its shares count (`outputs_*`, reasoning)."""
    stalled_after_s: float = 600.0
    """`output_stalled`: a running partition's output has not grown for this long."""
    client_errors_window_s: float = 600.0
    """`client_errors`: the window the client log's retries and errors are counted over."""
    client_errors_min: int = 5
    """`client_errors`: retries and errors within the window that fire the alert."""
    client_after_s: float = 30.0
    """`client_missing` / `client_duplicate`: how long the process count must be wrong."""
    done_show_s: float = 1800.0
    """`partition_done`: how long the info alert stays up after the partition finished."""

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "alerts") -> AlertConfig:
        """Build from `Config.alerts`; an unknown name or a bad value is a one-line ConfigError."""
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}
        out: dict[str, Any] = {}
        for name, value in values.items():
            if name not in kinds:
                raise ConfigError(f"{where}: unknown alert setting {name!r}"
                                  f"{did_you_mean(name, kinds)}")
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not math.isfinite(value)):
                raise ConfigError(f"{where}: {name} must be a number, got {value!r}")
            problem = _threshold_problem(name, value)
            if problem:
                raise ConfigError(f"{where}: {name} = {value!r}: {problem}")
            if kinds[name] in (int, "int"):
                value = int(value)
            out[name] = float(value) if kinds[name] in (float, "float") else value
        return cls(**out)


RATIO_THRESHOLDS = frozenset({"plateau_drop", "kv_bound_usage", "kv_usage", "rank_imbalance_usage",
                              "rank_imbalance_gap", "truncated_share", "errors_share",
                              "empty_share", "reasoning_missing_share"})
"""Thresholds that are fractions 0..1 (a usage, a fall from the peak, a share of the samples):
`truncated_share = 10` meant as 10 % would never fire, so it is refused, not taken."""
COUNT_THRESHOLDS = frozenset({"down_polls", "http_error_polls", "client_errors_min", "buffered_min_lines", "plateau_min_points",
                              "retract_min_events", "invalid_lines", "outputs_min_samples"})
"""Thresholds that count things: whole numbers, at least 1."""


def _threshold_problem(name: str, value: float) -> str | None:
    """Why `value` is out of range for the threshold `name`, or None."""
    if name in RATIO_THRESHOLDS and not 0 <= value <= 1:
        if 1 < value <= 100 and value == int(value):  # a percentage, by the look of it
            return f"a ratio 0..1; did you mean {value / 100:.2f}?"
        return "a ratio 0..1"
    if name in COUNT_THRESHOLDS and (value < 1 or int(value) != value):
        return "a count, a whole number of at least 1"
    if name.endswith("_s") and value < 0:
        return "a duration in seconds, 0 or more"
    if value < 0:
        return "must be 0 or more"
    return None


def merge_layers(layers: Sequence[tuple[str, Mapping[str, Any]]]) -> Config:
    """One Config from layers of raw settings, `(where, values)`, later layers winning.

    `where` names the layer in error messages (a file's path, or "flags"); None values are
    ignored. The `expect` and `alerts` tables merge key by key across layers.
    """
    merged: dict[str, Any] = {}
    for where, layer in layers:
        for name, value in layer.items():
            if value is None:
                continue
            if name not in FIELD_NAMES:
                raise ConfigError(f"{where}: unknown setting {name!r}"
                                  f"{did_you_mean(name, FIELD_NAMES)}")
            if name == "http":
                layer_http = _http_table(value, where)
                if layer_http.get("api_key") is not None:
                    merged["api_key"] = _coerce("api_key", layer_http["api_key"],
                                                f"{where} [http]")
                continue
            if name == "outputs" and isinstance(value, Mapping):
                files, merged["output_fields"] = parse_outputs_table(
                    value, where, merged.get("output_fields"))
                if files is None:
                    continue
                value = files
            coerced = _coerce(name, value, where)
            if name in ("expect", "alerts") and name in merged:
                coerced = {**merged[name], **coerced}
            if name == "log":  # one path, or several: the first and the rest
                paths = coerced if isinstance(coerced, tuple) else (coerced,)
                if len(paths) > MAX_LOGS:
                    raise ConfigError(f"{where}: at most {MAX_LOGS} server logs, got {len(paths)}")
                merged["more_logs"] = tuple(p for p in dict.fromkeys(paths[1:]) if p != paths[0])
                coerced = paths[0]
            merged[name] = coerced
    cfg = Config(**merged)
    if cfg.refresh < MIN_REFRESH_S:
        raise ConfigError(f"refresh must be at least {MIN_REFRESH_S} s, got {cfg.refresh}")
    if cfg.nvml_interval < MIN_NVML_INTERVAL_S:
        raise ConfigError(
            f"nvml_interval must be at least {MIN_NVML_INTERVAL_S} s (NVML holds a driver lock), "
            f"got {cfg.nvml_interval}"
        )
    AlertConfig.from_mapping(cfg.alerts)  # a bad threshold is a one-line error now, not at start-up
    return cfg
