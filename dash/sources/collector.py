"""The I/O orchestration that the dashboard, `kdash --once` and `kdash serve` share.

`Collector` builds every source from a Config and implements `dash.sources.observations.Sources`.
Its blocking methods run in worker threads and return immutable observations; the `apply_*`
functions fold an observation into a `RunState` on the one thread that owns the trackers.
Server-log lines are parsed in the worker (pure, and off the UI thread), so the main thread only
applies records.

The collector closes what it opened: `close` waits for a read or an NVML poll still in progress
(a lock per resource), so nothing is closed under a running poll, and `aclose` runs that wait
in a daemon thread with a timeout, so a hung driver never blocks the event loop or the exit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat
import threading
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import TYPE_CHECKING

from dash.core.config import Config
from dash.core.errors import ConfigError
from dash.core.log.parse import PARSER, LineParser
from dash.core.samples.model import SampleBatch
from dash.core.state.gpus import GpuReading
from dash.core.state.http_state import HttpSample
from dash.core.state.partitions import OutputCount, glob_error
from dash.core.state.server_url import UrlChoice, UrlFinder
from dash.sources.blocking import run_blocking
from dash.sources.counts import OutputsSource
from dash.sources.files import FileFollower, FollowRead
from dash.sources.observations import FilesRead, LogRead, ProcessesReading
from dash.sources.procs import ProcessError, ProcessSource
from dash.sources.samples import SampleSource
from dash.sources.server_logs import ServerLogs

if TYPE_CHECKING:
    from dash.core.state.run import RunState
    from dash.sources.http import HttpPoller
    from dash.sources.nvml import NvmlSource

__all__ = ["CLIENT_BACKFILL", "CLOSE_TIMEOUT_S", "Collector", "FilesRead", "LogRead", "apply_files",
           "apply_gpus", "apply_http", "apply_processes", "check_globs", "unreadable"]

CLIENT_BACKFILL = 64 * 1024
"""Enough of the client log's end for its last progress bar and recent errors."""
CLOSE_TIMEOUT_S = 3.0
"""How long `aclose` waits for a poll in progress (and NVML's shutdown) before leaving them."""


