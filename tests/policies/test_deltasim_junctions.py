"""DeltaSim at junctions: stop tokens follow the IDM right-of-way rule and hold the agent; parked agents."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from policies.base import PolicyInput
from policies.deltasim.checkpoint import DeltaSimCheckpoint
from policies.deltasim.junctions import STOP_DEPTH_M, HeldAgents, JunctionStops
from policies.deltasim.kdisks import build_kdisks, straight_motions
from policies.deltasim.net import DeltaSimNet, DeltaSimNetConfig
from policies.deltasim.observation import ObservationBuilder, ObservationConfig, policy_slots
from policies.deltasim.policy import DeltaSimConfig, DeltaSimPolicy
from policies.deltasim.scenes import synthetic_input
from policies.idm import IdmPolicy
from policies.right_of_way import RightOfWay
from vectorworld.scene import Agents, LaneGraph
from vectorworld.vehicle.dynamics import apply_deltas


def _agents(x0: float, v0: float, crossing_speed: float) -> Agents:
    """Agent 0 on lane 1 heading +x; agent 1 on connector 3 heading +y (moving: it occupies connector 3)."""
    a = Agents.empty(3)
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][:2] = [0, 1]
    arrays["valid"][:2] = True
    arrays["agent_type"][:2] = 1
    arrays["xy"][:2] = [[x0, 0.0], [15.0, -10.0]]
    arrays["yaw"][:2] = [0.0, np.pi / 2]
    arrays["speed"][:2] = [v0, crossing_speed]
    arrays["length"][:2], arrays["width"][:2] = 4.6, 2.0
    steps = arrays["history"].shape[1]
    for i in range(2):
        back = (np.arange(steps)[::-1] * arrays["speed"][i] * 0.1)
        c, s = np.cos(arrays["yaw"][i]), np.sin(arrays["yaw"][i])
        arrays["history"][i] = np.stack([arrays["xy"][i, 0] - back * c, arrays["xy"][i, 1] - back * s,
                                         np.full(steps, arrays["yaw"][i]), np.full(steps, arrays["speed"][i])], -1)
        arrays["history_valid"][i] = True
    return Agents(**arrays)


def _input(agents: Agents, graph: LaneGraph, step: int = 0) -> PolicyInput:
    """Agent 0 routed through lane 1 into connector 2 of ``graph`` (the ``crossing_connectors`` fixture),
    agent 1 on connector 3; only agent 0 is controlled."""
    return PolicyInput(agents, np.array([True, False, False]), graph, {0: [1, 2], 1: [3]}, ego_slot=2, step=step)


def _held(inp: PolicyInput) -> HeldAgents:
    """The junction stops of one step, computed as the observation builder does."""
    builder = ObservationBuilder()
    everyone = builder.routed_slots(inp, np.zeros(0, np.int64))
    return JunctionStops(builder.routes).update(inp, everyone, builder.targets(inp, everyone))


def _held_by_idm(service: RightOfWay, inp: PolicyInput) -> set[int]:
    """Reference: the agents the right-of-way service holds for this state (IDM obeys the same decision),
    taken without the decision the input may carry."""
    return set(service.decide(dataclasses.replace(inp, right_of_way=None)).held)


def test_an_agent_whose_exit_is_blocked_is_held(crossing_connectors: LaneGraph) -> None:
    """The exit check drops a request into a blocked exit; the agent must then wait before the junction (as
    IDM waits), not get no stop token at all."""
    agents = _agents(-15.0, 8.0, 0.0)                                   # connector 3 free: agent 0 would go
    arrays = {f.name: getattr(agents, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][2], arrays["valid"][2], arrays["agent_type"][2] = 2, True, 1
    arrays["xy"][2], arrays["speed"][2] = [31.0, 0.0], 0.0                # standing in traffic at the exit
    arrays["length"][2], arrays["width"][2] = 4.6, 2.0
    blocked = Agents(**arrays)
    routes = {0: [1, 2], 1: [3], 2: [2]}
    inp = PolicyInput(blocked, np.array([True, False, False]), crossing_connectors, routes, ego_slot=2, step=0)
    assert _held(inp).ids.tolist() == [0]
    assert _held_by_idm(RightOfWay(), inp) == {0}
    free = PolicyInput(_agents(-15.0, 8.0, 0.0), np.array([True, False, False]), crossing_connectors, routes,
                       ego_slot=2, step=0)
    assert _held(free).ids.size == 0


def test_held_agent_gets_a_stop_wall_at_its_connector_entry(crossing_connectors: LaneGraph) -> None:
    graph = crossing_connectors
    # Connector 3 is occupied by a moving agent: agent 0 may not enter connector 2, which crosses it.
    held = _held(_input(_agents(-15.0, 8.0, 2.0), graph))
    assert held.ids.tolist() == [0]
    assert np.allclose(held.xy[0], [STOP_DEPTH_M / 2, 0.0]) and abs(held.yaw[0]) < 1e-9
    obs = ObservationBuilder()(_input(_agents(-15.0, 8.0, 2.0), graph))
    assert obs.stop_mask.tolist() == [True]
    assert np.allclose(obs.stop[0, :4], [15.0 + STOP_DEPTH_M / 2, 0.0, 1.0, 0.0], atol=1e-5)
    assert obs.stop[0, 4:6].tolist() == [0.0, 0.0] and obs.stop[0, 8:].tolist() == [0.0, 0.0, 0.0]
    # A standing agent does not hold its connector (IDM's rule): agent 0 is granted, no stop token.
    assert _held(_input(_agents(-15.0, 8.0, 0.0), graph)).ids.size == 0
    assert not ObservationBuilder()(_input(_agents(-15.0, 8.0, 0.0), graph)).stop_mask.any()
    # Too far from the entry to request it yet at 4 m/s; at 8 m/s it is there within APPROACH_HORIZON_S.
    assert _held(_input(_agents(-29.0, 4.0, 2.0), graph)).ids.size == 0
    assert _held(_input(_agents(-29.0, 8.0, 2.0), graph)).ids.tolist() == [0]
    # Switched off in the observation config.
    assert not ObservationBuilder(ObservationConfig(junction_stops=False))(
        _input(_agents(-15.0, 8.0, 2.0), graph)).stop_mask.any()


def _untrained_checkpoint() -> DeltaSimCheckpoint:
    """A random network that likes driving fast: only the stop token and the shaping can hold it."""
    rng = np.random.default_rng(0)
    data = np.stack([rng.uniform(0, 2.0, 2000), rng.normal(0, 0.02, 2000), rng.normal(0, 0.02, 2000)], -1)
    vocab = build_kdisks(np.concatenate([data, straight_motions(20, 0.035)]), rng, eps=0.05, max_size=128)
    torch.manual_seed(0)
    net = DeltaSimNet(DeltaSimNetConfig(vocab_size=vocab.size, d_model=32, num_layers=1))
    with torch.no_grad():
        net.logits_head.bias.copy_(torch.from_numpy(3.0 * vocab.primitives[:, 0]).float())
    return DeltaSimCheckpoint(net.eval(), vocab, ObservationConfig(), {})


def test_deltasim_waits_at_the_stop_wall_and_goes_once_granted(crossing_connectors: LaneGraph) -> None:
    policy = DeltaSimPolicy(DeltaSimConfig(temperature=0.0), checkpoint=_untrained_checkpoint())
    agents = _agents(-20.0, 6.0, 2.0)
    rng = np.random.default_rng(0)
    policy.reset()
    for step in range(120):
        if step == 80:  # the crossing agent leaves: connector 3 is free
            agents = agents.with_state(agents.xy, agents.yaw, np.where(np.arange(3) == 1, 0.0, agents.speed))
        deltas = policy.act(_input(agents, crossing_connectors, step), rng)
        xy, yaw, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, deltas, 0.1)
        keep = np.arange(3) != 0
        agents = agents.with_state(np.where(keep[:, None], agents.xy, xy), np.where(keep, agents.yaw, yaw),
                                   np.where(keep, agents.speed, speed))
        front = agents.xy[0, 0] + 4.6 / 2
        if step < 80:
            assert front < 0.0, f"entered the junction without right of way at step {step}"
    assert step == 119 and agents.xy[0, 0] > 5.0, "never went once the junction was free"


def test_parked_agents_are_held_and_routed_standing_ones_are_not() -> None:
    inp = synthetic_input(10, np.random.default_rng(3), num_lanes=2)
    speed = inp.agents.speed.copy()
    speed[[2, 3]] = 0.0
    routes = {k: v for k, v in inp.routes.items() if k not in (int(inp.agents.id[2]), int(inp.agents.id[4]))}
    inp = dataclasses.replace(inp, agents=inp.agents.with_state(inp.agents.xy, inp.agents.yaw, speed), routes=routes)
    slots = policy_slots(inp)
    # Slot 2: standing, no route -> held; slot 3: standing on a route -> moved; slot 4: moving, no route.
    assert 2 not in slots and 3 in slots and 4 in slots
    assert 2 in policy_slots(inp, hold_parked=False)
    out = DeltaSimPolicy(checkpoint=_untrained_checkpoint()).act(inp, np.random.default_rng(0))
    assert np.array_equal(out[2], np.zeros(3))


def test_stop_tokens_hold_exactly_the_agents_idm_holds_in_session_traffic() -> None:
    """Over IDM traffic in the streaming world, the stop tokens mark the agents IDM's rule holds."""
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    session = Session(SessionConfig(seed=1, target_km=100.0, terminate_on_collision=False, max_steps=150),
                      npc_policy=IdmPolicy())
    session.reset()
    builder, reference, held_steps = ObservationBuilder(), RightOfWay(), 0
    while not session.done:
        inp = session.policy_input(session.agents.valid & (np.arange(session.agents.capacity) != session.ego_slot))
        inp = dataclasses.replace(inp, right_of_way=None)  # the builder decides with its own service
        obs = builder(inp, policy_slots(inp))
        expected = _held_by_idm(reference, inp)
        observed = set(inp.agents.id[obs.slots[obs.stop_mask]].tolist())
        assert observed == expected & set(inp.agents.id[obs.slots].tolist()), session.step_index
        held_steps += bool(observed)
        session.advance()
    assert held_steps > 10  # the episode does reach junctions with traffic (seed 1: the first junction of the city)


def test_a_network_that_wants_to_brake_harder_than_feasible_brakes_as_hard_as_feasible(
        crossing_connectors: LaneGraph) -> None:
    from policies.deltasim.feasibility import braking_floor

    ckpt = _untrained_checkpoint()
    with torch.no_grad():  # this network always wants to stand still
        ckpt.net.logits_head.bias.copy_(torch.from_numpy(-30.0 * ckpt.vocabulary.primitives[:, 0]).float())
    agents = _agents(-25.0, 10.0, 0.0)
    out = DeltaSimPolicy(DeltaSimConfig(temperature=1.0), checkpoint=ckpt).act(_input(agents, crossing_connectors),
                                                                               np.random.default_rng(0))
    assert abs(out[0, 0] - braking_floor(np.array([10.0]))[0]) < 1e-9
    # Without kinematic shaping nothing is projected: the network's own choice is passed on (the engine clips).
    raw = DeltaSimPolicy(DeltaSimConfig(temperature=1.0, kinematic_shaping=False), checkpoint=ckpt).act(
        _input(agents, crossing_connectors), np.random.default_rng(0))
    assert raw[0, 0] < braking_floor(np.array([10.0]))[0] - 0.5
