"""BlockingWorker: one thread for many blocking calls, in order, joined when stopped."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from dash.sources.blocking import BlockingWorker


async def test_calls_run_in_one_thread_in_order_and_the_thread_ends_when_stopped() -> None:
    worker = BlockingWorker("kdash-test")
    idents, order = set(), []

    def job(i: int) -> int:
        idents.add(threading.get_ident())
        order.append(i)
        return i * i

    results = await asyncio.gather(*(worker.call(lambda i=i: job(i)) for i in range(20)))
    assert results == [i * i for i in range(20)] and order == list(range(20))
    assert len(idents) == 1 and threading.get_ident() not in idents
    thread = worker.thread
    assert thread is not None and thread.daemon and thread.ident in idents
    assert await asyncio.to_thread(worker.join, 2.0)
    assert not thread.is_alive()


async def test_an_exception_reaches_the_caller_and_the_thread_goes_on() -> None:
    worker = BlockingWorker("kdash-test")

    def boom() -> None:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        await worker.call(boom)
    assert await worker.call(lambda: 7) == 7
    assert await asyncio.to_thread(worker.join, 2.0)


async def test_a_call_that_hangs_times_out_and_the_join_gives_up() -> None:
    worker = BlockingWorker("kdash-test")
    release = threading.Event()
    with pytest.raises(TimeoutError):
        await worker.call(lambda: release.wait(5), timeout=0.1)
    start = time.monotonic()
    assert not await asyncio.to_thread(worker.join, 0.2)  # still inside the hung call
    assert time.monotonic() - start < 1.0
    release.set()
    assert await asyncio.to_thread(worker.join, 2.0)


async def test_a_call_after_stop_still_runs() -> None:
    worker = BlockingWorker("kdash-test")
    assert await worker.call(lambda: 1) == 1
    worker.stop()
    assert await worker.call(lambda: 2) == 2
    assert await asyncio.to_thread(worker.join, 2.0)
