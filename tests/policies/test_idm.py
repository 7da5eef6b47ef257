"""IDM behaviour: stops behind a stopped car, never rear-ends, yields at a junction."""

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from policies.base import PolicyInput
from policies.idm import IdmParams, IdmPolicy
from vectorworld import geometry
from vectorworld.scene import Agents, Lane, LaneGraph, LaneType
from vectorworld.vehicle.dynamics import apply_deltas


def straight_graph(length_m: float = 400.0) -> LaneGraph:
    graph = LaneGraph()
    xs = np.linspace(0.0, length_m, 201)
    graph.add([Lane(1, np.stack([xs, np.zeros_like(xs)], -1), speed_limit_mps=15.0)])
    return graph


def make_agents(xs, speeds, ys=None, yaws=None) -> Agents:
    n = len(xs)
    a = Agents.empty(n + 1)
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][:n] = np.arange(n)
    arrays["valid"][:n] = True
    arrays["agent_type"][:n] = 1
    arrays["xy"][:n, 0] = xs
    if ys is not None:
        arrays["xy"][:n, 1] = ys
    if yaws is not None:
        arrays["yaw"][:n] = yaws
    arrays["speed"][:n] = speeds
    arrays["length"][:n], arrays["width"][:n] = 4.6, 2.0
    return Agents(**arrays)


def simulate(graph, agents, routes, controlled, steps):
    policy, rng = IdmPolicy(), np.random.default_rng(0)
    min_gap = np.inf
    for step in range(steps):
        inp = PolicyInput(agents, controlled, graph, routes, ego_slot=len(agents.id) - 1, step=step)
        deltas = policy.act(inp, rng)
        xy, yaw, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, deltas, 0.1)
        agents = agents.with_state(np.where(controlled[:, None], xy, agents.xy),
                                   np.where(controlled, yaw, agents.yaw), np.where(controlled, speed, agents.speed))
        min_gap = min(min_gap, agents.xy[1, 0] - agents.xy[0, 0] - 4.6)
    return agents, min_gap


def test_stops_behind_stopped_car():
    graph = straight_graph()
    agents = make_agents([0.0, 80.0], [12.0, 0.0])
    controlled = np.array([True, False, False])
    agents, min_gap = simulate(graph, agents, {0: [1], 1: [1]}, controlled, 300)
    assert agents.speed[0] < 0.05
    assert 1.5 < min_gap < 6.0


@settings(max_examples=15, deadline=None)
@given(st.floats(0.0, 15.0), st.floats(20.0, 120.0), st.floats(0.0, 10.0))
def test_never_rear_ends_braking_leader(v_follow, gap, v_lead):
    """The leader (not IDM) brakes at 4 m/s^2 to a stop; the IDM follower must not touch it whenever a
    stop is physically possible within IDM's braking limit."""
    assume(gap > v_follow**2 / (2 * IdmParams().max_decel_mps2) + 1.0)
    graph = straight_graph(600.0)
    agents = make_agents([0.0, gap + 4.6], [v_follow, v_lead])
    policy, rng = IdmPolicy(), np.random.default_rng(0)
    controlled = np.array([True, False, False])
    for step in range(250):
        inp = PolicyInput(agents, controlled, graph, {0: [1], 1: [1]}, ego_slot=2, step=step)
        deltas = policy.act(inp, rng)
        xy, yaw, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, deltas, 0.1)
        lead_v = max(agents.speed[1] - 0.4, 0.0)
        xy[1] = agents.xy[1] + [lead_v * 0.1, 0.0]
        speed[1] = lead_v
        agents = agents.with_state(xy, yaw, speed)
        assert agents.xy[1, 0] - agents.xy[0, 0] > 4.6, f"rear-ended at step {step}"


def drive_first_agent(graph, agents, routes, steps):
    """Agent 0 driven by IDM (heading kept), the others standing still, for ``steps`` steps."""
    controlled = np.array([True, False, False])
    policy = IdmPolicy()
    for step in range(steps):
        inp = PolicyInput(agents, controlled, graph, routes, ego_slot=2, step=step)
        deltas = policy.act(inp, np.random.default_rng(0))
        xy, _, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, deltas, 0.1)
        agents = agents.with_state(np.where(controlled[:, None], xy, agents.xy), agents.yaw,
                                   np.where(controlled, speed, agents.speed))
    return agents


def test_yields_to_agent_on_conflicting_connector(crossing_connectors):
    """Two connectors cross; the agent already on one has the right of way."""
    graph = crossing_connectors
    agents = make_agents([-15.0, 15.0], [8.0, 2.0], ys=[0.0, -10.0], yaws=[0.0, np.pi / 2])
    routes = {0: [1, 2], 1: [3]}
    agents = drive_first_agent(graph, agents, routes, 80)
    s, _, _ = geometry.project_to_polyline(agents.xy[:1], graph[1].points)
    assert agents.xy[0, 0] + 2.3 < 0.0 and agents.speed[0] < 0.1, "entered the junction without right of way"
    assert s[0] > 15.0


