"""Episodes as Ray tasks (``vectorworld rollout --ray [ADDRESS]``). Ray is an optional extra: ``pip install
"vectorworld[ray]"``; it is imported only when this backend starts.

Address: ``local`` (the default) starts a new Ray instance on this machine, stopped when the batch ends;
``auto`` joins the cluster this machine belongs to; ``ray://HOST:10001`` connects through Ray Client.
Every worker node needs the same environment (vectorworld, its checkpoints, any plug-in modules).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from vectorworld.batch.backends import Backend
from vectorworld.batch.tasks import EpisodeTask, error_record, run_task
from vectorworld.errors import ConfigError

LOCAL = "local"


class RayBackend(Backend):
    """Each episode is one Ray task with ``cpus_per_task`` CPUs, ``gpus_per_task`` GPUs and optional custom
    ``resources`` (e.g. ``{"sim_node": 1}``, names defined by ``ray start --resources``).

    max_workers: when this backend starts a local instance, the CPUs it gives Ray (None: all cores).
    A task whose worker dies is retried by Ray ``max_retries`` times, then recorded as failed.
    """

    name = "ray"

    def __init__(self, address: str = LOCAL, cpus_per_task: float = 1.0, gpus_per_task: float = 0.0,
                 resources: dict[str, float] | None = None, max_workers: int | None = None,
                 max_retries: int = 1) -> None:
        if cpus_per_task <= 0:
            raise ConfigError(f"cpus_per_task must be > 0, got {cpus_per_task}", field="cpus_per_task")
        self.address = address or LOCAL
        if gpus_per_task < 0:
            raise ConfigError(f"gpus_per_task must be >= 0, got {gpus_per_task}", field="gpus_per_task")
        self.cpus_per_task = cpus_per_task
        self.gpus_per_task = gpus_per_task
        self.resources = dict(resources or {})
        self.max_workers = max_workers
        self.max_retries = max_retries
        self._started = False
        self._pending: list[Any] = []

    @staticmethod
    def check_available() -> None:
        """Raise ConfigError if ray is not installed (called before anything is simulated)."""
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise ConfigError('the Ray backend needs the optional dependency ray: pip install "vectorworld[ray]"')

    def _connect(self) -> Any:
        self.check_available()
        import ray

        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address == LOCAL and self.max_workers is not None:
                kwargs["num_cpus"] = self.max_workers
            try:
                ray.init(address=self.address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as err:
                raise ConfigError(f"address {self.address}: cannot start or reach Ray ({err})",
                                  field="address") from None
            self._started = True
        return ray

    def run(self, tasks: Sequence[EpisodeTask]) -> Iterator[dict[str, Any]]:
        if not tasks:
            return
        ray = self._connect()
        remote = ray.remote(run_task).options(num_cpus=self.cpus_per_task, num_gpus=self.gpus_per_task,
                                              resources=self.resources or None,
                                              max_retries=self.max_retries)
        by_ref = {remote.remote(task): task for task in tasks}
        self._pending = list(by_ref)
        while self._pending:
            done, self._pending = ray.wait(self._pending, num_returns=1)
            for ref in done:
                task = by_ref.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as err:  # noqa: BLE001 - worker crash, lost node, unpicklable result
                    yield error_record(task, f"ray task failed: {type(err).__name__}: {err}", type(err).__name__)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "address": self.address, "cpus_per_task": self.cpus_per_task,
                "gpus_per_task": self.gpus_per_task, "resources": self.resources}

    def close(self) -> None:
        pending, self._pending = self._pending, []
        if not (pending or self._started):
            return
        import ray

        for ref in pending:
            ray.cancel(ref, force=True)
        if self._started:
            ray.shutdown()
            self._started = False
