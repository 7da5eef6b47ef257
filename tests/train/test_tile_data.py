"""Training tiles from disk: dataset folders (converted shards), corpus folders and files, clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tests.straight_world  # noqa: F401  (registers "test-straight")
from tests.train.log_dataset import build_log_dataset
from vectorworld.data.dataset import iter_shard_tiles
from vectorworld.errors import DataFormatError
from vectorworld.generation.learned.tile_tensors import EDGE_SUCC
from vectorworld.train.tile_corpus import CorpusConfig, build_corpus, save_corpus
from vectorworld.train.tile_data import load_training_tiles, shard_tile


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_log_dataset(tmp_path_factory.mktemp("log"))


def test_dataset_folder_becomes_partitioned_tiles(dataset: Path) -> None:
    tiles = load_training_tiles(dataset, max_lanes=12, max_agents=8)
    shard = next(iter_shard_tiles(dataset))
    assert len(tiles["lane_valid"]) == len(shard["tile_step"]) == 8
    assert tiles["lane_points"].shape == (8, 12, 20, 2) and tiles["agent_state"].shape == (8, 8, 7)
    known, new = tiles["lane_valid"] & tiles["lane_cond"], tiles["lane_valid"] & ~tiles["lane_cond"]
    assert known.any(1).all() and new.any(1).all()
    # lanes crossing x = 0 are split there: the known half is followed by a new half starting at its end
    split = 0
    for n in range(8):
        for i in np.flatnonzero(known[n] & (np.abs(tiles["lane_points"][:, :, -1, 0]) < 1e-4)[n]):
            j = np.flatnonzero((tiles["edges"][n, i] == EDGE_SUCC) & new[n])
            assert len(j) == 1
            np.testing.assert_allclose(tiles["lane_points"][n, i, -1], tiles["lane_points"][n, j[0], 0], atol=1e-4)
            split += 1
    assert split >= 8
    assert np.all(tiles["agent_state"][tiles["agent_valid"]][:, 0] >= 0.0)     # known-half agents dropped
    assert tiles["agent_type"][tiles["agent_valid"]].max() < 4                  # AgentType - 1


def test_single_shard_and_corpus_folder(dataset: Path, tmp_path: Path) -> None:
    shard = load_training_tiles(dataset / "shard_00000.npz", 40, 24)
    assert len(shard["lane_valid"]) == 8 and shard["lane_valid"].shape[1] == 40
    corpus = build_corpus(CorpusConfig(worlds=1, tiles_per_world=3, generator="test-straight"))
    save_corpus(tmp_path / "data" / "corpus.npz", corpus)
    back = load_training_tiles(tmp_path / "data")
    np.testing.assert_array_equal(back["lane_points"], corpus["lane_points"])


def test_errors_name_the_path(dataset: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "empty", tmp_path / "missing"):
        with pytest.raises(DataFormatError, match=str(path)):
            load_training_tiles(path)
    with pytest.raises(DataFormatError, match="no such file or folder"):  # held-out tiles too: not "training"
        load_training_tiles(tmp_path / "missing")
    corpus = save_corpus(tmp_path / "c.npz", build_corpus(CorpusConfig(worlds=1, tiles_per_world=3,
                                                                       generator="test-straight")))
    with pytest.raises(DataFormatError, match="needs 12 / 8"):    # a corpus of another capacity
        load_training_tiles(corpus, 12, 8)
    (tmp_path / "junk.npz").write_bytes(b"junk")
    with pytest.raises(DataFormatError, match="junk.npz"):
        load_training_tiles(tmp_path / "junk.npz")


def test_shard_tile_without_new_lanes_is_skipped(dataset: Path) -> None:
    shard = dict(next(iter_shard_tiles(dataset)))
    shard["lane_points"] = shard["lane_points"].copy()
    shard["lane_points"][..., 0] = -np.abs(shard["lane_points"][..., 0]) - 1.0    # every lane behind the anchor
    assert shard_tile(shard, 0, 40, 24) is None


def test_several_sources_train_as_one_set_in_order(dataset: Path) -> None:
    from vectorworld.train.tile_data import concat_tiles

    a = load_training_tiles(dataset)
    b = {k: v[:2] for k, v in a.items()}
    both = concat_tiles([a, b])
    n = len(a["lane_valid"])
    assert set(both) == set(a) and len(both["lane_valid"]) == n + 2
    for key in a:
        np.testing.assert_array_equal(both[key][:n], a[key])
        np.testing.assert_array_equal(both[key][n:], b[key])
