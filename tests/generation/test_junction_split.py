"""Junction split: a learned lane running straight through a junction is cut into approach, junction and
exit lanes, as maps (and the procedural tiles the model learns from) cut theirs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.generation.grown_world import grow
from vectorworld import geometry
from vectorworld.generation.learned.junction_split import SplitConfig, split_at_crossings


def _line(a: tuple[float, float], b: tuple[float, float], n: int = 20) -> np.ndarray:
    return np.linspace(np.array(a), np.array(b), n)


def _length(points: np.ndarray) -> float:
    return float(geometry.polyline_lengths(points)[-1])


def test_a_lane_through_a_crossing_is_cut_into_approach_junction_and_exit() -> None:
    along = _line((-30.0, 0.0), (30.0, 0.0))
    across = _line((0.0, -30.0), (0.0, 30.0))
    before = _line((-50.0, 0.0), (-30.0, 0.0))
    split = split_at_crossings([along, across, before], [(2, 0)])
    assert split.pieces == [[0, 1, 2], [3, 4, 5], [6]]
    approach, junction, exit_ = (split.lanes[k] for k in split.pieces[0])
    np.testing.assert_allclose(approach[[0, -1]], [[-30.0, 0.0], [-4.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(junction[[0, -1]], [[-4.0, 0.0], [4.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(exit_[[0, -1]], [[4.0, 0.0], [30.0, 0.0]], atol=1e-9)
    assert split.junction.tolist() == [False, True, False] * 2 + [False]
    assert sorted(split.successors) == [(0, 1), (1, 2), (3, 4), (4, 5), (6, 0)]
    for lane, pieces in zip((along, across), split.pieces[:2], strict=True):
        assert sum(_length(split.lanes[k]) for k in pieces) == pytest.approx(_length(lane))


def test_the_crossings_of_one_junction_make_one_junction_lane() -> None:
    """A lane across a two-lane road crosses it twice, 3.5 m apart: one junction piece spans both."""
    across = _line((0.0, -30.0), (0.0, 30.0))
    split = split_at_crossings([across, _line((-30.0, 0.0), (30.0, 0.0)), _line((30.0, 3.5), (-30.0, 3.5))], [])
    junction = split.lanes[split.pieces[0][1]]
    assert len(split.pieces[0]) == 3
    np.testing.assert_allclose(junction[[0, -1]], [[0.0, -4.0], [0.0, 7.5]], atol=1e-9)


@pytest.mark.parametrize("lanes, successors", [
    ([_line((-8.0, 0.0), (8.0, 0.0)), _line((0.0, -8.0), (0.0, 8.0))], []),            # connectors, middles
    ([_line((-30.0, 0.0), (30.0, 0.0)), _line((-30.0, -2.0), (30.0, 2.0))], []),       # a shallow drift
    ([_line((-30.0, 0.0), (0.0, 0.0)), _line((0.0, 0.0), (-10.0, 20.0))], [(0, 1)]),  # a linked sharp turn
], ids=["connectors", "shallow", "linked"])
def test_lanes_that_are_no_road_through_a_junction_stay_whole(lanes: list[np.ndarray],
                                                               successors: list[tuple[int, int]]) -> None:
    split = split_at_crossings(lanes, successors)
    assert split.pieces == [[i] for i in range(len(lanes))]
    assert split.successors == successors


def test_a_lane_crossed_near_its_end_stays_whole() -> None:
    """A road ending 3 m past the road it crosses (a T junction drawn long) keeps its end; the road it
    crosses is cut."""
    split = split_at_crossings([_line((-30.0, 0.0), (30.0, 0.0)), _line((-3.0, -20.0), (-3.0, 3.0))], [])
    assert split.pieces == [[0, 1, 2], [3]]


def test_procedural_tiles_have_no_lane_to_cut() -> None:
    """Ground truth: the procedural city's tiles already end their roads at junctions, and its own connectors
    cross each other near their middles. A looser rule (2 m pieces) would cut some of them."""
    cut = loose = 0
    for seed in (3, 4):
        for tile in grow(seed, tiles=10).tiles:
            lanes = list(tile.content.lanes)
            index = {lane.id: k for k, lane in enumerate(lanes)}
            links = [(index[lane.id], index[s]) for lane in lanes for s in lane.successors if s in index]
            points = [lane.points for lane in lanes]
            cut += sum(len(p) - 1 for p in split_at_crossings(points, links).pieces)
            loose += sum(len(p) - 1 for p in split_at_crossings(points, links, SplitConfig(2.0, 2.0)).pieces)
    assert cut == 0
    assert loose > 0
