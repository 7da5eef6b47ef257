"""Crosswalks of the procedural city: one over every arm of every junction, kerb to kerb, between the stop
line and the junction, crossing exactly the connectors that enter or leave through that arm."""

from __future__ import annotations

import numpy as np
import pytest
from shapely.geometry import LineString, Point, Polygon

from tests.generation.grown_world import grow
from vectorworld.scene import LaneType


@pytest.fixture(scope="module", params=(0, 3))
def world(request: pytest.FixtureRequest):  # noqa: ANN201
    return grow(request.param, 41).world


def test_every_junction_arm_has_one_crosswalk_over_the_connectors_through_it(world) -> None:  # noqa: ANN001
    graph, walks = world.graph, list(world.crosswalks.values())
    assert len(walks) >= 8
    connectors = {i for i, lane in graph.lanes.items() if lane.lane_type == LaneType.CONNECTOR}
    for walk in walks:
        strip = Polygon(walk.polygon())
        # A vehicle crosses the strip on its connector (entering the junction) or just after it, on the lane
        # the connector leads into (leaving the junction into this arm).
        crossing = {i for i in connectors if any(
            LineString(np.vstack([graph[i].points, graph[j].points[:2]])).intersects(strip)
            for j in (graph[i].successors or (i,)) if j in graph)}
        assert set(walk.conflicts) == crossing, walk.id
        for lane_id in walk.conflicts:   # vehicles stop before the strip: a connector never starts on it
            assert strip.distance(Point(graph[lane_id].points[0])) >= 0.4, (walk.id, lane_id)
    # One crosswalk per arm: every connector enters its junction through exactly one crosswalk (the one whose
    # strip its stop line faces), so an arm without a crosswalk, or with two, fails here.
    entering = [i for w in walks for i in w.conflicts if Polygon(w.polygon()).distance(Point(graph[i].points[0])) < 1.0]
    assert sorted(entering) == sorted(connectors)


def test_a_crosswalk_spans_the_whole_road_and_its_kerbs(world) -> None:  # noqa: ANN001
    graph = world.graph
    for walk in world.crosswalks.values():
        line = LineString(walk.walk)
        ends = [np.asarray(p) for p in (walk.walk[0], walk.walk[-1])]
        lanes_crossed = [i for i in graph.near(walk.walk.mean(0), walk.length_m)
                         if LineString(graph[i].points).intersects(line)]
        assert lanes_crossed, walk.id
        for end in ends:  # both ends off every lane: on the kerb
            nearest = min(float(LineString(graph[i].points).distance(LineString([end, end + 1e-6])))
                          - graph[i].width_m / 2.0 for i in graph.near(end, 10.0))
            assert nearest > 0.5, (walk.id, nearest)


def test_signalised_crosswalks_follow_the_straight_lights_of_the_crossed_road(world) -> None:  # noqa: ANN001
    graph = world.graph
    lit = [w for w in world.crosswalks.values() if any(graph[i].signal is not None for i in w.conflicts)]
    assert lit
    for walk in lit:
        assert walk.through and set(walk.through) <= set(walk.conflicts)
        entering = {i for i in walk.conflicts if Polygon(walk.polygon()).intersects(LineString(graph[i].points))}
        across = walk.walk[-1] - walk.walk[0]
        for lane_id in walk.through:
            lane = graph[lane_id]
            heading = lane.points[-1] - lane.points[0]
            straight = abs(float(np.dot(heading, across))) < 1e-6 * np.linalg.norm(heading) * np.linalg.norm(across)
            assert lane.signal is not None and (straight or lane_id in entering), (walk.id, lane_id)
