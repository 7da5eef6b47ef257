"""Layout rules of the procedural city: right-angle 3- and 4-way junctions, block-sized junction spacing,
connectors only inside junctions, and a plan that every tile agrees on (whatever order they come in)."""

from __future__ import annotations

import numpy as np
import pytest
from shapely.geometry import LineString

from tests.generation.grown_world import grow
from tests.generation.procedural_checks import continuity_violations, crossing_violations
from vectorworld import geometry
from vectorworld.generation.base import IdAllocator, TileFrame, TileRequest, tile_ports
from vectorworld.generation.procedural.city_plan import CityPlan
from vectorworld.generation.procedural.generator import ProceduralGenerator
from vectorworld.scene import Lane, LaneGraph, LaneType

SEEDS = (0, 3, 8)


@pytest.fixture(scope="module", params=SEEDS)
def city(request: pytest.FixtureRequest) -> LaneGraph:
    """A world grown at random open ends (the world marks lanes that cross others as connectors)."""
    return grow(request.param, 41).graph


def junctions(graph: LaneGraph) -> list[set[int]]:
    """Connector lanes grouped into junctions: connectors sharing an entry or exit lane, crossing, or side by
    side (less than a lane apart)."""
    connectors = sorted(i for i, lane in graph.lanes.items() if lane.lane_type == LaneType.CONNECTOR)
    parent = {i: i for i in connectors}

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for a in connectors:
        for b in connectors:
            la, lb = graph[a], graph[b]
            if b <= a or np.linalg.norm(la.points.mean(0) - lb.points.mean(0)) > 60.0:
                continue
            shared = set(la.predecessors) & set(lb.predecessors) or set(la.successors) & set(lb.successors)
            if shared or LineString(la.points).distance(LineString(lb.points)) < 4.0:
                parent[find(a)] = find(b)
    groups: dict[int, set[int]] = {}
    for i in connectors:
        groups.setdefault(find(i), set()).add(i)
    return list(groups.values())


def entry_headings(graph: LaneGraph, junction: set[int]) -> list[float]:
    """Headings (rad) at which traffic enters a junction (start headings of its connectors)."""
    return [graph[c].start_pose[1] for c in junction]


def test_junction_arms_meet_at_right_angles(city: LaneGraph) -> None:
    groups = junctions(city)
    assert len(groups) >= 3
    for group in groups:
        headings = entry_headings(city, group)
        base = headings[0]
        for h in headings:
            off = float(geometry.wrap_angle(h - base)) % (np.pi / 2.0)
            assert min(off, np.pi / 2.0 - off) < np.radians(3.0), f"junction arm at {np.degrees(h - base):.1f} deg"
        quadrants = {round(float(geometry.wrap_angle(h - base)) / (np.pi / 2.0)) % 4 for h in headings}
        assert len(quadrants) in (3, 4), "a junction has 3 or 4 arms"


def test_junctions_are_a_block_apart(city: LaneGraph) -> None:
    centres = np.array([np.mean([city[c].points.mean(0) for c in g], axis=0) for g in junctions(city)])
    d = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    assert d.min() >= 75.0
    # the next junction along a road is at most a long block away
    assert np.median(d.min(1)) <= 260.0


def test_connectors_only_inside_junctions(city: LaneGraph) -> None:
    for group in junctions(city):
        centre = np.mean([city[c].points.mean(0) for c in group], axis=0)
        for c in group:
            lane = city[c]
            assert lane.length_m < 50.0, f"connector {c} is {lane.length_m:.0f} m long"
            assert np.linalg.norm(lane.points - centre, axis=-1).max() < 35.0, f"connector {c} leaves its junction"
            assert all(city[p].lane_type != LaneType.CONNECTOR for p in lane.predecessors if p in city)
            assert all(city[s].lane_type != LaneType.CONNECTOR for s in lane.successors if s in city)
    assert crossing_violations(city) == []  # only connectors cross other lanes


def test_arterials_have_several_lanes_per_direction_and_left_turn_pockets() -> None:
    plan = CityPlan(seed=5)
    lines = [plan.line(axis, i)[1] for axis in (0, 1) for i in range(-20, 20)]
    lanes = [road.lanes for road in lines]
    assert min(lanes) == 1 and max(lanes) >= 3
    assert 0.2 < np.mean([n >= 2 for n in lanes]) < 0.6
    pockets = [plan.has_pocket(i, j, a) for i in range(-6, 6) for j in range(-6, 6) for a in range(4)
               if plan.is_junction(i, j) and plan.arms(i, j)[a]]
    assert any(pockets)


def test_tiles_agree_whatever_order_they_are_generated_in() -> None:
    """Two worlds of one plan, explored along different routes, lay bit-identical lanes where they overlap."""
    a, b = grow(2, 25).generated, grow(2, 25, explore_seed=3).generated
    ends_a = {(tuple(lane.points[0].round(6)), tuple(lane.points[-1].round(6))): lane for lane in a.lanes.values()}
    shared = 0
    for lane in b.lanes.values():
        twin = ends_a.get((tuple(lane.points[0].round(6)), tuple(lane.points[-1].round(6))))
        if twin is not None:
            shared += 1
            assert twin.points.tobytes() == lane.points.tobytes()
            assert (twin.lane_type, twin.width_m, twin.speed_limit_mps) == (lane.lane_type, lane.width_m,
                                                                            lane.speed_limit_mps)
    assert shared >= 20
    assert shared < len(b.lanes), "the two explorations went different ways"
    assert continuity_violations(b) == []


def test_ports_off_the_plan_are_grown_organically() -> None:
    """A known map that is not the plan (a real log's two-way road) is continued by the organic grower."""
    x = np.linspace(-40.0, 0.0, 21)
    graph = LaneGraph()
    graph.add([Lane(0, np.stack([x, np.full(21, -1.75)], -1)), Lane(1, np.stack([x[::-1], np.full(21, 1.75)], -1))])
    frame = TileFrame(np.array([0.0, -1.75]), 0.0)
    gen = ProceduralGenerator()
    gen.generate(TileRequest(TileFrame(np.array([500.0, 500.0]), 0.0), (), LaneGraph(), IdAllocator(100),
                             np.random.default_rng(1)))  # a plan exists (elsewhere): these ports are not on it
    content = gen.generate(TileRequest(frame, tuple(tile_ports(graph, frame, 3.0)), graph, IdAllocator(10),
                                       np.random.default_rng(0)))
    assert set(content.links) >= {(0, content.links[0][1])} and any(b == 1 for _, b in content.links)
