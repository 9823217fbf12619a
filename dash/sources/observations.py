"""The seam between the sources and whoever owns the run state: observations, and `Sources`.

Every poll of a source gives an immutable observation (it crosses from a worker thread to the
thread that owns the `RunState`): a `FilesRead`, a `GpuReading`, a `ProcessesReading`, an
`HttpSample`. `Sources` is what the dashboard's workers call to get them; `Collector` is the
real one, and tests' doubles implement the same protocol.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from dash.core.linenums import WindowCounted
from dash.core.samples.model import SampleBatch
from dash.core.snapshot import ProcessInfo, Record
from dash.core.state.gpus import GpuReading
from dash.core.state.http_state import HttpSample
from dash.core.state.partitions import OutputCount
from dash.sources.files import FollowRead
from dash.sources.procs import ProcessError

ProcessesReading = tuple[ProcessInfo, ...] | ProcessError | None
"""The matching client processes, why they could not be listed, or None (no pattern set)."""


@dataclass(frozen=True, slots=True)
class LogRead:
    """One server log's new lines."""

    path: str
    """The log's path (for a glob that matches nothing yet: the glob)."""
    follow: FollowRead
    records: tuple[Record | None, ...] = ()
    """Its new lines, parsed (None: a line of no interest)."""
    written_ago_s: float | None = None
    """How long ago (wall clock seconds) the file was last written, when lines were read: the
    newest of them was written then."""
    pattern: str | None = None
    """The `--log` glob this file matched (None: a path given as it is)."""
    window: WindowCounted | None = None
    """The lines before its backfill window were just counted (once)."""
    last_stamp: str | None = None
    """The stamp of the last stamped line read (any line: an HTTP access line too), as a
    record's `ts` would carry it."""
    stamp_last: bool = True
    """That stamped line is the file's last: nothing without a stamp (a progress bar, a
    traceback) was written after it, so the file's mtime is its stamp's moment."""


@dataclass(frozen=True, slots=True)
class FilesRead:
    """One read of every followed file."""

    logs: tuple[LogRead, ...] = ()
    """Every server log, in the order configured (a glob's files in name order)."""
    client: FollowRead | None = None
    outputs: tuple[OutputCount, ...] = ()
    input_totals: Mapping[str, int] = field(default_factory=dict)
    counting: bool = False
    """A first count of a big output file is still running in the background."""
    more: bool = False
    """A followed file had more new bytes than one read takes: read again soon."""
    errors: tuple[str, ...] = ()
    """Output or prompt files that could not be counted this time ("path: reason")."""
    samples: tuple[SampleBatch, ...] = ()
    """What the new lines of the output files hold (`dash.sources.samples`)."""

    @property
    def server(self) -> FollowRead | None:
        """The first server log's read (the only one, usually)."""
        return self.logs[0].follow if self.logs else None

    @property
    def records(self) -> tuple[Record | None, ...]:
        """The first server log's records."""
        return self.logs[0].records if self.logs else ()

    @property
    def window(self) -> WindowCounted | None:
        """The first server log's counted window, when it was just counted."""
        return self.logs[0].window if self.logs else None


class Sources(Protocol):
    """The sources of one run, as the dashboard's workers use them.

    The blocking methods are called from one worker thread each (never two at once for the
    same method); `poll_http` and `watch` run on the event loop. None of them raises for an I/O
    problem: it comes back inside the observation. `aclose` releases everything the sources
    opened, waiting for a poll still in progress, and never blocks the event loop.
    """

    def read_files(self) -> FilesRead:
        """What is new in the server log, the client log and the output files."""
        ...

    def sample_gpus(self) -> GpuReading:
        """One NVML reading."""
        ...

    def sample_processes(self) -> ProcessesReading:
        """The client processes."""
        ...

    async def poll_http(self) -> HttpSample | None:
        """One poll of the server; None when no URL is configured."""
        ...

    def poll_http_now(self) -> HttpSample | None:
        """`poll_http`, blocking, from the one worker thread that polls the server."""
        ...

    def watch(self, stop_event: asyncio.Event) -> AsyncGenerator[None, None]:
        """Yield whenever a followed file may have changed, until `stop_event` is set."""
        ...

    async def aclose(self, timeout: float | None = None) -> None:
        """Release what the sources opened (after the workers that use them have stopped),
        waiting `timeout` seconds at most (None: the sources' own default)."""
        ...