def unreadable(path: Path) -> str | None:
    """Why `path` can never be followed (a directory, no permission to read it), or None.

    A path that does not exist yet is fine: the server may not have started.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISDIR(st.st_mode):
        return "is a directory; give the log file in it"
    try:
        os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def check_globs(cfg: Config) -> None:
    """Raise ConfigError (one line) for an unusable --outputs or --inputs glob."""
    for flag, patterns in (("--outputs", cfg.outputs), ("--inputs", cfg.inputs)):
        for pattern in patterns:
            why = glob_error(pattern)
            if why:
                raise ConfigError(f"{flag}: {why}")


class Collector:
    """Every source of one run, built from the Config."""

    def __init__(self, cfg: Config, *, nvml_module: object | None = None,
                 parser: LineParser = PARSER, sample_every_s: float = 0.0) -> None:
        """`sample_every_s`: the output files' samples are read at most this often (the live
        screen, whose figures change once a period; 0: at every read, for exact figures)."""
        check_globs(cfg)
        self.cfg = cfg
        self._parser = parser  # the grammar's parser, as every command reads with
        self._logs = ServerLogs(cfg.logs, parser, cfg.backfill_bytes)
        self._client = (FileFollower(cfg.client_log, backfill=CLIENT_BACKFILL, cr_breaks=True)
                        if cfg.client_log else None)
        self._outputs = OutputsSource(cfg.outputs, cfg.inputs) if cfg.outputs else None
        self._samples = (SampleSource(cfg.output_fields, every_s=sample_every_s)
                         if cfg.outputs and cfg.output_fields.samples else None)
        self._procs = ProcessSource(cfg.process) if cfg.process else None
        self._nvml_module = nvml_module
        self._nvml: NvmlSource | None = None
        self._http: HttpPoller | None = None
        self._urls = UrlFinder(cfg.url)
        self.url_choice: UrlChoice | None = self._urls.choice()
        """The URL polled now: replaced whole (one assignment) when the log names another."""
        self._log_read = not cfg.logs
        """Whether the log has been read once (until then, its server_args are unknown)."""
        self._output_paths: tuple[str, ...] = ()
        # One lock per blocking resource: a poll in progress and the close of what it reads
        # never overlap, whichever threads they run on.
        self._files_lock = threading.Lock()
        self._nvml_lock = threading.Lock()

    # -- blocking: call from a worker thread --------------------------------------------------

    def read_files(self) -> FilesRead:
        """Read what is new in the server log, the client log and the outputs."""
        with self._files_lock:
            return self._read_files()

    def _read_files(self) -> FilesRead:
        logs = self._logs.read()
        # The URL comes from the first log's server_args: HTTP is the primary server's.
        first = next((log for log in logs if log.records), None)
        if first is not None and first.path == self._logs.primary_path:
            self._urls.feed(first.records)
            self.url_choice = self._urls.choice()
        self._log_read = True
        client = self._client.poll() if self._client is not None else None
        outputs: tuple[OutputCount, ...] = ()
        totals: dict[str, int] = {}
        samples: tuple[SampleBatch, ...] = ()
        if self._outputs is not None:
            outputs, totals = self._outputs.read()
            self._output_paths = tuple(o.path for o in outputs)
            if self._samples is not None:
                samples = self._samples.read(outputs, self._outputs.positions())
        more = (any(log.follow.more for log in logs) or bool(client and client.more)
                or (self._samples is not None and self._samples.more))
        counting = self._outputs is not None and self._outputs.last_read_counting
        errors = self._outputs.last_read_errors if self._outputs is not None else ()
        cut = self._logs.notice()
        if cut is not None:
            errors = (*errors, cut)
        counting |= self._logs.counting
        return FilesRead(logs, client, outputs, totals, counting, more, errors, samples)

    @property
    def counting(self) -> bool:
        """Whether a background count (an output file's first, the lines before the server
        log's backfill window) is still running."""
        return (self._outputs is not None and self._outputs.busy) or self._logs.counting

    def wait_counts(self, timeout: float | None = None) -> bool:
        """Block until background counts finish (for --once); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.counting:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def sample_gpus(self) -> GpuReading:
        """One NVML reading (a tuple of GpuSnapshot, or NvmlUnavailable); never raises."""
        with self._nvml_lock:
            if self._nvml is None:
                from dash.sources.nvml import NvmlSource

                self._nvml = NvmlSource(self.cfg.gpus, module=self._nvml_module,
                                        process_interval=self.cfg.nvml_process_interval)
            return self._nvml.sample(time.time())

    def sample_processes(self) -> ProcessesReading:
        """The client processes, or None when no pattern is configured."""
        return self._procs.sample() if self._procs is not None else None

    # -- async ----------------------------------------------------------------------------------

    async def poll_http(self) -> HttpSample | None:
        """One poll of the server (an HttpSample), or None when HTTP is off, or while the log's
        first read, which may name the server's port, has not happened yet."""
        got = self._poller()
        if got is None:
            return None
        choice, poller, old = got
        if old is not None:
            await old.aclose()  # the log named another address: poll that one
        return self._described(await poller.poll(time.time()), poller, choice)

    def poll_http_now(self) -> HttpSample | None:
        """`poll_http` in the calling thread (blocking: from one worker thread)."""
        got = self._poller()
        if got is None:
            return None
        choice, poller, old = got
        if old is not None:
            old.close_now()
        return self._described(poller.poll_blocking(time.time()), poller, choice)

    def _poller(self) -> tuple[UrlChoice, HttpPoller, HttpPoller | None] | None:
        """The URL chosen now (read once: the file reader's thread may choose another
        meanwhile), its poller (made when it changed) and the one to close then."""
        choice = self.url_choice
        if choice is None or not self._log_read:
            return None
        old = None
        if self._http is not None and self._http.url != choice.url.rstrip("/"):
            old, self._http = self._http, None
        if self._http is None:
            from dash.sources.http import HttpPoller

            self._http = HttpPoller(choice.url, api_key=self.cfg.api_key)
        return choice, self._http, old

    @staticmethod
    def _described(sample: HttpSample, poller: HttpPoller, choice: UrlChoice) -> HttpSample:
        return dataclasses.replace(sample, url=poller.url, url_source=choice.source,
                                   url_why=choice.why, log_port=choice.log_port)

    async def watch(self, stop_event: asyncio.Event) -> AsyncGenerator[None, None]:
        """Yield whenever a followed file may have changed (and at least every few seconds)."""
        from dash.sources.watch import DEBOUNCE_MS, WatchTargets, watch_changes

        paths = [*self._logs.literal_paths, *([self.cfg.client_log] if self.cfg.client_log else [])]
        targets = WatchTargets(paths, (*self.cfg.outputs, *self._logs.globs))
        # The reader reads at most once a refresh: waking it more often on a busy log is work
        # for nothing (each batch of changes is a thread round trip inside watchfiles).
        debounce = max(DEBOUNCE_MS, round(1000 * self.cfg.refresh))
        async for _ in watch_changes(targets, stop_event, poll=self.cfg.poll, debounce_ms=debounce):
            yield None

    def close(self) -> None:
        """Release descriptors, background counts and NVML (blocks while a poll finishes)."""
        with self._files_lock:
            self._logs.close()
            if self._client is not None:
                self._client.close()
            if self._outputs is not None:
                self._outputs.close()
        with self._nvml_lock:
            if self._nvml is not None:
                self._nvml.shutdown()
                self._nvml = None

    async def aclose(self, timeout: float | None = None) -> None:
        """Close the HTTP client, then what `close` releases, never blocking the loop.

        A poll that has not finished within `timeout` (default CLOSE_TIMEOUT_S; a hung NVML
        call) is left to the exit: its resource is not closed under it.
        """
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        wait = CLOSE_TIMEOUT_S if timeout is None else timeout
        try:
            await run_blocking(self.close, timeout=wait, name="kdash-close")
        except TimeoutError:
            pass  # still closing in its daemon thread; the process exit releases the rest


# -- appliers: run on the thread that owns the RunState -----------------------------------------

def apply_files(state: RunState, read: FilesRead, now: float) -> None:
    """Fold one read of the files into the run's trackers."""
    for log in read.logs:
        _apply_log(state, log, now)
    if read.client is not None:
        c = read.client
        state.client.feed(c.lines, now, c.partial)
        state.client.note_file(c.size, now, c.status, c.message)
    if read.outputs or read.input_totals or state.cfg.outputs:
        state.partitions.set_input_totals(read.input_totals)
        state.partitions.apply(read.outputs, now)
    state.partitions.note_errors(read.errors)
    if read.samples:
        for notice in state.quality.apply(read.samples, now):
            state.add_notice(notice)
    for error in read.errors:
        state.add_notice(error)


REWRITES = frozenset({"truncated", "rotated", "deleted"})


def rewrites(read: FollowRead) -> tuple[int, ...]:
    """Where in a read's lines the log was rewritten (truncated, or replaced by a new file):
    the lines after each index come from the new contents (a restart's `> server.log`)."""
    if not REWRITES.intersection(read.events):
        return ()
    starts = tuple(i for i, offset in read.starts if offset == 0)
    return starts or (len(read.lines),)


def _apply_log(state: RunState, log: LogRead, now: float) -> None:
    s = log.follow
    file_at = None if log.written_ago_s is None else now - log.written_ago_s
    # The file's end was reached: its newest line was written when the file last was.
    written_at = None if s.more else file_at
    state.feed_server(log.path, log.records, now, lines=len(s.lines), written_at=written_at,
                      pattern=log.pattern, last_stamp=log.last_stamp, rewritten=rewrites(s),
                      file_at=file_at, stamp_last=log.stamp_last)
    if log.window is not None:
        state.server(log.path).window_counted(log.window.base)
    message = s.message
    if s.status == "ok" and any(e != "opened" for e in s.events):
        message = f"{s.path}: {', '.join(e for e in s.events if e != 'opened')}"
    state.server(log.path).note_file(s.status, message, now)


def apply_gpus(state: RunState, reading: GpuReading | None, now: float) -> None:
    """Fold one NVML reading, taken at `now`, into the GPU tracker."""
    if reading is not None:
        state.gpus.apply(reading, now)


def apply_processes(state: RunState, procs: ProcessesReading, now: float) -> None:
    """Fold one process listing into the client tracker (an error is a notice, not a crash)."""
    if isinstance(procs, ProcessError):
        state.add_notice(f"process listing failed: {procs.reason}")
    elif procs is not None:
        state.client.set_processes(procs)


def apply_http(state: RunState, sample: HttpSample | None, now: float) -> None:
    """Fold one HTTP poll into the HTTP tracker."""
    if sample is not None:
        state.http.apply(sample, now)
