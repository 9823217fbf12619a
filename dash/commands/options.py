"""The options the dashboard, `--once`, `serve` and `check` share, and turning them into a Config.

One-line errors: the parser raises `UsageError` instead of printing usage and exiting.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from dash.core.config import Config
from dash.core.errors import UsageError
from dash.sources.config_files import build_config

DEFAULT_WINDOW_S = 5.0
"""How long `--once` and `check` sample the sources by default."""

NOTHING_CONFIGURED = (
    "kdash: nothing to watch: pass --log server.log (and --outputs 'out/*.jsonl', --url URL), "
    "or put them in ./kdash.toml; try `kdash demo` to see it on a simulated run"
)


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so errors stay one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            raise UsageError(unrecognized(extra, "--outputs" in self._option_string_actions))
        return ns


def unrecognized(extra: Sequence[str], takes_globs: bool) -> str:
    """argparse's `unrecognized arguments`, and where they are files and the command takes
    globs, what most likely made them: an unquoted `--outputs out/*.jsonl` that the shell
    expanded into its files, the first one taken as the flag's value, the others left over."""
    shown = " ".join(extra[:3]) + (f" (and {len(extra) - 3} more)" if len(extra) > 3 else "")
    message = f"unrecognized arguments: {shown}"
    if takes_globs and any(not a.startswith("-") and os.path.exists(a) for a in extra):
        message += ("; the shell expanded a glob into these files: quote it, "
                    "--outputs 'out/*.jsonl' (or --log 'node*/server.log')")
    return message


def add_source_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what to watch")
    g.add_argument("--log", metavar="PATH", action="append",
                   help="server log (SGLang or vLLM output), or a glob; repeat for several "
                        "servers (PD prefill and decode, nodes)")
    g.add_argument("--url", metavar="URL",
                   help="server base URL (default: host and port from the log's server_args, "
                        "else the engine's default port, 30000 for SGLang, 8000 for vLLM)")
    g.add_argument("--no-http", dest="url", action="store_const", const="",
                   help="do not poll the server over HTTP (the log alone tells its state)")
    g.add_argument("--api-key", metavar="KEY",
                   help="the server's --api-key, sent as `Authorization: Bearer KEY` (default: "
                        "[http] api_key in a config file, else $VLLM_API_KEY; \"\" sends none; a "
                        "flag is visible to `ps`, a config file is not)")
    g.add_argument("--client-log", metavar="PATH", help="the inference client's log")
    g.add_argument("--outputs", metavar="GLOB", action="append", help="per-partition JSONL outputs")
    g.add_argument("--inputs", metavar="GLOB", action="append", help="per-partition prompt files")
    g.add_argument("--expect", metavar="NAME=N", action="append", help="expected total of a partition")
    g.add_argument("--process", metavar="PATTERN", help="client process command-line pattern")
    g.add_argument("--gpus", metavar="LIST", help="GPU indices to show, e.g. 0,3")
    g.add_argument("--config", metavar="FILE", help="a TOML config file")
    g.add_argument("--refresh", metavar="SECONDS", type=float, help="screen refresh interval")
    g.add_argument("--poll", action="store_true", default=None, help="poll files (NFS, overlayfs)")
    g.add_argument("--on-alert", metavar="CMD", help="run CMD with each new alert as JSON on stdin")
    g.add_argument("--webhook", metavar="URL", help="POST each new alert (Slack-compatible)")
    g.add_argument("--no-bell", dest="bell", action="store_false", default=None,
                   help="no terminal bell on new alerts")
    g.add_argument("--metrics-port", metavar="N", type=int, help="serve Prometheus metrics on port N")
    g.add_argument("--metrics-host", metavar="H", help="address to bind (default 127.0.0.1)")


def add_window(p: argparse.ArgumentParser) -> None:
    p.add_argument("--window", metavar="S", type=float, default=None,
                   help="sample the sources for S seconds, so rates and states are real "
                        "(default 5; 0: one instant read, rates unknown)")


def _flags(ns: argparse.Namespace) -> dict[str, Any]:
    keys = ("log", "url", "api_key", "client_log", "outputs", "inputs", "expect", "process", "gpus", "refresh",
            "poll", "on_alert", "webhook", "bell", "metrics_port", "metrics_host")
    # --url and --no-http share `url`: the last one given wins, as for any repeated flag.
    return {k: getattr(ns, k, None) for k in keys}


def config_from(ns: argparse.Namespace, notices: list[str] | None = None) -> Config:
    """Build the Config for a parsed namespace that has the source options.

    One-line notices (a home directory kdash may not enter) go to `notices` when given, else
    to stderr.
    """
    cfg_file = Path(ns.config) if getattr(ns, "config", None) else None
    found: list[str] = []
    cfg = build_config(_flags(ns), config_file=cfg_file, notices=found)
    if notices is None:
        for text in found:
            print(f"kdash: note: {text}", file=sys.stderr)
    else:
        notices.extend(found)
    return cfg


def window_of(ns: argparse.Namespace) -> float:
    """The sampling window of `--once` and `check`, checked."""
    window = DEFAULT_WINDOW_S if ns.window is None else ns.window
    if not (0 <= window <= 600):  # also refuses nan
        raise UsageError(f"--window must be 0 to 600 seconds, got {window:g}")
    return window


def check_sources(cfg: Config) -> None:
    """Refuse, in one line, a source that can never be read: a directory given as a log, a log
    or client log kdash may not read, a bad glob. A file that is not there yet is fine."""
    from dash.sources.collector import check_globs, unreadable

    check_globs(cfg)
    logs = [("--log", p) for p in cfg.logs if not glob.has_magic(str(p))]
    for flag, path in (*logs, ("--client-log", cfg.client_log)):
        why = unreadable(path) if path is not None else None
        if why:
            raise UsageError(f"{flag} {path}: {why}")


