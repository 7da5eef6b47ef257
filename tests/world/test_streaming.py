"""The streaming world: coverage ahead of the ego, continuity at links, retirement, drivable raster."""

import numpy as np

import tests.straight_world  # noqa: F401 - registers "test-straight"
from vectorworld.generation import make_generator
from vectorworld.scene import Lane
from vectorworld.world import StreamingWorld, WorldConfig
from vectorworld.world.drivable import DrivableGrid


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
