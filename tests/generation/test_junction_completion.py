"""Junction completion: connectors from open lane ends to the open starts of each drivable turn."""

from __future__ import annotations

import numpy as np

from vectorworld.generation.learned.bezier import bezier_points
from vectorworld.generation.learned.candidates import choose_candidate
from vectorworld.generation.learned.filter_config import FrontierPort, KnownLanes, StitchConfig
from vectorworld.generation.learned.junction_completion import CompletionConfig, junction_connectors
from vectorworld.generation.learned.stitching import check_candidate
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, LANE_POINTS

PORT = FrontierPort(index=0, xy=np.array([0.0, 0.0]), yaw=0.0, is_out=True)


def _line(a: tuple[float, float], b: tuple[float, float]) -> np.ndarray:
    return np.linspace(a, b, LANE_POINTS)


def _junction() -> np.ndarray:
    """A lane from the port to a stop line at x = 8, and the three lanes leaving the junction: straight on
    from x = 24, right from (14, -6), left from (20, 6)."""
    return np.stack([_line((0, 0), (8, 0)), _line((24, 0), (32, 0)), _line((14, -6), (14, -32)),
                     _line((20, 6), (20, 32))])


def test_an_open_stop_line_gets_one_connector_per_turn() -> None:
    lanes = _junction()
    connectors = junction_connectors(lanes, [PORT], StitchConfig(), CompletionConfig())
    assert len(connectors) == 3
    np.testing.assert_allclose(connectors[:, 0], np.tile([8.0, 0.0], (3, 1)))
    ends = sorted(map(tuple, np.round(connectors[:, 3], 6)))
    assert ends == [(14.0, -6.0), (20.0, 6.0), (24.0, 0.0)]
    completed = np.concatenate([lanes, bezier_points(connectors, LANE_POINTS)])
    empty = KnownLanes(np.zeros((0, 2)), np.zeros(0))
    before = check_candidate(lanes, [PORT], empty, StitchConfig())
    after = check_candidate(completed, [PORT], empty, StitchConfig())
    assert not before.valid and after.valid and len(after.keep) == 7
    assert {(0, j) for j in range(4, 7)} <= set(after.successors)


def test_no_connector_goes_backwards_or_turns_around() -> None:
    behind = np.stack([_line((0, 0), (20, 0)), _line((10, 3.5), (30, 3.5)), _line((16, 3.5), (2, 3.5))])
    assert len(junction_connectors(behind, [PORT], StitchConfig(), CompletionConfig())) == 0


def test_the_chosen_candidate_marks_its_connectors_with_slot_minus_one() -> None:
    lanes = _junction()
    controls = np.stack([np.stack([p[0], p[0] + (p[-1] - p[0]) / 3, p[0] + 2 * (p[-1] - p[0]) / 3, p[-1]])
                         for p in lanes])
    feat = np.zeros((1, 6, 8))
    feat[0, 1:5] = controls.reshape(4, 8) / HALF_TILE_M
    prob = np.array([[0.0, 1, 1, 1, 1, 0]])
    frontier = np.array([False, True, True, True, True, True])
    empty = KnownLanes(np.zeros((0, 2)), np.zeros(0))
    choice = choose_candidate(feat, prob, np.zeros((6, 6), np.float32), frontier, [PORT], empty, StitchConfig(),
                              completion=CompletionConfig())
    assert choice.valid
    assert choice.slots.tolist() == [1, 2, 3, 4, -1, -1, -1]
    off = choose_candidate(feat, prob, np.zeros((6, 6), np.float32), frontier, [PORT], empty, StitchConfig())
    assert not off.valid and (off.slots >= 0).all()                # no completion unless asked for


def test_a_port_no_lane_continues_is_joined_to_the_lane_that_starts_ahead_of_it() -> None:
    lanes = np.stack([_line((6, 0.5), (32, 0.5))])                     # starts 6 m past the port
    empty = KnownLanes(np.zeros((0, 2)), np.zeros(0))
    assert check_candidate(lanes, [PORT], empty, StitchConfig()).unmatched_ports == 1
    connectors = junction_connectors(lanes, [PORT], StitchConfig(), CompletionConfig())
    assert len(connectors) == 1
    np.testing.assert_allclose(connectors[0, [0, 3]], [[0, 0], [6, 0.5]])
    completed = np.concatenate([lanes, bezier_points(connectors, LANE_POINTS)])
    assert check_candidate(completed, [PORT], empty, StitchConfig()).valid


