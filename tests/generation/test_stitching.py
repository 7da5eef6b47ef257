"""Validity filter and exact stitching of candidate lanes (tile frame)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vectorworld import geometry
from vectorworld.generation.learned.bezier import bezier_points, fit_bezier
from vectorworld.generation.learned.filter_config import CandidateCheck, FrontierPort, StitchConfig
from vectorworld.generation.learned.lane_rules import (
    crossing_lanes,
    dense_reference,
    duplicate_lanes,
    hooked_lanes,
    kinked_lanes,
)
from vectorworld.generation.learned.stitching import (
    EndLinks,
    at_border,
    check_and_stitch,
    check_candidate,
    open_ends,
    stitch,
)


def _line(a: tuple[float, float], b: tuple[float, float], n: int = 20) -> np.ndarray:
    return np.linspace(np.array(a), np.array(b), n)


PORTS = [FrontierPort(0, np.array([0.0, 0.0]), 0.0, True), FrontierPort(1, np.array([0.0, 3.5]), 0.0, True)]
KNOWN = dense_reference([_line((-30.0, 0.0), (0.0, 0.0)), _line((-30.0, 3.5), (0.0, 3.5))])


def test_valid_candidate_is_stitched_exactly() -> None:
    lanes = np.stack([_line((0.8, 0.5), (31.0, 0.3)), _line((0.5, 3.9), (20.0, 3.6)),
                      _line((20.6, 3.8), (30.5, 3.5))])
    config = StitchConfig()
    check = check_candidate(lanes, PORTS, KNOWN, config)
    assert check.valid, check
    assert check.port_links == [(0, 0), (1, 1)] and check.successors == [(1, 2)]
    out = stitch(fit_bezier(lanes), check, PORTS, config)
    assert np.array_equal(out[0][0], PORTS[0].xy) and np.array_equal(out[1][0], PORTS[1].xy)
    assert np.linalg.norm(out[1][-1] - out[2][0]) <= 1e-9
    for lane in (out[0], out[2]):          # free ends move onto the border
        assert abs(abs(lane[-1, 0]) - 32.0) < 1e-6
    assert np.max(np.abs(np.concatenate(out))) <= 32.0 + 1e-9


def _heading(points: np.ndarray, at_end: bool) -> float:
    d = points[-1] - points[-2] if at_end else points[1] - points[0]
    return float(np.arctan2(d[1], d[0]))


def _max_bend(points: np.ndarray) -> float:
    """The largest heading change (rad) between two consecutive segments of a polyline."""
    seg = np.diff(points, axis=0)
    return float(np.abs(geometry.wrap_angle(np.diff(np.arctan2(seg[:, 1], seg[:, 0])))).max())


def test_a_joint_gets_one_heading() -> None:
    """Lane 1 arrives at its joint with lane 2 heading 20 deg left, lane 2 leaves it 10 deg right (a 30 deg kink
    within the check's tolerance): stitched, they meet on one heading, between the two."""
    straight = np.array([[0.0, 0.0], [10.0, 0.0], [20.0, 0.0], [31.0, 0.0]])
    left = np.array([[0.0, 3.5], [7.0, 3.5], [14.0, 3.5 - 6.0 * np.tan(np.radians(20))], [20.0, 3.5]])
    right = np.array([[20.3, 3.7], [26.0, 3.7 - 6.0 * np.tan(np.radians(10))], [29.0, 2.0], [31.5, 1.5]])
    controls = np.stack([straight, left, right])
    check = check_candidate(bezier_points(controls), PORTS, KNOWN, StitchConfig())
    assert check.valid and (1, 2) in check.successors
    out = stitch(controls, check, PORTS, StitchConfig())
    assert np.array_equal(out[1][-1], out[2][0])
    end, start = _heading(out[1], True), _heading(out[2], False)
    # the same tangent on both sides (the polylines' last / first segments differ by their discretisation)
    assert abs(geometry.wrap_angle(end - start)) < np.radians(1.5) and np.radians(-10) < end < np.radians(20)
    assert abs(_heading(out[1], False)) < np.radians(1)                         # still leaves along its port


def test_a_lane_hooking_at_the_border_leaves_the_tile_on_its_own_heading() -> None:
    """A lane runs east to the border and its tangent turns 45 deg left in its last half metre (a 0.5 m handle): the
    next tile would continue it along the hook, a corner traffic swings off the road at. Stitched, the short
    handle is a hook, not a heading: the lane leaves on its body's heading."""
    hooked = np.array([[0.0, 0.0], [10.0, 0.0], [31.6, -0.35], [31.95, 0.0]])
    controls = np.stack([hooked, np.array([[0.0, 3.5], [10.0, 3.5], [20.0, 3.5], [31.0, 3.5]])])
    lanes = bezier_points(controls)
    assert _heading(lanes[0], True) > np.radians(10)
    check = check_candidate(lanes, PORTS, KNOWN, StitchConfig())
    assert check.valid
    out = stitch(controls, check, PORTS, StitchConfig())
    assert abs(out[0][-1, 0] - 32.0) < 1e-6 and abs(_heading(out[0], True)) < np.radians(3)


def test_a_lane_overshooting_the_border_ends_on_it_without_a_hook() -> None:
    """A decoded lane ends 1.5 m beyond the border, heading east and drifting north: its end moves back along
    its heading onto the border (clamping its points instead bent its last metres along the border line, and
    the next tile continued that hook at right angles)."""
    over = np.array([[0.0, 0.0], [12.0, 0.0], [24.0, 0.0], [33.5, 1.0]])
    controls = np.stack([over, np.array([[0.0, 3.5], [10.0, 3.5], [20.0, 3.5], [31.0, 3.5]])])
    check = check_candidate(bezier_points(controls), PORTS, KNOWN, StitchConfig())
    out = stitch(controls, check, PORTS, StitchConfig())
    assert abs(out[0][-1, 0] - 32.0) < 1e-6
    assert abs(_heading(out[0], True)) < np.radians(10) and _max_bend(out[0]) < 0.1


def test_dangling_end_and_missing_port_are_invalid() -> None:
    config = StitchConfig(prune_spurs=False)
    dangling = np.stack([_line((0.5, 0.0), (31.0, 0.0)), _line((0.3, 3.5), (12.0, 3.5))])
    check = check_candidate(dangling, PORTS, KNOWN, config)
    assert not check.valid and check.dangling == 1 and check.unmatched_ports == 0
    pruned = check_candidate(dangling, PORTS, KNOWN, StitchConfig())   # pruning the spur opens port 1
    assert not pruned.valid and pruned.dangling == 0 and pruned.unmatched_ports == 1
    missing = np.stack([_line((0.5, 0.0), (31.0, 0.0))])
    check = check_candidate(missing, PORTS, KNOWN, config)
    assert not check.valid and check.unmatched_ports == 1


def test_duplicates_of_known_lanes_are_dropped() -> None:
    lanes = np.stack([_line((-25.0, 0.2), (-2.0, 0.2)), _line((0.5, 0.0), (31.0, 0.0)),
                      _line((0.5, 3.5), (31.0, 3.5)), _line((0.6, 3.4), (31.0, 3.3))])
    check = check_candidate(lanes, PORTS, KNOWN, StitchConfig())
    assert check.keep.tolist() == [1, 2]
    assert check.valid


def test_isolated_debris_is_dropped_not_fatal() -> None:
    lanes = np.stack([_line((0.5, 0.0), (31.0, 0.0)), _line((0.5, 3.5), (31.0, 3.5)),
                      _line((10.0, 15.0), (16.0, 18.0))])              # touches nothing
    check = check_candidate(lanes, PORTS, KNOWN, StitchConfig())
    assert check.valid and check.keep.tolist() == [0, 1]


def test_spurs_are_pruned_when_the_ports_stay_continued() -> None:
    lanes = np.stack([_line((0.5, 0.0), (31.0, 0.0)), _line((0.5, 3.5), (31.0, 3.5)),
                      _line((10.0, 0.5), (18.0, 9.0)),                 # leaves lane 0's middle, ends nowhere
                      _line((18.0, 9.0), (20.0, 14.0))])               # continues the spur, ends nowhere too
    assert not check_candidate(lanes, PORTS, KNOWN, StitchConfig(prune_spurs=False)).valid
    check = check_candidate(lanes, PORTS, KNOWN, StitchConfig())
    assert check.valid and check.keep.tolist() == [0, 1] and check.dangling == 0


def test_a_lane_stopping_short_of_the_border_is_extended_onto_it() -> None:
    """A decoded end up to ``border_reach_m`` short of the border along its heading ends there (training
    lanes are cut at the border); one stopping farther inside still dangles."""
    port = PORTS[:1]
    short = np.stack([_line((0.0, 0.0), (20.0, 0.0))])                  # 12 m before the border
    check = check_candidate(short, port, KNOWN, StitchConfig(prune_spurs=False))
    assert check.valid and check.dangling == 0
    out = stitch(fit_bezier(short), check, port, StitchConfig())
    assert abs(out[0][-1, 0] - 32.0) < 1e-6 and np.abs(out[0][:, 1]).max() < 1e-6
    inside = np.stack([_line((0.0, 0.0), (10.0, 0.0))])                 # 22 m before it
    assert check_candidate(inside, port, KNOWN, StitchConfig(prune_spurs=False)).dangling == 1
    ends, headings = np.array([[20.0, 0.0], [20.0, 0.0], [29.0, 0.0]]), np.array([0.0, np.pi, np.pi])
    assert at_border(ends, headings, StitchConfig()).tolist() == [True, False, True]  # inwards: only near it


def test_joints_allow_a_gap_along_the_road_but_not_a_lane_width_across_it() -> None:
    config = StitchConfig(prune_spurs=False)
    gap = np.stack([_line((0.0, 0.0), (12.0, 0.0)), _line((16.0, 0.3), (31.0, 0.3))])  # 4 m along, 0.3 across
    check = check_candidate(gap, PORTS[:1], KNOWN, config)
    assert check.successors == [(0, 1)] and check.valid
    out = stitch(fit_bezier(gap), check, PORTS[:1], config)
    assert np.linalg.norm(out[0][-1] - out[1][0]) < 1e-9
    beside = np.stack([_line((0.0, 0.0), (12.0, 0.0)), _line((13.0, 3.0), (31.0, 3.0))])  # the next lane
    assert check_candidate(beside, PORTS[:1], KNOWN, config).successors == []


def test_every_end_of_a_stitched_valid_candidate_is_joined_ported_or_on_the_border() -> None:
    """What the filter lets pass, stitching closes: random decoded-like candidates, every kept lane end ends
    on its port, on another lane's end or on the border (no end the filter counted as at the border is left
    short of it)."""
    rng = np.random.default_rng(5)
    port = PORTS[:1]
    config = StitchConfig()
    valid = 0
    for _ in range(300):
        k = int(rng.integers(1, 6))
        controls = rng.uniform(-30.0, 30.0, (k, 4, 2))
        controls[0, 0], controls[0, 1] = port[0].xy, port[0].xy + [rng.uniform(2, 10), rng.normal(0, 1)]
        lanes = bezier_points(controls)
        check = check_candidate(lanes, port, KNOWN, config)
        if not check.valid:
            continue
        valid += 1
        out = stitch(controls, check, port, config)
        ends = [(i, e) for i in range(len(out)) for e in (0, -1)]
        for i, e in ends:
            xy = out[i][e]
            on_border = abs(np.abs(xy).max() - 32.0) < 1e-6
            on_port = e == 0 and np.allclose(xy, port[0].xy)
            joined = any(np.linalg.norm(out[j][f] - xy) < 1e-6 for j, f in ends if (j, f) != (i, e) and f != e)
            assert on_border or on_port or joined, (i, e, xy)
    assert valid >= 20


def test_the_check_counts_what_it_drops_by_reason() -> None:
    """The held-out funnel says why a sample loses its lanes: each dropped lane is counted under one reason."""
    angle = np.linspace(0.0, 1.9 * np.pi, 20)
    half = np.linspace(0.0, np.pi, 20)
    lanes = np.stack([_line((0.5, 0.0), (31.0, 0.0)),                    # continues port 0: kept
                      _line((0.5, 3.5), (31.0, 3.5)),                    # continues port 1: kept
                      _line((0.6, 3.4), (31.0, 3.3)),                    # the same lane again: duplicate
                      np.stack([-15 + 5 * np.cos(angle), -15 + 5 * np.sin(angle)], -1),   # a loop
                      _line((-5.0, -10.0), (0.0, -14.0)),                # touches nothing: isolated
                      _line((20.0, -32.0), (20.0, -20.0)),               # from the border to nowhere: spur
                      np.stack([10 + 2.5 * np.sin(half), -25 + 2.5 * np.cos(half)], -1)])  # a 2.5 m hairpin
    check = check_candidate(lanes, PORTS, KNOWN, StitchConfig())
    assert check.valid and check.keep.tolist() == [0, 1]
    assert check.pruned == {"duplicate": 1, "looped": 1, "kinked": 1, "crossing": 0, "pinched": 0, "isolated": 1,
                            "spur": 1}


def test_lanes_drawn_into_one_point_are_a_knot_not_a_junction() -> None:
    """Eight ports 3.5 m apart: lanes running from each into one point near the border pass every other
    rule (their ends meet, headed for the border), but no junction gathers eight lane ends; the same lanes
    run side by side to the border are valid, and a real junction corner (an arriving lane and its three
    connectors: four ends) is no knot."""
    ports = [FrontierPort(k, np.array([0.0, 3.5 * k]), 0.0, True) for k in range(8)]
    known = dense_reference([_line((-30.0, 3.5 * k), (0.0, 3.5 * k)) for k in range(8)])
    knot = np.stack([_line((0.0, 3.5 * k), (28.0, 12.0)) for k in range(8)])
    check = check_candidate(knot, ports, known, StitchConfig())
    assert check.unmatched_ports == 0 and check.dangling == 0 and len(check.keep) == 8
    assert not check.valid and check.knotted == 8
    apart = np.stack([_line((0.0, 3.5 * k), (31.0, 3.5 * k)) for k in range(8)])
    check = check_candidate(apart, ports, known, StitchConfig())
    assert check.valid and check.knotted == 0
    corner = np.stack([_line((0.0, 0.0), (20.0, 0.0)), _line((20.0, 0.0), (31.0, 0.0)),
                       _line((20.0, 0.0), (25.0, 5.0)), _line((20.0, 0.0), (25.0, -5.0))])
    assert check_candidate(corner, ports[:1], known, StitchConfig()).knotted == 0


def test_a_kinked_lane_that_closes_a_port_is_spared() -> None:
    half = np.linspace(0.0, np.pi, 20)
    hairpin = np.stack([2.5 * np.sin(half), 2.5 - 2.5 * np.cos(half)], -1)     # leaves port 0, bends back
    lanes = np.stack([hairpin, _line((0.5, 3.5), (31.0, 3.5))])
    check = check_candidate(lanes, PORTS, KNOWN, StitchConfig())
    assert check.pruned["kinked"] == 0
    moved = np.stack([hairpin + [10.0, -20.0], _line((0.5, 3.5), (31.0, 3.5))])   # the same bend elsewhere
    assert check_candidate(moved, PORTS, KNOWN, StitchConfig()).pruned["kinked"] == 1


IN_PORTS = [FrontierPort(0, np.array([0.0, 10.2]), np.pi, False), FrontierPort(1, np.array([0.0, 13.6]), np.pi, False)]
IN_KNOWN = dense_reference([_line((0.0, 10.2), (-30.0, 10.2)), _line((0.0, 13.6), (-30.0, 13.6))])
ARRIVING = np.array([[32.0, 11.0], [22.0, 11.0], [12.0, 11.0], [2.5, 11.0]])      # into port 0
STUB = np.array([[3.9, 12.3], [2.1, 12.2], [1.2, 13.5], [0.0, 13.6]])             # its end overlaps the stub's start
FROM_ABOVE = np.array([[0.5, 32.0], [0.5, 25.0], [3.0, 14.0], [0.0, 13.6]])       # another lane into port 1


def test_a_lane_that_stitching_bends_into_a_hairpin_is_dropped() -> None:
    """The stub passes the check (a gentle 4 m lane into port 1, its start joined to the arriving lane's end),
    but stitching moves its start onto port 0, 3.4 m beside its end: a hairpin. It is dropped, and the
    candidate stays valid because another lane closes port 1."""
    controls = np.stack([ARRIVING, STUB, FROM_ABOVE])
    lanes = bezier_points(controls)
    config = StitchConfig()
    plain = check_candidate(lanes, IN_PORTS, IN_KNOWN, config)
    assert plain.valid and 1 in plain.keep
    assert kinked_lanes(np.array(stitch(controls, plain, IN_PORTS, config)), config).tolist() == [False, True, False]
    check, stitched = check_and_stitch(controls, lanes, IN_PORTS, IN_KNOWN, config)
    assert check.valid and check.keep.tolist() == [0, 2] and check.pruned["bent"] == 1
    assert len(stitched) == 2 and not kinked_lanes(np.array(stitched), config).any()


def test_a_bent_lane_is_not_spared_for_closing_a_port() -> None:
    controls = np.stack([ARRIVING, STUB])
    check, stitched = check_and_stitch(controls, bezier_points(controls), IN_PORTS, IN_KNOWN, StitchConfig())
    assert not check.valid and check.unmatched_ports == 1 and stitched == []


def test_a_lane_across_a_known_road_is_dropped_and_one_that_meets_it_at_its_end_is_not() -> None:
    """A neighbour's road runs across the front half at x = 15. A lane across it is dropped; a collinear
    continuation of a known lane and a lane ending on the road are not crossings. (The default spares a lane
    that continues a port: see the next test.)"""
    side_road = _line((15.0, -32.0), (15.0, 32.0))
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0)), _line((-30.0, 3.5), (0.0, 3.5)), side_road])
    across = _line((0.0, 0.0), (31.0, 0.0))
    onto = _line((0.0, 3.5), (15.0, 3.5))
    config = StitchConfig()
    assert crossing_lanes(np.stack([across, onto]), known, config).tolist() == [True, False]
    assert not crossing_lanes(np.stack([across]), dense_reference([_line((-30.0, 0.0), (0.0, 0.0))]), config).any()
    strict = StitchConfig(cross_spares_ports=False)
    check = check_candidate(np.stack([across, onto]), PORTS, known, strict)
    assert check.pruned["crossing"] == 1 and check.keep.tolist() == [1]
    assert check.unmatched_ports == 1 and not check.valid      # port 0 had only the lane across the road


