"""Inferring road cross-sections from ports: two-way roads, lone ports, neighbouring roads, duplicates."""

from __future__ import annotations

import numpy as np

from vectorworld.generation.base import IdAllocator, Port, TileFrame, TileRequest
from vectorworld.generation.procedural.generator import ProceduralGenerator
from vectorworld.generation.procedural.port_groups import group_ports
from vectorworld.scene import Lane, LaneGraph


def _port(lane_id: int, x: float, y: float, yaw: float, is_out: bool) -> Port:
    return Port(lane_id, np.array([x, y]), yaw, 3.5, 12.0, is_out)


def test_out_and_opposite_in_ports_form_one_two_way_road() -> None:
    ports = [_port(1, 0.0, -1.75, 0.0, True), _port(2, 0.0, -5.25, 0.0, True),
             _port(3, 0.0, 1.75, np.pi, False), _port(4, 0.0, 5.25, np.pi, False)]
    roads = group_ports(ports, np.zeros(2))
    assert len(roads) == 1
    road = roads[0]
    assert np.allclose(road.origin_xy, [0.0, 0.0]) and np.isclose(road.yaw, 0.0)
    assert [lane.lane_ids for lane in road.lanes] == [(2,), (1,), (3,), (4,)]
    assert [lane.spec.forward for lane in road.lanes] == [True, True, False, False]
    assert np.allclose([lane.spec.offset_m for lane in road.lanes], [-5.25, -1.75, 1.75, 5.25])


def test_in_ports_alone_grow_against_their_heading() -> None:
    roads = group_ports([_port(7, 10.0, 0.0, np.pi / 2.0, False)], np.zeros(2))
    assert len(roads) == 1 and np.isclose(roads[0].yaw, -np.pi / 2.0)
    assert not roads[0].lanes[0].spec.forward


def test_separate_roads_are_not_merged() -> None:
    ports = [_port(1, 0.0, 0.0, 0.0, True),            # road A
             _port(2, 0.0, 20.0, 0.0, True),           # far to the left: another road
             _port(3, 0.0, 3.5, 0.8, True),            # adjacent but heading elsewhere
             _port(4, 0.0, -3.5, np.pi, False),        # opposite direction right of a forward lane
             _port(5, 0.0, -7.0, 0.0, True)]           # forward again beyond it: a second switch
    roads = group_ports(ports, np.zeros(2))
    first = roads[0]
    assert {i for lane in first.lanes for i in lane.lane_ids} == {1, 4}
    assert sum(len(r.lanes) for r in roads) == 5


def test_ports_on_one_spot_become_one_slot() -> None:
    ports = [_port(1, 0.0, -1.75, 0.0, True), _port(2, 0.0, -1.75, 0.0, True), _port(3, 0.0, -5.25, 0.0, True)]
    roads = group_ports(ports, np.zeros(2))
    assert len(roads) == 1
    assert sorted(lane.lane_ids for lane in roads[0].lanes) == [(1, 2), (3,)]


def test_staggered_skewed_real_ports_are_continued_exactly() -> None:
    """Ports of a real map are neither aligned nor parallel: an adapter piece starts at each exactly."""
    graph = LaneGraph()
    ends = [(np.array([0.0, -1.8]), 0.05), (np.array([-2.5, -5.4]), -0.04), (np.array([1.0, 2.0]), np.pi + 0.03)]
    lanes = []
    for k, (xy, yaw) in enumerate(ends):
        back = xy - 20.0 * np.array([np.cos(yaw), np.sin(yaw)])
        pts = np.stack([back, xy]) if k < 2 else np.stack([xy, xy + 20.0 * np.array([np.cos(yaw), np.sin(yaw)])])
        lanes.append(Lane(100 + k, pts))
    graph.add(lanes)
    ports = (Port(100, ends[0][0], ends[0][1], 3.5, 12.0, True), Port(101, ends[1][0], ends[1][1], 3.5, 12.0, True),
             Port(102, ends[2][0], ends[2][1], 3.5, 12.0, False))
    frame = TileFrame(ends[0][0], ends[0][1])
    content = ProceduralGenerator().generate(TileRequest(frame, ports, graph, IdAllocator(1000),
                                                         np.random.default_rng(3), spawn_agents=False))
    new = {lane.id: lane for lane in content.lanes}
    for a, b in content.links:
        if a in graph:
            gap = np.linalg.norm(graph[a].points[-1] - new[b].points[0])
            turn = abs(np.angle(np.exp(1j * (graph[a].end_pose[1] - new[b].start_pose[1]))))
        else:
            gap = np.linalg.norm(new[a].points[-1] - graph[b].points[0])
            turn = abs(np.angle(np.exp(1j * (new[a].end_pose[1] - graph[b].start_pose[1]))))
        assert gap <= 0.01 and turn < 0.05
    assert {a for a, _ in content.links} | {b for _, b in content.links} >= {100, 101, 102}


def test_odd_widths_and_speed_limits_of_real_ports_become_plausible() -> None:
    odd = [Port(1, np.zeros(2), 0.0, 0.0, 0.0, True), Port(2, np.array([0.0, -3.5]), 0.0, 3.2, 40.0, True)]
    road = group_ports(odd, np.zeros(2))[0]
    assert sorted(lane.spec.width_m for lane in road.lanes) == [3.2, 3.5]
    assert all(lane.speed_mps == 13.4 for lane in road.lanes)
