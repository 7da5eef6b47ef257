"""A served session reports the planner scores (CLS, sub-metrics, driving score) in GetSession, as the same
episode run locally does."""

from __future__ import annotations

from sim_server.client import SimClient
from tests.sim_server.conftest import drive_local_and_served
from vectorworld.scoring import SUB_METRICS
from vectorworld.v1 import simulator_service_pb2 as pb

SCORE_FIELDS = ("cls", "driving_score", "route_completion", "at_fault_collisions", "infractions_per_km",
                "route_progress_m", "reference_progress_m", *(f"cls_{name}" for name in SUB_METRICS))


def test_get_session_reports_the_scores_of_the_local_episode(client: SimClient, stub) -> None:  # noqa: ANN001
    local, _, remote, _ = drive_local_and_served(client, seed=4, target_km=0.06)
    expected = local.report()
    served = client.get_session(remote.id).report
    for name in SCORE_FIELDS:
        assert served[name] == expected[name], name
    assert served["score_events"] == expected["score_events"]
    assert 0.0 < served["cls"] <= 1.0 and served["route_completion"] == 1.0
    # The headline scores are schema fields of EpisodeReport (not only in extra_json).
    raw = stub.GetSession(pb.GetSessionRequest(session_id=remote.id)).report
    assert raw.cls == expected["cls"] and raw.driving_score == expected["driving_score"]
    assert raw.route_completion == expected["route_completion"]
