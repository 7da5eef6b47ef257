"""ObservationEncoder: one object per served session for its encoding choice and its deltas' state."""

from __future__ import annotations

import pytest

from vectorworld.errors import ConfigError
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.v1 import world_pb2
from vectorworld.wire.codec import observation_to_proto
from vectorworld.wire.session_encoder import ObservationEncoder

DELTA = dict(lane_delivery=world_pb2.LANE_DELIVERY_DELTA, agent_layout=world_pb2.AGENT_LAYOUT_TABLE,
             history_delivery=world_pb2.HISTORY_DELIVERY_DELTA)


@pytest.mark.parametrize("name", ["lane_delivery", "agent_layout", "history_delivery"])
def test_a_value_outside_its_enum_names_the_field(name: str) -> None:
    with pytest.raises(ConfigError, match=f"^{name} = 9 ") as info:
        ObservationEncoder.from_request(**{**dict.fromkeys(DELTA, 0), name: 9})
    assert info.value.field == name


def test_history_deltas_need_the_agent_table() -> None:
    with pytest.raises(ConfigError, match="AGENT_LAYOUT_TABLE"):
        ObservationEncoder.from_request(0, world_pb2.AGENT_LAYOUT_MESSAGES, world_pb2.HISTORY_DELIVERY_DELTA)


def test_deltas_follow_the_steps_and_a_complete_observation_does_not_disturb_them() -> None:
    encoder = ObservationEncoder.from_request(**DELTA)
    assert (encoder.lane_delivery, encoder.agent_layout, encoder.history_delivery) == tuple(DELTA.values())
    session = Session(SessionConfig(seed=3, npc_policy="idm", max_steps=5))
    first = session.reset()
    assert encoder.encode(first).lane_delivery != world_pb2.LANE_DELIVERY_DELTA  # the base: complete
    second = session.step()
    complete = encoder.encode_complete(second)
    assert complete == observation_to_proto(second, agent_table=True)
    delta = encoder.encode(second)
    assert delta.lane_delivery == world_pb2.LANE_DELIVERY_DELTA and delta.lane_base_step == 0
    assert delta.history_delivery == world_pb2.HISTORY_DELIVERY_DELTA