def test_a_lane_that_continues_a_port_across_a_known_road_is_kept_and_a_stray_one_is_not() -> None:
    """The world makes such a crossing a junction (or refuses the tile next to moving traffic); dropping the
    port's only lane failed the tile instead (27% of a rollout's tiles fell back, most for this)."""
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0)), _line((-30.0, 3.5), (0.0, 3.5)),
                             _line((15.0, -32.0), (15.0, 32.0))])
    across, stray = _line((0.0, 0.0), (31.0, 0.0)), _line((5.0, -10.0), (31.0, -10.0))  # the stray closes no port
    check = check_candidate(np.stack([across, stray]), PORTS[:1], known, StitchConfig())
    assert check.pruned["crossing"] == 1 and check.keep.tolist() == [0] and check.valid


def test_a_lane_that_stitching_extends_across_a_known_road_is_dropped() -> None:
    """The lane stops 10 m short of the border, so stitching extends it there -- across a neighbour's road at
    x = 28 that the decoded lane never touched. (It continues a port, which the default spares.)"""
    port = PORTS[:1]
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0)), _line((28.0, -32.0), (28.0, 32.0))])
    short = np.array([[0.0, 0.0], [7.0, 0.0], [15.0, 0.0], [22.0, 0.0]])
    lanes = bezier_points(short[None])
    strict = StitchConfig(cross_spares_ports=False)
    assert check_candidate(lanes, port, known, strict).valid
    check, stitched = check_and_stitch(short[None], lanes, port, known, strict)
    assert check.pruned["bent"] == 1 and not check.valid and stitched == []
    check, stitched = check_and_stitch(short[None], lanes, port, known, StitchConfig())
    assert check.valid and abs(stitched[0][-1, 0] - 32.0) < 1e-9


