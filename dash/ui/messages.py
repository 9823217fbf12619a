"""Facts that workers post to the app: immutable observations, applied on the main thread.

A worker never touches a widget or the run state; it produces one of these and posts it. The
handlers in `dash.ui.app` apply them to `RunState` (on the one thread that owns it).
"""

from __future__ import annotations

from typing import Any

from textual.message import Message


class FilesObserved(Message):
    """What one pass over the followed files found (server log, client log, outputs)."""

    def __init__(self, reading: Any) -> None:
        super().__init__()
        self.reading = reading
        """The collector's `FilesRead` value (new records, raw lines, output counts)."""


class GpusSampled(Message):
    """One NVML poll: GPU snapshots, or why NVML is unavailable."""

    def __init__(self, reading: Any) -> None:
        super().__init__()
        self.reading = reading

    def can_replace(self, message: Message) -> bool:
        # A newer sample supersedes one still queued: only the latest matters on screen.
        return isinstance(message, GpusSampled)


class HttpSampled(Message):
    """One HTTP poll of the server (an error is a value inside the sample)."""

    def __init__(self, sample: Any) -> None:
        super().__init__()
        self.sample = sample


class ProcessesSampled(Message):
    """The client processes matching the configured pattern."""

    def __init__(self, processes: Any) -> None:
        super().__init__()
        self.processes = processes

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProcessesSampled)
