"""Tile corpus: worlds grown tile by tile are cropped at each tile frame into partitioned tensors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tests.straight_world  # noqa: F401  (registers "test-straight")
from vectorworld.errors import ConfigError, DataFormatError
from vectorworld.generation.learned.tile_tensors import EDGE_SUCC
from vectorworld.train.tile_corpus import CorpusConfig, build_corpus, crop_tile, grow_world, load_corpus, save_corpus


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
    """Every tile of a straight world continues the two lanes of the tile before: those are the condition
    and its own two lanes the target."""
    graph, grown, agents = grow_world("test-straight", 4, np.random.default_rng(0))
    made = grown[1]
    assert made.known.isdisjoint(made.new) and len(made.new) == 2 and made.new <= set(graph.lanes)
    tile = crop_tile(graph, made.frame, agents, max_lanes=12, max_agents=8, made=made)
    target = tile.lane_points[tile.lane_valid & ~tile.lane_cond]
    assert len(target) == 2 and np.all(target[..., 0] >= -1e-6)       # its own lanes start at its port
    assert tile.lane_cond.sum() == 2 and np.all(tile.lane_points[tile.lane_cond][..., 0] <= 1e-6)
    news = [geometry_end(graph[i].points, made.frame) for i in made.new]
    assert sorted(np.round(target[:, -1, 1], 3).tolist()) == sorted(np.round([p[1] for p in news], 3).tolist())
    with pytest.raises(ConfigError, match="context"):
        build_corpus(CorpusConfig(worlds=1, tiles_per_world=3, generator="test-straight", context="thirds"))


def geometry_end(points: np.ndarray, frame) -> np.ndarray:  # noqa: ANN001
    """The last point of a lane (global) inside the tile square, tile frame."""
    local = frame.to_local(points)
    inside = local[np.all(np.abs(local) <= 32.0 + 1e-6, axis=1)]
    return inside[-1]
