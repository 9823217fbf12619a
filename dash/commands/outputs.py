"""`kdash outputs GLOB [--json]`: the statistics of finished output files (streaming).

Reads `[outputs]` field paths from the same config files as the dashboard (`--config FILE`);
prints the figures of each file and the output alerts it would raise. Exit 0; 2 (one line) for
a bad config, a glob that matches no file or a directory given for files, as `summary` does.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time
from typing import TextIO

from dash.core.config import AlertConfig, Config
from dash.core.errors import UsageError
from dash.core.state.globs import glob_error
from dash.core.views.outputs_report import FileFigures, alerts_for, to_json, to_text
from dash.sources.outputs_scan import scan


def run_outputs(cfg: Config, *, as_json: bool, out: TextIO | None = None) -> int:
    """Scan the files of `cfg.outputs` and print the report; UsageError for a glob that
    cannot be scanned."""
    for pattern in cfg.outputs:
        why = glob_problem(pattern)
        if why:
            raise UsageError(why)
    out = out or sys.stdout
    tracker, scanned = scan(cfg.outputs, cfg.output_fields)
    now = time.time()
    files = [FileFigures(s.name, s.path, s.lines, s.partial_bytes,
                         tracker.snapshot(s.name, now), s.error) for s in scanned]
    alerts = alerts_for(files, AlertConfig.from_mapping(cfg.alerts), now)
    if as_json:
        json.dump(to_json(files, alerts), out, indent=2)
        out.write("\n")
    else:
        out.write(to_text(files, alerts))
    out.flush()
    return 0


def glob_problem(pattern: str) -> str | None:
    """Why `pattern` gives no file to scan, or None: a finished file must exist, unlike the
    dashboard's globs, which wait for the files to appear."""
    why = glob_error(pattern)
    if why:
        return why
    if os.path.isdir(pattern):
        return f"{pattern}: is a directory"
    if not any(os.path.isfile(p) for p in glob.iglob(pattern, recursive=True)):
        return f"no file matches {pattern!r}"
    return None