@pytest.mark.parametrize("length_m", [4.6, 10.7])
def test_held_at_a_junction_the_front_stops_before_the_entry_whatever_the_length(crossing_connectors, length_m):
    """A car and a bus held before connector 2 both stand with their fronts 0.5 m before its entry (a bus
    once stood 2.4 m into the junction, on a crosswalk there)."""
    graph = crossing_connectors
    agents = make_agents([-25.0, 15.0], [8.0, 2.0], ys=[0.0, -10.0], yaws=[0.0, np.pi / 2])
    agents = dataclasses.replace(agents, length=np.where(agents.id == 0, length_m, agents.length))
    routes = {0: [1, 2], 1: [3]}
    agents = drive_first_agent(graph, agents, routes, 150)
    front = agents.xy[0, 0] + length_m / 2.0
    assert agents.speed[0] < 0.1 and -0.8 < front < -0.2, front


def test_passes_car_parked_at_the_curb_but_stops_for_one_in_the_lane():
    """A standing car whose box reaches PARKED_INTRUSION_M into the lane is passed; one at the lane
    centre is a leader. Parked offset as the spawner places it: lane half width + car half width - 0.3."""
    from vectorworld.generation.procedural.spawning import PARKED_INTRUSION_M

    graph = straight_graph()
    offset = -(3.5 / 2 + 2.0 / 2 - PARKED_INTRUSION_M)
    for y, passes in ((offset, True), (-0.5, False)):
        agents = make_agents([0.0, 60.0], [10.0, 0.0], ys=[0.0, y])
        agents, _ = simulate(graph, agents, {0: [1]}, np.array([True, False, False]), 150)
        assert (agents.xy[0, 0] > 80.0) == passes


def test_no_turning_on_the_spot_at_crawling_speed():
    """A crawling agent beside its lane must not swing towards it faster than a 4 m turning radius."""
    from policies.idm import MAX_CURVATURE_PER_M

    graph = straight_graph()
    agents = make_agents([10.0], [0.2], ys=[2.0])
    policy, controlled = IdmPolicy(), np.array([True, False])
    inp = PolicyInput(agents, controlled, graph, {0: [1]}, ego_slot=1, step=0)
    deltas = policy.act(inp, np.random.default_rng(0))
    ds = float(np.hypot(*deltas[0, :2]))
    assert ds > 0.0
    assert abs(deltas[0, 2]) <= MAX_CURVATURE_PER_M * ds + 1e-9


def test_does_not_enter_a_junction_whose_exit_is_blocked_by_traffic():
    """Connector 2 leads from lane 1 to lane 3. A car standing in traffic at its exit keeps the
    approaching agent at the entry; a parked car (no route) at the same spot does not, nor does a car
    standing in traffic on lane 4 beside the exit (it blocks its own lane, not this way out)."""
    graph = LaneGraph()
    xs = np.linspace(0.0, 100.0, 51)
    graph.add([Lane(1, np.stack([xs, np.zeros_like(xs)], -1), successors=(2,)),
               Lane(2, np.stack([np.linspace(100.0, 120.0, 11), np.zeros(11)], -1), predecessors=(1,),
                    successors=(3,), lane_type=LaneType.CONNECTOR),
               Lane(3, np.stack([np.linspace(120.0, 300.0, 91), np.zeros(91)], -1), predecessors=(2,)),
               Lane(4, np.stack([np.linspace(120.0, 300.0, 91), np.full(91, 3.5)], -1))])
    for blocker, enters in (({1: [3]}, False), ({}, True), ({1: [4]}, True)):
        agents = make_agents([80.0, 124.0], [8.0, 0.0], ys=[0.0, 3.5 if blocker.get(1) == [4] else 0.0])
        routes = {0: [1, 2, 3], **blocker}
        policy, controlled = IdmPolicy(), np.array([True, False, False])
        farthest = 0.0  # (routes stay put here, so past lane 1 the agent loses its path: the first entry counts)
        for step in range(150):
            inp = PolicyInput(agents, controlled, graph, routes, ego_slot=2, step=step)
            deltas = policy.act(inp, np.random.default_rng(0))
            xy, yaw, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, deltas, 0.1)
            agents = agents.with_state(np.where(controlled[:, None], xy, agents.xy),
                                       np.where(controlled, yaw, agents.yaw),
                                       np.where(controlled, speed, agents.speed))
            farthest = max(farthest, float(agents.xy[0, 0]))
        assert (farthest > 101.0) == enters, (blocker, farthest)


