"""Crosswalks on the wire: observations and frames carry them (and which are occupied) exactly; a crosswalk
message without a walk is refused with the field named."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vectorworld.errors import ConfigError
from vectorworld.scene import Crosswalk
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.v1 import world_pb2
from vectorworld.wire.codec import (
    crosswalks_from_proto,
    frame_from_proto,
    frame_to_proto,
    observation_from_proto,
    observation_to_proto,
)

WALKS = (Crosswalk(5, np.array([[1.25, -7.5], [1.25, 7.5]]), 1.5, (10, 11, 12), (10,)),
         Crosswalk(2, np.array([[-3.0, 9.0], [8.0, 9.0]]), 1.0, (13,)))


def _same(got: tuple[Crosswalk, ...], want: tuple[Crosswalk, ...]) -> None:
    assert [w.id for w in got] == sorted(w.id for w in want)
    by_id = {w.id: w for w in want}
    for w in got:
        ref = by_id[w.id]
        np.testing.assert_array_equal(w.walk, ref.walk)
        assert (w.half_width_m, w.conflicts, w.through) == (ref.half_width_m, ref.conflicts, ref.through)


def test_observation_and_frame_carry_their_crosswalks_exactly() -> None:
    session = Session(SessionConfig(seed=2, npc_policy="idm", target_km=1.0))
    session.reset()
    for _ in range(30):
        session.advance()
    obs = dataclasses.replace(session.observe(), crosswalks=WALKS, occupied_crosswalks=frozenset({2}))
    back = observation_from_proto(world_pb2.Observation.FromString(observation_to_proto(obs).SerializeToString()))
    _same(back.crosswalks, WALKS)
    assert back.occupied_crosswalks == {2}
    frame = session.frame()
    assert frame.crosswalks  # the city's first junctions have crosswalks
    decoded = frame_from_proto(world_pb2.Frame.FromString(frame_to_proto(frame).SerializeToString()))
    _same(decoded.crosswalks, frame.crosswalks)
    assert decoded.occupied_crosswalks == frame.occupied_crosswalks


def test_a_crosswalk_without_a_walk_is_refused_naming_the_field() -> None:
    msg = world_pb2.Frame()
    msg.crosswalks.add(id=3)
    with pytest.raises(ConfigError, match="crosswalks.walk") as err:
        crosswalks_from_proto(msg.crosswalks)
    assert err.value.field == "crosswalks.walk"
