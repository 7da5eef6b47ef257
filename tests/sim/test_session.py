"""The Session: a short closed loop, determinism, command validation, episode end."""

import numpy as np
import pytest

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator
from vectorworld.errors import CommandError, ConfigError, EpisodeFinishedError, StepMismatchError
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.vehicle.commands import ControlCommand, StateCommand, TrajectoryCommand


def short_config(**kw) -> SessionConfig:
    return SessionConfig(generator="test-straight", target_km=kw.pop("target_km", 0.1), **kw)


def drive(config: SessionConfig) -> tuple[dict, list[np.ndarray]]:
    session = Session(config)
    obs = session.reset()
    states = []
    while not obs.done:
        obs = session.step()
        states.append(session.agents.xy.copy())
    return session.report(), states


def test_short_episode_reaches_goal_and_streams_tiles():
    report, _ = drive(short_config(target_km=0.2))
    assert report["completed"] and report["end_reason"] == "goal_reached"
    assert report["km"] >= 0.2 and report["tiles"] >= 5
    assert report["ego_collisions"] == 0 and report["kinematic_infeasibility_rate"] == 0.0


def test_same_seed_same_states():
    r1, s1 = drive(short_config(seed=3))
    r2, s2 = drive(short_config(seed=3))
    assert len(s1) == len(s2) and all(np.array_equal(a, b) for a, b in zip(s1, s2, strict=True))
    timing = {"wall_s", "rtf", "tile_ms_p50", "tile_ms_p95", "npc_policy_ms"}
    assert {k: v for k, v in r1.items() if k not in timing} == {k: v for k, v in r2.items() if k not in timing}


def test_memory_bounded_tiles_retired():
    session = Session(short_config(target_km=0.4))
    obs = session.reset()
    peak = 0
    while not obs.done:
        obs = session.step()
        peak = max(peak, len(session.world.tiles))
    assert len(session.world.tiles) <= peak <= 12


@pytest.mark.parametrize("command, field", [
    (ControlCommand(float("nan"), 0.0), "control.accel_mps2"),
    (ControlCommand(0.0, 3.0), "control.steering_rad"),
    (TrajectoryCommand(np.full((5, 3), np.inf)), "trajectory.poses[0]"),
    (TrajectoryCommand(np.zeros((4, 2))), "trajectory.poses"),
    (StateCommand(1e6, 0.0, 0.0, 1.0), "state moves"),
])
def test_bad_commands_name_the_field(command, field):
    session = Session(short_config())
    session.reset()
    with pytest.raises(CommandError, match=field.replace("[", r"\[").replace("]", r"\]")):
        session.step(command)
    assert session.step_index == 0  # nothing was applied
    # ... not even to the random streams: the session goes on exactly like one that never saw the request.
    clean = Session(short_config())
    clean.reset()
    for _ in range(20):
        a, b = session.step(ControlCommand(0.5, 0.0)), clean.step(ControlCommand(0.5, 0.0))
        assert np.array_equal(a.agents.xy, b.agents.xy)


def test_control_and_state_commands_move_the_ego():
    session = Session(short_config())
    obs = session.reset()
    x0 = obs.agents.xy[0].copy()
    obs = session.step(ControlCommand(1.0, 0.0))
    assert obs.agents.xy[0, 0] > x0[0]
    obs = session.step(StateCommand(float(x0[0]) + 5.0, float(x0[1]), 0.0, 3.0))
    assert np.allclose(obs.agents.xy[0], [x0[0] + 5.0, x0[1]])


def test_stale_step_and_finished_episode_refused():
    session = Session(short_config(max_steps=3))
    session.reset()
    session.step(expected_step=0)
    with pytest.raises(StepMismatchError):
        session.step(expected_step=0)
    session.step()
    obs = session.step()
    assert obs.truncated and obs.end_reason.value == "max_steps"
    with pytest.raises(EpisodeFinishedError):
        session.step()


@pytest.mark.parametrize("km", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_km_rejected(km):
    with pytest.raises(ConfigError, match="target_km"):
        Session(short_config(target_km=km))


def test_unknown_policy_and_generator_rejected():
    with pytest.raises(ConfigError, match="NPC policy"):
        Session(short_config(npc_policy="nope"))
    with pytest.raises(ConfigError, match="generator"):
        Session(SessionConfig(generator="nope"))


def test_npcs_leave_with_the_road_under_or_ahead_of_them():
    """A retired tile's lanes reach past its centre: an NPC still driving on one, or towards one, is removed
    with it, never left to brake across open ground without a lane or to drive off where the world ended
    (that was off-road driving no policy chose)."""
    session = Session(SessionConfig(seed=2, target_km=1.0, npc_policy="idm"))  # an episode where it happens
    session.reset()
    retired_under_npcs = 0
    while session.step_index < 1200 and not session.done:
        a = session.agents
        on = {int(i): session.routes.get(int(i))[0] for i in a.id[a.valid] if session.routes.get(int(i))}
        session.step()
        removed = set(session.frame().removed_lane_ids)
        retired_under_npcs += sum(lane in removed for lane in on.values())
        for agent_id in session.agents.id[session.agents.valid].tolist():
            route = session.routes.get(agent_id)
            assert not route or all(lane in session.world.graph for lane in route), (session.step_index, agent_id)
    assert retired_under_npcs > 0  # the case happened in this episode
