"""ΔSim's start-up shaping: a standing agent with a free way ahead is pushed to set off, never when a
neighbour or its junction stop token stands in its corridor."""

from __future__ import annotations

import numpy as np

from policies.deltasim.observation import NEIGHBOR_FEATURES
from policies.deltasim.start_shaping import StartShapingConfig, free_to_start, start_penalty

CFG = StartShapingConfig()


def _scene(neighbour: list[float] | None, speed: float = 0.0, turn: float = 0.0
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One agent (4.5 x 2 m) at the origin; its route straight ahead (or bending by ``turn`` m per 10 m)."""
    nb = np.zeros((1, 2, NEIGHBOR_FEATURES), np.float32)
    mask = np.zeros((1, 2), bool)
    if neighbour is not None:
        nb[0, 0, :8] = neighbour
        mask[0, 0] = True
    d = np.array([0.0, 3.0, 6.0, 10.0, 15.0])
    route = np.stack([d, turn * (d / 10.0) ** 2, np.ones_like(d), np.full_like(d, 13.0)], -1)[None]
    static = np.array([[4.5, 2.0, 1.0, 0.0, 0.0]], np.float32)
    return nb, mask, route.astype(np.float32), static, np.array([speed])


def test_an_empty_way_ahead_is_free_and_a_moving_agent_is_not_standing() -> None:
    assert free_to_start(*_scene(None), CFG).tolist() == [True]
    assert free_to_start(*_scene(None, speed=3.0), CFG).tolist() == [False]


def test_a_car_ahead_in_the_corridor_blocks_one_in_the_next_lane_does_not() -> None:
    assert free_to_start(*_scene([7.0, 0.2, 1, 0, 0, 0, 4.5, 2.0]), CFG).tolist() == [False]
    assert free_to_start(*_scene([0.1, 3.7, 1, 0, 0, 0, 4.5, 2.0]), CFG).tolist() == [True]   # alongside
    assert free_to_start(*_scene([14.0, 0.0, 1, 0, 0, 0, 4.5, 2.0]), CFG).tolist() == [True]  # far ahead
    assert free_to_start(*_scene([-6.0, 0.0, 1, 0, 0, 0, 4.5, 2.0]), CFG).tolist() == [True]  # behind


def test_the_junction_stop_token_and_crossing_traffic_block() -> None:
    stop_token = [3.0, 0.0, 0.0, 1.0, 0, 0, 0.5, 3.5]           # a wall across the lane 3 m ahead
    assert free_to_start(*_scene(stop_token), CFG).tolist() == [False]
    crossing = [6.0, 2.0, 0.0, 1.0, 0, 5.0, 4.5, 2.0]            # a car crossing the corridor
    assert free_to_start(*_scene(crossing), CFG).tolist() == [False]


def test_the_corridor_follows_a_turning_route() -> None:
    beside_the_turn = [5.0, 2.8, 1, 0, 0, 0, 4.5, 2.0]           # in the way of a left turn
    assert free_to_start(*_scene(beside_the_turn, turn=6.0), CFG).tolist() == [False]
    assert free_to_start(*_scene(beside_the_turn), CFG).tolist() == [True]


def test_only_the_standing_candidates_of_free_agents_are_penalised() -> None:
    steps = np.array([[[0.0, 0.0], [0.05, 0.0]], [[0.0, 0.0], [0.05, 0.0]]])
    penalty = start_penalty(steps, np.array([True, False]), CFG)
    assert penalty.tolist() == [[CFG.penalty, 0.0], [0.0, 0.0]]
