"""The caches of the DeltaSim observation (lane packing, route rows) give what a fresh computation gives,
step after step, while the map and the routes change under them."""

from __future__ import annotations

import dataclasses

import numpy as np

from policies.base import PolicyInput
from policies.deltasim.observation import Observation, ObservationBuilder
from policies.deltasim.routes import PATCH_ROWS, RouteFix, RouteTargets
from policies.deltasim.scenes import synthetic_input
from policies.route_paths import RoutePaths
from vectorworld.scene import Lane, LaneType


def _same_fix(got: RouteFix, want: RouteFix) -> None:
    assert [p is None for p in got.profiles] == [p is None for p in want.profiles]
    for name in ("s_m", "targets", "valid", "cap_mps", "connector_m"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)


def _routed_slots(inp: PolicyInput) -> np.ndarray:
    a = inp.agents
    return np.array([k for k in np.nonzero(a.valid)[0] if inp.routes.get(int(a.id[k]))], np.int64)


def test_route_rows_follow_changed_routes() -> None:
    """One RouteTargets kept across calls (its padded rows reused, patched or rebuilt) against a fresh one per
    call, while routes lose their first lane (a few, then many), change lanes or first lanes, grow past the
    rows' width and disappear."""
    inp = synthetic_input(14, np.random.default_rng(4), num_lanes=3, segments=6)
    kept = RouteTargets(RoutePaths())
    routes = dict(inp.routes)
    ids = sorted(routes)

    def check() -> None:
        state = dataclasses.replace(inp, routes=dict(routes))
        slots = _routed_slots(state)
        _same_fix(kept(state, slots), RouteTargets(RoutePaths())(state, slots))

    def densify(agent_id: int) -> None:
        """Replace the agent's first route lane by a copy with twice the points."""
        lane = inp.graph[routes[agent_id][0]]
        dense = np.empty((2 * len(lane.points) - 1, 2))
        dense[0::2], dense[1::2] = lane.points, (lane.points[:-1] + lane.points[1:]) / 2
        new_id = 900 + len(inp.graph)
        inp.graph.add([Lane(id=new_id, points=dense, width_m=lane.width_m, successors=lane.successors)])
        routes[agent_id] = (new_id,) + routes[agent_id][1:]

    densify(ids[-1])  # one dense row from the start: the rows are wide enough for more of them
    check()
    check()  # the same profiles: the rows are reused
    for agent_id in ids[:2]:  # a few agents enter their next lane: rows patched in place
        if len(routes[agent_id]) > 1:
            routes[agent_id] = routes[agent_id][1:]
    check()
    for agent_id in ids[2:4]:  # two change lanes (onto lanes of another length on the arc): patched
        lane = routes[agent_id][0] // 100
        routes[agent_id] = tuple(i + (100 if lane < 2 else -100) for i in routes[agent_id])
    check()
    for agent_id in ids[4:6]:  # two first lanes replaced by denser copies (other arc lengths): patched
        densify(agent_id)
    check()
    for agent_id in ids[: PATCH_ROWS + 2]:  # many at once: rebuilt
        if len(routes[agent_id]) > 1:
            routes[agent_id] = routes[agent_id][1:]
    check()
    for agent_id in ids:  # every route down to its last lane: short rows ...
        routes[agent_id] = routes[agent_id][-1:]
    check()
    routes[ids[3]] = (0, 1, 2, 3, 4, 5)  # ... then one much longer than the rows are wide
    check()
    routes[ids[5]] = ()  # an agent leaves the routed set
    check()


def _same_observation(got: Observation, want: Observation) -> None:
    for name in ("slots", "history", "static", "neighbors", "neighbor_mask", "neighbor_slots", "lane_points",
                 "lane_features", "lane_mask", "route_ahead"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)


def test_lane_packing_follows_every_graph_change() -> None:
    """A builder kept across calls (packed lanes and their tables reused while the graph's version stands)
    against a fresh builder, after an edge, a lane type, a new lane and a removal change the graph."""
    inp = synthetic_input(10, np.random.default_rng(5), num_lanes=2, segments=4)
    graph = inp.graph
    kept = ObservationBuilder()
    _same_observation(kept(inp), ObservationBuilder()(inp))
    graph.connect(0, 101)  # a new successor edge: the lane relations change
    _same_observation(kept(inp), ObservationBuilder()(inp))
    graph.set_type(1, LaneType.FREEWAY)
    _same_observation(kept(inp), ObservationBuilder()(inp))
    graph.add([Lane(id=900, points=graph[100].points + [0.0, 3.5], successors=(101,))])
    obs = kept(inp)
    assert 900 in set(kept.lanes.update(graph).lane_ids.tolist())
    _same_observation(obs, ObservationBuilder()(inp))
    graph.remove([900, 1])
    _same_observation(kept(inp), ObservationBuilder()(inp))
