"""Batch evaluation at scale: many episodes on local processes or a Ray cluster, streamed to a report
directory, resumable, with confidence intervals and run-to-run comparison.

    run_batch(config, episodes, LocalPoolBackend(4), out_dir=Path("runs/a"))   # vectorworld rollout --workers 4
    compare_runs(load_run(Path("runs/b")).records, load_run(Path("runs/a")).records)

Ray is imported only by :class:`vectorworld.batch.ray_backend.RayBackend`; matplotlib only by the plots.
"""

from vectorworld.batch.backends import Backend, LocalPoolBackend, SerialBackend
from vectorworld.batch.compare import MetricDiff, compare_runs, describe_run
from vectorworld.batch.report_dir import Run, load_run
from vectorworld.batch.runner import BatchResult, run_batch
from vectorworld.batch.summary import summarize_batch
from vectorworld.batch.tasks import TIMING_FIELDS, EpisodeTask, strip_timing

__all__ = ["TIMING_FIELDS", "Backend", "BatchResult", "EpisodeTask", "LocalPoolBackend", "MetricDiff", "Run",
           "SerialBackend", "compare_runs", "describe_run", "load_run", "run_batch", "strip_timing",
           "summarize_batch"]
