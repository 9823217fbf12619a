"""Blocking calls off the event loop, in daemon threads that can never hold up the exit.

`asyncio.to_thread` runs calls in the loop's default executor, and `asyncio.run` joins that
executor without a timeout when it ends: one NVML call that never returns (a hung driver, a GPU
falling off the bus) or a read on a dead NFS mount would keep the process alive after SIGTERM.
`run_blocking` runs the call in a daemon thread of its own instead, so the loop can stop waiting
(`timeout`, or the awaiting task cancelled) and the process can still exit. A thread per call
costs tens of microseconds, nothing beside a poll that runs every second at most.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def run_blocking(fn: Callable[[], T], *, timeout: float | None = None,
                       name: str = "kdash-blocking") -> T:
    """`fn()` in a daemon thread; its value or its exception.

    Raises `TimeoutError` when it has not returned after `timeout` seconds (it then runs on,
    unawaited, until it returns or the process exits).
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def call() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed to the awaiting task, which re-raises it
            error = exc  # `exc` itself is unbound when the except clause ends
            _hand_over(loop, done, lambda: done.set_exception(error))
        else:
            _hand_over(loop, done, lambda: done.set_result(value))

    threading.Thread(target=call, name=name, daemon=True).start()
    try:
        # Cancelled on a timeout (or with the awaiting task): the thread's answer is then dropped.
        return await asyncio.wait_for(done, timeout)
    except asyncio.TimeoutError:
        raise TimeoutError(f"{name}: no answer after {timeout:g} s") from None


def _hand_over(loop: asyncio.AbstractEventLoop, done: asyncio.Future[T],
               settle: Callable[[], None]) -> None:
    """Settle `done` on its loop's thread, unless nobody waits for it any more."""
    def on_loop() -> None:
        if not done.done():
            settle()

    try:
        loop.call_soon_threadsafe(on_loop)
    except RuntimeError:
        pass  # the loop has closed: nobody is waiting any more
