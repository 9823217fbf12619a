"""Loading the configuration: the user's config file, `./kdash.toml`, `--config FILE`, flags.

Precedence, later wins: the user config file (platformdirs), `./kdash.toml`, `--config FILE`,
then flags. The schema and its checks are pure (`dash.core.config`); this module reads the files,
the user's directories and the environment (`CUDA_VISIBLE_DEVICES`, `VLLM_API_KEY`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dash.core.config import FIELD_NAMES, Config, api_key_of, merge_layers, parse_gpus
from dash.core.errors import ConfigError, did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


API_KEY_ENV = "VLLM_API_KEY"
"""The environment variable a server reads its API key from (vLLM's; SGLang has none)."""


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
        raise ConfigError(f"{path}: unknown setting {unknown[0]!r}"
                          f"{did_you_mean(unknown[0], FIELD_NAMES)}")
    return data


def _is_file(path: Path, notices: list[str]) -> bool:
    """Whether `path` is a file; a directory that cannot be entered (a `$HOME` kept by sudo or
    setpriv, a deleted working directory) is a notice, and the file counts as absent."""
    try:
        return path.is_file()
    except OSError as exc:
        notices.append(f"cannot look for {path} ({exc.strerror or exc}); using the defaults")
        return False


def _sets_api_key(layer: Mapping[str, Any]) -> bool:
    """Whether a layer names the key, "" included: an empty key set on purpose (`--api-key ""`,
    `[http] api_key = ""`) switches `$VLLM_API_KEY` off rather than falling back to it."""
    http = layer.get("http")
    return layer.get("api_key") is not None or (isinstance(http, Mapping) and "api_key" in http)


def build_config(
    flags: Mapping[str, Any],
    config_file: Path | None = None,
    cwd: Path | None = None,
    user_file: Path | None = None,
    notices: list[str] | None = None,
) -> Config:
    """Merge the user file, ./kdash.toml, --config FILE and flags (later wins) into a Config.

    `flags` holds only what the user passed (None values are ignored). Problems that do not stop
    kdash (a home directory it may not enter) are appended to `notices`, one line each.
    """
    notices = notices if notices is not None else []
    if cwd is None:
        try:
            cwd = Path.cwd()
        except OSError as exc:
            notices.append(f"the working directory is gone ({exc.strerror or exc})")
            cwd = None
    user_file = user_file if user_file is not None else user_config_path()
    layers: list[tuple[str, Mapping[str, Any]]] = []
    for path in (user_file, cwd / "kdash.toml" if cwd is not None else None):
        if path is not None and _is_file(path, notices):
            layers.append((str(path), read_toml(path)))
    if config_file is not None:
        layers.append((str(config_file), read_toml(config_file)))
    layers.append(("flags", flags))
    cfg = merge_layers(layers)
    if cfg.gpus is None and os.environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        try:
            cfg = dataclasses.replace(cfg, gpus=parse_gpus(os.environ["CUDA_VISIBLE_DEVICES"]))
        except ConfigError:
            pass  # UUIDs or MIG names: show every GPU rather than refuse to start
    said = any(_sets_api_key(layer) for _, layer in layers)  # `--api-key ""`: no key at all
    if cfg.api_key is None and not said and os.environ.get(API_KEY_ENV, "").strip():
        # vLLM reads its key from here when --api-key is not given (SGLang reads none): kdash
        # started beside the server's launch in the same shell finds the same key.
        try:
            cfg = dataclasses.replace(cfg, api_key=api_key_of(os.environ[API_KEY_ENV],
                                                              f"${API_KEY_ENV}"))
        except ConfigError as exc:
            notices.append(str(exc) + "; not sent")
    return cfg
