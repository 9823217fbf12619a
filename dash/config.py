"""kdash's configuration: one frozen value built from config files and flags.

Precedence, later wins: the user config file (platformdirs), `./kdash.toml`, `--config FILE`,
then flags. A bad value raises `ConfigError` with a one-line message; the CLI prints it and exits 2.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_URL = "http://127.0.0.1:30000"
"""SGLang's default port."""

MIN_REFRESH_S = 0.2
MIN_NVML_INTERVAL_S = 0.5


class ConfigError(ValueError):
    """A configuration problem, stated in one line for the user."""


@dataclass(frozen=True, slots=True)
class Config:
    """What to watch and how. Every field can be set in TOML under the same name."""

    log: Path | None = None
    """The server log (SGLang or vLLM stdout/stderr redirected to a file)."""
    url: str | None = DEFAULT_URL
    """The server's base URL; an empty string disables HTTP polling."""
    client_log: Path | None = None
    """The inference client's stdout/stderr log."""
    outputs: tuple[str, ...] = ()
    """Globs of per-partition JSONL output files."""
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
    """Append alerts as JSONL to the user state directory."""
    alerts: Mapping[str, Any] = field(default_factory=dict)
    """Alert thresholds by name (see README "Alerts")."""

    def is_empty(self) -> bool:
        """True when nothing to watch is configured."""
        explicit_url = bool(self.url) and self.url != DEFAULT_URL
        return not (self.log or explicit_url or self.client_log or self.outputs or self.process)


_PATH_FIELDS = {"log", "client_log"}
_GLOB_FIELDS = {"outputs", "inputs"}
_FLOAT_FIELDS = {"refresh", "http_interval", "nvml_interval", "nvml_process_interval"}
_INT_FIELDS = {"backfill_bytes", "metrics_port"}
_BOOL_FIELDS = {"poll", "bell", "alert_history"}
_STR_FIELDS = {"url", "process", "metrics_host", "on_alert", "webhook"}
FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(Config))


def user_config_path() -> Path:
    """Where the per-user config file lives (e.g. ~/.config/kdash/config.toml)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("kdash")) / "config.toml"


def user_state_dir() -> Path:
    """Where kdash keeps its own files (alert history), never beside watched files."""
    from platformdirs import user_state_dir as _usd

    return Path(_usd("kdash"))


def read_toml(path: Path) -> dict[str, Any]:
    """Read one TOML config file into a dict of raw values."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config file is a directory: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    unknown = sorted(set(data) - FIELD_NAMES)
    if unknown:
        raise ConfigError(f"{path}: unknown setting {unknown[0]!r}")
    return data


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
    if name in _PATH_FIELDS:
        if not isinstance(value, (str, Path)):
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
        return dict(value)
    raise ConfigError(f"{where}: unknown setting {name!r}")  # pragma: no cover


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


def build_config(
    flags: Mapping[str, Any],
    config_file: Path | None = None,
    cwd: Path | None = None,
    user_file: Path | None = None,
) -> Config:
    """Merge the user file, ./kdash.toml, --config FILE and flags (later wins) into a Config.

    `flags` holds only what the user passed (None values are ignored).
    """
    cwd = cwd or Path.cwd()
    user_file = user_file if user_file is not None else user_config_path()
    merged: dict[str, Any] = {}
    layers: list[tuple[str, Mapping[str, Any]]] = []
    for path in (user_file, cwd / "kdash.toml"):
        if path.is_file():
            layers.append((str(path), read_toml(path)))
    if config_file is not None:
        layers.append((str(config_file), read_toml(config_file)))
    layers.append(("flags", {k: v for k, v in flags.items() if v is not None}))
    for where, layer in layers:
        for name, value in layer.items():
            if name not in FIELD_NAMES:
                raise ConfigError(f"{where}: unknown setting {name!r}")
            coerced = _coerce(name, value, where)
            if name in ("expect", "alerts") and name in merged:
                coerced = {**merged[name], **coerced}
            merged[name] = coerced
    cfg = Config(**merged)
    if cfg.refresh < MIN_REFRESH_S:
        raise ConfigError(f"refresh must be at least {MIN_REFRESH_S} s, got {cfg.refresh}")
    if cfg.nvml_interval < MIN_NVML_INTERVAL_S:
        raise ConfigError(
            f"nvml_interval must be at least {MIN_NVML_INTERVAL_S} s (NVML holds a driver lock), "
            f"got {cfg.nvml_interval}"
        )
    from dash.core.alerts import AlertConfig

    AlertConfig.from_mapping(cfg.alerts)  # a bad threshold is a one-line error now, not at start-up
    if cfg.gpus is None and os.environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        try:
            cfg = dataclasses.replace(cfg, gpus=parse_gpus(os.environ["CUDA_VISIBLE_DEVICES"]))
        except ConfigError:
            pass  # UUIDs or MIG names: show every GPU rather than refuse to start
    return cfg
