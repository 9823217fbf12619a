"""The `kdash` command line: argument parsing, config loading, one-line errors, exit codes.

Each command's work lives in its own module, imported only when that command runs, so that
`kdash summary` or `kdash export` never pays for importing Textual.
Exit codes: 0 ok, 2 usage or config error (one line on stderr, no traceback); `kdash check`
uses Nagios's codes instead (0 ok, 1 warn, 2 crit, 3 unknown, a usage error included).
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

SUBCOMMANDS = ("demo", "sim", "replay", "summary", "export", "serve", "check")

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
    g.add_argument("--url", metavar="URL",
                   help="server base URL (default: host and port from the log's server_args, "
                        "else the engine's default port, 30000 for SGLang, 8000 for vLLM)")
    g.add_argument("--no-http", dest="url", action="store_const", const="",
                   help="do not poll the server over HTTP (the log alone tells its state)")
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


def _add_window(p: argparse.ArgumentParser) -> None:
    p.add_argument("--window", metavar="S", type=float, default=None,
                   help="sample the sources for S seconds, so rates and states are real "
                        "(default 5; 0: one instant read, rates unknown)")


def _dashboard_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kdash",
        description="A terminal dashboard for LLM inference runs. "
        f"Commands: {', '.join(SUBCOMMANDS)} (kdash COMMAND --help).",
    )
    p.add_argument("--version", action="version", version=f"kdash {__version__}")
    p.add_argument("--once", action="store_true", help="print the state once and exit")
    p.add_argument("--json", action="store_true", help="with --once: print JSON")
    _add_window(p)
    _add_source_options(p)
    return p


def _flags(ns: argparse.Namespace) -> dict[str, Any]:
    keys = ("log", "url", "client_log", "outputs", "inputs", "expect", "process", "gpus", "refresh",
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
    from dash.commands.once import DEFAULT_WINDOW_S

    window = DEFAULT_WINDOW_S if ns.window is None else ns.window
    if not (0 <= window <= 600):  # also refuses nan
        raise UsageError(f"--window must be 0 to 600 seconds, got {window:g}")
    return window


def _run_dashboard(argv: Sequence[str]) -> int:
    ns = _dashboard_parser().parse_args(argv)
    if ns.json and not ns.once:
        raise UsageError("--json goes with --once")
    if ns.window is not None and not ns.once:
        raise UsageError("--window goes with --once (or kdash check)")
    notices: list[str] = []
    cfg = config_from(ns, notices if not ns.once else None)
    if cfg.is_empty():
        print(NOTHING_CONFIGURED, file=sys.stderr)
        return 2
    check_sources(cfg)
    if ns.once:
        from dash.commands.once import run_once

        return run_once(cfg, as_json=ns.json, window=window_of(ns))
    from dash.ui.app import run_dashboard

    for text in notices:
        print(f"kdash: note: {text}", file=sys.stderr)
    return run_dashboard(cfg, notices=tuple(notices))


def check_sources(cfg: Config) -> None:
    """Refuse, in one line, a source that can never be read: a directory given as a log, a log
    or client log kdash may not read, a bad glob. A file that is not there yet is fine."""
    from dash.sources.collector import check_globs, unreadable

    check_globs(cfg)
    for flag, path in (("--log", cfg.log), ("--client-log", cfg.client_log)):
        why = unreadable(path) if path is not None else None
        if why:
            raise UsageError(f"{flag} {path}: {why}")


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
    elif name == "check":
        p.description = ("One line per problem, for cron and Nagios. Exit codes: 0 ok, 1 warn, "
                         "2 crit, 3 unknown (a source unreadable, nothing to watch, a usage "
                         "error).")
        _add_window(p)
        _add_source_options(p)
    elif name in ("demo", "sim"):
        from dash.commands.sim import add_arguments

        add_arguments(p, name)
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
        check_sources(cfg)
        from dash.commands.serve import run_serve

        return run_serve(cfg)
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
    if args and args[0] == "check":
        from dash.commands.check import main_check

        return main_check(args[1:], _sub_parser("check"))
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
