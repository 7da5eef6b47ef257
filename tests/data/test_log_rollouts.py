"""Rollouts that start from a real log: the world outpaints from the recorded lanes, joined without gaps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session

SEAM_TOLERANCE_M = 0.5


def seam_gaps(session: Session, real_ids: set[int]) -> list[float]:
    """Endpoint gaps (m) of every successor edge between a recorded lane and a generated one."""
    graph, gaps = session.world.graph, []
    for lane in graph.lanes.values():
        for succ in lane.successors:
            if succ in graph and (lane.id in real_ids) != (succ in real_ids):
                gaps.append(float(np.linalg.norm(lane.points[-1] - graph[succ].points[0])))
    return gaps


def drive(config: SessionConfig, steps: int) -> Session:
    session = Session(config)
    obs = session.reset()
    while not obs.done and session.step_index < steps:
        obs = session.step()
    return session


@pytest.mark.slow
@pytest.mark.parametrize("source", ["womd", "nuplan"])
def test_log_rollout_outpaints_from_the_real_lanes(source: str, request: pytest.FixtureRequest) -> None:
    if source == "womd":
        config = SessionConfig(seed=0, scenario=f"womd:{request.getfixturevalue('womd_path')}")
    else:
        db, maps, _ = request.getfixturevalue("nuplan_files")
        config = SessionConfig(seed=0, scenario=f"nuplan:{db}#0", nuplan_maps_dir=str(Path(maps)))
    session = drive(config, 300)
    real_ids = set(session.scenario.map.lanes.lanes)
    gaps = seam_gaps(session, real_ids)
    assert len(gaps) >= 2, "no generated tile was joined to the recorded map"
    assert max(gaps) <= SEAM_TOLERANCE_M
    assert session.end_reason.value in ("none", "goal_reached")
    assert session.metrics.distance_m > 100.0
    # The ego left the recorded map onto generated lanes, or is about to.
    generated = [i for i in session.world.graph.lanes if i not in real_ids]
    assert generated
