"""T junctions: a side road that stops short of a road drawn through in one lane is joined to it."""

from __future__ import annotations

import numpy as np

from vectorworld.generation.learned.bezier import bezier_points
from vectorworld.generation.learned.filter_config import FrontierPort, KnownLanes, StitchConfig
from vectorworld.generation.learned.junction_completion import CompletionConfig
from vectorworld.generation.learned.junction_tees import TeeConfig, tee_junctions
from vectorworld.generation.learned.stitching import check_candidate
from vectorworld.generation.learned.tile_tensors import LANE_POINTS

PORTS = [FrontierPort(index=0, xy=np.array([0.0, -1.75]), yaw=0.0, is_out=True),
         FrontierPort(index=1, xy=np.array([0.0, 1.75]), yaw=np.pi, is_out=False)]
EMPTY = KnownLanes(np.zeros((0, 2)), np.zeros(0))


def _straight(a: tuple[float, float], b: tuple[float, float]) -> np.ndarray:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.stack([a, a + (b - a) / 3, a + 2 * (b - a) / 3, b])


def _tee(stop_x: float, road_x: float = 20.0) -> tuple[np.ndarray, np.ndarray]:
    """A two-way side road from the ports stopping at x = ``stop_x`` (in along y = -1.75, out along
    y = 1.75), and a two-way road drawn through the tile in one lane each way: x = ``road_x`` southbound and
    3.5 m further northbound, border to border."""
    controls = np.stack([_straight((0, -1.75), (stop_x, -1.75)), _straight((stop_x, 1.75), (0, 1.75)),
                         _straight((road_x, 32), (road_x, -32)), _straight((road_x + 3.5, -32), (road_x + 3.5, 32))])
    return controls, bezier_points(controls, LANE_POINTS)


def _make(controls: np.ndarray, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tee_junctions(controls, lanes, np.arange(len(lanes)), np.ones(len(lanes), bool), PORTS, StitchConfig(),
                         CompletionConfig(), TeeConfig())


def test_a_side_road_stopping_short_of_a_through_road_turns_into_it_and_out_of_it() -> None:
    controls, lanes = _tee(stop_x=11.0)
    assert not check_candidate(lanes, PORTS, EMPTY, StitchConfig()).valid      # the side road dangles
    new_controls, new_lanes, slots = _make(controls, lanes)
    # the side road now ends (and starts) on its stop line, 5 m before the near lane of the road
    np.testing.assert_allclose(new_lanes[0, -1], [15.0, -1.75], atol=1e-9)
    np.testing.assert_allclose(new_lanes[1, 0], [15.0, 1.75], atol=1e-9)
    # both road lanes are cut where the turns meet them, a turn's radius along from the side road's line
    np.testing.assert_allclose(new_lanes[2, -1], [20.0, 6.75], atol=1e-9)      # first piece of the southbound
    np.testing.assert_allclose(new_lanes[3, -1], [23.5, -6.75], atol=1e-9)     # and of the northbound lane
    pieces = new_lanes[4:8]
    np.testing.assert_allclose(np.sort(pieces[:, 0, 1]), [-6.75, -6.75, 6.75, 6.75], atol=1e-9)
    np.testing.assert_allclose(pieces[:, :, 0].min(1), pieces[:, :, 0].max(1))  # pieces stay on the road's line
    turns = new_lanes[8:]
    assert len(turns) == 4 and slots.tolist() == [0, 1, 2, 3] + [-1] * 8
    starts, ends = sorted(map(tuple, np.round(turns[:, 0], 6))), sorted(map(tuple, np.round(turns[:, -1], 6)))
    assert starts == [(15.0, -1.75), (15.0, -1.75), (20.0, 6.75), (23.5, -6.75)]
    assert ends == [(15.0, 1.75), (15.0, 1.75), (20.0, -6.75), (23.5, 6.75)]
    check = check_candidate(new_lanes, PORTS, EMPTY, StitchConfig())
    assert check.valid and len(check.keep) == len(new_lanes)


def test_a_side_road_drawn_into_the_road_is_pulled_back_to_its_stop_line() -> None:
    controls, lanes = _tee(stop_x=11.0, road_x=12.0)     # the side road's end 1 m before the road
    assert not check_candidate(lanes, PORTS, EMPTY, StitchConfig()).valid
    _, new_lanes, _ = _make(controls, lanes)
    np.testing.assert_allclose(new_lanes[0, -1], [7.0, -1.75], atol=1e-9)
    np.testing.assert_allclose(new_lanes[0, :, 1], -1.75, atol=1e-9)           # trimmed, not bent
    assert check_candidate(new_lanes, PORTS, EMPTY, StitchConfig()).valid


def test_a_lane_meeting_the_road_at_a_shallow_angle_or_out_of_reach_is_left_alone() -> None:
    controls, lanes = _tee(stop_x=11.0)
    shallow = controls.copy()
    shallow[2:] = [_straight((0, 20), (32, 12)), _straight((32, 8), (0, 16))]   # 14 degrees off the side road
    for c in (shallow, controls):
        config = TeeConfig(reach_m=25.0 if c is shallow else 8.0)
        out = tee_junctions(c, bezier_points(c, LANE_POINTS), np.arange(4), np.ones(4, bool), PORTS,
                            StitchConfig(), CompletionConfig(), config)
        np.testing.assert_array_equal(out[0], c)


def test_a_candidate_the_tees_would_leave_invalid_is_judged_without_them(monkeypatch) -> None:
    import vectorworld.generation.learned.candidates as candidates

    lanes = np.stack([np.linspace((0.0, -1.75), (32.0, -1.75), LANE_POINTS),
                      np.linspace((32.0, 1.75), (0.0, 1.75), LANE_POINTS)])     # a valid two-way road
    controls = np.stack([_straight((0, -1.75), (32, -1.75)), _straight((32, 1.75), (0, 1.75))])
    feat = np.zeros((1, 3, 8))
    feat[0, :2] = controls.reshape(2, 8) / 32.0
    prob, frontier = np.array([[1.0, 1.0, 0.0]]), np.array([True, True, True])
    def spoiling_tees(c: np.ndarray, lane: np.ndarray, s: np.ndarray, *args: object) -> tuple:
        c2 = np.array(c, copy=True)
        c2[0, :, 1] -= 6.0                                     # the road's first lane moved off its port
        return c2, bezier_points(c2, LANE_POINTS), s

    def choose() -> object:
        return candidates.choose_candidate(feat, prob, np.zeros((3, 6), np.float32), frontier, PORTS, EMPTY,
                                           StitchConfig(), completion=CompletionConfig())

    assert check_candidate(lanes, PORTS, EMPTY, StitchConfig()).valid
    monkeypatch.setattr(candidates, "tee_junctions", spoiling_tees)
    spoilt = choose()
    assert spoilt.valid and spoilt.slots.tolist() == [0, 1]
    np.testing.assert_allclose(spoilt.lanes[0, 0], [0.0, -1.75], atol=1e-6)   # judged as drawn

