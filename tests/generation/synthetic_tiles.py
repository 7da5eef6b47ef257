"""Small synthetic tiles for the learned-generator tests: 1-3 parallel lanes crossing the tile, agents on them."""

from __future__ import annotations

import numpy as np

from vectorworld.generation.learned.tile_tensors import TileTensors, partition_tile, stack_tiles


def synthetic_tile(rng: np.random.Generator, max_lanes: int = 40, max_agents: int = 24) -> TileTensors:
    """A tile with parallel gently curved lanes along +x from border to border, split at x = 0."""
    k = int(rng.integers(1, 4))
    bend = float(rng.uniform(-0.004, 0.004))
    offset = float(rng.uniform(-6.0, 6.0))
    x = np.linspace(-32.0, 32.0, 30)
    points = [np.stack([x, offset + 3.5 * i + bend * x**2], -1) for i in range(k)]
    left = [[i + 1] if i + 1 < k else [] for i in range(k)]
    right = [[i - 1] if i > 0 else [] for i in range(k)]
    succ: list[list[int]] = [[] for _ in range(k)]
    m = int(rng.integers(1, 6))
    lane = rng.integers(0, k, m)
    ax = np.sort(rng.uniform(-28.0, 28.0, m)) + np.arange(m) * 0.0
    ay = offset + 3.5 * lane + bend * ax**2
    yaw = np.arctan2(2 * bend * ax, 1.0)
    speed = rng.uniform(0.0, 12.0, m)
    state = np.stack([ax, ay, speed, np.cos(yaw), np.sin(yaw), np.full(m, 4.6), np.full(m, 2.0)], -1)
    motion = np.zeros((m, 6, 2))
    motion[:, :, 0] = -speed[:, None] * np.linspace(1.0, 0.0, 6)[None]
    return partition_tile(points, succ, left, right, state, np.zeros(m, np.int8), motion, max_lanes,
                          max_agents)


def synthetic_tiles(count: int, seed: int = 0, max_lanes: int = 40, max_agents: int = 24) -> dict[str, np.ndarray]:
    """``count`` synthetic tiles stacked into a dict of arrays (leading tile dimension)."""
    rng = np.random.default_rng(seed)
    return stack_tiles([synthetic_tile(rng, max_lanes, max_agents) for _ in range(count)]).as_dict()
