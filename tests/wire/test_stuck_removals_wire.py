"""Stuck removals travel on the wire: StepMetrics.stuck_removals round-trips through the codec (observations
and frames) and through recordings of a real session that removes stuck NPCs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.recorded_session import record_session
from tests.standing_npcs import standing_session, stay_at_open_ends  # noqa: F401  (the fixture)
from vectorworld.sim.metrics import StepMetrics, StuckRemoval
from vectorworld.v1 import world_pb2
from vectorworld.wire.codec import step_metrics_from_proto, step_metrics_to_proto
from vectorworld.wire.recording import read_recording

REMOVALS = (StuckRemoval(12, "queued", 101.25, -3.5, 0.5), StuckRemoval(40, "held_at_junction", -7.0, 2.0, -3.0))


def test_stuck_removals_round_trip_in_step_metrics() -> None:
    metrics = StepMetrics(npc_collision_events=1, stuck_removals=REMOVALS)
    msg = step_metrics_to_proto(metrics, world_pb2.StepMetrics())
    assert [(r.agent_id, r.cause, r.pose.x_m, r.pose.y_m, r.pose.yaw_rad) for r in msg.stuck_removals] == [
        (12, "queued", 101.25, -3.5, 0.5), (40, "held_at_junction", -7.0, 2.0, -3.0)]
    assert step_metrics_from_proto(world_pb2.StepMetrics.FromString(msg.SerializeToString())) == metrics
    assert step_metrics_from_proto(step_metrics_to_proto(StepMetrics(), world_pb2.StepMetrics())).stuck_removals == ()


@pytest.mark.usefixtures("stay_at_open_ends")
def test_a_sessions_removals_survive_observations_frames_and_recordings(tmp_path: Path) -> None:
    from vectorworld.wire.codec import frame_from_proto, frame_to_proto, observation_from_proto, observation_to_proto

    session = standing_session(seed=0, max_steps=240)
    path = tmp_path / "stuck.vwrec"
    frames, observations, report = record_session(session, path)
    for obs, frame in zip(observations, frames, strict=True):
        if obs.step_metrics.stuck_removals:
            assert observation_from_proto(observation_to_proto(obs)).step_metrics == obs.step_metrics
            assert frame_from_proto(frame_to_proto(frame)).step_metrics == frame.step_metrics
    rec = read_recording(path)
    written = [r for f in frames for r in f.step_metrics.stuck_removals]
    assert len(written) == report["npc_removed_stuck"] > 0
    assert [f.step_metrics for f in rec.frames] == [f.step_metrics for f in frames]
    assert rec.report["npc_removed_stuck"] == len(written)
