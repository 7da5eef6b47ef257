"""The streaming world: coverage ahead of the ego, continuity at links, retirement, drivable raster."""

import numpy as np
import pytest

from tests.straight_world import StraightGenerator  # also registers "test-straight"
from vectorworld.generation import make_generator
from vectorworld.generation.base import AgentSpawns, TileContent, TileRequest
from vectorworld.scene import Lane, LaneType
from vectorworld.world import StreamingWorld, WorldConfig
from vectorworld.world.drivable import DrivableGrid
from vectorworld.world.streaming import DEFER_CALLS


def test_coverage_follows_the_ego_and_retires_behind():
    world = StreamingWorld(make_generator("test-straight"), np.random.default_rng(0),
                           WorldConfig(lookahead_m=90.0, retention_m=160.0))
    world.start()
    counts = []
    for x in np.arange(0.0, 2000.0, 5.0):
        ego = np.array([x, -1.75])
        world.ensure_coverage(ego, 0.0, None, np.zeros((0, 2)))
        world.retire(ego)
        counts.append(len(world.tiles))
        frontier = max(world.graph[i].points[:, 0].max() for i in world.graph.lanes)
        assert frontier - x >= 80.0, f"ego at {x} m sees road only up to {frontier} m"
    assert max(counts) <= 10, "tiles behind the ego are not being retired"
    for lane in world.graph.lanes.values():
        for succ in lane.successors:
            gap = np.linalg.norm(lane.points[-1] - world.graph[succ].points[0])
            assert gap <= 0.01


def test_no_generation_behind_the_ego():
    world = StreamingWorld(make_generator("test-straight"), np.random.default_rng(0))
    world.start()
    made = world.ensure_coverage(np.array([0.0, 0.0]), np.pi, None, np.zeros((0, 2)))
    assert made == []  # the only open ends are behind a west-facing ego


def test_drivable_grid_add_remove_and_tolerance():
    grid = DrivableGrid(cell_m=0.25, tolerance_m=0.3)
    xs = np.linspace(0.0, 50.0, 11)
    lane = Lane(7, np.stack([xs, np.zeros_like(xs)], -1), width_m=3.5)
    grid.add(lane)
    pts = np.array([[10.0, 0.0], [10.0, 1.9], [10.0, 2.4], [60.0, 0.0], [-5.0, 0.0]])
    assert grid.contains(pts).tolist() == [True, True, False, False, False]
    grid.remove(7)
    assert not grid.contains(pts).any()


def _world_with_a_cross_road() -> StreamingWorld:
    """The straight test road (tile 0 ends at x = 40 m; the next tile would reach x = 80 m) and a known
    north-south road at x = 60 m that the next tile's lanes would cut across."""
    world = StreamingWorld(make_generator("test-straight"), np.random.default_rng(0))
    world.start()
    ys = np.linspace(-40.0, 40.0, 17)
    world.add_known_map([Lane(10_000, np.stack([np.full_like(ys, 60.0), ys], -1), width_m=3.5)])
    return world


def test_a_crossing_near_moving_traffic_is_deferred_until_clear():
    world = _world_with_a_cross_road()
    ego, nobody = np.array([0.0, -1.75]), np.zeros((0, 2))
    driving_at_the_crossing = np.array([[60.0, 20.0]])
    road_ends = [i for i, lane in world.graph.lanes.items() if i != 10_000 and lane.points[-1, 0] > 39.0]
    world.ensure_coverage(ego, 0.0, None, driving_at_the_crossing, driving_at_the_crossing)
    assert world.graph[10_000].lane_type == LaneType.SURFACE_STREET
    continued = []
    for _ in range(2 * DEFER_CALLS):  # the traffic stays: the deferral is renewed without generating again
        world.ensure_coverage(ego, 0.0, None, driving_at_the_crossing, driving_at_the_crossing)
        continued.append(all(world.graph[i].successors for i in road_ends))
    for _ in range(DEFER_CALLS):
        continued.append(all(world.graph[i].successors for i in road_ends))
        world.ensure_coverage(ego, 0.0, None, nobody, nobody)
    assert not any(continued), "the road is not continued while the deferral lasts"
    assert all(world.graph[i].successors for i in road_ends), "it is continued once the traffic has gone"
    assert world.graph[10_000].lane_type == LaneType.CONNECTOR  # the crossing is a junction now


