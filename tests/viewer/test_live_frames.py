"""Frames built from served observations (``vectorworld view --connect``) keep the lights and crosswalks."""

from __future__ import annotations

import numpy as np

from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.viewer.live_source import observation_to_frame


def test_a_live_frame_carries_the_observed_lights_and_crosswalks() -> None:
    session = Session(SessionConfig(seed=1, npc_policy="idm", target_km=1.0))  # a signalised junction ahead
    session.reset()
    for _ in range(5):
        session.advance()
    obs = session.observe()
    assert obs.crosswalks and len(obs.signals)
    frame = observation_to_frame(obs, {})
    assert [w.id for w in frame.crosswalks] == [w.id for w in obs.crosswalks]
    assert frame.occupied_crosswalks == obs.occupied_crosswalks
    np.testing.assert_array_equal(frame.signals.lane_ids, obs.signals.lane_ids)
