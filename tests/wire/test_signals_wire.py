"""Traffic lights on the wire: observations, frames, step metrics, reports and recordings round trip."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from vectorworld.signals import SignalState, SignalView
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.metrics import StepMetrics
from vectorworld.sim.session import Session
from vectorworld.v1 import world_pb2
from vectorworld.wire.codec import (
    frame_from_proto,
    frame_to_proto,
    observation_from_proto,
    observation_to_proto,
    report_from_proto,
    report_to_proto,
    step_metrics_from_proto,
    step_metrics_to_proto,
)
from vectorworld.wire.recording import RecordingWriter, read_recording


def _view() -> SignalView:
    return SignalView(np.array([4, 9], np.int64), np.array([SignalState.UNKNOWN, SignalState.ARROW_GO], np.int8),
                      np.array([[1.5, -2.0], [30.25, 7.0]]), np.array([0.5, -3.0]), np.array([3.2, 3.6]),
                      np.array([SignalState.STOP, SignalState.ARROW_GO], np.int8))  # lane 4: a log dropout


def _same(a: SignalView, b: SignalView) -> None:
    for name in ("lane_ids", "states", "stop_xy", "stop_yaw", "width_m", "rule_states"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def _city_session(steps: int) -> Session:
    session = Session(SessionConfig(seed=1, npc_policy="idm", target_km=1.0))
    session.reset()
    for _ in range(steps):
        session.advance()
    return session


def test_observation_and_frame_carry_their_lights_exactly() -> None:
    session = _city_session(20)
    obs = dataclasses.replace(session.observe(), signals=_view())
    msg = world_pb2.Observation.FromString(observation_to_proto(obs).SerializeToString())
    assert [light.lane_id for light in msg.traffic_lights] == [4, 9]
    assert msg.traffic_lights[0].state == world_pb2.SIGNAL_STATE_UNSPECIFIED
    assert msg.traffic_lights[0].rule_state == world_pb2.SIGNAL_STATE_STOP
    _same(observation_from_proto(msg).signals, _view())
    frame = session.frame()
    assert len(frame.signals) > 0  # the city's first junctions have lights
    _same(frame_from_proto(world_pb2.Frame.FromString(frame_to_proto(frame).SerializeToString())).signals,
          frame.signals)


def test_the_observed_lights_are_those_over_the_lanes_in_view() -> None:
    session = _city_session(5)
    obs = session.observe(radius_m=40.0)
    in_view = {lane.id for lane in obs.lanes}
    lit = set(session.signals().lane_ids.tolist())
    assert set(obs.signals.lane_ids.tolist()) == lit & in_view


def test_red_light_step_metric_and_report_field_round_trip() -> None:
    metrics = StepMetrics(ego_red_light=True, score_events=("red_light",))
    back = step_metrics_from_proto(step_metrics_to_proto(metrics, world_pb2.StepMetrics()))
    assert back.ego_red_light and back.score_events == ("red_light",)
    report = _city_session(3).report()
    report["red_light_infractions"] = 2
    msg = report_to_proto(report)
    assert msg.red_light_infractions == 2 and "red_light_infractions" not in msg.extra_json
    assert report_from_proto(msg)["red_light_infractions"] == 2


def test_a_recording_keeps_every_frames_lights(tmp_path: Path) -> None:
    config = SessionConfig(seed=1, npc_policy="idm", target_km=1.0, max_steps=40)
    session = Session(config)
    frames = []
    path = tmp_path / "lights.vwrec"
    with RecordingWriter(path, config) as writer:
        session.reset()
        while True:
            frames.append(session.frame())
            writer.write_frame(frames[-1])
            if session.done:
                break
            session.advance()
        writer.close(session.report())
    rec = read_recording(path)
    assert len(rec.frames) == len(frames)
    for got, want in zip(rec.frames, frames, strict=True):
        _same(got.signals, want.signals)
    assert len(frames[0].signals) > 0
