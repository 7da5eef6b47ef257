"""Traffic placed by the procedural generator: where, how fast, how big, how far apart, motion codes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.generation.grown_world import GrownWorld, grow
from vectorworld import geometry
from vectorworld.generation.base import IdAllocator, TileFrame, TileRequest, tile_ports
from vectorworld.generation.procedural.generator import ProceduralGenerator
from vectorworld.generation.procedural.spawning import STOP_MARGIN_M, SpawnConfig
from vectorworld.scene import AgentType, LaneType


@pytest.fixture(scope="module")
def chain() -> GrownWorld:
    return grow(11, 24)


def test_agents_stand_on_new_lanes_in_the_generated_half(chain: GrownWorld) -> None:
    for k, tile in enumerate(chain.tiles):
        agents, lanes = tile.content.agents, {lane.id: lane for lane in tile.content.lanes}
        local = tile.frame.to_local(agents.xy)
        assert np.all(np.abs(local) <= 32.0)
        if k > 0:
            assert np.all(local[:, 0] >= 0.0)
        for i in range(len(agents)):
            if agents.lane_id[i] < 0:  # parked at the curb or on the sidewalk: beside a new lane
                assert agents.speed[i] == 0.0 or agents.agent_type[i] == AgentType.PEDESTRIAN
                d = min(np.min(geometry.point_segment_distance(agents.xy[i][None], ln.points[:-1], ln.points[1:]))
                        for ln in lanes.values())
                assert d <= (2.5 if agents.agent_type[i] == AgentType.VEHICLE else 7.6)  # a sidewalk, a pair
                continue
            lane = lanes[int(agents.lane_id[i])]
            s, lat, heading = geometry.project_to_polyline(agents.xy[i][None], lane.points)
            assert abs(lat[0]) <= 1.3
            assert abs(geometry.wrap_angle(agents.yaw[i] - heading[0])) < 0.15


def test_sizes_and_speeds_are_plausible(chain: GrownWorld) -> None:
    for tile in chain.tiles:
        a = tile.content.agents
        lanes = {lane.id: lane for lane in tile.content.lanes}
        for i in range(len(a)):
            if a.agent_type[i] != AgentType.VEHICLE:
                assert a.length[i] < 2.0 and a.speed[i] <= 7.0
                continue
            car = 4.2 <= a.length[i] <= 5.5 and 1.8 <= a.width[i] <= 2.3
            truck = 7.0 <= a.length[i] <= 11.0 and 2.3 <= a.width[i] <= 2.6
            assert car or truck
            if a.lane_id[i] < 0:
                assert a.speed[i] == 0.0
                continue
            lane = lanes[int(a.lane_id[i])]
            assert 0.0 <= a.speed[i] <= 1.05 * lane.speed_limit_mps + 1e-9
            kappa = geometry.curvature(lane.points).max()
            if lane.lane_type == LaneType.CONNECTOR and kappa > 0.05:
                assert a.speed[i] <= np.sqrt(3.0 / kappa) + 1e-6 or a.speed[i] <= lane.speed_limit_mps
    speeds = np.concatenate([t.content.agents.speed for t in chain.tiles])
    assert np.mean(speeds == 0.0) > 0.1, "parked and stopped vehicles"
    assert np.percentile(speeds, 90) > 7.0, "moving traffic near the speed limit"


def test_no_overlaps_and_bumper_gaps_in_lane(chain: GrownWorld) -> None:
    for tile in chain.tiles:
        a = tile.content.agents
        if len(a) < 2:
            continue
        overlap = geometry.pairwise_box_overlap(a.xy, a.yaw, a.length, a.width, np.ones(len(a), bool))
        assert not overlap.any()
        moving = np.flatnonzero((a.speed > 0.0) & (a.agent_type == AgentType.VEHICLE))
        for i in moving:
            for j in moving:
                if i < j and a.lane_id[i] == a.lane_id[j]:
                    gap = np.linalg.norm(a.xy[i] - a.xy[j]) - (a.length[i] + a.length[j]) / 2.0
                    assert gap >= ProceduralGenerator().config.city_spawn.min_gap_m - 0.5


def test_each_car_can_stop_behind_the_one_ahead_in_its_lane(chain: GrownWorld) -> None:
    """Should the car ahead stop, the follower stops behind it braking at the spawner's comfortable rate."""
    checked = 0
    for tile in chain.tiles:
        a = tile.content.agents
        vehicles = np.flatnonzero(a.agent_type == AgentType.VEHICLE)
        for lane_id in set(a.lane_id[vehicles].tolist()):
            rows = vehicles[a.lane_id[vehicles] == lane_id]
            lane = chain.graph[lane_id] if lane_id in chain.graph else None
            if lane is None or len(rows) < 2:
                continue
            s, _, _ = geometry.project_to_polyline(a.xy[rows], lane.points)
            order = rows[np.argsort(-s)]  # front first
            s_sorted = np.sort(s)[::-1]
            for k in range(1, len(order)):
                ahead, follower = order[k - 1], order[k]
                gap = s_sorted[k - 1] - s_sorted[k] - (a.length[ahead] + a.length[follower]) / 2.0
                room = a.speed[ahead] ** 2 + 2.0 * SpawnConfig().comfort_decel_mps2 * max(gap - STOP_MARGIN_M, 0.0)
                assert a.speed[follower] ** 2 <= room + 0.5, (tile.frame.center_xy, lane_id, gap,
                                                              a.speed[[ahead, follower]])
                checked += 1
    assert checked >= 10


def test_motion_codes_trace_the_last_second(chain: GrownWorld) -> None:
    for tile in chain.tiles:
        a = tile.content.agents
        for i in range(len(a)):
            code = a.motion_code[i]
            assert code.shape == (6, 2)
            if a.speed[i] == 0.0:
                assert not code.any()
                continue
            assert np.allclose(code[-1], 0.0)
            travelled = geometry.polyline_lengths(code)[-1]
            assert abs(travelled - min(a.speed[i], 12.0)) < 0.25 * a.speed[i] + 0.2
            assert np.all(np.diff(code[:, 0]) > -0.05), "the path comes from behind the agent"


def test_spawns_keep_clear_of_agents_already_there() -> None:
    grown = grow(5, 3)
    graph = grown.graph
    end = max(graph.lanes, key=lambda i: graph[i].end_pose[0][0] if not graph[i].successors else -1e9)
    xy, yaw = graph[end].end_pose
    frame = TileFrame(xy, yaw)
    existing = frame.to_global(np.array([[10.0, 0.0], [20.0, -2.0], [25.0, 2.0]]))
    for seed in range(6):
        content = grown.world.generator.generate(TileRequest(frame, tuple(tile_ports(graph, frame, 3.0)), graph,
                                                             IdAllocator(10**6), np.random.default_rng(seed),
                                                             existing_agents_xy=existing))
        if len(content.agents):
            d = np.linalg.norm(content.agents.xy[:, None] - existing[None], axis=-1)
            assert d.min() >= 10.0
