"""Batch rollouts as plain functions: one episode, many episodes, and the JSON report.

The CLI (``vectorworld rollout``) is a thin wrapper over :func:`run_rollouts`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session

REPORT_VERSION = 1
EpisodeCallback = Callable[[int, dict[str, Any]], None]
StepCallback = Callable[[float], None]

SUMMARY_MEAN_FIELDS = ("km", "ego_offroad_rate", "npc_collisions_per_km", "npc_offroad_per_km",
                       "kinematic_infeasibility_rate", "ego_comfort_rate", "ego_stopped_rate", "rtf", "tile_ms_p50",
                       "tile_ms_p95", "npc_policy_ms", "wall_s", "sim_s")


def run_episode(config: SessionConfig, record_path: Path | None = None,
                on_progress: StepCallback | None = None, tile_samples: bool = False) -> dict[str, Any]:
    """Drive one episode with the built-in planner; return its report (DESIGN.md section 7 fields).

    ``on_progress`` receives the ego's km so far after every step. ``record_path`` writes a recording.
    ``tile_samples`` adds ``tile_ms_samples``: every tile generation latency (ms), for histograms.
    """
    session = Session(config)
    writer = None
    if record_path is not None:
        from vectorworld.wire.recording import RecordingWriter

        writer = RecordingWriter(record_path, config)
    try:
        session.reset()
        if writer is not None:
            writer.write_frame(session.frame())
        while not session.done:
            session.advance()
            if writer is not None:
                writer.write_frame(session.frame())
            if on_progress is not None:
                on_progress(session.metrics.distance_m / 1000.0)
        report = session.report()
        if tile_samples:
            report["tile_ms_samples"] = [round(float(ms), 3) for ms in session.metrics.tile_ms]
        if writer is not None:
            writer.close(report)
            writer = None
        return report
    finally:
        if writer is not None:
            writer.abort()
        session.close()


def summarize(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate episode reports: means of rates, totals of counts, completion rate."""
    ok = [e for e in episodes if "error" not in e]
    if not ok:
        return {"episodes": len(episodes), "failed": len(episodes)}
    summary: dict[str, Any] = {"episodes": len(episodes), "failed": len(episodes) - len(ok),
                               "completed_rate": float(np.mean([e["completed"] for e in ok])),
                               "total_km": float(sum(e["km"] for e in ok)),
                               "ego_collisions": int(sum(e["ego_collisions"] for e in ok))}
    for name in SUMMARY_MEAN_FIELDS:
        summary[f"mean_{name}"] = float(np.mean([e[name] for e in ok]))
    return summary


def config_dict(config: SessionConfig) -> dict[str, Any]:
    return dataclasses.asdict(config)


def run_rollouts(config: SessionConfig, episodes: int = 1, record_path: Path | None = None,
                 on_episode: EpisodeCallback | None = None,
                 on_progress: StepCallback | None = None) -> dict[str, Any]:
    """Run ``episodes`` episodes; episode i uses seed ``config.seed + i``.

    A KeyboardInterrupt stops cleanly: the report holds the episodes already finished and
    ``"interrupted": true``. With several episodes, recordings go to ``NAME.<i>.SUFFIX``.
    """
    from vectorworld.errors import ConfigError

    if episodes < 1:
        raise ConfigError(f"episodes must be >= 1, got {episodes}", field="episodes")
    results: list[dict[str, Any]] = []
    interrupted = False
    try:
        for i in range(episodes):
            episode_config = dataclasses.replace(config, seed=config.seed + i)
            path = record_path
            if record_path is not None and episodes > 1:
                path = record_path.with_name(f"{record_path.stem}.{i}{record_path.suffix}")
            result = run_episode(episode_config, path, on_progress)
            results.append(result)
            if on_episode is not None:
                on_episode(i, result)
    except KeyboardInterrupt:
        interrupted = True
    return {"version": REPORT_VERSION, "config": config_dict(config), "episodes": results,
            "summary": summarize(results), "interrupted": interrupted}