def test_a_lane_whose_ends_stitch_onto_one_node_is_dropped() -> None:
    """Lane 1 (4 m) joins lane 0's end and lane 2's start, and lane 0 joins lane 2 directly (5 m along): all
    three ends are one node, and stitching folds lane 1 back and forth on itself (a rollout's planner failed
    on such a lane). It is dropped; lanes 0 and 2 still join."""
    lanes = np.stack([_line((0.0, 0.0), (10.0, 0.0)), _line((10.5, 0.0), (14.5, 0.0)), _line((15.0, 0.0), (32.0, 0.0))])
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0))])
    folded = stitch(fit_bezier(lanes), check_candidate(lanes, PORTS[:1], known, StitchConfig()), PORTS[:1],
                    StitchConfig())[1]
    assert np.linalg.norm(folded[0] - folded[-1]) < 1e-9
    check, stitched = check_and_stitch(fit_bezier(lanes), lanes, PORTS[:1], known, StitchConfig())
    assert check.valid and check.keep.tolist() == [0, 2] and check.pruned["bent"] == 1
    assert check.successors == [(0, 1)] and np.array_equal(stitched[0][-1], stitched[1][0])


def test_a_stitched_lane_that_turns_round_at_its_port_or_joint_is_hooked() -> None:
    """A rollout's lane (points taken from it): it leaves its port (heading -1.13) northwards within its first
    2 m, and the lane arriving at that node merges into it. A lane leaving along the port and turning a city
    corner (3.7 m radius) right after it is not hooked; the same turn-round at a joint of two new lanes is."""
    port = [FrontierPort(0, np.array([27.6, -20.4]), -1.13, True)]
    hooked = geometry.resample_polyline(np.array([[27.6, -20.4], [28.0, -18.3], [28.4, -10.8], [28.8, 1.5],
                                                  [29.1, 17.7], [29.4, 32.0]]), 20)
    arriving = _line((18.8, 0.0), (27.6, -20.4))
    arc = np.linspace(0.0, np.pi / 2, 8)
    turn = np.concatenate([np.stack([3.7 * np.sin(arc), 3.7 * (1.0 - np.cos(arc))], -1),
                           _line((3.7, 5.0), (3.7, 17.0), 12)])                   # a left corner, then straight
    corner = geometry.to_global(turn, np.array([27.6, -20.4]), -1.13)
    lanes = np.stack([hooked, arriving, corner])
    check = CandidateCheck(keep=np.arange(3), port_links=[(0, 0), (0, 2)], successors=[(1, 0), (1, 2)])
    assert hooked_lanes(lanes, check, port, StitchConfig()).tolist() == [True, False, False]
    joint = CandidateCheck(keep=np.arange(2), successors=[(0, 1)])
    assert hooked_lanes(np.stack([arriving, hooked]), joint, [], StitchConfig()).tolist() == [True, True]
    assert not hooked_lanes(np.stack([arriving, _line((27.6, -20.4), (31.0, -28.0))]), joint, [],
                            StitchConfig()).any()


