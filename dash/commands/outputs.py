"""`kdash outputs GLOB [--json]`: the statistics of finished output files (streaming).

Reads `[outputs]` field paths from the same config files as the dashboard (`--config FILE`);
prints the figures of each file and the output alerts it would raise. Exit 0; 2 for a bad glob
or config (one line).
"""

from __future__ import annotations

import json
import sys
import time
from typing import TextIO

from dash.core.config import AlertConfig, Config
from dash.core.views.outputs_report import FileFigures, alerts_for, to_json, to_text
from dash.sources.outputs_scan import scan


def run_outputs(cfg: Config, *, as_json: bool, out: TextIO | None = None) -> int:
    """Scan the files of `cfg.outputs` and print the report."""
    from dash.sources.collector import check_globs

    check_globs(cfg)
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
        out.write(to_text(files, alerts) if files else "no file matches\n")
    out.flush()
    return 0
