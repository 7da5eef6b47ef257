"""A small ``vectorworld dataset build`` folder cut from the synthetic nuPlan fixture log (tests/data)."""

from __future__ import annotations

from pathlib import Path


def build_log_dataset(root: Path) -> Path:
    """Write the fixture log + maps under ``root`` and cut them into a dataset folder (2 scenes, 8 tiles
    every 20 steps, one shard); returns the dataset folder."""
    from tests.data.nuplan_fixture import build_log_db, build_maps_root
    from vectorworld.data.dataset import DatasetConfig, build_dataset
    from vectorworld.data.nuplan import read_nuplan
    from vectorworld.data.tiles import TileConfig

    build_log_db(root / "log.db")
    build_maps_root(root / "maps")
    scenes = [read_nuplan(root / "log.db", i, maps_root=root / "maps") for i in (0, 1)]
    build_dataset(scenes, root / "dataset", DatasetConfig(tiles=TileConfig(step_stride=20)), source="fixture")
    return root / "dataset"
