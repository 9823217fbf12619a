"""`kdash launches LOG [LOG ...] [--json]`: the server starts of finished logs, side by side.

One log holding several starts (appended with `>>`), several logs of one start each (a log
rewritten at every restart, copied aside), or both: every launch, in start order, with what
changed between them, how each ended, what each achieved and what the comparison says. Every
line of every log is read (the same reader as `summary`), so the figures are exact; the starts
a kdash kept for a log (the state directory) whose lines are no longer in it (a restart that
rewrote it with `> server.log`) are shown too, as the dashboard's `L` and `--once` show them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from dash.core.launch import Launch
from dash.core.log.bulk import records
from dash.core.snapshot import Record
from dash.core.state.launch_merge import merge_remembered
from dash.core.state.launches import LaunchTracker
from dash.core.state.server_log import is_not_a_log, prefixed
from dash.core.views.launch_advice import launches_json
from dash.core.views.launch_text import render
from dash.sources.logread import LogCut, LogError, Scan, cut_message, ref_time


def read_launches(path: Path, cuts: list[str] | None = None) -> tuple[Launch, ...]:
    """The launches of one log, read to its end (raises LogError). A `.gz` that breaks off
    raises LogCut, or, given `cuts`, adds its message there and gives the launches of the
    lines before the break."""
    tracker = LaunchTracker(str(path))
    ref = ref_time(path)
    scan = Scan(path)
    logged = [0, 0]  # records with a server log's prefix or stats, and events

    def counted(recs: Iterable[Record | None]) -> Iterator[Record | None]:
        for rec in recs:
            if rec is not None and rec.get("kind") != "unparsed":
                logged[rec.get("kind") == "event" and not prefixed(rec)] += 1
            yield rec

    try:
        for batch in scan.batches():
            tracker.feed(counted(records(batch, scan.reader.stamps)), None, ref)
    except OSError as exc:  # the file went away while it was read
        raise LogError(f"{path}: {exc.strerror or exc}") from None
    if scan.cut:
        message = cut_message(path, scan.cut, scan.lines)
        if cuts is None:
            raise LogCut(message, scan.lines)
        cuts.append(message)
    tracker.finish()
    if is_not_a_log(scan.lines, logged[1], logged[0]):
        return ()  # no server log (a README's words): as the dashboard and summary judge it
    return tracker.launches()


def launches_of(paths: Sequence[Path], kept: Path | None = None,
                cuts: list[str] | None = None) -> tuple[Launch, ...]:
    """Every launch of the logs, in start order (the order given where logs carry no time);
    the same start read twice (a log named twice) counts once. `kept`: the state directory
    whose launches of each log are merged in (None: the logs alone); `cuts`: where `.gz` logs
    broke off go there, their lines before the break read (None: LogCut is raised)."""
    seen: dict[str, Launch] = {}
    for path in paths:
        read = read_launches(path, cuts)
        if kept is not None:
            read = merge_remembered(_kept(kept, path), read)
        for launch in read:
            seen.setdefault(launch.key if launch.start_seen else f"{path}:{launch.key}", launch)
    return tuple(sorted(seen.values(), key=lambda x: x.order))


def _kept(base: Path, path: Path) -> tuple[Launch, ...]:
    """The launches a kdash kept for this log; a file it cannot use is a note on stderr."""
    from dash.sources.launch_store import LaunchStore

    launches, notice = LaunchStore(base, path).load()
    if notice:
        print(f"kdash: note: {notice}", file=sys.stderr)
    return launches


def _state_dir() -> Path:
    """The state directory the dashboard keeps launches in (the config files' `state_dir`)."""
    from dash.sources.config_files import build_config
    from dash.sources.launch_store import state_dir

    return state_dir(build_config({}))


def run_launches(paths: Sequence[Path], as_json: bool) -> int:
    """`kdash launches LOG [LOG ...] [--json]`; exit 1 where a `.gz` broke off, its launches
    before the break shown (as summary and export show its lines)."""
    cuts: list[str] = []
    launches = launches_of(paths, _state_dir(), cuts)
    if as_json:
        doc = {"logs": [str(p) for p in paths], "launches": launches_json(launches)}
        text = json.dumps(doc, indent=1) + "\n"
    else:
        logs = "1 log" if len(paths) == 1 else f"{len(paths)} logs"
        n = len(launches)
        text = f"{n} launch{'es' if n != 1 else ''} in {logs}\n" + render(launches, _width())
        text += _kept_note(launches)
    sys.stdout.write(text)  # a closed pipe (`| head`) is handled once, in dash.commands.cli.main
    sys.stdout.flush()
    for message in cuts:
        print(f"kdash: {message}", file=sys.stderr)
    return 1 if cuts else 0


def _kept_note(launches: Sequence[Launch]) -> str:
    """Which columns come from what a kdash kept, not from the lines read now."""
    kept = [f"#{i}" for i, x in enumerate(launches, 1) if x.earlier]
    if not kept:
        return ""
    return (f"{', '.join(kept)}: kept by an earlier kdash on this log (a restart rewrote it "
            f"since): the figures that kdash saw\n")


def _width() -> int:
    try:
        return max(60, min(os.get_terminal_size(sys.stdout.fileno()).columns, 200))
    except (OSError, ValueError):
        return 120
