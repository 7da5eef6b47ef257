"""SessionConfig.validate: the one validator of every way in; its errors name the field, not a CLI flag."""

from __future__ import annotations

import dataclasses

import pytest

from vectorworld.errors import ConfigError
from vectorworld.sim.config import SessionConfig
from vectorworld.wire.codec import config_from_proto, config_to_proto

BAD = [("target_km", 0.0), ("target_km", float("nan")), ("target_km", 10_001.0), ("observation_radius_m", -1.0),
       ("observation_radius_m", float("inf")), ("agent_capacity", 0), ("agent_capacity", 1025),
       ("ego_start_speed_mps", -0.5), ("ego_start_speed_mps", 61.0), ("max_steps", 0), ("max_steps", 10**7 + 1)]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_a_value_outside_its_limits_names_the_field(name: str, value: float) -> None:
    with pytest.raises(ConfigError) as info:
        SessionConfig(**{name: value}).validate()
    assert info.value.field == name
    assert str(info.value).startswith(f"{name} must be") and "--" not in str(info.value)


@pytest.mark.parametrize(("name", "value"), BAD)
def test_the_wire_applies_the_same_limits_under_the_wire_field_path(name: str, value: float) -> None:
    msg = config_to_proto(SessionConfig())
    setattr(msg, name, value)
    with pytest.raises(ConfigError) as info:
        config_from_proto(msg)
    assert info.value.field == f"config.{name}" and str(info.value).startswith(f"config.{name} must be")


def test_log_replay_needs_a_scenario() -> None:
    with pytest.raises(ConfigError, match="scenario") as info:
        SessionConfig(npc_policy="log-replay").validate()
    assert info.value.field == "npc_policy"


def test_the_limits_themselves_are_allowed() -> None:
    edge = SessionConfig(target_km=10_000.0, observation_radius_m=10_000.0, agent_capacity=1024,
                         ego_start_speed_mps=0.0, max_steps=10**7)
    assert edge.validate() is edge
    assert dataclasses.replace(edge, max_steps=None).validate().max_steps is None
