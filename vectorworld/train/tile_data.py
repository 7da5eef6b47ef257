"""Training tiles of the learned generator from whatever holds them on disk (``train vae|dit --data``).

Accepted sources, in the order they are recognised:

* a ``vectorworld dataset build`` folder (``manifest.json`` + ``shard_*.npz``, see
  :mod:`vectorworld.data.dataset`): every shard tile is converted to partitioned :class:`TileTensors`
  (:func:`shard_to_tiles`);
* a folder holding ``corpus.npz`` (the ``--data-dir`` of ``tools/train_generator.py``);
* a tile corpus ``.npz`` written by :func:`vectorworld.train.tile_corpus.save_corpus`, or a single dataset
  shard ``.npz``.

Anything else (a missing path, an empty folder, a dataset with no usable tile) raises
:class:`~vectorworld.errors.DataFormatError` naming the path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vectorworld.errors import DataFormatError
from vectorworld.generation.learned.tile_context import clip_to_square
from vectorworld.generation.learned.tile_tensors import (
    EDGE_LEFT,
    EDGE_RIGHT,
    EDGE_SUCC,
    HALF_TILE_M,
    NUM_AGENT_TYPES,
    TileTensors,
    partition_tile,
    stack_tiles,
)

Tiles = dict[str, np.ndarray]
CORPUS_FILE = "corpus.npz"


def shard_tile(shard: dict[str, np.ndarray], index: int, max_lanes: int, max_agents: int) -> TileTensors | None:
    """Tile ``index`` of a dataset shard (:data:`vectorworld.data.dataset.SHARD_SCHEMA`) as partitioned
    tensors of capacity (``max_lanes``, ``max_agents``); None if it lacks a known or a frontier lane.

    The shard tile frame (origin at the anchor agent, x along its heading) becomes the outpainting frame:
    x < 0 is the condition, x >= 0 is generated. Lanes are clipped to the 64 m square, agents outside it
    or in the known half are dropped (as :func:`vectorworld.train.tile_corpus.crop_tile` does).
    """
    valid = np.flatnonzero(shard["lane_valid"][index])
    runs, kept = [], []
    for i in valid:
        run = clip_to_square(shard["lane_points"][index, i].astype(np.float64))
        if run is not None:
            runs.append(run)
            kept.append(int(i))
    slot = {old: new for new, old in enumerate(kept)}
    edges = shard["edges"][index]
    lists = [[[slot[int(j)] for j in np.flatnonzero(edges[i] == kind) if int(j) in slot] for i in kept]
             for kind in (EDGE_SUCC, EDGE_LEFT, EDGE_RIGHT)]
    agents = np.flatnonzero(shard["agent_valid"][index])
    state = shard["agent_state"][index, agents].astype(np.float64)
    keep = (state[:, 0] >= 0.0) & np.all(np.abs(state[:, :2]) <= HALF_TILE_M, axis=1)
    agents, state = agents[keep], state[keep]
    types = np.clip(shard["agent_type"][index, agents].astype(np.int64) - 1, 0, NUM_AGENT_TYPES - 1)
    motion = shard["agent_motion"][index, agents].astype(np.float64)
    tile = partition_tile(runs, lists[0], lists[1], lists[2], state, types.astype(np.int8), motion,
                          max_lanes, max_agents)
    if not (tile.lane_cond.any() and (tile.lane_valid & ~tile.lane_cond).any()):
        return None
    return tile


def shard_to_tiles(shard: dict[str, np.ndarray], max_lanes: int, max_agents: int) -> list[TileTensors]:
    """Every usable tile of one dataset shard (see :func:`shard_tile`)."""
    tiles = (shard_tile(shard, i, max_lanes, max_agents) for i in range(len(shard["lane_valid"])))
    return [t for t in tiles if t is not None]


def _dataset_tiles(folder: Path, max_lanes: int, max_agents: int) -> list[TileTensors]:
    from vectorworld.data.dataset import iter_shard_tiles

    tiles: list[TileTensors] = []
    for shard in iter_shard_tiles(folder):
        tiles.extend(shard_to_tiles(shard, max_lanes, max_agents))
    return tiles


def _npz_tiles(path: Path, max_lanes: int, max_agents: int) -> Tiles:
    """A corpus file, or a single dataset shard (recognised by its ``schema_version`` key)."""
    from vectorworld.data.dataset import load_shard
    from vectorworld.train.tile_corpus import load_corpus

    try:
        with np.load(path, allow_pickle=False) as data:
            is_shard = "schema_version" in data.files
    except (OSError, ValueError) as err:
        raise DataFormatError(f"{path}: not a readable tile corpus or dataset shard: {err}") from err
    if not is_shard:
        return load_corpus(path)
    tiles = shard_to_tiles(load_shard(path), max_lanes, max_agents)
    if not tiles:
        raise DataFormatError(f"{path}: the dataset shard holds no tile with both known and new lanes")
    return stack_tiles(tiles).as_dict()


def concat_tiles(sources: list[Tiles]) -> Tiles:
    """Stacked tiles of several sources (same capacity) as one set, in order."""
    return {k: np.concatenate([tiles[k] for tiles in sources]) for k in sources[0]}


def load_training_tiles(path: str | Path, max_lanes: int = 40, max_agents: int = 24) -> Tiles:
    """Stacked training tiles (dict of :class:`TileTensors` fields, leading dimension N) from ``path``: a
    dataset folder, a folder with ``corpus.npz``, a corpus ``.npz`` or a dataset shard (module docstring).

    Dataset shards are converted at capacity (``max_lanes``, ``max_agents``); a corpus file must already
    have that capacity. Raises DataFormatError naming ``path`` when it holds no usable tile.
    """
    from vectorworld.data.dataset import MANIFEST

    path = Path(path)
    if path.is_dir():
        if (path / MANIFEST).is_file():
            crops = _dataset_tiles(path, max_lanes, max_agents)
            if not crops:
                raise DataFormatError(f"{path}: the dataset holds no tile with both known and new lanes "
                                      "(nothing to train on)")
            tiles = stack_tiles(crops).as_dict()
        elif (path / CORPUS_FILE).is_file():
            tiles = _npz_tiles(path / CORPUS_FILE, max_lanes, max_agents)
        else:
            raise DataFormatError(f"{path}: no training tiles here (expected a `vectorworld dataset build` "
                                  f"folder with {MANIFEST}, a folder with {CORPUS_FILE}, or a corpus .npz)")
    elif path.is_file():
        tiles = _npz_tiles(path, max_lanes, max_agents)
    else:
        raise DataFormatError(f"{path}: no such file or folder (expected tiles: a corpus .npz, a folder with "
                              f"{CORPUS_FILE} or a `vectorworld dataset build` folder)")
    if len(tiles["lane_valid"]) == 0:
        raise DataFormatError(f"{path}: holds no training tiles")
    capacity = tiles["lane_valid"].shape[1], tiles["agent_valid"].shape[1]
    if capacity != (max_lanes, max_agents):
        raise DataFormatError(f"{path}: tiles hold {capacity[0]} lanes / {capacity[1]} agents, the model needs "
                              f"{max_lanes} / {max_agents}")
    return tiles