def test_a_lane_ending_beside_the_start_of_one_the_other_way_is_pinched_off() -> None:
    """A two-way road: east continues out port 0, west arrives at in port 1, 3.5 m apart at the ports. Drawn
    narrowing to 1.8 m at the border, the next tile would get two opposed ports 1.8 m apart, which no sample
    can continue: the later port lane goes (the candidate fails); a lane closing no port goes first."""
    ports = [FrontierPort(0, np.array([0.0, 0.0]), 0.0, True), FrontierPort(1, np.array([0.0, 3.5]), np.pi, False)]
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0)), _line((0.0, 3.5), (-30.0, 3.5))])
    east, narrowed = _line((0.0, 0.0), (32.0, 0.0)), _line((32.0, 1.8), (0.0, 3.5))
    apart = _line((32.0, 3.5), (0.0, 3.5))
    config = StitchConfig()
    assert check_candidate(np.stack([east, apart]), ports, known, config).valid
    check = check_candidate(np.stack([east, narrowed]), ports, known, config)
    assert check.pruned["pinched"] == 1 and check.keep.tolist() == [0] and check.unmatched_ports == 1
    spur = geometry.resample_polyline(np.array([[32.0, 1.5], [26.0, 1.5], [22.0, 10.0], [20.0, 20.0]]), 20)  # no port
    check = check_candidate(np.stack([spur, east, apart]), ports, known, config)
    assert check.pruned["pinched"] == 1 and check.keep.tolist() == [1, 2] and check.valid


