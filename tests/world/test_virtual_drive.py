"""A virtual ego drives a streaming world's lanes and the world covers the road ahead of it; growth calls."""

import numpy as np
import pytest

from vectorworld.errors import ConfigError
from vectorworld.generation import make_generator
from vectorworld.generation.base import AgentSpawns, IdAllocator, TileContent, TileFrame, TileGenerator, TileRequest
from vectorworld.world import StreamingWorld, WorldConfig
from vectorworld.world.growth import grower
from vectorworld.world.streaming import GeneratedTile
from vectorworld.world.virtual_drive import VirtualDrive


def _drive(seed: int, steps: int) -> tuple[StreamingWorld, list[tuple[np.ndarray, float]], list[list]]:
    world = StreamingWorld(make_generator("procedural"), np.random.default_rng(seed),
                           WorldConfig(max_tiles_per_update=1, retention_m=1e9))
    first = world.start(np.array([100.0, -50.0]), 0.7)
    drive = VirtualDrive(world, first, np.random.default_rng(seed))
    poses, made = [drive.pose], []
    for _ in range(steps):
        tiles = drive.step()
        if tiles is None:
            break
        poses.append(drive.pose)
        made.append(tiles)
    return world, poses, made


def test_the_ego_drives_its_lanes_and_the_world_covers_the_road_ahead_of_it() -> None:
    world, poses, made = _drive(3, 60)
    assert len(poses) == 61                                     # a city road never ends in 480 m
    start_xy, start_yaw = poses[0]
    rel = np.array([100.0, -50.0]) - start_xy                   # on a road through the first tile's centre
    assert abs(start_yaw - 0.7) < 0.5 and abs(rel[1] * np.cos(start_yaw) - rel[0] * np.sin(start_yaw)) < 6.0
    for xy, _ in poses:                                         # always on a lane of the world
        assert world.graph.nearest(xy, None, 1.0)[0] >= 0
    steps = [float(np.linalg.norm(b[0] - a[0])) for a, b in zip(poses[:-1], poses[1:], strict=True)]
    assert np.median(steps) == pytest.approx(8.0, abs=0.05)     # 8 m of lane per step (less round a turn)
    assert max(steps) <= 8.0 + 1e-6
    travelled = np.linalg.norm(poses[-1][0] - poses[0][0])
    assert travelled > 200.0
    tiles = [(k, t) for k, step in enumerate(made) for t in step if not t.tile.fallback]
    assert len(tiles) >= 8
    for k, tile in tiles:                                       # made at a port ahead of the ego, within reach
        xy, yaw = poses[k + 1]
        rel = tile.tile.center_xy - xy
        assert np.linalg.norm(rel) <= 90.0 + 1e-6 and rel @ [np.cos(yaw), np.sin(yaw)] > 0.0


def test_a_drive_is_deterministic_per_seed() -> None:
    a, b, c = _drive(5, 25), _drive(5, 25), _drive(6, 25)
    assert [p[0].tolist() for p in a[1]] == [p[0].tolist() for p in b[1]]
    assert sorted(a[0].graph.lanes) == sorted(b[0].graph.lanes)
    assert [p[0].tolist() for p in a[1]] != [p[0].tolist() for p in c[1]]


class _Silent(TileGenerator):
    """Draws a straight first tile, then answers nothing: every port ends in a straight fallback lane."""

    name = "silent"

    def first_tile(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator) -> TileContent:
        return make_generator("procedural").first_tile(frame, lane_ids, rng)

    def generate(self, request: TileRequest) -> TileContent:
        return TileContent((), (), AgentSpawns.none())


def _started(generator: TileGenerator, seed: int) -> tuple[StreamingWorld, GeneratedTile, np.random.Generator]:
    rng = np.random.default_rng(seed)
    world = StreamingWorld(generator, rng, WorldConfig(max_tiles_per_update=1, retention_m=1e9))
    return world, world.start(np.zeros(2), 0.3), rng


def test_driven_growth_is_the_virtual_drive_without_its_straight_fallbacks() -> None:
    grow = grower(*_started(make_generator("procedural"), 2), "drive")
    drive = VirtualDrive(*_started(make_generator("procedural"), 2))
    ends = grower(*_started(make_generator("procedural"), 2), "ends")
    driven, stepped, at_ends = [], [], []
    for _ in range(30):
        driven += [t.tile.center_xy.tolist() for t in grow(None)]
        stepped += [t.tile.center_xy.tolist() for t in drive.step()]
        at_ends += [t.tile.center_xy.tolist() for t in ends(None)]
    assert len(driven) >= 5 and driven == stepped and driven[:5] != at_ends[:5]

    grow = grower(*_started(_Silent(), 0), "drive")
    drive = VirtualDrive(*_started(_Silent(), 0))
    straight = 0
    for _ in range(12):
        made, grown = drive.step() or [], grow(None) or []
        straight += sum(t.tile.fallback for t in made)
        assert [t.tile.id for t in grown] == [t.tile.id for t in made if not t.tile.fallback]
    assert straight >= 1                                        # the drive met straight lanes; growth left them out
    with pytest.raises(ConfigError, match="growth"):
        grower(*_started(_Silent(), 0), "spiral")
