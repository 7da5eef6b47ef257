"""Traffic lights in the right of way: IDM (NPCs and the ego planner) and ΔSim's stop tokens hold agents at red."""

from __future__ import annotations

import dataclasses

import numpy as np

from policies.base import PolicyInput
from policies.deltasim.junctions import JunctionStops
from policies.deltasim.observation import ObservationBuilder
from policies.ego import IdmRoutePlanner
from policies.idm import IdmCore, IdmPolicy
from policies.junctions import signal_holds
from vectorworld.scene import Agents, Lane, LaneGraph, LaneType
from vectorworld.signals import LaneSignal, Phase, PhasePlan, SignalBoard, SignalState
from vectorworld.vehicle.dynamics import apply_deltas

STOP_X = 60.0


def _graph(state: SignalState) -> LaneGraph:
    """Lane 1 (x 0 -> 60), connector 2 (60 -> 80) under a light showing ``state`` all the time, lane 3 after."""
    light = LaneSignal(1, 0, PhasePlan((Phase(1000.0, (state,)),)))
    graph = LaneGraph()
    graph.add([Lane(1, np.array([[0.0, 0.0], [STOP_X, 0.0]]), successors=(2,)),
               Lane(2, np.array([[STOP_X, 0.0], [80.0, 0.0]]), lane_type=LaneType.CONNECTOR, predecessors=(1,),
                    successors=(3,), signal=light),
               Lane(3, np.array([[80.0, 0.0], [200.0, 0.0]]), predecessors=(2,))])
    return graph


def _car(x: float, v: float, capacity: int = 2) -> Agents:
    a = Agents.empty(capacity)
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][0], arrays["valid"][0], arrays["agent_type"][0] = 5, True, 1
    arrays["xy"][0], arrays["speed"][0] = [x, 0.0], v
    arrays["length"][0], arrays["width"][0] = 4.6, 2.0
    arrays["history"][0] = [[x - (10 - k) * v * 0.1, 0.0, 0.0, v] for k in range(arrays["history"].shape[1])]
    arrays["history_valid"][0] = True
    return Agents(**arrays)


def _input(graph: LaneGraph, agents: Agents, step: int = 0) -> PolicyInput:
    return PolicyInput(agents, agents.valid.copy(), graph, {5: [1, 2, 3]}, ego_slot=1, step=step,
                       signals=SignalBoard().view(graph, step * 0.1))


def _drive(state: SignalState, x0: float, v0: float, steps: int = 200) -> float:
    """Where the IDM car's front is after ``steps`` (m along x)."""
    graph, agents, policy = _graph(state), _car(x0, v0), IdmPolicy()
    for k in range(steps):
        deltas = policy.act(_input(graph, agents, k), np.random.default_rng(0))
        xy, yaw, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, deltas, 0.1)
        agents = agents.with_state(xy, yaw, speed)
    return float(agents.xy[0, 0] + agents.length[0] / 2.0)


def test_idm_stops_before_the_stop_line_on_red_and_drives_through_on_green() -> None:
    front = _drive(SignalState.STOP, 0.0, 12.0)
    assert STOP_X - 3.0 < front < STOP_X  # standing just before the line
    assert _drive(SignalState.GO, 0.0, 12.0, steps=100) > STOP_X + 20.0
    assert _drive(SignalState.ARROW_STOP, 0.0, 12.0) < STOP_X
    assert _drive(SignalState.UNKNOWN, 0.0, 12.0, steps=100) > STOP_X + 20.0  # no light known: no signal stop


def test_yellow_stops_those_who_can_stop_comfortably_and_lets_the_others_clear() -> None:
    assert _drive(SignalState.CAUTION, 0.0, 12.0) < STOP_X        # 57 m away at 12 m/s: 1.3 m/s^2 to stop
    assert _drive(SignalState.CAUTION, 47.0, 13.0, steps=40) > STOP_X  # 10.7 m at 13 m/s: 8 m/s^2, goes
    assert signal_holds(np.array([SignalState.STOP]), np.array([13.0]), np.array([10.7]), 5.0).tolist() == [False]
    assert signal_holds(np.array([SignalState.STOP]), np.array([13.0]), np.array([30.0]), 5.0).tolist() == [True]
    assert signal_holds(np.array([SignalState.GO]), np.array([0.0]), np.array([1.0]), 5.0).tolist() == [False]


def test_the_ego_planner_stops_for_red_too() -> None:
    graph, agents = _graph(SignalState.STOP), _car(20.0, 10.0)
    inp = dataclasses.replace(_input(graph, agents), ego_slot=0)
    plan = IdmCore().plan(inp, np.array([0]))
    assert np.isfinite(plan.gap[0]) and plan.gap[0] < STOP_X - 20.0 and plan.lead_speed[0] == 0.0
    poses = IdmRoutePlanner().plan(inp).poses
    assert poses[-1, 0] + 2.3 < STOP_X
    green = dataclasses.replace(_input(_graph(SignalState.GO), agents), ego_slot=0)
    assert IdmRoutePlanner().plan(green).poses[-1, 0] > poses[-1, 0] + 3.0  # no braking for a green light


def test_deltasim_stop_tokens_hold_an_agent_at_red_beyond_the_junction_approach() -> None:
    graph, agents = _graph(SignalState.STOP), _car(5.0, 8.0)   # 55 m before the stop line (approach: 25 m)
    inp = _input(graph, agents)
    builder = ObservationBuilder()
    everyone = builder.routed_slots(inp, np.zeros(0, np.int64))
    held = JunctionStops(builder.routes).update(inp, everyone, builder.targets(inp, everyone))
    assert held.ids.tolist() == [5]
    assert abs(held.xy[0, 0] - (STOP_X + 0.5)) < 1e-6   # the wall lies on the light's stop point
    free = _input(_graph(SignalState.GO), agents)
    builder = ObservationBuilder()
    everyone = builder.routed_slots(free, np.zeros(0, np.int64))
    assert JunctionStops(builder.routes).update(free, everyone, builder.targets(free, everyone)).ids.size == 0


def test_a_follower_stops_for_red_although_its_leader_drives_through() -> None:
    """The leader is too close to stop and clears the light; the follower behind it must brake for the
    stop line, not follow the leader through (the binding acceleration, not the nearer obstacle)."""
    graph, agents = _graph(SignalState.STOP), _car(20.0, 12.0, capacity=3)
    arrays = {f.name: getattr(agents, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][2], arrays["valid"][2], arrays["agent_type"][2] = 6, True, 1
    arrays["xy"][2], arrays["speed"][2], arrays["length"][2], arrays["width"][2] = [57.0, 0.0], 12.0, 4.6, 2.0
    arrays["history"][2] = [[57.0 - (10 - k) * 1.2, 0.0, 0.0, 12.0] for k in range(arrays["history"].shape[1])]
    arrays["history_valid"][2] = True
    agents = Agents(**arrays)
    inp = dataclasses.replace(_input(graph, agents), routes={5: [1, 2, 3], 6: [1, 2, 3]})
    plan = IdmCore().plan(inp, np.array([0, 2]))
    follower, leader = plan.row(0), plan.row(2)
    assert plan.accel[follower] < -1.0 and plan.lead_speed[follower] == 0.0   # braking for the line
    assert plan.gap[follower] > 57.0 - 20.0 - 4.6                              # the line, beyond the leader
    assert plan.accel[leader] > -1.0                                           # the leader clears