def test_a_lane_near_its_chord_is_stitched_straight_and_a_curve_keeps_its_shape() -> None:
    """Out of port 0 a lane with a 0.3 m S-bend runs to the border along the port's heading: stitched exactly
    straight (``straight_m``), and with the rule off it keeps its bend. Out of port 1 a lane that curves 3 m
    away from its chord is a curve, not a wiggle: it keeps its shape."""
    wiggle = np.array([[0.0, 0.0], [10.0, 0.7], [20.0, -0.7], [31.0, 0.0]])
    curve = np.array([[0.0, 3.5], [12.0, 3.5], [22.0, 8.0], [31.0, 14.0]])
    controls = np.stack([wiggle, curve])
    assert 0.2 < geometry.chord_offsets(bezier_points(wiggle[None]))[0] < 1.0
    assert geometry.chord_offsets(bezier_points(curve[None]))[0] > 2.0
    check = check_candidate(bezier_points(controls), PORTS, KNOWN, StitchConfig())
    assert check.valid and check.port_links == [(0, 0), (1, 1)]
    out = stitch(controls, check, PORTS, StitchConfig())
    assert np.abs(out[0][:, 1]).max() < 1e-9 and abs(out[0][-1, 0] - 32.0) < 1e-6
    assert geometry.chord_offsets(out[1]) > 2.0
    bent = stitch(controls, check, PORTS, StitchConfig(straight_m=0.0))
    assert np.abs(bent[0][:, 1]).max() > 0.2
    assert np.allclose(bent[1], out[1])


