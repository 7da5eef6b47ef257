"""Roads that meet: a known road across the way is crossed or joined, facing ports are bridged, and a
road boxed in turns around."""

from __future__ import annotations

import numpy as np

from tests.generation.procedural_checks import continuity_violations, crossing_violations, dead_end_violations
from vectorworld import geometry
from vectorworld.generation.base import IdAllocator, Port, TileFrame, TileRequest, tile_ports
from vectorworld.generation.procedural.generator import ProceduralGenerator
from vectorworld.generation.procedural.occupancy import HomeZone, Occupancy
from vectorworld.generation.procedural.turnarounds import TURN_RADIUS_M, keyhole_path
from vectorworld.scene import Lane, LaneGraph, LaneType


def _straight(lane_id: int, a: tuple[float, float], b: tuple[float, float], n: int = 30) -> Lane:
    return Lane(lane_id, np.linspace(a, b, n))


def _world_with_road_across() -> LaneGraph:
    """The ego road ends at x = 0 (ports), a two-way road runs across at x = 22 (cut at y = 0)."""
    graph = LaneGraph()
    graph.add([_straight(1, (-40.0, -1.75), (0.0, -1.75)), _straight(2, (0.0, 1.75), (-40.0, 1.75)),
               _straight(10, (20.25, -60.0), (20.25, 0.0)), _straight(11, (20.25, 0.0), (20.25, 60.0)),
               _straight(12, (23.75, 60.0), (23.75, 0.0)), _straight(13, (23.75, 0.0), (23.75, -60.0))])
    graph.connect(10, 11)
    graph.connect(12, 13)
    return graph


def test_a_road_across_the_way_is_crossed_or_joined_never_overlapped() -> None:
    outcomes = {"crossings": 0, "joins": 0}
    for seed in range(12):
        graph = _world_with_road_across()
        frame = TileFrame(np.array([0.0, -1.75]), 0.0)
        request = TileRequest(frame, tuple(tile_ports(graph, frame, 3.0)), graph, IdAllocator(100),
                              np.random.default_rng(seed), spawn_agents=False)
        content, report = ProceduralGenerator().generate_with_report(request)
        assert report.stopped == 0
        assert dead_end_violations(frame, content) == []
        outcomes["crossings"] += report.crossings
        outcomes["joins"] += report.joins
        graph.add(content.lanes)
        for a, b in content.links:
            graph.connect(a, b)
        assert continuity_violations(graph) == []
        assert crossing_violations(graph) == []
        # New non-connector lanes keep the known road's lanes clear of their width.
        known = np.concatenate([graph[i].points for i in (10, 11, 12, 13)])
        for lane in content.lanes:
            if lane.lane_type != LaneType.CONNECTOR:
                d = geometry.point_segment_distance(lane.points, known[:-1], known[1:]).min()
                assert d >= 3.4, f"seed {seed}: lane {lane.id} is {d:.2f} m from the crossing road"
    assert outcomes["crossings"] + outcomes["joins"] >= 6


def test_facing_ports_in_one_tile_are_bridged() -> None:
    bridged = 0
    for seed in range(8):
        graph = LaneGraph()
        graph.add([_straight(1, (-40.0, -1.75), (0.0, -1.75)), _straight(2, (0.0, 1.75), (-40.0, 1.75)),
                   _straight(3, (60.0, 1.0), (24.0, 1.0)), _straight(4, (24.0, -2.5), (60.0, -2.5))])
        frame = TileFrame(np.array([0.0, -1.75]), 0.0)
        ports = tuple(tile_ports(graph, frame, 3.0))
        assert {p.lane_id for p in ports} == {1, 2, 3, 4}
        content, report = ProceduralGenerator().generate_with_report(
            TileRequest(frame, ports, graph, IdAllocator(100), np.random.default_rng(seed), spawn_agents=False))
        bridged += report.bridges
        linked = {a for a, _ in content.links} | {b for _, b in content.links}
        assert linked >= {1, 2, 3, 4}, "all four port lanes are continued"
        assert dead_end_violations(frame, content) == []
        graph.add(content.lanes)
        for a, b in content.links:
            graph.connect(a, b)
        assert continuity_violations(graph) == []
    assert bridged >= 6


def test_occupancy_overlap_ignore_home_and_rollback() -> None:
    occ = Occupancy()
    occ.add(np.array([[0.0, 0.0], [20.0, 0.0]]), 1.75, owner=5)
    probe = np.array([[10.0, 3.0]])
    assert occ.blocked(probe, 1.75, 0.5)  # 3 m apart < 1.75 + 1.75 + 0.5
    assert not occ.blocked(probe, 1.75, 0.5, ignore=(5,))
    assert not occ.blocked(np.array([[10.0, 5.0]]), 1.75, 0.5)
    # a home zone at x = 25 facing +x ignores the segment behind its start line
    assert not occ.blocked(probe, 1.75, 0.5, home=HomeZone(np.array([25.0, 0.0]), 0.0, 30.0))
    mark = occ.mark()
    occ.add(np.array([[0.0, 20.0], [20.0, 20.0]]), 1.75, owner=6)
    assert occ.blocked(np.array([[5.0, 19.0]]), 1.75, 0.5)
    occ.rollback(mark)
    assert not occ.blocked(np.array([[5.0, 19.0]]), 1.75, 0.5)
    port = Port(1, np.zeros(2), 0.0, 3.5, 10.0, True)
    assert port.is_out


def test_keyhole_turnaround_returns_on_the_opposite_lane() -> None:
    start = np.array([5.0, -1.75])
    path = keyhole_path(start, 0.3, 3.5)
    assert path is not None
    assert np.array_equal(path[0], start)
    assert np.allclose(path[-1], start + 3.5 * np.array([-np.sin(0.3), np.cos(0.3)]), atol=1e-9)
    d0, d1 = path[1] - path[0], path[-1] - path[-2]
    assert abs(geometry.wrap_angle(np.arctan2(d0[1], d0[0]) - 0.3)) < 0.05
    assert abs(geometry.wrap_angle(np.arctan2(d1[1], d1[0]) - 0.3 - np.pi)) < 0.05
    assert geometry.curvature(path).max() <= 1.0 / TURN_RADIUS_M + 1e-3
    assert keyhole_path(start, 0.0, 20.0) is None


def test_a_boxed_in_two_way_road_turns_around_instead_of_dead_ending() -> None:
    """Junction connectors wall the road in on three sides: no crossing, join or exit is possible."""
    graph = LaneGraph()
    graph.add([_straight(1, (-40.0, -1.75), (0.0, -1.75)), _straight(2, (0.0, 1.75), (-40.0, 1.75))])
    walls = [((24.0, -40.0), (24.0, 40.0)), ((-5.0, 14.0), (24.0, 14.0)), ((24.0, -14.0), (-5.0, -14.0))]
    for k, (a, b) in enumerate(walls):
        graph.add([Lane(10 + k, np.linspace(a, b, 40), lane_type=LaneType.CONNECTOR)])
    frame = TileFrame(np.array([0.0, -1.75]), 0.0)
    content, report = ProceduralGenerator().generate_with_report(
        TileRequest(frame, tuple(tile_ports(graph, frame, 3.0)), graph, IdAllocator(100), np.random.default_rng(0),
                    spawn_agents=False))
    assert report.turnarounds == 1 and report.stopped == 0
    assert dead_end_violations(frame, content) == []
    graph.add(content.lanes)
    for a, b in content.links:
        graph.connect(a, b)
    assert continuity_violations(graph) == []
    assert graph[1].successors and graph[2].predecessors
