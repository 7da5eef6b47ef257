"""Property tests of the procedural generator over worlds grown tile by tile (``grown_world.grow``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.generation.grown_world import GrownWorld, grow
from tests.generation.procedural_checks import (
    continuity_violations,
    crossing_violations,
    curvature_violations,
    dead_end_violations,
    overlap_violations,
)
from vectorworld.generation import make_generator
from vectorworld.generation.base import IdAllocator, Port, TileFrame, TileRequest, tile_ports
from vectorworld.generation.procedural.generator import ProceduralGenerator
from vectorworld.scene import LaneGraph, LaneType

CHAIN_TILES = 30
PORT_MARGIN_M = 3.0


@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_chained_tiles_keep_the_network_invariants(seed: int) -> None:
    result = grow(seed, CHAIN_TILES)
    assert len(result.tiles) == CHAIN_TILES
    assert continuity_violations(result.graph) == []
    for tile in result.tiles:
        assert dead_end_violations(tile.frame, tile.content) == []
    # on the lanes as generated: the world marks crossing lanes as connectors, which would hide a crossing
    assert crossing_violations(result.generated) == []
    assert curvature_violations(result.generated) == []


@settings(max_examples=3, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_new_lanes_keep_clear_of_known_lanes(seed: int) -> None:
    result = grow(seed, 25)
    known: set[int] = set()
    for tile in result.tiles:
        assert overlap_violations(result.generated, tile.content, known) == []
        known |= {lane.id for lane in tile.content.lanes}


@settings(max_examples=3, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_same_seed_gives_byte_identical_tiles(seed: int) -> None:
    a, b = grow(seed, 12), grow(seed, 12)
    for ta, tb in zip(a.tiles, b.tiles, strict=True):
        assert [lane.id for lane in ta.content.lanes] == [lane.id for lane in tb.content.lanes]
        for la, lb in zip(ta.content.lanes, tb.content.lanes, strict=True):
            assert la.points.tobytes() == lb.points.tobytes()
            assert (la.successors, la.predecessors, la.left_neighbors, la.right_neighbors) == \
                (lb.successors, lb.predecessors, lb.left_neighbors, lb.right_neighbors)
        assert ta.content.links == tb.content.links
        assert ta.content.agents.xy.tobytes() == tb.content.agents.xy.tobytes()
        assert ta.content.agents.motion_code.tobytes() == tb.content.agents.motion_code.tobytes()


def test_different_seeds_give_different_roads() -> None:
    shapes = set()
    for seed in range(6):
        first = grow(seed, 3).tiles
        shapes.add(b"".join(lane.points.round(3).tobytes() for t in first for lane in t.content.lanes))
    assert len(shapes) == 6


def test_long_chain_has_junctions_lane_changes_and_curves() -> None:
    result = grow(7, 60)
    graph = result.generated
    lanes = list(graph.lanes.values())
    connectors = [lane for lane in lanes if lane.lane_type == LaneType.CONNECTOR]
    assert len(connectors) >= 20
    # 3- and 4-way junctions: entry lanes with two or three turn options.
    fanout = [len(lane.successors) for lane in lanes if lane.successors
              and all(graph[s].lane_type == LaneType.CONNECTOR for s in lane.successors if s in graph)]
    assert max(fanout) >= 2
    reports = [t.report for t in result.tiles]
    assert sum(r.junctions for r in reports) >= 10
    assert sum(r.tapers for r in reports) >= 2
    # Lane-count changes: splits (one lane, two non-connector successors) and merges.
    regular = [lane for lane in lanes if lane.lane_type != LaneType.CONNECTOR]
    splits = [lane for lane in regular if sum(graph[s].lane_type != LaneType.CONNECTOR
                                              for s in lane.successors if s in graph) >= 2]
    merges = [lane for lane in regular if sum(graph[p].lane_type != LaneType.CONNECTOR
                                              for p in lane.predecessors if p in graph) >= 2]
    assert splits or merges
    # Lane-change neighbours between parallel same-direction lanes, both ways.
    for lane in regular:
        for left in lane.left_neighbors:
            assert lane.id in graph[left].right_neighbors
    assert any(lane.left_neighbors for lane in regular)
    # Curves, and a plausible share of tiles with a junction.
    headings = [abs(lane.end_pose[1] - lane.start_pose[1]) for lane in regular]
    assert max(headings) > 0.2
    with_junction = np.mean([r.junctions > 0 for r in reports])
    assert 0.2 <= with_junction <= 0.9
    widths = {round(lane.width_m, 2) for lane in lanes}
    assert all(3.0 <= w <= 3.75 for w in widths)
    assert all(6.5 <= lane.speed_limit_mps <= 20.0 for lane in lanes)  # turning connectors: 15 mph


def test_first_tile_road_runs_through_the_origin_along_x() -> None:
    for seed in range(5):
        frame = TileFrame(np.array([100.0, -50.0]), 0.7)
        content = ProceduralGenerator().first_tile(frame, IdAllocator(), np.random.default_rng(seed))
        graph = LaneGraph()
        graph.add(content.lanes)
        lane_id, dist = graph.nearest(frame.center_xy, frame.yaw, radius_m=8.0)
        assert lane_id >= 0 and dist < 6.0
        local = frame.to_local(graph[lane_id].points)
        assert local[0, 0] <= -31.0 or graph[lane_id].predecessors  # starts at the back border
        xs = np.concatenate([frame.to_local(lane.points)[:, 0] for lane in content.lanes])
        assert xs.min() <= -31.9 and xs.max() >= 31.5


def test_registered_and_constructible_without_arguments() -> None:
    gen = make_generator("procedural")
    assert isinstance(gen, ProceduralGenerator)
    assert gen.name == "procedural"


def test_ports_are_continued_exactly_and_tiles_are_left_through_the_border() -> None:
    result = grow(3, 10)
    graph = result.graph
    for tile in result.tiles[1:]:
        new = {lane.id for lane in tile.content.lanes}
        for a, b in tile.content.links:  # a new lane and a known one (a port, or a known lane it reaches)
            assert (a in new) != (b in new)
            assert np.linalg.norm(graph[a].points[-1] - graph[b].points[0]) < 0.01
        centre = [p for p in tile.ports if p.is_out and np.allclose(p.xy, tile.frame.center_xy)]
        assert centre, "the tile is centred at an out port"


def test_tile_ports_are_the_open_ends_inside_the_tile() -> None:
    result = grow(1, 4)
    graph = result.graph
    assert tile_ports(graph, TileFrame(np.array([500.0, 500.0]), 0.0), PORT_MARGIN_M) == []
    for tile in result.tiles[1:]:
        ports = tile_ports(graph, tile.frame, PORT_MARGIN_M)
        for port in ports:
            lane = graph[port.lane_id]
            assert not (lane.successors if port.is_out else lane.predecessors)
            assert tile.frame.contains(port.xy, PORT_MARGIN_M)
        # every open end inside the square is among them
        ends = [(i, lane.end_pose[0]) for i, lane in graph.lanes.items() if not lane.successors]
        inside = {i for i, xy in ends if tile.frame.contains(xy, PORT_MARGIN_M - 0.1)}
        assert inside <= {p.lane_id for p in ports if p.is_out}
    assert any(tile.ports for tile in result.tiles[1:]), "the world passes the ports it found"


def test_no_agents_when_not_asked() -> None:
    result = _grown_with_open_ends()
    spawned = 0
    for frame, ports in _requests_at_open_ends(result):
        for spawn in (False, True):
            request = TileRequest(frame, ports, result.graph, IdAllocator(10**6), np.random.default_rng(0),
                                  spawn_agents=spawn)
            agents = len(result.world.generator.generate(request).agents)  # the world's city plan
            if not spawn:
                assert agents == 0
            spawned += agents
    assert spawned > 0, "the same requests with spawn_agents=True place traffic"


def test_request_graph_is_not_modified() -> None:
    result = _grown_with_open_ends()
    graph = result.graph
    before = {i: (lane.successors, lane.predecessors, lane.lane_type) for i, lane in graph.lanes.items()}
    for frame, ports in _requests_at_open_ends(result):
        content = result.world.generator.generate(TileRequest(frame, ports, graph, IdAllocator(10**6),
                                                              np.random.default_rng(0)))
        assert content.lanes
    assert {i: (lane.successors, lane.predecessors, lane.lane_type) for i, lane in graph.lanes.items()} == before


def _grown_with_open_ends() -> GrownWorld:
    return grow(4, 5)


def _requests_at_open_ends(result: GrownWorld, most: int = 3) -> list[tuple[TileFrame, tuple[Port, ...]]]:
    """Frames centred at open out ports of the grown world, with the ports the world would pass."""
    graph = result.graph
    ends = sorted(i for i, lane in graph.lanes.items() if not lane.successors)[:most]
    out = []
    for lane_id in ends:
        xy, yaw = graph[lane_id].end_pose
        frame = TileFrame(xy.copy(), yaw)
        out.append((frame, tuple(tile_ports(graph, frame, PORT_MARGIN_M))))
    assert out, "the grown world has open ends"
    return out