@pytest.mark.parametrize("lane, dropped", [
    (((0.0, 10.0), (30.0, 10.0)), True),            # 1.0 m beside it, same way, all along: a duplicate
    (((0.0, 10.5), (30.0, 10.5)), False),           # 1.5 m beside it: a neighbour lane
    (((30.0, 10.0), (0.0, 10.0)), True),            # 1.0 m beside it the other way: on top of it
    (((30.0, 10.8), (0.0, 10.8)), True),            # 1.8 m the other way: still within opposed_m
    (((30.0, 12.5), (0.0, 12.5)), False),           # 3.5 m the other way: a two-way road
    (((-19.0, 10.0), (11.0, 10.0)), False),         # beside it for a third of its length
    (((-12.0, 10.0), (18.0, 10.0)), True),          # beside it for 60% of its length
])
def test_a_lane_is_a_duplicate_of_an_earlier_one_when_most_of_its_probes_lie_on_it(
        lane: tuple[tuple[float, float], tuple[float, float]], dropped: bool) -> None:
    """The later of two new lanes goes when more than half of its probed vertices lie within ``overlap_m`` of
    the first one heading its way, or within ``opposed_m`` of it heading the other way."""
    first = _line((0.0, 9.0), (30.0, 9.0))
    no_known = dense_reference([])
    drop = duplicate_lanes(np.stack([first, _line(*lane)]), no_known, StitchConfig())
    assert drop.tolist() == [False, dropped]