def test_a_crossing_far_from_traffic_becomes_a_junction_at_once():
    world = _world_with_a_cross_road()
    far_away = np.array([[60.0, 300.0]])
    assert world.ensure_coverage(np.array([0.0, -1.75]), 0.0, None, far_away, far_away)
    assert world.graph[10_000].lane_type == LaneType.CONNECTOR


@pytest.mark.parametrize("apart_m, junction", [(2.2, False), (1.5, True)])
def test_a_two_way_road_narrowing_is_a_junction_only_where_oncoming_cars_cannot_pass(apart_m: float,
                                                                                     junction: bool) -> None:
    """Two lanes the opposite ways, 3.5 m apart, come within ``apart_m`` at one end (a learned start tile's
    road narrowed to 2.2 m at its border, and the world held the ego for oncoming traffic as at a junction).
    A lane turning past another one within 2.5 m still makes a junction."""
    world = StreamingWorld(make_generator("test-straight"), np.random.default_rng(0))
    xs = np.linspace(0.0, 60.0, 13)
    east = Lane(20_000, np.stack([xs, np.zeros_like(xs)], -1))
    west = Lane(20_001, np.stack([xs[::-1], np.linspace(apart_m, 3.5, 13)], -1))
    turn = Lane(20_002, np.stack([np.full(9, 30.0), np.linspace(-40.0, -2.0, 9)], -1))  # ends 2 m short of east
    world.add_known_map([east, west, turn])
    types = [world.graph[i].lane_type == LaneType.CONNECTOR for i in (20_000, 20_001, 20_002)]
    assert types == [True, junction, True]


def test_a_port_reopened_by_retirement_gets_fresh_attempts():
    """A lane whose continuation is retired (the ego went away from it, then may come back) is an open port
    again with all its attempts: its earlier ones (the straight extension among them) must not make its
    next failure a dead end -- seed 3 once ended `no_road` that way."""
    world = StreamingWorld(make_generator("test-straight"), np.random.default_rng(0),
                           WorldConfig(lookahead_m=90.0, retention_m=160.0))
    world.start()
    for x in np.arange(0.0, 300.0, 5.0):
        world.ensure_coverage(np.array([x, -1.75]), 0.0, None, np.zeros((0, 2)))
    ends = {i: world.graph[i].points[-1, 0] for i in world.graph.lanes if world.graph[i].successors}
    port = min(ends, key=lambda i: abs(ends[i] - 160.0))       # a lane continued by the next tile
    follower_tile = world.graph[world.graph[port].successors[0]].tile_id
    world.ports.attempts[port] = world.config.attempts_per_port  # as if it had used up its attempts before
    world.ports.dead_ends.add(world.graph[port].successors[0])
    centre = world.tiles[follower_tile].center_xy
    # Stand behind the port so that the follower's tile is just beyond retention and the port's is not.
    ego = np.array([centre[0] - world.config.retention_m - 1.0, -1.75])
    world.retire(ego)
    assert port in world.graph and not world.graph[port].successors
    assert port not in world.ports.attempts and port not in world.dead_ends
    assert not (world.ports.dead_ends - set(world.graph.lanes))  # no bookkeeping for retired lanes


class _FirstTileOnly(StraightGenerator):
    """Lays the first tile, then continues nothing: every out port ends in the straight fallback."""

    name = "test-first-tile-only"

    def generate(self, request: TileRequest) -> TileContent:
        if any(p.is_out for p in request.ports):
            return TileContent((), (), AgentSpawns.none())
        return super().generate(request)


def test_a_port_nothing_continues_gets_a_straight_fallback_tile_flagged_as_such():
    world = StreamingWorld(_FirstTileOnly(), np.random.default_rng(0))
    first = world.start()
    made = []
    for x in np.arange(0.0, 120.0, 5.0):
        made += world.ensure_coverage(np.array([x, -1.75]), 0.0, None, np.zeros((0, 2)))
    straight = [g.tile for g in made if g.tile.fallback]
    assert straight and all(t.generator == "straight-fallback" and t.latency_ms == 0.0 for t in straight)
    assert not first.tile.fallback and world.fallback_tiles == len(straight)
