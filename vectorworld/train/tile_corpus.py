"""Tile corpus for the learned generator: procedural worlds grown tile by tile, cropped at every tile frame.

A world is grown with :class:`~vectorworld.world.streaming.StreamingWorld` and a registered generator
(``procedural`` by default), in one of two ways (:attr:`CorpusConfig.growth`): from the first tile,
repeatedly pick a random open out port and let the world outpaint a tile there (``ends``), or let a virtual
ego drive and the world cover the road ahead of it as in an episode (``drive``,
:class:`~vectorworld.world.virtual_drive.VirtualDrive`). Every tile but the first is then cropped from the
final lane graph at its frame into :class:`TileTensors`, in one of two settings (:attr:`CorpusConfig.context`):

* ``request`` (default): what the generator was asked and answered -- the lanes known when the tile was
  made are the condition, wherever they lie (a neighbour's road may already cross the front half, as it does
  at inference in a streaming world), and the tile's own new lanes are the target; lanes of later tiles
  are left out;
* ``halves``: the paper's outpainting split of the final world, back half known, front half target.

Agents in the back half are dropped, because at inference the generator only knows other agents' positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import AgentSpawns, TileFrame, TileGenerator
from vectorworld.generation.learned.tile_context import clip_to_square
from vectorworld.generation.learned.tile_tensors import (
    HALF_TILE_M,
    MOTION_POINTS,
    NUM_AGENT_TYPES,
    TileTensors,
    partition_tile,
    stack_tiles,
)
from vectorworld.scene import LaneGraph

Tiles = dict[str, np.ndarray]


@dataclass(frozen=True)
class CorpusConfig:
    """How many worlds and tiles to grow, and the token capacity of the crops."""

    worlds: int = 20
    tiles_per_world: int = 12
    seed: int = 0
    generator: str = "procedural"
    max_lanes: int = 40
    max_agents: int = 24
    context: str = "request"
    """``request`` | ``halves``: which lanes are the condition (see the module docstring)."""
    growth: str = "ends"
    """``ends`` | ``drive``: how worlds grow (:mod:`vectorworld.world.growth`)."""
    teacher: str = ""
    """A registered generator that answers every request of ``generator``'s worlds; its answers are then the
    targets (:mod:`vectorworld.train.taught_corpus`). '' = the generator's own tiles are."""


@dataclass(frozen=True)
class GrownTile:
    """A tile of a grown world: its frame, the lane ids known when it was made and the ids it added."""

    frame: TileFrame
    known: frozenset[int]
    new: frozenset[int]


def crop_tile(graph: LaneGraph, frame: TileFrame, agents: AgentSpawns, max_lanes: int, max_agents: int,
              keep_known_agents: bool = False, made: GrownTile | None = None) -> TileTensors:
    """Crop the lane graph and agents (global frame) at a tile frame into padded, partitioned tensors: the
    back half known, or with ``made`` the lanes known when that tile was made (its own new lanes the rest)."""
    ids, runs = [], []
    for lane_id in graph.near(np.asarray(frame.center_xy, np.float64), HALF_TILE_M * np.sqrt(2.0) + 8.0):
        if made is not None and lane_id not in made.known and lane_id not in made.new:
            continue
        run = clip_to_square(frame.to_local(graph[lane_id].points))
        if run is not None:
            ids.append(lane_id)
            runs.append(run)
    slot = {lane_id: i for i, lane_id in enumerate(ids)}
    succ = [[slot[j] for j in graph[i].successors if j in slot] for i in ids]
    left = [[slot[j] for j in graph[i].left_neighbors if j in slot] for i in ids]
    right = [[slot[j] for j in graph[i].right_neighbors if j in slot] for i in ids]
    inside = frame.contains(agents.xy) if len(agents) else np.zeros(0, bool)
    sel = agents.select(inside)
    local = frame.to_local(sel.xy)
    yaw = geometry.wrap_angle(sel.yaw - frame.yaw)
    state = np.stack([local[:, 0], local[:, 1], sel.speed, np.cos(yaw), np.sin(yaw), sel.length, sel.width],
                     -1) if len(sel) else np.zeros((0, 7))
    types = np.clip(sel.agent_type.astype(np.int64) - 1, 0, NUM_AGENT_TYPES - 1)
    motion = np.asarray(sel.motion_code, np.float64).reshape(-1, MOTION_POINTS, 2)
    if not keep_known_agents and len(state):
        front = state[:, 0] >= 0.0
        state, types, motion = state[front], types[front], motion[front]
    known = None if made is None else np.array([i in made.known for i in ids], bool)
    return partition_tile(runs, succ, left, right, state, types, motion, max_lanes, max_agents, known)


