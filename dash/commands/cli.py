"""The `kdash` command line: argument parsing, config loading, one-line errors, exit codes.

Each command's work lives in its own module, imported only when that command runs, so that
`kdash summary` or `kdash export` never pays for importing Textual.
Exit codes: 0 ok, 2 usage or config error (one line on stderr, no traceback), 128 + N when
signal N stopped a long-running command (SIGTERM 143, SIGHUP 129, SIGINT 130), 1 for a bug;
`kdash check` uses Nagios's codes instead (0 ok, 1 warn, 2 crit, 3 unknown, a usage error
included).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from dash import __version__
from dash.commands.options import (
    NOTHING_CONFIGURED,
    Parser,
    add_source_options,
    add_window,
    check_sources,
    config_from,
    window_of,
)
from dash.core.errors import UsageError

SUBCOMMANDS = ("demo", "sim", "replay", "summary", "export", "serve", "check", "launches",
               "outputs")


_CONFIG_HELP = (
    "Settings are also read from {user}, then ./kdash.toml, then --config FILE, then the "
    "flags (later wins). Every flag has a TOML name (dashes become underscores: client_log = "
    "\"client.log\"); more settings there: [expect] (partition totals), [outputs] (field "
    "paths, max_tokens, expect_reasoning), [alerts] (every threshold), backfill_bytes, "
    "http_interval, state_dir... (README: \"Point it at your run\", \"Alerts\"). An unknown "
    "name or a bad value is one line and exit 2.")


def _user_config() -> str:
    from dash.sources.config_files import user_config_path

    try:
        return str(user_config_path())
    except OSError:  # a home directory kdash may not enter: the help still prints
        return "the user config file (~/.config/kdash/config.toml)"


def _dashboard_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="kdash",
        description="A terminal dashboard for LLM inference runs. "
        f"Commands: {', '.join(SUBCOMMANDS)} (kdash COMMAND --help).",
        epilog=_CONFIG_HELP.format(user=_user_config()),
    )
    p.add_argument("--version", action="version", version=f"kdash {__version__}")
    p.add_argument("--once", action="store_true", help="print the state once and exit")
    p.add_argument("--json", action="store_true", help="with --once: print JSON")
    add_window(p)
    add_source_options(p)
    return p


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


def _sub_parser(name: str) -> argparse.ArgumentParser:
    p = Parser(prog=f"kdash {name}")
    if name == "summary":
        p.description = "A headless report of a server log (with the alerts that would have fired)."
        p.add_argument("path", metavar="LOG")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.add_argument("--config", metavar="FILE",
                       help="a TOML config file (its [alerts] thresholds; the user's config "
                            "file and ./kdash.toml are read too)")
    elif name == "launches":
        p.description = ("The server starts of logs side by side: what changed between them, "
                         "how each ended, what each achieved.")
        p.add_argument("paths", metavar="LOG", nargs="+")
        p.add_argument("--json", action="store_true", help="print JSON")
    elif name == "export":
        p.description = "Every parsed record of a server log, one per line."
        p.add_argument("path", metavar="LOG")
        p.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    elif name == "serve":
        p.description = "No UI: the same sources and alerts, exported for Prometheus."
        add_source_options(p)
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
        from dash.sources.config_files import build_config

        cfg = build_config({}, config_file=Path(ns.config) if ns.config else None)
        return run_summary(Path(ns.path), as_json=ns.json, alerts=cfg.alerts)
    if name == "launches":
        from dash.commands.launches import run_launches

        return run_launches([Path(p) for p in ns.paths], as_json=ns.json)
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
    if name == "outputs":
        from dash.commands.outputs import run_outputs
        from dash.sources.config_files import build_config

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
    if args and args[0] == "check":
        from dash.commands.check import main_check

        return main_check(args[1:])
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
