"""One episode as a plain function, and the summary of a batch's episode reports.

Every way of running episodes (``vectorworld rollout`` in this process or on workers, the leaderboard,
the benchmarks) goes through :func:`vectorworld.batch.runner.run_batch`, whose tasks call
:func:`run_episode`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session

REPORT_VERSION = 1
StepCallback = Callable[[float], None]

SUMMARY_MEAN_FIELDS = ("km", "ego_offroad_rate", "npc_collisions_per_km", "npc_offroad_per_km",
                       "kinematic_infeasibility_rate", "ego_comfort_rate", "ego_stopped_rate", "rtf", "tile_ms_p50",
                       "tile_ms_p95", "npc_policy_ms", "wall_s", "sim_s")


def run_episode(config: SessionConfig, record_path: Path | None = None,
                on_progress: StepCallback | None = None, tile_samples: bool = False) -> dict[str, Any]:
    """Drive one episode with the built-in planner; return its report (DESIGN.md section 7 fields).

    ``on_progress`` receives the ego's km so far after every step. ``record_path`` writes a recording.
    ``tile_samples`` adds ``tile_ms_samples``: every tile generation latency (ms), for histograms (to the
    returned report only: a recording holds no wall-clock values).
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
        if writer is not None:
            writer.close(report)
            writer = None
        if tile_samples:
            report["tile_ms_samples"] = [round(float(ms), 3) for ms in session.metrics.tile_ms]
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
