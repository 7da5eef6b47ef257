"""Property tests of the procedural generator over chains of tiles (the world simulated by tile_chain)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.generation.procedural_checks import (
    continuity_violations,
    crossing_violations,
    curvature_violations,
    dead_end_violations,
    overlap_violations,
)
from vectorworld.generation import make_generator
from vectorworld.generation.base import IdAllocator, TileFrame, TileRequest
from vectorworld.generation.procedural.generator import ProceduralGenerator
from vectorworld.generation.procedural.tile_chain import chain_tiles, collect_ports
from vectorworld.scene import LaneGraph, LaneType

CHAIN_TILES = 30


def _chain(seed: int, tiles: int = CHAIN_TILES, **kwargs):  # noqa: ANN202 - ChainResult
    return chain_tiles(ProceduralGenerator(), tiles, seed, **kwargs)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_chained_tiles_keep_the_network_invariants(seed: int) -> None:
    result = _chain(seed, retain_m=None)
    assert len(result.tiles) == CHAIN_TILES
    assert continuity_violations(result.graph) == []
    for tile in result.tiles:
        assert dead_end_violations(tile.frame, tile.content) == []
    assert crossing_violations(result.graph) == []
    assert curvature_violations(result.graph) == []


@settings(max_examples=3, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_new_lanes_keep_clear_of_known_lanes(seed: int) -> None:
    result = _chain(seed, tiles=25, retain_m=None, spawn_agents=False)
    known: set[int] = set()
    for tile in result.tiles:
        assert overlap_violations(result.graph, tile.content, known) == []
        known |= {lane.id for lane in tile.content.lanes}


@settings(max_examples=3, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_same_seed_gives_byte_identical_tiles(seed: int) -> None:
    a, b = _chain(seed, tiles=12), _chain(seed, tiles=12)
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
        first = _chain(seed, tiles=3).tiles
        shapes.add(b"".join(lane.points.round(3).tobytes() for t in first for lane in t.content.lanes))
    assert len(shapes) == 6


def test_long_chain_has_junctions_lane_changes_and_curves() -> None:
    result = _chain(7, tiles=60, retain_m=None)
    graph = result.graph
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
    result = _chain(3, tiles=10, retain_m=None)
    graph = result.graph
    for tile in result.tiles[1:]:
        new = {lane.id for lane in tile.content.lanes}
        for a, b in tile.content.links:  # a new lane and a known one (a port, or a known lane it reaches)
            assert (a in new) != (b in new)
            assert np.linalg.norm(graph[a].points[-1] - graph[b].points[0]) < 0.01
        centre = [p for p in tile.ports if p.is_out and np.allclose(p.xy, tile.frame.center_xy)]
        assert centre, "the tile is centred at an out port"


def test_collect_ports_finds_open_ends_inside_the_tile() -> None:
    result = _chain(1, tiles=2, spawn_agents=False)
    frame = TileFrame(np.array([200.0, 200.0]), 0.0)
    assert collect_ports(result.graph, frame) == ()
    last = result.tiles[-1]
    ports = collect_ports(result.graph, last.frame)
    for port in ports:
        lane = result.graph[port.lane_id]
        assert not (lane.successors if port.is_out else lane.predecessors)


def test_no_agents_when_not_asked() -> None:
    result = _chain(2, tiles=6, spawn_agents=False)
    assert all(len(t.content.agents) == 0 for t in result.tiles)


def test_request_graph_is_not_modified() -> None:
    result = _chain(4, tiles=5)
    graph = result.graph
    before = {i: (lane.successors, lane.predecessors) for i, lane in graph.lanes.items()}
    last = result.tiles[-1]
    frame = TileFrame(graph[sorted(graph.lanes)[-1]].end_pose[0], graph[sorted(graph.lanes)[-1]].end_pose[1])
    ProceduralGenerator().generate(TileRequest(frame, collect_ports(graph, frame), graph,
                                               IdAllocator(10**6), np.random.default_rng(0)))
    assert {i: (lane.successors, lane.predecessors) for i, lane in graph.lanes.items()} == before
    assert last.content.lanes
