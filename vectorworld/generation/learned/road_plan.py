"""The road-plan prior: where new roads enter or leave the front half of a tile at its sides.

A DiT trained with ``DiTConfig.border_hints`` is told the plan (tile_tensors.border_hints) as hints on free
lane slots. The known half does not fix the plan (a crossing road may or may not come next), so at inference
it is drawn: from the plans of the training tiles whose known half ends in the most similar ports (a
nearest-neighbour prior over the corpus, stored beside the weights as ``road_plans.npz``). Plans carry over
between tiles because they only name side-border poses (|y| = 32 m), which fit any road along x.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vectorworld.errors import CheckpointError
from vectorworld.generation.learned.filter_config import FrontierPort
from vectorworld.generation.learned.tile_context import TileContext, context_from_tile, tile_plan
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, HINT_FEATURES, TileTensors

PLAN_FILE = "road_plans.npz"
NEIGHBOURS = 16
"""A plan is drawn uniformly from this many nearest training tiles."""
COUNT_PENALTY = 4.0
"""Key distance of one port more or less (a port's mean-y difference of 32 m counts 1)."""


def crosses(lane: np.ndarray) -> bool:
    """Whether a lane (N, 2) (tile frame, m) runs across the tile's axis: a road that the known half does
    not continue (its chord is more than twice as long across as along, plus 5 m)."""
    dx, dy = np.abs(lane[-1] - lane[0])
    return bool(dy > 2.0 * dx + 5.0)


def context_key(ctx: TileContext) -> np.ndarray:
    """:func:`plan_key` of an inference context."""
    return plan_key(ctx.ports, any(crosses(points) for points in ctx.known_points))


def plan_key(ports: tuple[FrontierPort, ...] | list[FrontierPort], crossing_known: bool) -> np.ndarray:
    """(4,) key of a context: its required out / in ports, their mean y / 32 m, and whether its known half
    holds a road across the tile (then a junction was just passed)."""
    required = [p for p in ports if p.required]
    n_out = sum(p.is_out for p in required)
    mean_y = float(np.mean([p.xy[1] for p in required])) / HALF_TILE_M if required else 0.0
    return np.array([n_out, len(required) - n_out, mean_y, float(crossing_known)], np.float32)


def key_distance(keys: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Distances (N,) of ``keys`` (N, 4) to ``key`` (4,)."""
    counts = np.abs(keys[:, :2] - key[:2]).sum(-1)
    return COUNT_PENALTY * (counts + np.abs(keys[:, 3] - key[3])) + np.abs(keys[:, 2] - key[2])


@dataclass(frozen=True)
class RoadPlans:
    """The plans of the training tiles: keys (N, 4) (:func:`plan_key`), rows (N, R, 6) hint rows padded with
    zeros, counts (N,) rows used."""

    keys: np.ndarray
    rows: np.ndarray
    counts: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.keys)
        if self.keys.shape != (n, 4) or self.rows.shape[::2] != (n, HINT_FEATURES) or self.counts.shape != (n,):
            raise ValueError(f"RoadPlans: keys {self.keys.shape}, rows {self.rows.shape} and counts "
                             f"{self.counts.shape} do not describe the same {n} plans")

    @classmethod
    def from_tiles(cls, tiles: list[TileTensors]) -> RoadPlans:
        """The plans of partitioned training tiles, keyed by their inference contexts."""
        return cls.from_entries([(context_key(context_from_tile(tile)), tile_plan(tile)) for tile in tiles])

    @classmethod
    def from_entries(cls, entries: list[tuple[np.ndarray, np.ndarray]]) -> RoadPlans:
        """Stack (key (4,), plan rows (k, 6)) entries."""
        width = max([len(rows) for _, rows in entries] + [1])
        rows = np.zeros((len(entries), width, HINT_FEATURES), np.float32)
        for i, (_, plan) in enumerate(entries):
            rows[i, :len(plan)] = plan
        keys = np.stack([key for key, _ in entries]).astype(np.float32) if entries else np.zeros((0, 4), np.float32)
        return cls(keys, rows, np.array([len(plan) for _, plan in entries], np.int16))

    def draw(self, key: np.ndarray, rng: np.random.Generator, odds: float = 1.0) -> np.ndarray:
        """Plan rows (k, 6) of a training tile drawn among the :data:`NEIGHBOURS` nearest to ``key``, a tile
        whose plan has rows (a road entering at a side) ``odds`` times as likely as one without (1: uniform)."""
        if len(self.keys) == 0:
            return np.zeros((0, HINT_FEATURES), np.float32)
        dist = key_distance(self.keys, key)
        near = np.argsort(dist, kind="stable")[:NEIGHBOURS]
        weight = np.cumsum(np.where(self.counts[near] > 0, odds, 1.0))
        pick = int(near[min(int(np.searchsorted(weight, rng.random() * weight[-1], side="right")), len(near) - 1)])
        return self.rows[pick, :int(self.counts[pick])].copy()

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / PLAN_FILE
        np.savez_compressed(path, keys=self.keys, rows=self.rows, counts=self.counts)
        return path

    @classmethod
    def load(cls, folder: str | Path) -> RoadPlans:
        """The plans saved in a checkpoint folder; CheckpointError when missing or malformed."""
        path = Path(folder) / PLAN_FILE
        try:
            with np.load(path) as data:
                return cls(data["keys"], data["rows"], data["counts"])
        except (OSError, KeyError, ValueError) as err:
            raise CheckpointError(f"road plans {path} are missing or unreadable ({err}); a checkpoint trained "
                                  f"with border hints needs them (written by tools/train_generator.py)") from err
