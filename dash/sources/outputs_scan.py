"""Whole output files through the sample statistics, streaming (`kdash outputs`).

A file is read in blocks cut at line ends; each block's lines go through the same `LineSink`
and `QualityTracker` the live dashboard uses, so the figures agree, and memory stays constant
whatever the file's size. A partial last line (a writer still at work, or killed) is reported
and not counted, as `wc -l` does not count it.
"""

from __future__ import annotations

from dataclasses import dataclass

from dash.core.samples.fields import Extractor
from dash.core.samples.fieldspec import OutputFields
from dash.core.samples.lines import LineSink
from dash.core.state.quality import QualityTracker
from dash.sources.counts import matching_files

BLOCK = 4 * 1024 * 1024
"""Bytes read at a time."""


@dataclass(frozen=True, slots=True)
class ScannedFile:
    """One file as scanned: its name (the partition), path, complete lines and what is left."""

    name: str
    path: str
    lines: int
    partial_bytes: int
    """Bytes after the last newline (a partial last line), not counted."""
    error: str | None = None


def scan_file(name: str, path: str, tracker: QualityTracker, spec: OutputFields,
              block: int = BLOCK) -> ScannedFile:
    """Feed every complete line of `path` to `tracker` as partition `name`."""
    sink = LineSink(name, path, Extractor(spec))
    lines = 0
    offset = 0
    first = True
    try:
        with open(path, "rb", buffering=0) as fh:
            carry = b""
            while True:
                data = fh.read(block)
                if not data:
                    break
                data = carry + data if carry else data
                end = data.rfind(b"\n") + 1
                carry = data[end:]
                if end:
                    lines += sink.add_block(data[:end], offset, lines + 1)
                    offset += end
                    tracker.apply([sink.take(restart=first, backfill=True)], 0.0)
                    first = False
    except OSError as exc:
        return ScannedFile(name, path, lines, 0, exc.strerror or str(exc))
    if first:
        tracker.apply([sink.take(restart=True, backfill=True)], 0.0)
    return ScannedFile(name, path, lines, len(carry))


def scan(patterns: tuple[str, ...], spec: OutputFields,
         tracker: QualityTracker | None = None) -> tuple[QualityTracker, list[ScannedFile]]:
    """Scan every file the globs match; the tracker holding their figures and what was read."""
    tracker = tracker or QualityTracker(spec)
    files = [scan_file(name, path, tracker, spec) for path, name in matching_files(patterns)]
    return tracker, files
