"""Tile corpus: worlds grown tile by tile are cropped at each tile frame into partitioned tensors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tests.straight_world  # noqa: F401  (registers "test-straight")
from vectorworld.errors import DataFormatError
from vectorworld.generation.learned.tile_tensors import EDGE_SUCC
from vectorworld.train.tile_corpus import CorpusConfig, build_corpus, crop_tile, grow_world, load_corpus, save_corpus


def test_crop_of_a_straight_world_splits_at_the_partition() -> None:
    graph, frames, agents = grow_world("test-straight", 4, np.random.default_rng(0))
    assert len(frames) == 3
    tile = crop_tile(graph, frames[1], agents, max_lanes=12, max_agents=8)
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