def test_a_port_lane_drawn_too_short_is_extended_straight_to_the_border() -> None:
    from vectorworld.generation.learned.junction_completion import extend_port_lanes

    in_port = FrontierPort(index=1, xy=np.array([0.0, 3.5]), yaw=np.pi, is_out=False)
    lanes = np.stack([_line((0, 0), (32, 0)), _line((7, 3.5), (0, 3.5))])   # the incoming lane starts at x = 7
    controls = np.stack([np.stack([p[0], p[0] + (p[-1] - p[0]) / 3, p[0] + 2 * (p[-1] - p[0]) / 3, p[-1]])
                         for p in lanes])
    empty = KnownLanes(np.zeros((0, 2)), np.zeros(0))
    assert not check_candidate(lanes, [PORT, in_port], empty, StitchConfig()).valid
    new_controls, new_lanes = extend_port_lanes(controls, lanes, [PORT, in_port], StitchConfig(), CompletionConfig())
    np.testing.assert_allclose(new_lanes[1, 0], [32.0, 3.5], atol=1e-9)
    np.testing.assert_allclose(new_lanes[1, -1], [0.0, 3.5], atol=1e-9)
    np.testing.assert_allclose(new_lanes[1, :, 1], 3.5, atol=1e-9)                # still straight
    np.testing.assert_array_equal(new_controls[0], controls[0])                    # a complete lane is untouched
    assert check_candidate(new_lanes, [PORT, in_port], empty, StitchConfig()).valid


def test_only_a_road_plan_model_is_completed() -> None:
    from types import SimpleNamespace

    from vectorworld.generation.learned.candidates import completion_of
    from vectorworld.generation.learned.egr_dit import DiTConfig

    assert completion_of(SimpleNamespace(dit=SimpleNamespace(config=DiTConfig(border_hints=True)))) is not None
    assert completion_of(SimpleNamespace(dit=SimpleNamespace(config=DiTConfig()))) is None


IN_PORT = FrontierPort(index=1, xy=np.array([0.0, 3.5]), yaw=np.pi, is_out=False)
EMPTY = KnownLanes(np.zeros((0, 2)), np.zeros(0))


def test_a_port_continuation_runs_straight_from_its_port_to_the_border() -> None:
    from vectorworld.generation.learned.junction_completion import port_continuations

    backwards = FrontierPort(index=2, xy=np.array([0.0, 7.0]), yaw=np.pi, is_out=True)     # into the known half
    at_border = FrontierPort(index=3, xy=np.array([31.0, -7.0]), yaw=0.0, is_out=True)     # 1 m from the border
    controls = port_continuations([PORT, IN_PORT, backwards, at_border], CompletionConfig())
    assert controls.shape == (2, 4, 2)
    lanes = bezier_points(controls, LANE_POINTS)
    np.testing.assert_allclose(lanes[0, [0, -1]], [[0.0, 0.0], [HALF_TILE_M, 0.0]], atol=1e-9)
    np.testing.assert_allclose(lanes[1, [0, -1]], [[HALF_TILE_M, 3.5], [0.0, 3.5]], atol=1e-9)
    np.testing.assert_allclose(lanes[:, :, 1], [[0.0] * LANE_POINTS, [3.5] * LANE_POINTS], atol=1e-9)


def _one_lane_candidate() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decoded features, existence probabilities and frontier of one candidate whose only lane continues PORT
    to the border: IN_PORT stays open (no lane end can turn into it)."""
    line = _line((0, 0), (32, 0))
    controls = np.stack([line[0], line[0] + (line[-1] - line[0]) / 3, line[0] + 2 * (line[-1] - line[0]) / 3,
                         line[-1]])
    feat = np.zeros((1, 4, 8))
    feat[0, 1] = controls.reshape(8) / HALF_TILE_M
    return feat, np.array([[0.0, 1, 0, 0]]), np.array([False, True, True, True])


def test_a_port_every_candidate_leaves_open_is_continued_straight() -> None:
    from vectorworld.generation.learned.candidates import continue_open_ports

    feat, prob, frontier = _one_lane_candidate()
    hints = np.zeros((4, 6), np.float32)
    ports = [PORT, IN_PORT]
    choice = choose_candidate(feat, prob, hints, frontier, ports, EMPTY, StitchConfig(),
                              completion=CompletionConfig())
    assert not choice.valid and choice.check.unmatched_ports == 1
    repaired = continue_open_ports(choice, feat, prob, hints, frontier, ports, EMPTY, StitchConfig(), 0.5,
                                   CompletionConfig())
    assert repaired.valid and repaired.slots[repaired.check.keep].tolist() == [1, -1]
    continued = repaired.stitched[1]
    np.testing.assert_allclose(continued[[0, -1]], [[HALF_TILE_M, 3.5], [0.0, 3.5]], atol=1e-9)
    assert (1, 1) in repaired.check.port_links


def test_a_candidate_still_invalid_with_its_continuations_is_left_as_it_was() -> None:
    from vectorworld.generation.learned.candidates import continue_open_ports

    feat, prob, frontier = _one_lane_candidate()
    hints = np.zeros((4, 6), np.float32)
    backwards = FrontierPort(index=2, xy=np.array([0.0, 7.0]), yaw=np.pi, is_out=True)   # no continuation
    ports = [PORT, IN_PORT, backwards]
    choice = choose_candidate(feat, prob, hints, frontier, ports, EMPTY, StitchConfig(),
                              completion=CompletionConfig())
    assert choice.check.unmatched_ports == 2
    assert continue_open_ports(choice, feat, prob, hints, frontier, ports, EMPTY, StitchConfig(), 0.5,
                               CompletionConfig()) is choice
