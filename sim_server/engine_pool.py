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
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class EnginePool:
    """``workers`` engine threads and the queue in front of them (thread-safe bookkeeping)."""

    def __init__(self, workers: int, saturation_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, nice: int = 0) -> None:
        self.workers = workers
        self.saturation_s = saturation_s
        self.clock = clock
        self.nice = nice
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vectorworld-engine",
                                            initializer=self._lower_priority)
        self._lock = threading.Lock()
        self._queued: dict[int, float] = {}  # job number -> time it was submitted (not started yet)
        self._running = 0
        self._ids = itertools.count()

    def _lower_priority(self) -> None:
        """Engine threads ``nice`` steps below the event loop (Linux schedules threads, so the loop thread
        that answers health checks and idle streams wins the CPU over this server's own engine work)."""
        if self.nice > 0 and hasattr(os, "setpriority"):
            try:
                tid = threading.get_native_id()
                os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + self.nice)
            except OSError:  # not permitted / not per-thread here: run at the process priority
                pass

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on an engine thread. Cancelled while still queued: ``fn`` never runs; cancelled while
        running: ``fn`` runs to its end (its effects stand) and the caller sees CancelledError."""
        job = next(self._ids)
        with self._lock:
            self._queued[job] = self.clock()

        def call() -> T:
            with self._lock:
                if self._queued.pop(job, None) is None:  # its caller was cancelled before it started
                    raise asyncio.CancelledError
                self._running += 1
            try:
                return fn()
            finally:
                with self._lock:
                    self._running -= 1

        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, call)
        finally:
            with self._lock:  # done, or cancelled before it started: then call() will not run fn
                self._queued.pop(job, None)

    def submit(self, fn: Callable[..., T], *args: object) -> Future[T]:
        """Run ``fn(*args)`` on an engine thread (from outside the event loop: start-up recovery)."""
        return self._executor.submit(fn, *args)

    @property
    def queued(self) -> int:
        """Jobs waiting for a worker."""
        with self._lock:
            return len(self._queued)

    @property
    def running(self) -> int:
        with self._lock:
            return self._running

    def oldest_wait_s(self) -> float:
        """How long the oldest queued job has waited (0 when none waits)."""
        with self._lock:
            oldest = min(self._queued.values(), default=None)
        return 0.0 if oldest is None else max(self.clock() - oldest, 0.0)

    def saturated(self) -> bool:
        return self.oldest_wait_s() > self.saturation_s

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
