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
@pytest.mark.parametrize("source", ["womd", "nuplan", "womd-example", "gpudrive", "scenarionet"])
def test_log_rollout_outpaints_from_the_real_lanes(source: str, request: pytest.FixtureRequest) -> None:
    if source == "womd":
        config = SessionConfig(seed=0, scenario=f"womd:{request.getfixturevalue('womd_path')}")
    elif source != "nuplan":  # the WOMD sample converted by our writers
        config = SessionConfig(seed=0, scenario=f"{source}:{request.getfixturevalue('format_files')[source]}")
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


def outside(session: Session) -> bool:
    x0, y0, x1, y1 = session.scenario.map.extent()
    x, y = session.agents.xy[session.ego_slot]
    return not (x0 <= x <= x1 and y0 <= y <= y1)


@pytest.mark.slow
def test_rollout_from_a_converted_file_drives_1km_past_its_map(format_files) -> None:
    """GPUDrive (the format that carries least: no lane graph, timestamps or current step) all the way."""
    import torch

    torch.set_num_threads(1)
    session = Session(SessionConfig(seed=0, scenario=f"gpudrive:{format_files['gpudrive']}", target_km=10_000.0,
                                    max_steps=20_000))
    obs = session.reset()
    left_m = None
    while not obs.done:
        obs = session.step()
        if left_m is None and outside(session):
            left_m = session.metrics.distance_m
        if left_m is not None and session.metrics.distance_m >= left_m + 1000.0:
            break
    assert left_m is not None, "the ego never left the recorded map"
    assert session.end_reason.value == "none", session.end_reason
    assert session.metrics.distance_m >= left_m + 1000.0
    # It drives generated lanes now. (Not necessarily outside the map's bounding box: on 2026-12-07 its route
    # came back into the box on generated lanes laid beside the recorded ones.)
    recorded = set(session.scenario.map.lanes.lanes)
    route = session.routes.get(int(session.agents.id[session.ego_slot]))
    assert route and not set(route[:3]) & recorded
