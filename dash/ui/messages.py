"""Facts that workers post to the app: immutable observations, applied on the main thread.

A worker never touches a widget or the run state; it produces one of these and posts it. The
handlers in `dash.ui.app` apply them to `RunState` (on the one thread that owns it).
"""

from __future__ import annotations

from textual.message import Message

from dash.core.state.gpus import DEFAULT_HISTORY, GpuSample
from dash.core.state.http_state import HttpSample
from dash.sources.observations import FilesRead, ProcessesReading

MAX_FOLDED_SAMPLES = DEFAULT_HISTORY
"""GPU samples one message carries at most: a main thread stalled longer than the charts'
history loses only points the charts would have dropped anyway."""


class FilesObserved(Message):
    """What one pass over the followed files found (server log, client log, outputs)."""

    def __init__(self, reading: FilesRead) -> None:
        super().__init__()
        self.reading = reading


class GpusSampled(Message):
    """NVML polls, oldest first: the newest, and any that were still queued when it came.

    The dashboard's own NVML loop leaves its samples for the tick instead
    (`WorkerApp.take_samples`), so as not to wake the main thread between ticks."""

    def __init__(self, sample: GpuSample) -> None:
        super().__init__()
        self.samples: tuple[GpuSample, ...] = (sample,)

    def can_replace(self, message: Message) -> bool:
        """Take the place of a newer sample still queued, handing it this one's samples.

        Textual asks the message it took from the queue whether it may be superseded by the next
        one; only the newest matters on screen, but each sample is a point of the GPU history,
        so the dropped ones travel on in the survivor instead of leaving a gap.
        """
        if not isinstance(message, GpusSampled):
            return False
        message.samples = (self.samples + message.samples)[-MAX_FOLDED_SAMPLES:]
        return True


class HttpSampled(Message):
    """One HTTP poll of the server (an error is a value inside the sample).

    The dashboard's own HTTP loop leaves its polls for the tick instead
    (`WorkerApp.take_samples`), so as not to wake the main thread between ticks."""

    def __init__(self, sample: HttpSample | None) -> None:
        super().__init__()
        self.sample = sample


class ProcessesSampled(Message):
    """The client processes matching the configured pattern."""

    def __init__(self, processes: ProcessesReading) -> None:
        super().__init__()
        self.processes = processes

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProcessesSampled)


class SourceTrouble(Message):
    """An I/O error a source let through as an exception: a notice; the worker carries on."""

    def __init__(self, source: str, error: OSError) -> None:
        super().__init__()
        self.source = source
        self.error = error

    @property
    def text(self) -> str:
        return f"{self.source}: {self.error.strerror or self.error}"


class SourceFailed(Message):
    """A source's worker raised something other than an I/O error: a bug, raised again by the
    app's handler so that it stops loudly (a traceback, exit 1; a failing test) rather than
    showing stale data behind a toast."""

    def __init__(self, source: str, error: Exception) -> None:
        super().__init__()
        self.source = source
        self.error = error