def test_the_verdict_on_some_of_the_lanes_is_read_off_the_links_of_all() -> None:
    """Spur pruning judges lane set after lane set from one table of end links: for every subset of a
    candidate's lanes (a port continued twice, an optional joint two lanes reach, a chain, a spur, debris, a
    lane from the border), in either order, the table's verdict is the one measured on those lanes alone."""
    ports = PORTS + [FrontierPort(-1, np.array([20.0, 0.2]), 0.0, True, required=False),
                     FrontierPort(-1, np.array([20.0, -0.3]), 0.0, True, required=False)]
    lanes = np.stack([_line((0.5, 0.0), (31.0, 0.0)), _line((0.3, 3.4), (20.0, 3.6)),
                      _line((20.4, 3.5), (31.0, 3.5)), _line((0.4, 0.2), (15.0, 8.0)),
                      _line((20.2, 0.1), (25.0, -9.0)), _line((10.0, 15.0), (16.0, 18.0)),
                      _line((-31.9, -10.0), (-5.0, -10.0))])
    config = StitchConfig()
    links = EndLinks(lanes, ports, config)
    for size in range(len(lanes) + 1):
        for subset in itertools.combinations(range(len(lanes)), size):
            for rows in (np.array(subset, int), np.array(subset[::-1], int)):
                got, got_starts, got_ends = links.among(rows)
                alone, starts, ends = open_ends(lanes[rows], ports, config)
                assert (got.port_links, got.successors, got.dangling, got.unmatched_ports) \
                    == (alone.port_links, alone.successors, alone.dangling, alone.unmatched_ports), rows
                assert np.array_equal(got_starts, starts) and np.array_equal(got_ends, ends)


@pytest.mark.parametrize("order", [1, -1])
def test_a_lane_end_that_reaches_several_ports_stays_on_the_nearest(order: int) -> None:
    """Known lanes ending 1.5 m apart: the lane drawn from each (pinned on its port) reaches both ports, and
    stitching keeps each lane on its own port, whichever port comes first (snapping both onto one port
    stacked two lanes on top of each other, and left the other port to a merge)."""
    ports = [FrontierPort(0, np.array([0.0, 0.0]), 0.0, True), FrontierPort(1, np.array([0.0, -1.5]), 0.0, True)]
    ports = ports[::order]
    known = dense_reference([_line((-30.0, 0.0), (0.0, 0.0)), _line((-30.0, -1.5), (0.0, -1.5))])
    lanes = np.stack([_line((0.0, 0.0), (31.0, 0.0)), _line((0.0, -1.5), (20.0, -12.0))])
    config = StitchConfig()
    check = check_candidate(lanes, ports, known, config)
    assert check.valid, check
    assert len(check.port_links) == 4                   # each start reaches both ports
    out = stitch(fit_bezier(lanes), check, ports, config)
    assert np.array_equal(out[0][0], [0.0, 0.0]) and np.array_equal(out[1][0], [0.0, -1.5])
