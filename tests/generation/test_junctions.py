"""Junction layout and turn connectors: coverage of every lane, exact end points, right-hand turns."""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.generation.procedural.junctions import ArmSpec, layout_junction, turn_angle
from vectorworld.generation.procedural.roads import LaneSpec, cross_section


def _check_connectors(layout) -> None:  # noqa: ANN001 - JunctionLayout
    for c in layout.connectors():
        p0, yaw0 = layout.approaches[c.from_approach].lane_pose(c.from_lane)
        p1, yaw1 = layout.approaches[c.to_approach].lane_pose(c.to_lane)
        assert np.array_equal(c.points[0], p0) and np.array_equal(c.points[-1], p1)
        d0, d1 = c.points[1] - c.points[0], c.points[-1] - c.points[-2]
        assert abs(geometry.wrap_angle(np.arctan2(d0[1], d0[0]) - yaw0)) < 0.05
        assert abs(geometry.wrap_angle(np.arctan2(d1[1], d1[0]) - yaw1)) < 0.05


def _coverage(layout) -> tuple[set, set]:  # noqa: ANN001
    exits = {(a, i) for a, i, _, _ in layout.pairs}
    feeds = {(b, j) for _, _, b, j in layout.pairs}
    return exits, feeds


def test_four_way_junction_connects_every_lane_without_u_turns() -> None:
    main = cross_section(2, 2, 3.5)
    side = cross_section(1, 1, 3.3)
    arms = (ArmSpec(0.0, main), ArmSpec(np.pi / 2, side), ArmSpec(-np.pi / 2, side))
    layout = layout_junction(np.array([5.0, 1.0]), 0.3, main, arms, corner_m=3.0)
    assert layout is not None
    exits, feeds = _coverage(layout)
    for a, approach in enumerate(layout.approaches):
        assert all((a, i) in exits for i in approach.entering())
        assert all((a, j) in feeds for j in approach.exiting())
    assert all(a != b for a, _, b, _ in layout.pairs)
    # right turns start from the rightmost entering lane, left turns from the leftmost
    for a, i, b, _ in layout.pairs:
        turn = turn_angle(layout.approaches[a], layout.approaches[b])
        ins = layout.approaches[a].entering()
        if turn < -np.pi / 4:
            assert i == ins[0]
        elif turn > np.pi / 4 and len(ins) > 1:
            assert i in (ins[-1], ins[0])
    _check_connectors(layout)


def test_t_end_splits_the_incoming_lanes_between_left_and_right() -> None:
    main = cross_section(2, 1, 3.5)
    arms = (ArmSpec(np.pi / 2, cross_section(1, 1, 3.5)), ArmSpec(-np.pi / 2, cross_section(2, 1, 3.5)))
    layout = layout_junction(np.zeros(2), 0.0, main, arms, corner_m=2.5)
    assert layout is not None
    exits, feeds = _coverage(layout)
    assert all((0, i) in exits for i in layout.approaches[0].entering())
    assert all((b, j) in feeds for b in (1, 2) for j in layout.approaches[b].exiting())
    _check_connectors(layout)


def test_arms_do_not_overlap_the_box() -> None:
    main = cross_section(3, 3, 3.6)
    side = cross_section(2, 2, 3.4)
    layout = layout_junction(np.zeros(2), 0.0, main, (ArmSpec(0.0, main), ArmSpec(np.pi / 2, side)), 2.0)
    assert layout is not None
    # the side arm starts beyond the main road's edge, the straight arm beyond the side road's edge
    assert layout.approaches[2].xy[1] >= 3 * 3.6 + 2.0 - 1e-9
    assert layout.approaches[1].xy[0] - layout.center_xy[0] >= 2 * 3.4 + 2.0 - 1e-9


def test_impossible_junction_is_refused() -> None:
    one_way_in = tuple(LaneSpec(s.offset_m, False, s.width_m) for s in cross_section(1, 0, 3.5))
    main = cross_section(1, 0, 3.5)
    layout = layout_junction(np.zeros(2), 0.0, main, (ArmSpec(np.pi / 2, one_way_in),), 3.0)
    assert layout is None  # the incoming lane could not leave the junction
