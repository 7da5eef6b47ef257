"""Tile dataset builder: shards without pickle, manifest, resumption, atomicity, config guard."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vectorworld.data.dataset import (
    MANIFEST,
    SCHEMA_VERSION,
    SHARD_SCHEMA,
    DatasetConfig,
    build_dataset,
    iter_shard_tiles,
    load_shard,
    read_manifest,
)
from vectorworld.data.nuplan import read_nuplan
from vectorworld.data.tiles import TileConfig
from vectorworld.errors import ConfigError, DataFormatError


@pytest.fixture(scope="module")
def scenarios(nuplan_files):
    db, maps, _ = nuplan_files
    return [read_nuplan(db, i, maps_root=maps) for i in (0, 1)]


def test_build_and_load(scenarios, tmp_path: Path) -> None:
    config = DatasetConfig(tiles=TileConfig(step_stride=20), scenarios_per_shard=1)
    events = []
    result = build_dataset(scenarios * 2, tmp_path / "ds", config, source="fixture", progress=events.append)
    assert result.num_scenarios == 4 and result.num_shards == 4 and result.shards_skipped == 0
    manifest = read_manifest(tmp_path / "ds")
    assert manifest["complete"] and manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["num_tiles"] == result.num_tiles == sum(s["num_tiles"] for s in manifest["shards"])
    assert manifest["source"] == "fixture" and manifest["config"]["tiles"]["step_stride"] == 20
    assert set(manifest["schema"]) == set(SHARD_SCHEMA)
    assert events[-1].scenarios_done == 4 and events[-1].tiles_done == result.num_tiles
    total = 0
    for shard in iter_shard_tiles(tmp_path / "ds"):
        assert set(shard) == set(SHARD_SCHEMA)
        n = len(shard["tile_step"])
        total += n
        lanes, agents = shard["lane_valid"].shape[1], shard["agent_valid"].shape[1]
        assert shard["lane_points"].shape == (n, lanes, 20, 2) and shard["lane_points"].dtype == np.float32
        assert shard["edges"].shape == (n, lanes, lanes) and shard["agent_traj"].shape == (n, agents, 91, 4)
        assert shard["tile_step"].tolist() == [10, 10, 30, 30]  # ego + vehicle tile at steps 10 and 30
        assert (shard["lane_ids"][~shard["lane_valid"]] == -1).all()
        assert (shard["agent_is_anchor"].sum(axis=1) == 1).all()
        assert shard["scenario_ids"].dtype.kind == "U"
    assert total == result.num_tiles
    assert not list((tmp_path / "ds").glob(".*tmp*"))
    for path in (tmp_path / "ds").glob("*.npz"):
        np.load(path, allow_pickle=False)["agent_state"]  # loads without pickle


def test_resume_skips_written_shards(scenarios, tmp_path: Path) -> None:
    config = DatasetConfig(scenarios_per_shard=1)
    first = build_dataset(scenarios, tmp_path / "ds", config)
    calls = []

    def loader(s):
        def load():
            calls.append(s.scenario_id)
            return s
        return load

    (tmp_path / "ds" / "shard_00001.npz").unlink()  # as if the first run had died after shard 0
    before = (tmp_path / "ds" / "shard_00000.npz").stat().st_mtime_ns
    again = build_dataset([loader(s) for s in scenarios], tmp_path / "ds", config)
    assert calls == [scenarios[1].scenario_id]  # shard 0 was skipped without loading its scenario
    assert again.shards_skipped == 1 and again.num_tiles == first.num_tiles
    assert (tmp_path / "ds" / "shard_00000.npz").stat().st_mtime_ns == before
    (tmp_path / "ds" / MANIFEST).unlink()  # counts then come from the shards themselves
    third = build_dataset([loader(s) for s in scenarios], tmp_path / "ds", config)
    assert third.shards_skipped == 2 and third.num_tiles == first.num_tiles and len(calls) == 1


def test_config_mismatch_refused(scenarios, tmp_path: Path) -> None:
    build_dataset(scenarios[:1], tmp_path / "ds", DatasetConfig())
    with pytest.raises(ConfigError, match="another config"):
        build_dataset(scenarios[:1], tmp_path / "ds", DatasetConfig(tiles=TileConfig(agent_centric=False)))
    with pytest.raises(ConfigError, match="scenarios_per_shard"):
        build_dataset(scenarios, tmp_path / "x", DatasetConfig(scenarios_per_shard=0))


def test_limit_and_empty(scenarios, tmp_path: Path) -> None:
    result = build_dataset(iter(scenarios), tmp_path / "ds", DatasetConfig(), limit=1)
    assert result.num_scenarios == 1
    empty = build_dataset([], tmp_path / "empty", DatasetConfig())
    assert empty.num_tiles == 0 and json.loads((tmp_path / "empty" / MANIFEST).read_text())["complete"]


def test_bad_shard(tmp_path: Path) -> None:
    path = tmp_path / "shard_00000.npz"
    path.write_bytes(b"not a zip")
    with pytest.raises(DataFormatError, match="not a readable dataset shard"):
        load_shard(path)
    np.savez(path, schema_version=np.array(99))
    with pytest.raises(DataFormatError, match="schema version 99"):
        load_shard(path)
    with pytest.raises(DataFormatError, match="manifest"):
        read_manifest(tmp_path)


def test_real_sample_dataset(womd_scenario, tmp_path: Path) -> None:
    result = build_dataset([womd_scenario], tmp_path / "ds", DatasetConfig())
    assert result.num_tiles == 45
    shard = load_shard(tmp_path / "ds" / "shard_00000.npz")
    assert shard["tile_kind"].tolist() == [0] + [1] * 44
    assert shard["scenario_ids"].tolist() == ["637f20cafde22ff8"]
