"""Tile tensors: partition at x = 0, edge matrix, normalisation round trip, mirroring."""

from __future__ import annotations

import numpy as np

from tests.generation.synthetic_tiles import synthetic_tiles
from vectorworld.generation.learned.tile_tensors import (
    EDGE_LEFT,
    EDGE_PRED,
    EDGE_RIGHT,
    EDGE_SUCC,
    agent_features,
    decode_agent_state,
    partition_tile,
)
from vectorworld.train.generator_training import mirror_tiles


def test_partition_splits_crossing_lane_into_linked_halves() -> None:
    x = np.linspace(-30.0, 30.0, 7)
    lanes = [np.stack([x, np.zeros_like(x)], -1), np.stack([x, np.full_like(x, 3.5)], -1)]
    state = np.array([[-10.0, 0.0, 5.0, 1.0, 0.0, 4.6, 2.0], [12.0, 3.5, 5.0, 1.0, 0.0, 4.6, 2.0]])
    tile = partition_tile(lanes, [[], []], [[1], []], [[], [0]], state, np.zeros(2, np.int8),
                          np.zeros((2, 6, 2)), max_lanes=8, max_agents=4)
    assert tile.lane_valid.sum() == 4 and tile.lane_cond.sum() == 2
    assert np.all(tile.lane_cond[:2]) and not tile.lane_cond[2:].any()
    back = np.flatnonzero(tile.lane_cond)
    for i in back:
        j = int(np.flatnonzero(tile.edges[i] == EDGE_SUCC)[0])
        assert not tile.lane_cond[j]
        assert tile.edges[j, i] == EDGE_PRED
        np.testing.assert_allclose(tile.lane_points[i, -1], tile.lane_points[j, 0], atol=1e-5)
        assert abs(tile.lane_points[i, -1, 0]) < 1e-5
    # neighbours survive on both halves
    assert (tile.edges == EDGE_LEFT).sum() == 2 and (tile.edges == EDGE_RIGHT).sum() == 2
    assert tile.agent_cond.tolist() == [True, False, False, False]


def test_agent_features_round_trip() -> None:
    state = np.array([[3.0, -4.0, 7.0, np.cos(0.3), np.sin(0.3), 4.8, 2.1]], np.float32)
    feats = agent_features(state, np.zeros(1, np.int8), np.zeros((1, 6, 2), np.float32))
    np.testing.assert_allclose(decode_agent_state(feats[:, :7]), state, atol=1e-5)


def test_mirror_is_an_involution_and_swaps_sides() -> None:
    tiles = synthetic_tiles(4, seed=1)
    once = mirror_tiles(tiles)
    twice = mirror_tiles(once)
    for key in tiles:
        np.testing.assert_array_equal(tiles[key], twice[key])
    assert ((tiles["edges"] == EDGE_LEFT) == (once["edges"] == EDGE_RIGHT)).all()
    np.testing.assert_allclose(once["lane_points"][..., 1], -tiles["lane_points"][..., 1])


def test_port_hints_mark_frontier_lanes_at_known_ends() -> None:
    from vectorworld.generation.learned.tile_tensors import port_hints

    x = np.linspace(-30.0, 30.0, 7)
    fwd = np.stack([x, np.zeros_like(x)], -1)
    back = np.stack([x[::-1], np.full_like(x, 3.5)], -1)          # oncoming lane: in port at the partition
    tile = partition_tile([fwd, back], [[], []], [[], []], [[], []], np.zeros((0, 7)), np.zeros(0, np.int8),
                          np.zeros((0, 6, 2)), max_lanes=6, max_agents=2)
    hints = port_hints(tile.lane_points, tile.lane_valid, tile.lane_cond, tile.edges)
    frontier = np.flatnonzero(tile.lane_valid & ~tile.lane_cond)
    assert not hints[tile.lane_cond].any() and not hints[~tile.lane_valid].any()
    out_slot = [j for j in frontier if tile.lane_points[j, 0, 1] == 0.0][0]
    in_slot = [j for j in frontier if tile.lane_points[j, 0, 1] == 3.5][0]
    np.testing.assert_allclose(hints[out_slot], [1, 0, 0, 0, 1, 0], atol=1e-6)
    np.testing.assert_allclose(hints[in_slot], [0, 1, 0, 3.5 / 32, -1, 0], atol=1e-6)
    batched = port_hints(tile.lane_points[None], tile.lane_valid[None], tile.lane_cond[None], tile.edges[None])
    np.testing.assert_array_equal(batched[0], hints)


