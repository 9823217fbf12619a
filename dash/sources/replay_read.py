"""A whole log read for a replay: its records as compact series, with their times.

The reading is the one reader's (`dash.sources.logread`): a `SeriesJob` makes each piece a
`SeriesPiece` (in whichever process), and `load_timeline` keeps them in file order.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import closing
from pathlib import Path

from dash.core.log.grammar import GRAMMAR
from dash.core.log.syntax import Grammar
from dash.core.state.series_piece import SeriesPiece
from dash.core.state.stamp_times import stamp_epochs
from dash.core.state.timeline import MAX_RECORDS, Timeline
from dash.sources.logread import LogCut, LogError, Scan, ref_time, start_job


class SeriesJob:
    """A piece of the log as compact record series (for a replay)."""

    keep = None
    numbered = False  # a piece's line numbers are moved as the timeline takes it

    def piece(self, scan: Scan) -> SeriesPiece:
        out = SeriesPiece()
        for batch in scan.batches():
            out.add(batch, scan.reader.stamps)
        out.finish(stamp_epochs)
        return out


Pieces = Generator[tuple[int, SeriesPiece], None, None]
"""A log's pieces being read (`start_reading`): (lines, piece) in file order."""


def start_reading(path: Path, grammar: Grammar = GRAMMAR) -> Pieces:
    """Start reading the log for `load_timeline` (its processes start now: see
    `dash.sources.logread.start_job`); raises LogError."""
    try:
        return start_job(path, SeriesJob(), grammar)
    except OSError as exc:
        raise LogError(f"{path}: {exc.strerror or exc}") from None


def load_timeline(path: Path, *, cap: int = MAX_RECORDS, grammar: Grammar = GRAMMAR,
                  progress: Callable[[int], None] | None = None,
                  pieces: Pieces | None = None) -> Timeline:
    """Every record of the log (up to `cap`) with its epoch time, read by `pieces` (started
    by `start_reading`) or from the start here; raises LogError. A `.gz` that breaks off is
    not an error here: the records before the break are the timeline, `broke_off` says where."""
    timeline = Timeline(ref=ref_time(path) or 0.0, cap=cap)
    done = 0
    try:
        if pieces is None:
            pieces = start_reading(path, grammar)
        with closing(pieces):
            for lines, piece in pieces:
                more = timeline.add_piece(piece, done)
                done += lines
                if progress is not None:
                    progress(len(timeline.records))
                if not more:
                    break
    except LogCut as exc:
        timeline.broke_off = str(exc)
    except OSError as exc:
        raise LogError(f"{path}: {exc.strerror or exc}") from None
    timeline.finish()
    if not timeline.cut:
        timeline.lines = done
    return timeline
