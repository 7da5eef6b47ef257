"""Spawning: parked cars are never removed for standing still but are when a new lane is laid through them;
moving spawns never need hard braking for traffic ahead or for a red light."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.base import PolicyInput
from policies.right_of_way import RightOfWay
from vectorworld.generation.base import AgentSpawns
from vectorworld.generation.procedural.spawning import STOP_MARGIN_M
from vectorworld.scene import Agents, Lane, LaneGraph, LaneType
from vectorworld.signals import LaneSignal, Phase, PhasePlan, SignalBoard, SignalState, SignalView
from vectorworld.sim.spawning import SPAWN_BRAKE_MPS2, SpawnBook, parked_in_the_way, place_spawns, slow_for_lights


def test_parked_in_the_way_of_new_lane_only():
    a = Agents.empty(4)
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][:] = [10, 11, 12, 13]
    arrays["valid"][:] = True
    arrays["agent_type"][:] = 1
    # 11: at the curb of the lane (0.3 m into it); 12: across it; 13: across it but routed (traffic).
    arrays["xy"][:] = [(0.0, 30.0), (20.0, -2.45), (40.0, -1.0), (60.0, -1.0)]
    arrays["length"][:], arrays["width"][:] = 4.6, 2.0
    agents = Agents(**arrays)
    xs = np.linspace(0.0, 100.0, 51)
    lane = Lane(1, np.stack([xs, np.zeros_like(xs)], -1), width_m=3.5)
    out = parked_in_the_way(agents, routed={13}, lanes=[lane])
    assert out.tolist() == [False, False, True, False]
    assert not parked_in_the_way(agents, routed=set(), lanes=[]).any()


def test_walking_pedestrian_on_a_road_is_in_the_way():
    a = Agents.empty(2)
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][:], arrays["valid"][:], arrays["agent_type"][:] = [20, 21], True, 2
    arrays["xy"][:] = [(10.0, -1.4), (30.0, -4.5)]  # on the lane's edge; well beyond it
    arrays["speed"][:] = 1.2  # walking: it will stop when it has no route, wherever it stands
    arrays["length"][:], arrays["width"][:] = 0.6, 0.6
    xs = np.linspace(0.0, 100.0, 51)
    lane = Lane(1, np.stack([xs, np.zeros_like(xs)], -1), width_m=3.5)
    assert parked_in_the_way(Agents(**arrays), routed=set(), lanes=[lane]).tolist() == [True, False]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_in_the_way_matches_the_exhaustive_distance_test(seed):
    from vectorworld import geometry
    from vectorworld.sim.spawning import PASSING_CLEARANCE_M

    rng = np.random.default_rng(seed)
    a = Agents.empty(12)
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][:], arrays["valid"][:], arrays["agent_type"][:] = np.arange(12), True, 1
    arrays["xy"][:], arrays["yaw"][:] = rng.uniform(-30, 30, (12, 2)), rng.uniform(-3, 3, 12)
    arrays["length"][:], arrays["width"][:] = rng.uniform(0.5, 5.0, 12), rng.uniform(0.5, 2.5, 12)
    agents = Agents(**arrays)
    lanes = [Lane(k, np.cumsum(rng.uniform(-8, 8, (6, 2)), 0)) for k in range(3)]
    a_pts = np.concatenate([lane.points[:-1] for lane in lanes])
    b_pts = np.concatenate([lane.points[1:] for lane in lanes])
    corners = geometry.box_corners(agents.xy, agents.yaw, agents.length, agents.width)
    points = np.concatenate([corners, agents.xy[:, None]], 1)
    dist = geometry.point_segment_distance(points.reshape(-1, 2), a_pts, b_pts).reshape(12, 5, -1)
    expected = (dist < PASSING_CLEARANCE_M).any((1, 2))
    assert parked_in_the_way(agents, routed=set(), lanes=lanes).tolist() == expected.tolist()


def _spawns(xy: list[tuple[float, float]], speed: list[float]) -> AgentSpawns:
    n = len(xy)
    return AgentSpawns(np.array(xy, float), np.zeros(n), np.array(speed, float), np.full(n, 4.5), np.full(n, 1.9),
                       np.ones(n, np.int8), np.zeros(n, np.int64), np.zeros((n, 6, 2)))


def test_moving_spawns_can_stop_behind_traffic_ahead():
    # A car stands at x = 60; spawns at 15 m/s come in behind it, in its lane and in the next lane (3.5 m left).
    world, _ = place_spawns(Agents.empty(8), _spawns([(60.0, 0.0)], [0.0]), np.array([-100.0, 0.0]), SpawnBook())
    spawns = _spawns([(40.0, 0.0), (40.0, 3.5), (-20.0, 0.0)], [15.0, 15.0, 15.0])
    world, placed = place_spawns(world, spawns, np.array([-100.0, 0.0]), SpawnBook())
    speed = {tuple(world.xy[s]): float(world.speed[s]) for s in np.nonzero(world.valid)[0]}
    gap = 20.0 - 4.5 - STOP_MARGIN_M
    assert abs(speed[(40.0, 0.0)] - np.sqrt(2.0 * SPAWN_BRAKE_MPS2 * gap)) < 1e-9  # brakes at most 2 m/s^2
    assert speed[(40.0, 3.5)] == 15.0  # the next lane is free
    # The one far behind must stop behind the (slowed) spawn at x = 40, which moves on: room enough.
    assert speed[(-20.0, 0.0)] == 15.0
    slot = int(np.nonzero((world.xy == (40.0, 0.0)).all(1))[0][0])
    assert np.allclose(world.history[slot, :, 3], speed[(40.0, 0.0)])  # warm-start history at the new speed


def _light_ahead(state: SignalState) -> tuple[LaneGraph, SignalView]:
    """Lane 1 (x 0 -> 60) into connector 2 under a light showing ``state``."""
    plan = PhasePlan((Phase(100.0, (state,)),))
    graph = LaneGraph()
    graph.add([Lane(1, np.array([[0.0, 0.0], [60.0, 0.0]]), successors=(2,)),
               Lane(2, np.array([[60.0, 0.0], [80.0, 0.0]]), lane_type=LaneType.CONNECTOR, predecessors=(1,),
                    signal=LaneSignal(1, 0, plan))])
    return graph, SignalBoard().view(graph, 0.0)


def _moving_car(x: float, speed: float) -> Agents:
    a = Agents.empty(2)
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][0], arrays["valid"][0], arrays["agent_type"][0] = 5, True, 1
    arrays["xy"][0], arrays["speed"][0] = [x, 0.0], speed
    arrays["length"][0], arrays["width"][0] = 4.6, 2.0
    arrays["history"][0, :, 3] = speed
    return Agents(**arrays)


def _slowed(x: float, speed: float, state: SignalState) -> Agents:
    graph, view = _light_ahead(state)
    agents = _moving_car(x, speed)
    inp = PolicyInput(agents, np.zeros(2, bool), graph, {5: [1, 2]}, ego_slot=1, step=0, signals=view)
    slots = np.array([0])
    return slow_for_lights(agents, slots, RightOfWay().red_ahead_m(inp, slots))


def test_a_spawn_before_a_red_light_is_slowed_to_stop_at_its_line_and_a_green_one_is_not() -> None:
    """A tile's car appearing 20 m before a red light at 16 m/s could not stop (it ran the red into the
    crossing stream); it is slowed to stop at SPAWN_BRAKE_MPS2 with STOP_MARGIN_M to spare."""
    slowed = _slowed(40.0, 16.0, SignalState.STOP)
    gap = 20.0 - 4.6 / 2 - STOP_MARGIN_M
    assert slowed.speed[0] == pytest.approx(np.sqrt(2 * SPAWN_BRAKE_MPS2 * gap))
    assert slowed.history[0, :, 3].max() == pytest.approx(slowed.speed[0])
    assert _slowed(40.0, 16.0, SignalState.CAUTION).speed[0] == pytest.approx(slowed.speed[0])
    assert _slowed(40.0, 5.0, SignalState.STOP).speed[0] == 5.0   # slow enough already
    assert _slowed(40.0, 16.0, SignalState.GO).speed[0] == 16.0


def test_agent_spawns_with_arrays_of_different_lengths_are_refused() -> None:
    """A generator that dropped agents from some arrays only (the learned one once kept 8 headings for 7
    agents) fails where it builds its spawns, naming the field, not later with agents turned the wrong way."""
    fields = dict(xy=np.zeros((2, 2)), yaw=np.zeros(3), speed=np.zeros(2), length=np.ones(2), width=np.ones(2),
                  agent_type=np.ones(2, np.int8), lane_id=np.zeros(2, np.int64), motion_code=np.zeros((2, 6, 2)))
    with pytest.raises(ValueError, match="AgentSpawns.yaw holds 3 agents, xy holds 2"):
        AgentSpawns(**fields)
    assert len(AgentSpawns(**{**fields, "yaw": np.zeros(2)})) == 2
