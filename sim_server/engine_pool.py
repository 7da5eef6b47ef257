"""The bounded engine pool of the asyncio server: every engine call (reset, step, observe) runs here.

The gRPC event loop never runs engine code: a handler awaits :meth:`EnginePool.run`, which hands the call
to one of ``workers`` threads. A stream that waits for its next request costs no thread at all; a session
whose step takes seconds holds one worker, and the others keep stepping other sessions.

Saturation: the pool is *saturated* while a job has waited in its queue for longer than ``saturation_s``
(every worker busy for that long, with more work behind them). The server then reports NOT_SERVING on
gRPC health and 503 on ``/readyz`` so a load balancer sends new sessions elsewhere; calls are still served.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
Done = Callable[[bool, Any], None]
"""How a finished job reports back: (ok, result or exception)."""


class EnginePool:
    """``workers`` engine threads and the queue in front of them.

    The hand-off is kept minimal because it is on every step's path: a job is a tuple on a C-level
    ``SimpleQueue`` (a waiting worker blocks in C, without the GIL) and a finished job settles its asyncio
    future with one ``call_soon_threadsafe`` (no ``concurrent.futures.Future`` between them, as
    ``run_in_executor`` would add). The bookkeeping (``_queued``, ``_running``) is single dict and set
    operations, atomic under the GIL: no lock on the path."""

    def __init__(self, workers: int, saturation_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, nice: int = 0) -> None:
        self.workers = workers
        self.saturation_s = saturation_s
        self.clock = clock
        self.nice = nice
        self._jobs: queue.SimpleQueue[tuple[int, Callable[[], Any], Done] | None] = queue.SimpleQueue()
        self._queued: dict[int, float] = {}  # job number -> time it was submitted (not started yet)
        self._running: set[int] = set()
        self._ids = itertools.count()
        self._threads = [threading.Thread(target=self._work, name=f"vectorworld-engine_{k}", daemon=True)
                         for k in range(workers)]
        for thread in self._threads:
            thread.start()

    def _lower_priority(self) -> None:
        """Engine threads ``nice`` steps below the event loop (Linux schedules threads, so the loop thread
        that answers health checks and idle streams wins the CPU over this server's own engine work)."""
        if self.nice > 0 and hasattr(os, "setpriority"):
            try:
                tid = threading.get_native_id()
                os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + self.nice)
            except OSError:  # not permitted / not per-thread here: run at the process priority
                pass

    def _work(self) -> None:
        self._lower_priority()
        while (item := self._jobs.get()) is not None:
            job, fn, done = item
            if self._queued.pop(job, None) is None:  # its caller was cancelled before it started
                continue
            self._running.add(job)
            try:
                ok, value = True, fn()
            except BaseException as err:  # noqa: BLE001 - handed to the caller
                ok, value = False, err
            finally:
                self._running.discard(job)
            done(ok, value)
            del item, fn, done, value  # not kept alive until the next job (a closed session's last result)

    def _put(self, fn: Callable[[], Any], done: Done) -> int:
        job = next(self._ids)
        self._queued[job] = self.clock()
        self._jobs.put((job, fn, done))
        return job

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on an engine thread. Cancelled while still queued: ``fn`` never runs; cancelled while
        running: ``fn`` runs to its end (its effects stand) and the caller sees CancelledError."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def done(ok: bool, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(_settle, future, ok, value)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        job = self._put(fn, done)
        try:
            return await future
        finally:  # done, or cancelled before it started: then the worker will not run fn
            self._queued.pop(job, None)

    def submit(self, fn: Callable[..., T], *args: object) -> Future[T]:
        """Run ``fn(*args)`` on an engine thread (from outside the event loop: start-up recovery)."""
        future: Future[T] = Future()

        def done(ok: bool, value: Any) -> None:
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

        self._put(lambda: fn(*args), done)
        return future

    @property
    def queued(self) -> int:
        """Jobs waiting for a worker."""
        return len(self._queued)

    @property
    def running(self) -> int:
        return len(self._running)

    def oldest_wait_s(self) -> float:
        """How long the oldest queued job has waited (0 when none waits)."""
        oldest = min(list(self._queued.values()), default=None)
        return 0.0 if oldest is None else max(self.clock() - oldest, 0.0)

    def saturated(self) -> bool:
        return self.oldest_wait_s() > self.saturation_s

    def shutdown(self) -> None:
        """Cancel the jobs still queued, let running ones finish, end the threads."""
        self._queued.clear()  # workers skip them (their asyncio callers were cancelled by the server stop)
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.cancelled():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