def _crossing_tile() -> object:
    """A through road along x and, in the front half, a road across it (entering at y = 32, leaving at
    y = -32 as two lanes) plus a lane that starts inside the tile."""
    x = np.linspace(-30.0, 30.0, 7)
    y = np.linspace(32.0, -32.0, 9)
    through = np.stack([x, np.zeros_like(x)], -1)
    cross = np.stack([np.full_like(y, 10.0), y], -1)
    inner = np.stack([np.linspace(12.0, 30.0, 5), np.full(5, -8.0)], -1)
    return partition_tile([through, cross, inner], [[], [], []], [[], [], []], [[], [], []], np.zeros((0, 7)),
                          np.zeros(0, np.int8), np.zeros((0, 6, 2)), max_lanes=8, max_agents=2)


def test_border_hints_plan_the_roads_that_enter_the_front_half_at_a_side() -> None:
    from vectorworld.generation.learned.tile_tensors import border_hints, port_hints

    tile = _crossing_tile()
    own = port_hints(tile.lane_points, tile.lane_valid, tile.lane_cond, tile.edges)
    plan = border_hints(tile.lane_points, tile.lane_valid, tile.lane_cond, own)
    crossing = [j for j in range(tile.num_lanes) if tile.lane_valid[j] and tile.lane_points[j, 0, 1] == 32.0]
    inner = [j for j in range(tile.num_lanes) if tile.lane_valid[j] and tile.lane_points[j, 0, 1] == -8.0]
    np.testing.assert_allclose(plan[crossing[0]], [1, 0, 10 / 32, 1, 0, -1], atol=1e-6)
    assert not plan[inner[0]].any()                                  # starts and ends inside: no plan
    hinted = own[:, :2].sum(-1) > 0.5
    np.testing.assert_array_equal(plan[hinted], own[hinted])         # port hints win
    first = border_hints(tile.lane_points, tile.lane_valid, np.zeros_like(tile.lane_cond), own)
    np.testing.assert_array_equal(first, own)                        # a first tile has no plan


def test_a_lane_that_only_leaves_at_a_side_is_planned_at_its_end() -> None:
    from vectorworld.generation.learned.tile_tensors import border_hints

    y = np.linspace(-5.0, -32.0, 6)
    leaving = np.stack([np.full_like(y, 20.0), y], -1)
    through = np.stack([np.linspace(-30.0, 30.0, 7), np.zeros(7)], -1)
    tile = partition_tile([through, leaving], [[], []], [[], []], [[], []], np.zeros((0, 7)), np.zeros(0, np.int8),
                          np.zeros((0, 6, 2)), max_lanes=6, max_agents=2)
    plan = border_hints(tile.lane_points, tile.lane_valid, tile.lane_cond, np.zeros((6, 6), np.float32))
    j = [j for j in range(6) if tile.lane_valid[j] and tile.lane_points[j, 0, 1] == -5.0][0]
    np.testing.assert_allclose(plan[j], [0, 1, 20 / 32, -1, 0, -1], atol=1e-6)


def test_the_oracle_context_puts_the_plan_after_the_ports() -> None:
    from vectorworld.generation.learned.tile_context import context_from_tile

    tile = _crossing_tile()
    bare, planned = context_from_tile(tile), context_from_tile(tile, plan=True)
    required = sum(p.required for p in planned.ports)
    k = len(planned.known_ids)
    np.testing.assert_array_equal(planned.hints[:k + required], bare.hints[:k + required])
    np.testing.assert_allclose(planned.hints[k + required], [1, 0, 10 / 32, 1, 0, -1], atol=1e-6)
    assert not planned.hints[k + required + 1:].any()