def drive_clear_of_the_other(graph: LaneGraph, agents: Agents, steps: int) -> Agents:
    """Agent 0 drives lane 1 with IDM for ``steps`` steps beside standing agent 1; their boxes never touch."""
    controlled = np.array([True, False, False])
    policy, rng = IdmPolicy(), np.random.default_rng(0)
    for step in range(steps):
        inp = PolicyInput(agents, controlled, graph, {0: [1]}, ego_slot=2, step=step)
        xy, yaw, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, policy.act(inp, rng), 0.1)
        agents = agents.with_state(np.where(controlled[:, None], xy, agents.xy),
                                   np.where(controlled, yaw, agents.yaw), np.where(controlled, speed, agents.speed))
        corners = geometry.box_corners(agents.xy[:2], agents.yaw[:2], agents.length[:2], agents.width[:2])
        assert not geometry.boxes_overlap(corners[0], corners[1]), f"agent 0 touched agent 1 at step {step}"
    return agents


def test_stops_for_a_box_whose_ends_reach_into_a_bend():
    """A 12 m bus standing inside a 10 m-radius bend, along the road, 3 m in from the lane centre: its
    centre is clear of the ego's band, its ends reach across the path. The ego stops short of it."""
    straight = np.stack([np.linspace(-60.0, 0.0, 61), np.zeros(61)], -1)
    theta = np.linspace(0.0, np.pi, 61)[1:]
    bend = np.stack([10.0 * np.sin(theta), 10.0 - 10.0 * np.cos(theta)], -1)  # a left U-turn, radius 10
    graph = LaneGraph()
    graph.add([Lane(1, np.concatenate([straight, bend]), speed_limit_mps=10.0)])
    at = np.pi / 2  # the bus stands at the bend's apex, 7 m from its centre, along it
    agents = make_agents([-30.0, 7.0 * np.sin(at)], [5.0, 0.0], ys=[0.0, 10.0 - 7.0 * np.cos(at)],
                         yaws=[0.0, at])
    agents.length[1], agents.width[1] = 12.0, 2.5
    agents = drive_clear_of_the_other(graph, agents, 400)
    assert agents.speed[0] < 0.05 and agents.xy[0, 0] > 0.0  # stopped, in the bend


@pytest.mark.parametrize("car_y, passes", [(3.6, False), (3.7, False), (4.2, True)])
def test_turning_never_swings_into_a_standing_car_beside_it(car_y, passes):
    """The ego, standing where a right turn of radius 6 m begins, has a car standing beside-behind it, nose
    towards its left flank: turning, the ego's rear swings left. Where that would touch the car (its front
    0.2 or 0.3 m from the flank) the ego waits; with 0.8 m it drives the turn. The car is wholly behind the
    ego's centre, so only the swept box sees it."""
    straight = np.stack([np.linspace(-40.0, 0.0, 41), np.zeros(41)], -1)
    theta = np.linspace(0.0, np.pi / 2, 31)[1:]
    bend = np.stack([6.0 * np.sin(theta), -6.0 + 6.0 * np.cos(theta)], -1)
    graph = LaneGraph()
    graph.add([Lane(1, np.concatenate([straight, bend]), speed_limit_mps=10.0)])
    agents = make_agents([0.0, -1.0], [0.0, 0.0], ys=[0.0, car_y], yaws=[0.0, -np.pi / 2])
    agents = drive_clear_of_the_other(graph, agents, 200)
    assert (agents.xy[0, 1] < -1.0) == passes  # through the turn, or waiting before it


def test_driving_through_a_chain_of_connectors_without_stopping_at_the_joint():
    """Connector 2 continues connector 1. An agent driving on 1 occupies it, and 1 and 2 touch at the joint;
    its own connector must not hold it back from 2 (it stopped before every such joint of learned junctions,
    and crept on for good)."""
    xs = np.linspace(0.0, 30.0, 16)
    graph = LaneGraph()
    graph.add([Lane(1, np.stack([xs, np.zeros_like(xs)], -1), successors=(2,), lane_type=LaneType.CONNECTOR),
               Lane(2, np.stack([xs + 30.0, np.zeros_like(xs)], -1), predecessors=(1,), successors=(3,),
                    lane_type=LaneType.CONNECTOR),
               Lane(3, np.stack([xs * 5 + 60.0, np.zeros_like(xs)], -1), predecessors=(2,))])
    agents = make_agents([5.0], [8.0])
    policy, controlled = IdmPolicy(), np.array([True, False])
    for step in range(25):  # 2.5 s: about 20 m, still on connector 1 (routes stay put in this harness)
        inp = PolicyInput(agents, controlled, graph, {0: [1, 2, 3]}, ego_slot=1, step=step)
        xy, yaw, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, policy.act(inp, np.random.default_rng(0)),
                                      0.1)
        agents = agents.with_state(np.where(controlled[:, None], xy, agents.xy), np.where(controlled, yaw, agents.yaw),
                                   np.where(controlled, speed, agents.speed))
    assert agents.speed[0] > 7.0, agents.speed[0]
