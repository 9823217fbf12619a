"""Waking on changes to followed files: real directories, real inotify (and polling)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from dash.sources.watch import WatchTargets, watch_changes


async def _wakes_after(targets: WatchTargets, action, *, poll: bool, safety: float) -> float:
    stop = asyncio.Event()
    gen = watch_changes(targets, stop, poll=poll, debounce_ms=50, safety_poll_s=safety)
    await asyncio.sleep(0.3)  # let the watch start before changing anything
    first = asyncio.ensure_future(gen.__anext__())
    await asyncio.sleep(0.3)
    t0 = time.monotonic()
    # Act again every half second until woken, as a growing log does: on a loaded machine the
    # watcher's first scan may finish after the first write, which it then counts as the baseline.
    while not first.done() and time.monotonic() - t0 < safety + 5:
        action()
        await asyncio.wait([first], timeout=0.5)
    await asyncio.wait_for(first, timeout=1)
    elapsed = time.monotonic() - t0
    stop.set()
    await gen.aclose()
    return elapsed


@pytest.mark.parametrize("poll", [False, True])
async def test_a_write_to_a_followed_file_wakes_before_the_safety_tick(tmp_path: Path, poll: bool) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    t = WatchTargets([log])

    def append() -> None:
        with log.open("a") as fh:
            fh.write("x\n")

    elapsed = await _wakes_after(t, append, poll=poll, safety=30.0)
    assert elapsed < 10.0  # far below the 30 s safety tick: the watch itself woke us


async def test_other_files_do_not_wake_but_the_safety_tick_does(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    t = WatchTargets([log])
    assert not t.wanted(str(tmp_path / "other.txt"))
    elapsed = await _wakes_after(t, lambda: (tmp_path / "other.txt").write_text("x"),
                                 poll=False, safety=1.5)
    assert elapsed >= 0.5  # nothing woke us before the safety tick


async def test_new_output_matching_a_glob_wakes(tmp_path: Path) -> None:
    (tmp_path / "prepared" / "B1").mkdir(parents=True)
    t = WatchTargets([], [str(tmp_path / "prepared" / "*" / "responses.jsonl")])
    assert t.wanted(str(tmp_path / "prepared" / "B2" / "responses.jsonl"))

    def act() -> None:
        (tmp_path / "prepared" / "B1" / "responses.jsonl").write_text("{}\n")

    assert await _wakes_after(t, act, poll=False, safety=30.0) < 10.0


async def test_a_missing_directory_only_gets_the_safety_tick(tmp_path: Path) -> None:
    t = WatchTargets([tmp_path / "later" / "x.log"])
    assert t.existing_dirs() == ((), False)
    elapsed = await _wakes_after(t, lambda: None, poll=False, safety=0.5)
    assert elapsed < 5.0
