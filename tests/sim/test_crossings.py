"""Pedestrians crossing at crosswalks: when they step off the kerb, how they walk, what they close."""

from __future__ import annotations

import dataclasses

import numpy as np

from vectorworld.scene import Agents, AgentType, Crosswalk, Lane, LaneGraph, LaneType
from vectorworld.signals import LaneSignal, Phase, PhasePlan, SignalState
from vectorworld.sim.crossings import Crossings, Walker

# Connector 2 runs east along y = 0 from x = 0 to 30 and crosses the crosswalk at x = 2 (walk y -6 -> +6).
WALK = Crosswalk(7, np.array([[2.0, -6.0], [2.0, 6.0]]), 1.5, conflicts=(2,), through=(2,))


def _graph(light: SignalState | None = None) -> LaneGraph:
    signal = None if light is None else LaneSignal(1, 0, PhasePlan((Phase(1000.0, (light,)),)))
    graph = LaneGraph()
    graph.add([Lane(1, np.array([[-60.0, 0.0], [0.0, 0.0]])),
               Lane(2, np.array([[0.0, 0.0], [30.0, 0.0]]), lane_type=LaneType.CONNECTOR, signal=signal)])
    graph.connect(1, 2)
    return graph


def _agents(vehicle_x: float | None, vehicle_speed: float = 0.0) -> Agents:
    """A pedestrian (id 1) at the walk's start (kept 0.5 m to the right), and a vehicle (id 2) on lane 1 at
    ``vehicle_x`` if given."""
    a = Agents.empty(4)
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    rows = [(1, AgentType.PEDESTRIAN, (2.5, -6.0), np.pi / 2, 0.0, 0.6, 0.6)]
    if vehicle_x is not None:
        rows.append((2, AgentType.VEHICLE, (vehicle_x, 0.0), 0.0, vehicle_speed, 4.6, 2.0))
    for k, (agent_id, kind, xy, yaw, v, length, width) in enumerate(rows):
        arrays["id"][k], arrays["valid"][k], arrays["agent_type"][k] = agent_id, True, kind
        arrays["xy"][k], arrays["yaw"][k], arrays["speed"][k] = xy, yaw, v
        arrays["length"][k], arrays["width"][k] = length, width
    return Agents(**arrays)


def _crossings() -> Crossings:
    crossings = Crossings(np.random.default_rng(0))
    crossings.add(Walker(1, WALK.id, True, 1.5, ready_at_s=0.0))
    return crossings


def _step(crossings: Crossings, agents: Agents, graph: LaneGraph, routes: dict, t: float = 0.0):  # noqa: ANN202
    return crossings.move(agents, {WALK.id: WALK}, graph, routes, t, 0.1)


def test_a_pedestrian_waits_for_a_vehicle_that_cannot_stop_and_crosses_in_front_of_one_that_can() -> None:
    graph, routes = _graph(), {2: [1, 2]}
    committed = _crossings()
    _, xy, _, speed = _step(committed, _agents(-4.0, 10.0), graph, routes)  # 10 m/s, 1.7 m to the connector
    assert speed[0] == 0.0 and np.allclose(xy[0], [2.5, -6.0])
    assert not committed.blocked({WALK.id: WALK}, graph, _agents(-4.0, 10.0))
    far = _crossings()
    _, xy, yaw, speed = _step(far, _agents(-40.0, 10.0), graph, routes)     # 40 m out at 10 m/s: it can stop
    assert np.isclose(speed[0], 1.5) and np.allclose(xy[0], [2.5, -5.85]) and np.isclose(yaw[0], np.pi / 2)
    assert far.blocked({WALK.id: WALK}, graph, _agents(-40.0, 10.0)) == {2}


def test_a_vehicle_on_a_crossing_connector_keeps_the_pedestrian_at_the_kerb() -> None:
    crossings = _crossings()
    _, _, _, speed = _step(crossings, _agents(15.0, 0.0), _graph(), {2: [2]})
    assert speed[0] == 0.0


def test_at_lights_a_pedestrian_walks_only_while_the_crossed_road_shows_red() -> None:
    for light, walks in ((SignalState.GO, False), (SignalState.CAUTION, False), (SignalState.STOP, True)):
        crossings = _crossings()
        _, _, _, speed = _step(crossings, _agents(None), _graph(light), {})
        assert (speed[0] > 0.0) == walks, light


def test_a_pedestrian_walks_to_the_far_kerb_then_waits_again_and_the_crosswalk_reopens() -> None:
    crossings, graph = _crossings(), _graph()
    agents = _agents(None)
    t = 0.0
    for _ in range(200):
        slots, xy, yaw, speed = _step(crossings, agents, graph, {}, t)
        agents = dataclasses.replace(agents).with_state(
            np.where(np.arange(agents.capacity)[:, None] == slots[0], xy[0], agents.xy),
            np.where(np.arange(agents.capacity) == slots[0], yaw[0], agents.yaw),
            np.where(np.arange(agents.capacity) == slots[0], speed[0], agents.speed))
        t += 0.1
        if not crossings.walkers[1].on_strip and t > 1.0:
            break
    assert np.allclose(agents.xy[0], [2.5, 6.0])                       # 12 m at 1.5 m/s: 8 s
    assert 7.9 <= t <= 8.2
    walker = crossings.walkers[1]
    assert not walker.forward and walker.ready_at_s > t                  # back the same way, after a pause
    assert not crossings.blocked({WALK.id: WALK}, graph, agents)


def test_a_walker_waits_behind_someone_standing_in_its_way_and_people_walking_towards_each_other_pass() -> None:
    graph = _graph()
    agents = _agents(None)
    a = {f.name: getattr(agents, f.name).copy() for f in dataclasses.fields(Agents)}
    a["id"][1], a["valid"][1], a["agent_type"][1] = 3, True, AgentType.PEDESTRIAN   # standing 0.8 m ahead
    a["xy"][1], a["length"][1], a["width"][1] = (2.5, -5.2), 0.6, 0.6
    blocked = Agents(**a)
    _, _, _, speed = _step(_crossings(), blocked, graph, {})
    assert speed[0] == 0.0
    a["xy"][1] = (1.5, -5.2)            # the same person 1 m to the side: our way is clear
    _, _, _, speed = _step(_crossings(), Agents(**a), graph, {})
    assert speed[0] > 0.0
    towards = Walker(3, WALK.id, False, 1.5, ready_at_s=0.0)
    assert np.allclose(towards.path(WALK)[:, 0], 1.5)   # walking the other way keeps to the other side


def test_a_lane_reopens_once_the_pedestrian_has_walked_past_it() -> None:
    graph = _graph()                      # connector 2 crosses the walk 6 m from its start (y = 0)
    for y, forward, closed in ((-6.0, True, True), (1.0, True, True), (3.0, True, False),
                               (3.0, False, True), (-3.0, False, False)):
        crossings = Crossings(np.random.default_rng(0))
        crossings.add(Walker(1, WALK.id, forward, 1.5, ready_at_s=0.0, on_strip=True))
        agents = _agents(None)
        agents.xy[0] = (2.5 if forward else 1.5, y)
        assert (crossings.blocked({WALK.id: WALK}, graph, agents) == {2}) == closed, (y, forward)