def grow_world(generator: str | TileGenerator, tiles: int, rng: np.random.Generator, growth: str = "ends"
               ) -> tuple[LaneGraph, list[GrownTile], AgentSpawns]:
    """Grow one world of about ``tiles`` tiles with a generator (or a registered generator's name), at random
    open out ports, or ahead of a virtual ego with ``growth="drive"``; returns its lane graph, every tile
    after the first (frame, lanes known before it, its new lanes; straight fallback lanes are no tiles) and
    all spawned agents (global frame)."""
    from vectorworld.generation import make_generator
    from vectorworld.world.growth import CALLS_PER_TILE, grower
    from vectorworld.world.streaming import StreamingWorld, WorldConfig

    world = StreamingWorld(make_generator(generator) if isinstance(generator, str) else generator, rng,
                           WorldConfig(max_tiles_per_update=1, retention_m=1e9))
    first = world.start(np.zeros(2), float(rng.uniform(-np.pi, np.pi)))
    grow = grower(world, first, rng, growth)
    grown: list[GrownTile] = []
    spawns = [first.content.agents]
    for _ in range(CALLS_PER_TILE[growth] * tiles):
        if len(grown) >= tiles - 1:
            break
        known = frozenset(world.graph.lanes)
        made = grow(None)
        if made is None:
            break
        for generated in made:  # one tile per call (max_tiles_per_update=1): known is what it was asked with
            frame = TileFrame(generated.tile.center_xy, generated.tile.yaw)
            grown.append(GrownTile(frame, known, frozenset(generated.tile.lane_ids)))
            spawns.append(generated.content.agents)
    return world.graph, grown, AgentSpawns.concat(spawns)


def build_corpus(config: CorpusConfig) -> Tiles:
    """Grow ``config.worlds`` worlds and crop every non-first tile; returns stacked tile arrays."""
    from vectorworld.errors import ConfigError
    from vectorworld.world.growth import check_growth

    if config.context not in ("request", "halves"):
        raise ConfigError(f"context must be 'request' or 'halves', got {config.context!r}", field="context")
    check_growth(config.growth)
    if config.teacher and config.context != "request":
        raise ConfigError("a teacher's answers are cropped as requested: context must be 'request'",
                          field="context")
    if config.teacher:
        from vectorworld.train.taught_corpus import taught_crops

        return stack_tiles(taught_crops(config)).as_dict()
    rng = np.random.default_rng(config.seed)
    crops: list[TileTensors] = []
    for _ in range(config.worlds):
        graph, grown, agents = grow_world(config.generator, config.tiles_per_world, rng, config.growth)
        for made in grown:
            tile = crop_tile(graph, made.frame, agents, config.max_lanes, config.max_agents,
                             made=made if config.context == "request" else None)
            if tile.lane_cond.any() and (tile.lane_valid & ~tile.lane_cond).any():
                crops.append(tile)
    return stack_tiles(crops).as_dict()


def save_corpus(path: str | Path, tiles: Tiles) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **tiles)
    return path


def load_corpus(path: str | Path) -> Tiles:
    """Load a corpus written by :func:`save_corpus` (DataFormatError if unreadable)."""
    from vectorworld.errors import DataFormatError

    try:
        with np.load(path) as data:
            tiles = {k: data[k] for k in TileTensors.__dataclass_fields__}
    except (OSError, KeyError, ValueError) as err:
        raise DataFormatError(f"tile corpus {path} is missing or corrupt: {err}") from err
    return tiles
