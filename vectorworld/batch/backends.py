"""Where episodes run: in this process, in a pool of local processes, or as Ray tasks (``ray_backend``).

A backend takes a list of :class:`EpisodeTask` and yields one record per task, in completion order.
Results never depend on the backend: every task carries its own seed, and a worker holds no state from
one episode to the next except imported modules.
"""

from __future__ import annotations

import abc
import functools
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from vectorworld.batch.tasks import EpisodeTask, error_record, run_task
from vectorworld.errors import ConfigError


class Backend(abc.ABC):
    """Runs episode tasks; use as a context manager so workers are released on any exit."""

    name = "backend"

    @abc.abstractmethod
    def run(self, tasks: Sequence[EpisodeTask]) -> Iterator[dict[str, Any]]:
        """Yield one record per task as each finishes (any order)."""

    def describe(self) -> dict[str, Any]:
        """How the batch ran, for the report's config (does not affect results)."""
        return {"backend": self.name}

    def close(self) -> None:
        """Release workers; idempotent."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialBackend(Backend):
    """Runs every episode in this process, one after the other (``--workers 1``).

    on_step(index, km): called after every step of episode ``index`` with the ego's km so far (a progress
    bar); the other backends run episodes elsewhere and report only whole episodes."""

    name = "serial"

    def __init__(self, on_step: Callable[[int, float], None] | None = None) -> None:
        self.on_step = on_step

    def run(self, tasks: Sequence[EpisodeTask]) -> Iterator[dict[str, Any]]:
        for task in tasks:
            yield run_task(task, None if self.on_step is None else functools.partial(self.on_step, task.index))

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "workers": 1}


def init_worker(threads: int) -> None:
    """Pool initializer: cap math-library threads so K workers do not oversubscribe the cores, and exit if
    the parent dies (a killed ``rollout`` must not leave its workers running episodes nobody collects)."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    import sys
    import threading

    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True, name="orphan-watch").start()

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def _exit_when_orphaned(parent_pid: int, poll_s: float = 1.0) -> None:
    while os.getppid() == parent_pid:
        time.sleep(poll_s)
    os._exit(1)


class LocalPoolBackend(Backend):
    """Episodes in ``workers`` local processes (``--workers K``).

    start_method: multiprocessing start method; "spawn" (default) is safe with torch and threads and
    portable; plug-in modules named by the tasks are re-imported in each worker. A worker that dies
    (segfault, out of memory) breaks the pool: the episodes not yet finished are recorded as failed
    (``--resume`` runs them again).
    """

    name = "local"

    def __init__(self, workers: int, start_method: str = "spawn", threads_per_worker: int | None = None) -> None:
        if workers < 1:
            raise ConfigError(f"workers must be >= 1, got {workers}", field="workers")
        if start_method not in multiprocessing.get_all_start_methods():
            raise ConfigError(f"start method {start_method!r} is not available here; choose one of "
                              f"{multiprocessing.get_all_start_methods()}")
        self.workers = workers
        self.start_method = start_method
        self.threads = threads_per_worker or max(1, (os.cpu_count() or 1) // workers)
        self._executor: ProcessPoolExecutor | None = None

    def run(self, tasks: Sequence[EpisodeTask]) -> Iterator[dict[str, Any]]:
        if not tasks:
            return
        ctx = multiprocessing.get_context(self.start_method)
        self._executor = ProcessPoolExecutor(min(self.workers, len(tasks)), mp_context=ctx,
                                             initializer=init_worker, initargs=(self.threads,))
        pending: dict[Future[dict[str, Any]], EpisodeTask] = {
            self._executor.submit(run_task, task): task for task in tasks}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                try:
                    yield future.result()
                except BrokenProcessPool as err:
                    yield error_record(task, f"worker process died: {err}", "BrokenProcessPool")
                except Exception as err:  # noqa: BLE001 - e.g. an unpicklable report
                    yield error_record(task, f"{type(err).__name__}: {err}", type(err).__name__)
        executor, self._executor = self._executor, None
        executor.shutdown(wait=True)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "workers": self.workers, "start_method": self.start_method,
                "threads_per_worker": self.threads}

    def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        # Stopped early (Ctrl-C, an error in the caller): end the running episodes now instead of waiting.
        processes = getattr(executor, "_processes", None) or {}
        for process in list(processes.values()):
            if process.is_alive():
                process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)
