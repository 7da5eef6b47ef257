"""Tile corpus: worlds grown tile by tile are cropped at each tile frame into partitioned tensors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tests.straight_world  # noqa: F401  (registers "test-straight")
from vectorworld.errors import ConfigError, DataFormatError
from vectorworld.generation.base import AgentSpawns, TileFrame
from vectorworld.generation.learned.tile_tensors import EDGE_SUCC
from vectorworld.scene import Lane, LaneGraph
from vectorworld.train.tile_corpus import (
    CorpusConfig,
    GrownTile,
    build_corpus,
    crop_tile,
    grow_world,
    load_corpus,
    save_corpus,
)


def test_crop_of_a_straight_world_splits_at_the_partition() -> None:
    graph, grown, agents = grow_world("test-straight", 4, np.random.default_rng(0))
    assert len(grown) == 3
    tile = crop_tile(graph, grown[1].frame, agents, max_lanes=12, max_agents=8)
    assert tile.lane_cond.sum() == 2 and (tile.lane_valid & ~tile.lane_cond).sum() == 2
    for i in np.flatnonzero(tile.lane_cond):
        j = int(np.flatnonzero(tile.edges[i] == EDGE_SUCC)[0])
        np.testing.assert_allclose(tile.lane_points[i, -1], tile.lane_points[j, 0], atol=1e-4)
        np.testing.assert_allclose(tile.lane_points[i, -1, 0], 0.0, atol=1e-4)
    assert np.all(np.abs(tile.lane_points[tile.lane_valid]) <= 32.0 + 1e-6)
    assert np.all(tile.agent_state[tile.agent_valid, 0] >= 0.0)     # known-half agents are dropped


def test_corpus_round_trip(tmp_path: Path) -> None:
    tiles = build_corpus(CorpusConfig(worlds=2, tiles_per_world=3, generator="test-straight", max_lanes=12,
                                      max_agents=8))
    assert tiles["lane_points"].shape[1:] == (12, 20, 2) and len(tiles["lane_valid"]) == 4
    path = save_corpus(tmp_path / "c.npz", tiles)
    back = load_corpus(path)
    for key, value in tiles.items():
        np.testing.assert_array_equal(back[key], value)
    path.write_bytes(b"junk")
    with pytest.raises(DataFormatError):
        load_corpus(path)


def test_a_request_crop_conditions_on_the_lanes_known_when_the_tile_was_made() -> None:
    """A neighbour's road (lane 1) already crossed the tile's front half when the tile (lane 2) was made; a
    later tile's lane (3) lies in the square too. As requested: lanes 0 and 1 are the condition, lane 2 the
    target, lane 3 left out. The halves split calls the neighbour's road a target and keeps lane 3."""
    graph = LaneGraph()
    frame = TileFrame(np.zeros(2), 0.0)
    for lane_id, a, b in ((0, (-40.0, 0.0), (0.0, 0.0)), (1, (15.0, -40.0), (15.0, 40.0)),
                          (2, (0.0, 0.0), (40.0, 0.0)), (3, (25.0, 40.0), (25.0, -40.0))):
        graph.add([Lane(lane_id, np.linspace(np.array(a), np.array(b), 9))])
    made = GrownTile(frame, frozenset({0, 1}), frozenset({2}))
    tile = crop_tile(graph, frame, AgentSpawns.none(), max_lanes=12, max_agents=8, made=made)
    cond = tile.lane_points[tile.lane_valid & tile.lane_cond]
    target = tile.lane_points[tile.lane_valid & ~tile.lane_cond]
    assert len(cond) == 2 and sorted(np.round(cond[:, 0, 0], 3).tolist()) == [-32.0, 15.0]
    assert len(target) == 1 and np.allclose(target[0, :, 1], 0.0) and target[0, 0, 0] == 0.0
    halves = crop_tile(graph, frame, AgentSpawns.none(), max_lanes=12, max_agents=8)
    assert (halves.lane_valid & halves.lane_cond).sum() == 1 and (halves.lane_valid & ~halves.lane_cond).sum() == 3
    with pytest.raises(ConfigError, match="context"):
        build_corpus(CorpusConfig(worlds=1, tiles_per_world=3, generator="test-straight", context="thirds"))


def test_a_driven_world_is_cropped_at_the_requests_an_episode_makes() -> None:
    """growth="drive": the world's tiles are those a virtual ego's drive asks for (the growth calls of
    vectorworld.world.growth, drawing from the same seed), each asked with every lane made before it known;
    every crop has known lanes and new ones; an unknown growth is refused by name."""
    from vectorworld.generation import make_generator
    from vectorworld.world import StreamingWorld, WorldConfig
    from vectorworld.world.growth import grower

    graph, grown, _ = grow_world("procedural", 8, np.random.default_rng(4), growth="drive")
    rng = np.random.default_rng(4)
    world = StreamingWorld(make_generator("procedural"), rng, WorldConfig(max_tiles_per_update=1, retention_m=1e9))
    grow = grower(world, world.start(np.zeros(2), float(rng.uniform(-np.pi, np.pi))), rng, "drive")
    frames = []
    while len(frames) < 7:
        frames += [t.tile.center_xy.tolist() for t in grow(None)]
    assert [made.frame.center_xy.tolist() for made in grown] == frames
    assert all(a.known | a.new <= b.known for a, b in zip(grown[:-1], grown[1:], strict=True))
    tiles = build_corpus(CorpusConfig(worlds=1, tiles_per_world=8, seed=4, growth="drive"))
    assert len(tiles["lane_valid"]) >= 5
    assert (tiles["lane_cond"].any(1) & (tiles["lane_valid"] & ~tiles["lane_cond"]).any(1)).all()
    with pytest.raises(ConfigError, match="growth"):
        build_corpus(CorpusConfig(growth="random"))
