"""The `kdash` command line: argument parsing, config loading, one-line errors, exit codes.

Each command's work lives in its own module, imported only when that command runs, so that
`kdash summary` or `kdash export` never pays for importing Textual.
Exit codes: 0 ok, 2 usage or config error (one line on stderr, no traceback), 128 + N when
signal N stopped a long-running command (SIGTERM 143, SIGHUP 129, SIGINT 130), 1 for a bug.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from dash import __version__
from dash.core.config import Config
from dash.core.errors import UsageError
from dash.sources.config_files import build_config

SUBCOMMANDS = ("demo", "sim", "replay", "summary", "export", "serve", "outputs")

NOTHING_CONFIGURED = (
    "kdash: nothing to watch: pass --log server.log (and --outputs 'out/*.jsonl', --url URL), "
    "or put them in ./kdash.toml; try `kdash demo` to see it on a simulated run"
)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so errors stay one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _add_source_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what to watch")
    g.add_argument("--log", metavar="PATH", help="server log (SGLang or vLLM output)")
    g.add_argument("--url", metavar="URL", help="server base URL (default http://127.0.0.1:30000)")
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


def _dashboard_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kdash",
        description="A terminal dashboard for LLM inference runs. "
        f"Commands: {', '.join(SUBCOMMANDS)} (kdash COMMAND --help).",
    )
    p.add_argument("--version", action="version", version=f"kdash {__version__}")
    p.add_argument("--once", action="store_true", help="print the state once and exit")
    p.add_argument("--json", action="store_true", help="with --once: print JSON")
    _add_source_options(p)
    return p


def _flags(ns: argparse.Namespace) -> dict[str, Any]:
    keys = ("log", "url", "client_log", "outputs", "inputs", "expect", "process", "gpus", "refresh",
            "poll", "on_alert", "webhook", "bell", "metrics_port", "metrics_host")
    return {k: getattr(ns, k, None) for k in keys}


def config_from(ns: argparse.Namespace) -> Config:
    """Build the Config for a parsed namespace that has the source options."""
    cfg_file = Path(ns.config) if getattr(ns, "config", None) else None
    return build_config(_flags(ns), config_file=cfg_file)


def _run_dashboard(argv: Sequence[str]) -> int:
    ns = _dashboard_parser().parse_args(argv)
    if ns.json and not ns.once:
        raise UsageError("--json goes with --once")
    cfg = config_from(ns)
    if cfg.is_empty():
        print(NOTHING_CONFIGURED, file=sys.stderr)
        return 2
    if ns.once:
        from dash.commands.once import run_once

        return run_once(cfg, as_json=ns.json)
    from dash.ui.app import run_dashboard

    return run_dashboard(cfg)


def _sub_parser(name: str) -> argparse.ArgumentParser:
    p = _Parser(prog=f"kdash {name}")
    if name == "summary":
        p.description = "A headless report of a server log (with the alerts that would have fired)."
        p.add_argument("path", metavar="LOG")
        p.add_argument("--json", action="store_true", help="print JSON")
    elif name == "export":
        p.description = "Every parsed record of a server log, one per line."
        p.add_argument("path", metavar="LOG")
        p.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    elif name == "serve":
        p.description = "No UI: the same sources and alerts, exported for Prometheus."
        _add_source_options(p)
    elif name in ("demo", "sim"):
        from dash.commands.sim import add_arguments

        add_arguments(p, name)
    elif name == "outputs":
        p.description = ("The statistics of finished output files: finish reasons, truncation, "
                         "lengths, errors, invalid lines, reasoning; and the alerts they raise.")
        p.add_argument("globs", metavar="GLOB", nargs="+", help="JSONL output files")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.add_argument("--config", metavar="FILE", help="a TOML config file ([outputs] fields)")
    elif name == "replay":
        p.description = "A finished run's log through the dashboard, on the log's own clock."
        p.add_argument("path", metavar="LOG")
        p.add_argument("--outputs", metavar="GLOB", action="append")
        p.add_argument("--speed", type=float, default=60.0, help="log seconds per real second")
    return p


def _run_sub(name: str, argv: Sequence[str]) -> int:
    ns = _sub_parser(name).parse_args(argv)
    if name == "summary":
        from dash.commands.summary import run_summary

        return run_summary(Path(ns.path), as_json=ns.json)
    if name == "export":
        from dash.commands.export import run_export

        return run_export(Path(ns.path), fmt=ns.format)
    if name == "serve":
        cfg = config_from(ns)
        if cfg.metrics_port is None:
            raise UsageError("serve needs --metrics-port N")
        if cfg.is_empty():
            print(NOTHING_CONFIGURED, file=sys.stderr)
            return 2
        from dash.commands.serve import run_serve

        return run_serve(cfg)
    if name == "outputs":
        from dash.commands.outputs import run_outputs

        cfg = build_config({"outputs": ns.globs},
                           config_file=Path(ns.config) if ns.config else None)
        return run_outputs(cfg, as_json=ns.json)
    if name == "demo":
        from dash.commands.demo import run_demo

        return run_demo(ns)
    if name == "sim":
        from dash.commands.sim import run_sim

        return run_sim(ns)
    if name == "replay":
        from dash.commands.replay import run_replay

        return run_replay(ns)
    raise AssertionError(name)  # pragma: no cover


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `kdash` console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] in SUBCOMMANDS:
            return _run_sub(args[0], args[1:])
        return _run_dashboard(args)
    except UsageError as exc:  # ConfigError and LogError are usage errors too
        print(f"kdash: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`kdash --once --json | head`): stop quietly, as cat does; the
        # flush at exit then goes to /dev/null instead of raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
