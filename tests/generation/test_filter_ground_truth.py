"""The validity filter on ground truth: the procedural generator's own tiles and real WOMD tiles pass it
(ground truth that fails the filter is a filter bug). Also the filter's rules that made them pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vectorworld.eval.generator_validity import streaming_pass_rate, tiles_pass_rate
from vectorworld.generation.learned.bezier import bezier_points
from vectorworld.generation.learned.filter_config import FrontierPort, StitchConfig
from vectorworld.generation.learned.lane_rules import dense_reference
from vectorworld.generation.learned.stitching import check_candidate

WOMD_SAMPLE = Path(__file__).resolve().parents[2] / "../shared/data/womd/motion_data_one_scenario.tfrecord"


def _line(a: tuple[float, float], b: tuple[float, float], n: int = 20) -> np.ndarray:
    return np.linspace(np.array(a), np.array(b), n)


def test_procedural_tiles_pass_the_filter() -> None:
    rate = streaming_pass_rate("procedural", worlds=4, tiles_per_world=12, seed=77)
    assert rate.tiles >= 40
    assert rate.share >= 0.95, rate.as_dict()


@pytest.mark.slow
def test_real_womd_tiles_pass_the_filter(tmp_path: Path) -> None:
    if not WOMD_SAMPLE.is_file():
        pytest.skip("real WOMD sample not found")
    from vectorworld.data.dataset import DatasetConfig, build_dataset
    from vectorworld.data.tiles import TileConfig
    from vectorworld.data.womd import read_womd
    from vectorworld.train.tile_data import load_training_tiles

    build_dataset([read_womd(WOMD_SAMPLE.resolve())], tmp_path / "ds", DatasetConfig(tiles=TileConfig(step_stride=20)))
    rate = tiles_pass_rate(load_training_tiles(tmp_path / "ds", max_lanes=128, max_agents=64))
    assert rate.tiles >= 100
    assert rate.share >= 0.95, rate.as_dict()


def test_several_lanes_may_share_a_port() -> None:
    """A junction fanning out right at the frontier: both lanes continue the one port."""
    port = [FrontierPort(0, np.array([0.0, 0.0]), 0.0, True)]
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0))])
    straight = _line((0.0, 0.0), (31.5, 0.0))
    turn = np.stack([np.linspace(0.0, 12.0, 20), -np.linspace(0.0, 1.0, 20) ** 2 * 31.5], -1)
    check = check_candidate(np.stack([straight, turn]), port, known, StitchConfig())
    assert check.valid and sorted(check.port_links) == [(0, 0), (0, 1)]


def test_optional_joints_need_no_lane_but_count_as_connections() -> None:
    ports = [FrontierPort(0, np.array([0.0, 0.0]), 0.0, True),
             FrontierPort(-1, np.array([15.0, 10.0]), np.pi / 2, False, required=False, lane_id=7)]
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0)), _line((15.0, 10.0), (15.0, 31.0))])
    merge = bezier_points(np.array([[0.0, 0.0], [10.0, 0.0], [15.0, 2.0], [15.0, 10.0]]))  # ends heading +y
    check = check_candidate(np.stack([merge]), ports, known, StitchConfig())
    assert check.valid and check.dangling == 0 and (1, 0) in check.port_links
    alone = check_candidate(np.stack([_line((0.0, 0.0), (31.5, 0.0))]), ports, known, StitchConfig())
    assert alone.valid                                         # the optional joint may stay unused


def test_two_ports_merging_into_one_lane_are_not_duplicates() -> None:
    ports = [FrontierPort(0, np.array([0.0, 0.0]), 0.0, True), FrontierPort(1, np.array([0.0, 3.0]), -0.3, True)]
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0)), _line((-30.0, 3.9), (0.0, 3.0))])
    main = _line((0.0, 0.0), (31.5, 0.0))
    merging = np.concatenate([_line((0.0, 3.0), (5.0, 0.4), 6)[:-1], _line((5.0, 0.4), (31.5, 0.0), 15)])
    check = check_candidate(np.stack([main, merging]), ports, known, StitchConfig())
    assert check.valid and check.keep.tolist() == [0, 1]


def test_a_lane_that_curls_into_a_loop_is_dropped_and_a_u_turn_is_not() -> None:
    """A decoded Bézier can curl into a 12 m loop (seed 6 of a learned rollout: its ego left the road);
    a U-turn, which turns pi in all, stays."""
    port = [FrontierPort(0, np.array([0.0, 0.0]), 0.0, True)]
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0))])
    loop = bezier_points(np.array([[0.0, 0.0], [14.0, 0.0], [-4.0, -8.0], [4.0, 2.0]]))
    u_turn = bezier_points(np.array([[0.0, 0.0], [16.0, 0.0], [16.0, -10.0], [-30.0, -10.0]]))  # back to the border
    curled = check_candidate(np.stack([loop]), port, known, StitchConfig())
    assert not curled.valid and curled.unmatched_ports == 1 and len(curled.keep) == 0
    turned = check_candidate(np.stack([u_turn]), port, known, StitchConfig())
    assert turned.valid and turned.keep.tolist() == [0]


def test_procedural_agents_pass_the_spawn_filter() -> None:
    """The spawn filter on ground truth: the agents of procedural tiles (the generated half), parked cars at
    the curb included (2.45 m from the lane centre: a 2 m rule for every vehicle rejected 53% of them)."""
    from vectorworld.generation.learned.spawn_filter import SpawnFilterConfig, filter_spawns
    from vectorworld.train.tile_corpus import CorpusConfig, build_corpus

    tiles = build_corpus(CorpusConfig(worlds=3, tiles_per_world=6, seed=5))
    kept = total = parked = 0
    for i in range(len(tiles["lane_valid"])):
        valid = tiles["agent_valid"][i] & (tiles["agent_state"][i][:, 0] >= 0.0)
        state = tiles["agent_state"][i][valid].astype(np.float64)
        lanes = [p.astype(np.float64) for p in tiles["lane_points"][i][tiles["lane_valid"][i]]]
        keep, _, _ = filter_spawns(state, tiles["agent_type"][i][valid], lanes, np.zeros((0, 2)), SpawnFilterConfig())
        kept, total = kept + int(keep.sum()), total + len(state)
        parked += int(((tiles["agent_type"][i][valid] == 0) & (state[:, 2] < 0.5)).sum())
    assert total >= 60 and parked >= 10
    assert kept / total >= 0.95, (kept, total)


@pytest.mark.parametrize("apart_m, kept", [(0.9, [0]), (3.5, [0, 1])])
def test_a_lane_on_top_of_one_the_other_way_is_a_duplicate(apart_m: float, kept: list[int]) -> None:
    """A two-way road's lanes lie a lane width apart; two opposed lanes 0.9 m apart met head-on in a learned
    world's rollout. The port's lane stays, the other one goes."""
    port = [FrontierPort(0, np.array([0.0, 0.0]), 0.0, True)]
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0))])
    ahead = _line((0.0, 0.0), (31.5, 0.0))
    back = _line((31.5, apart_m), (-31.5, apart_m))
    check = check_candidate(np.stack([ahead, back]), port, known, StitchConfig())
    assert check.keep.tolist() == kept and check.pruned["duplicate"] == 2 - len(kept)
