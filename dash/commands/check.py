"""`kdash check [source options]`: one line per problem and a Nagios exit code, for cron.

It samples the sources as `kdash --once` does (`--window`, 5 s by default), then prints one line
per problem, worst first ("CRIT server_oom: ... -> hint"), or one OK line. Exit codes: 0 ok,
1 warn, 2 crit, 3 unknown (a source it cannot read, nothing to watch). A usage or config error
keeps its one line on stderr but exits 3, not 2: to Nagios, 2 means CRITICAL.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

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
from dash.core.views.checks import EXIT_CODES, ok_line, problems, verdict

UNKNOWN = EXIT_CODES["UNKNOWN"]


def parser() -> argparse.ArgumentParser:
    """`kdash check`'s options: the dashboard's sources and `--window`."""
    p = Parser(prog="kdash check")
    p.description = ("One line per problem, for cron and Nagios. Exit codes: 0 ok, 1 warn, "
                     "2 crit, 3 unknown (a source unreadable, nothing to watch, a usage error).")
    add_window(p)
    add_source_options(p)
    return p


def main_check(argv: Sequence[str], *, out: TextIO | None = None,
               nvml_module: object | None = None) -> int:
    """Run `kdash check` with `argv` (after the word `check`); the exit code."""
    out = out or sys.stdout
    try:
        ns = parser().parse_args(argv)
        cfg = config_from(ns)
        if cfg.is_empty():
            print(f"UNKNOWN {NOTHING_CONFIGURED}", file=out)
            return UNKNOWN
        check_sources(cfg)
        window = window_of(ns)
    except UsageError as exc:  # ConfigError too
        print(f"kdash: {exc}", file=sys.stderr)
        return UNKNOWN
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    return report(cfg, window, out, nvml_module)


def report(cfg: object, window: float, out: TextIO, nvml_module: object | None = None) -> int:
    """Sample, print the problems (or the OK line), return the exit code."""
    from dash.commands.once import collect_once
    from dash.core.config import Config

    assert isinstance(cfg, Config)
    snap, sample = collect_once(cfg, window=window, nvml_module=nvml_module)
    found = problems(snap)
    for p in found:
        print(p.line(), file=out)
    if not found:
        print(ok_line(snap, sample.text()), file=out)
    out.flush()
    return EXIT_CODES[verdict(found)]
