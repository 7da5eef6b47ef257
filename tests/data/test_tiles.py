"""Tile cropping: exact clipping, edges, agent states, motion codes and trajectories."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vectorworld import geometry
from vectorworld.data.nuplan_map import CONNECTOR_ID_OFFSET
from vectorworld.data.tiles import (
    EDGE_LEFT,
    EDGE_PRED,
    EDGE_RIGHT,
    EDGE_SUCC,
    KIND_AGENT,
    KIND_EGO,
    TileConfig,
    clip_polyline_to_square,
    crop_tile,
    iter_tiles,
    motion_codes,
)
from vectorworld.scene import AgentType

HALF = 32.0


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 12), st.just(2)), elements=st.floats(-80, 80)))
def test_clip_matches_shapely(points: np.ndarray) -> None:
    runs = clip_polyline_to_square(points, HALF)
    box = shapely.box(-HALF, -HALF, HALF, HALF)
    segments = shapely.linestrings(np.stack([points[:-1], points[1:]], 1))  # per segment: no dissolving
    expected = float(np.sum(shapely.length(shapely.intersection(segments, box))))
    total = sum(float(geometry.polyline_lengths(r)[-1]) for r, _, _ in runs)
    assert total == pytest.approx(expected, abs=1e-6)
    for run, _, _ in runs:
        assert np.all(np.abs(run) <= HALF + 1e-9)


def test_clip_flags_and_order() -> None:
    line = np.array([[-50.0, 0.0], [0.0, 0.0], [50.0, 0.0], [50.0, 10.0], [0.0, 10.0]])
    runs = clip_polyline_to_square(line, HALF)
    assert len(runs) == 2
    (a, a_start, a_end), (b, b_start, b_end) = runs
    assert np.allclose(a[0], [-32, 0]) and np.allclose(a[-1], [32, 0]) and a_start and a_end
    assert np.allclose(b[0], [32, 10]) and np.allclose(b[-1], [0, 10]) and b_start and not b_end
    inside = np.array([[0.0, 0.0], [5.0, 5.0]])
    assert [(r.tolist(), s, e) for r, s, e in clip_polyline_to_square(inside, HALF)] == [(inside.tolist(), False,
                                                                                          False)]
    assert clip_polyline_to_square(np.array([[40.0, 0.0], [50.0, 0.0]]), HALF) == []


def test_motion_codes() -> None:
    config = TileConfig()
    t = np.arange(30)
    moving = np.stack([t * 1.0, np.zeros(30)], -1)  # 1 m per step along +x, 29 m of path
    parked = np.zeros((30, 2))
    xy = np.stack([moving, parked])
    valid = np.ones((2, 30), bool)
    codes = motion_codes(xy, valid, np.zeros(2), config)
    assert np.allclose(codes[0, :, 0], [-12, -10, -8, -6, -4, -2]) and np.allclose(codes[0, :, 1], 0)
    assert np.all(codes[1] == 0)
    valid[0, :26] = False  # only 3 m of valid history
    valid[0, 27] = False  # a dropout is bridged
    short = motion_codes(xy, valid, np.array([np.pi / 2, 0.0]), config)
    # heading +y while the path runs along +x: behind (smaller x) is the body frame's +y side
    assert np.allclose(short[0, :, 1], [3, 2.5, 2, 1.5, 1, 0.5]) and np.allclose(short[0, :, 0], 0)
    valid[0, :29] = False  # first seen now: 1 s at its speed, straight back along the heading
    new = motion_codes(xy, valid, np.zeros(2), config, speed=np.array([6.0, 0.0]))
    assert np.allclose(new[0, :, 0], [-6, -5, -4, -3, -2, -1]) and np.all(new[1] == 0)
    assert np.all(motion_codes(xy, valid, np.zeros(2), config)[0] == 0)


def test_ego_tile_on_fixture(nuplan_files, nuplan_fixture) -> None:
    from vectorworld.data.nuplan import read_nuplan

    db, maps, _ = nuplan_files
    s = read_nuplan(db, 1, maps_root=maps)  # scene b: the ego nears the end of lane 10
    step = 40
    tile = crop_tile(s, step, s.sdc_index, KIND_EGO, TileConfig())
    assert tile.kind == KIND_EGO and tile.anchor_id == 0 and tile.step == step
    assert tile.lane_points.shape[1:] == (20, 2) and np.all(np.abs(tile.lane_points) <= HALF + 1e-4)
    ids = tile.lane_ids.tolist()
    a, b, conn = ids.index(10), ids.index(11), ids.index(10 + CONNECTOR_ID_OFFSET)
    # the ego drives along lane 10, i.e. along the tile's x axis at y = 0
    assert np.allclose(tile.lane_points[a, :, 1], 0.0, atol=1e-6)
    assert np.allclose(tile.lane_points[b, :, 1], nuplan_fixture.LANE_WIDTH, atol=1e-6)
    assert tile.edges[a, b] == EDGE_LEFT and tile.edges[b, a] == EDGE_RIGHT
    assert tile.edges[a, conn] == EDGE_SUCC and tile.edges[conn, a] == EDGE_PRED
    assert tile.lane_cut[a].tolist() == [True, False]  # lane 10 starts 50 m back: cut; ends inside
    assert tile.lane_cut[conn].tolist() == [False, True]
    assert np.count_nonzero(tile.edges == EDGE_SUCC) == np.count_nonzero(tile.edges == EDGE_PRED)
    # agents: the ego at the origin heading +x, sorted by distance; the cone (OTHER) is excluded
    assert tile.agent_is_anchor[0] and np.allclose(tile.agent_state[0, :5], [0, 0, 10, 1, 0], atol=1e-5)
    assert AgentType.OTHER not in tile.agent_type.tolist()
    assert np.allclose(tile.agent_motion[0, :, 1], 0, atol=1e-5)
    path = min(12.0, 10.0 * 4.0)  # 4 s of valid history at 10 m/s, capped at 12 m
    assert np.allclose(tile.agent_motion[0, :, 0], -np.arange(6, 0, -1) * path / 6, atol=1e-3)
    # trajectories: global frame, current step at index 10; the log ends 9 steps later
    assert tile.agent_traj.shape == (tile.num_agents, 91, 4)
    assert np.allclose(tile.agent_traj[0, 10, :2], s.tracks.xy[0, step])
    assert np.allclose(tile.agent_traj[0, 10, 2:], [s.tracks.yaw[0, step], 10.0])
    assert tile.agent_traj_valid[0, :20].all() and not tile.agent_traj_valid[0, 20:].any()


def test_iter_tiles_config(nuplan_scenario) -> None:
    s = nuplan_scenario
    tiles = list(iter_tiles(s, TileConfig()))
    assert [t.kind for t in tiles] == [KIND_EGO, KIND_AGENT]  # ego + the other vehicle
    strided = list(iter_tiles(s, TileConfig(step_stride=10, agent_centric=False)))
    assert [t.step for t in strided] == [10, 20, 30, 40]
    full = crop_tile(s, 30, 0, KIND_EGO, TileConfig())
    assert full.num_agents == 2 and full.lane_ids.tolist() == [10, 11]  # ego + pedestrian; nearest first
    capped = crop_tile(s, 30, 0, KIND_EGO, TileConfig(max_agents=1, max_lanes=1))
    assert capped.num_agents == 1 and capped.lane_ids.tolist() == [10] and capped.edges.shape == (1, 1)
    assert capped.agent_ids.tolist() == [0]


def test_real_sample_tiles(womd_scenario) -> None:
    tiles = list(iter_tiles(womd_scenario))
    assert len(tiles) == 45  # one per valid vehicle at the current step (ego included)
    lanes = np.array([t.num_lanes for t in tiles])
    agents = np.array([t.num_agents for t in tiles])
    assert 20 <= np.median(lanes) <= 40 and 6 <= np.median(agents) <= 15
    for tile in tiles:
        assert np.all(np.abs(tile.lane_points) <= HALF + 1e-3)
        assert np.all(np.abs(tile.agent_state[:, :2]) <= HALF)
        assert tile.agent_is_anchor.sum() == 1
        assert np.allclose(tile.agent_state[tile.agent_is_anchor][0, :2], 0.0)
        succ_i, succ_j = np.nonzero(tile.edges == EDGE_SUCC)
        gaps = np.linalg.norm(tile.lane_points[succ_i, -1] - tile.lane_points[succ_j, 0], axis=-1)
        assert np.all(gaps < 1.0)
    moving = np.concatenate([t.agent_motion[np.abs(t.agent_state[:, 2]) > 5.0] for t in tiles])
    assert len(moving) and np.all(np.abs(moving).sum(axis=(1, 2)) > 0)
