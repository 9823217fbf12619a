"""The Collector closes what it opened, never under a poll still running on another thread."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from ui.fake_sources import stuck_nvml

from dash.core.config import Config
from dash.core.log.grammar import GRAMMAR
from dash.core.log.parse import LineParser, Record
from dash.sources.blocking import run_blocking
from dash.sources.collector import Collector


def test_close_waits_for_an_nvml_poll_in_progress() -> None:
    nvml, entered, release = stuck_nvml()
    col = Collector(Config(url=""), nvml_module=nvml)
    poll = threading.Thread(target=col.sample_gpus)
    poll.start()
    assert entered.wait(5)
    closer = threading.Thread(target=col.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive() and nvml._refcount == 1  # not shut down under the running poll
    release.set()
    poll.join(5)
    closer.join(5)
    assert not closer.is_alive() and nvml._refcount == 0


class _SlowParser(LineParser):
    """The grammar's parser, held at its first line until released."""

    def __init__(self) -> None:
        super().__init__(GRAMMAR)
        self.entered, self.release = threading.Event(), threading.Event()

    def parse(self, text: str, lineno: int = 0) -> Record | None:
        self.entered.set()
        self.release.wait(10)
        return super().parse(text, lineno)


def test_close_waits_for_a_read_in_progress(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("a line\n")
    parser = _SlowParser()
    entered, release = parser.entered, parser.release
    col = Collector(Config(log=log, url=""), parser=parser)
    reads: list[object] = []
    reader = threading.Thread(target=lambda: reads.append(col.read_files()))
    reader.start()
    assert entered.wait(5)
    closer = threading.Thread(target=col.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive()  # the descriptor stays open while it is being read
    release.set()
    reader.join(5)
    closer.join(5)
    assert not closer.is_alive() and len(reads) == 1


async def test_run_blocking_gives_the_value_the_error_or_a_timeout() -> None:
    assert await run_blocking(lambda: 41 + 1) == 42

    def broken() -> None:
        raise ValueError("inside the thread")

    with pytest.raises(ValueError, match="inside the thread"):
        await run_blocking(broken)
    hung = threading.Event()
    with pytest.raises(TimeoutError, match="hung: no answer after 0.1 s"):
        await run_blocking(lambda: hung.wait(10), timeout=0.1, name="hung")
    hung.set()
    await asyncio.sleep(0.05)  # the late answer is dropped, nobody waits for it
