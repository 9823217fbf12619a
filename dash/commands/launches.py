"""`kdash launches LOG [LOG ...] [--json]`: the server starts of finished logs, side by side.

One log holding several starts (appended with `>>`), several logs of one start each (a log
rewritten at every restart, copied aside), or both: every launch, in start order, with what
changed between them, how each ended, what each achieved and what the comparison says. Every
line of every log is read (the same reader as `summary`), so the figures are exact.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from dash.core.launch import Launch
from dash.core.log.bulk import records
from dash.core.state.launches import LaunchTracker
from dash.core.views.launch_advice import launches_json
from dash.core.views.launch_text import render
from dash.sources.logread import LogError, Scan, ref_time


def read_launches(path: Path) -> tuple[Launch, ...]:
    """The launches of one log, read to its end (raises LogError)."""
    tracker = LaunchTracker(str(path))
    ref = ref_time(path)
    scan = Scan(path)
    try:
        for batch in scan.batches():
            tracker.feed(records(batch, scan.reader.stamps), None, ref)
    except OSError as exc:  # the file went away while it was read
        raise LogError(f"{path}: {exc.strerror or exc}") from None
    tracker.finish()
    return tracker.launches()


def launches_of(paths: Sequence[Path]) -> tuple[Launch, ...]:
    """Every launch of the logs, in start order (the order given where logs carry no time);
    the same start read twice (a log named twice) counts once."""
    seen: dict[str, Launch] = {}
    for path in paths:
        for launch in read_launches(path):
            seen.setdefault(launch.key if launch.start_seen else f"{path}:{launch.key}", launch)
    return tuple(sorted(seen.values(), key=lambda x: (x.started_at is None, x.started_at or 0.0)))


def run_launches(paths: Sequence[Path], as_json: bool) -> int:
    """`kdash launches LOG [LOG ...] [--json]`."""
    launches = launches_of(paths)
    if as_json:
        doc = {"logs": [str(p) for p in paths], "launches": launches_json(launches)}
        text = json.dumps(doc, indent=1) + "\n"
    else:
        logs = "1 log" if len(paths) == 1 else f"{len(paths)} logs"
        n = len(launches)
        text = f"{n} launch{'es' if n != 1 else ''} in {logs}\n" + render(launches, _width())
    sys.stdout.write(text)  # a closed pipe (`| head`) is handled once, in dash.commands.cli.main
    sys.stdout.flush()
    return 0


def _width() -> int:
    try:
        return max(60, min(os.get_terminal_size(sys.stdout.fileno()).columns, 200))
    except (OSError, ValueError):
        return 120
