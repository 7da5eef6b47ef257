"""One episode of a batch as a self-contained, picklable task, and the worker-side function that runs it.

A task carries everything a fresh worker process (a spawned local process or a Ray worker on another
machine) needs: the episode's index and its config (seed already set to ``base_seed + index``), the
modules that register the plug-ins the config names, and the episode function (by reference).

Every task yields one JSON-ready *record*: the episode report plus ``index``, or, when the episode raised,
``{"index", "seed", "error", "error_type", "traceback"}``. A failing episode never stops the batch.
"""

from __future__ import annotations

import dataclasses
import importlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vectorworld.batch.episode import StepCallback, run_episode
from vectorworld.sim.config import SessionConfig

EpisodeFn = Callable[..., dict[str, Any]]
"""``fn(config, record_path, on_progress) -> report``; ``on_progress(km)`` after every step, or None."""

# Report fields that measure wall-clock time: they differ between runs of the same seed.
TIMING_FIELDS = frozenset({"wall_s", "rtf", "tile_ms_p50", "tile_ms_p95", "npc_policy_ms", "tile_ms_samples"})


def run_batch_episode(config: SessionConfig, record_path: Path | None = None,
                      on_progress: StepCallback | None = None) -> dict[str, Any]:
    """The default episode function: :func:`run_episode` keeping every tile latency (for the histogram)."""
    return run_episode(config, record_path, on_progress, tile_samples=True)


@dataclass(frozen=True)
class EpisodeTask:
    """Episode ``index`` of a batch. ``config.seed`` is already ``base_seed + index``.

    plugins: modules to import in the worker before the episode (they register generators / policies
    that are not in the built-in module maps, e.g. a test generator).
    record_path: where this episode's recording goes (None: no recording).
    episode_fn: an :data:`EpisodeFn`; :func:`run_batch_episode` unless a caller injects one.
    """

    index: int
    config: SessionConfig
    plugins: tuple[str, ...] = ()
    record_path: Path | None = None
    episode_fn: EpisodeFn = run_batch_episode


def make_tasks(config: SessionConfig, indices: list[int], record_path: Path | None = None,
               episode_fn: EpisodeFn | None = None, episodes: int | None = None) -> list[EpisodeTask]:
    """Tasks for episode ``indices``; episode i uses seed ``config.seed + i``.

    With more than one episode in the batch (``episodes``), recordings go to ``NAME.<i>.SUFFIX``.
    """
    plugins = plugin_modules(config)
    tasks = []
    for i in indices:
        path = record_path
        if record_path is not None and (episodes or len(indices)) > 1:
            path = record_path.with_name(f"{record_path.stem}.{i}{record_path.suffix}")
        tasks.append(EpisodeTask(i, dataclasses.replace(config, seed=config.seed + i), plugins, path,
                                 episode_fn or run_batch_episode))
    return tasks


def plugin_modules(config: SessionConfig) -> tuple[str, ...]:
    """Modules defining the generator and NPC policy factories ``config`` names, if already registered.

    Built-in names load lazily in any process; this covers plug-ins registered at run time by an
    imported module, so that spawned and remote workers register them too.
    """
    from policies.base import POLICIES
    from vectorworld.generation.base import GENERATORS

    modules = []
    for registry, name in ((GENERATORS, config.generator), (POLICIES, config.npc_policy)):
        factory = registry.get(name)
        module = getattr(factory, "__module__", None)
        if module and module != "__main__" and module not in modules:
            modules.append(module)
    return tuple(modules)


def run_task(task: EpisodeTask, on_progress: StepCallback | None = None) -> dict[str, Any]:
    """Run one episode in this process; return its record. Exceptions become an error record.
    ``on_progress(km)`` is called after every step (in-process runs only: it is not sent to workers)."""
    try:
        for module in task.plugins:
            importlib.import_module(module)
        report = task.episode_fn(task.config, task.record_path, on_progress)
        return {"index": task.index, **report, "seed": task.config.seed}
    except Exception as err:  # noqa: BLE001 - one failing episode must not stop the batch
        return error_record(task, f"{type(err).__name__}: {err}", type(err).__name__, traceback.format_exc())


def error_record(task: EpisodeTask, message: str, error_type: str, trace: str = "") -> dict[str, Any]:
    """The record of an episode that did not produce a report."""
    return {"index": task.index, "seed": task.config.seed, "error": message, "error_type": error_type,
            "traceback": trace}


def strip_timing(record: dict[str, Any]) -> dict[str, Any]:
    """The record without wall-clock fields (for comparing runs of the same seeds)."""
    return {k: v for k, v in record.items() if k not in TIMING_FIELDS}
