"""Blocking calls off the event loop, in daemon threads that can never hold up the exit.

`asyncio.to_thread` runs calls in the loop's default executor, and `asyncio.run` joins that
executor without a timeout when it ends: one NVML call that never returns (a hung driver, a GPU
falling off the bus) or a read on a dead NFS mount would keep the process alive after SIGTERM.
`run_blocking` runs the call in a daemon thread of its own instead, so the loop can stop waiting
(`timeout`, or the awaiting task cancelled) and the process can still exit. A thread per call
costs tens of microseconds, nothing beside a poll that runs every second at most.

`BlockingWorker` is one such daemon thread kept for many calls of one source (the HTTP polls,
every few seconds for as long as the dashboard runs): calls wait in its queue and run one at a
time, in order, and `stop` ends the thread once the call in progress returns.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from functools import partial
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


_Job = tuple[Callable[[], object], asyncio.AbstractEventLoop, "asyncio.Future[object]"]


class BlockingWorker:
    """One long-lived daemon thread that runs blocking calls for the event loop, one at a time.

    `await call(fn)` hands `fn` to the thread and waits for its value or its exception; the
    thread is started by the first call. `stop` lets the thread end after the calls already
    queued, and `join` waits for that (with a timeout: a call that never returns is left to
    the process exit, the thread being a daemon). A call made after `stop` runs in a thread of
    its own (`run_blocking`), as one made while nothing else is left to run it.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def thread(self) -> threading.Thread | None:
        """The worker's thread, once a call has started it."""
        return self._thread

    async def call(self, fn: Callable[[], T], *, timeout: float | None = None) -> T:
        """`fn()` in the worker's thread; `TimeoutError` when it has not returned in time (it
        runs on, unawaited; later calls wait behind it)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        with self._lock:
            late = self._stopped
            if not late:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self.name,
                                                    daemon=True)
                    self._thread.start()
                self._jobs.put((fn, loop, done))  # type: ignore[arg-type]
        if late:
            return await run_blocking(fn, timeout=timeout, name=self.name)
        try:
            return await asyncio.wait_for(done, timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"{self.name}: no answer after {timeout:g} s") from None

    def stop(self) -> None:
        """End the thread once the calls queued so far have run (returns at once)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            if self._thread is not None:
                self._jobs.put(None)

    def join(self, timeout: float | None = None) -> bool:
        """Stop, and wait up to `timeout` for the thread to end; whether it has."""
        self.stop()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, loop, done = job
            try:
                value = fn()
            except BaseException as exc:  # handed to the awaiting task, which re-raises it
                # Bound now: the loop runs the settling after this thread took the next job.
                _hand_over(loop, done, partial(done.set_exception, exc))
            else:
                _hand_over(loop, done, partial(done.set_result, value))
