"""The ego-stopped step metric and the report's stopped share travel as named fields."""

from __future__ import annotations

from vectorworld.sim.config import SessionConfig
from vectorworld.sim.metrics import StepMetrics
from vectorworld.sim.session import Session
from vectorworld.v1 import world_pb2
from vectorworld.wire.codec import report_from_proto, report_to_proto, step_metrics_from_proto, step_metrics_to_proto


def test_ego_stopped_round_trips_in_step_metrics() -> None:
    for stopped in (True, False):
        msg = step_metrics_to_proto(StepMetrics(ego_stopped=stopped), world_pb2.StepMetrics())
        assert msg.ego_stopped is stopped
        assert step_metrics_from_proto(msg).ego_stopped is stopped


def test_ego_stopped_rate_is_a_named_report_field() -> None:
    session = Session(SessionConfig(seed=4, npc_policy="idm", target_km=1.0))
    session.reset()
    for _ in range(5):
        session.advance()
    report = session.report()
    assert "ego_stopped_rate" in report
    report["ego_stopped_rate"] = 0.25
    msg = report_to_proto(report)
    assert msg.ego_stopped_rate == 0.25 and "ego_stopped_rate" not in msg.extra_json
    assert report_from_proto(msg)["ego_stopped_rate"] == 0.25
