"""Road pieces: cross-sections, swept straight/arc/taper pieces, Hermite paths, exit distances."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorworld import geometry
from vectorworld.generation.procedural.roads import (
    END_REFINE_M,
    arc_grid,
    cross_section,
    exit_distance,
    half_width,
    hermite_path,
    sweep,
)


def test_cross_section_puts_forward_lanes_right_of_backward_lanes() -> None:
    specs = cross_section(2, 1, 3.5)
    assert [s.forward for s in specs] == [True, True, False]
    assert [s.offset_m for s in specs] == [-5.25, -1.75, 1.75]
    assert half_width(specs) == 7.0
    one_way = cross_section(3, 0, 3.2)
    assert [s.offset_m for s in one_way] == [-3.2, 0.0, 3.2] and all(s.forward for s in one_way)


def test_arc_grid_has_refined_ends_and_bounded_spacing() -> None:
    s = arc_grid(23.0, 2.0)
    assert s[0] == 0.0 and s[-1] == 23.0
    assert np.isclose(s[1], END_REFINE_M) and np.isclose(s[-2], 23.0 - END_REFINE_M)
    assert np.all(np.diff(s) > 0.0) and np.diff(s).max() <= 2.0 + 1e-9


@settings(max_examples=40, deadline=None)
@given(radius=st.floats(30.0, 300.0), length=st.floats(2.0, 40.0), left=st.booleans(),
       yaw=st.floats(-np.pi, np.pi))
def test_arc_lanes_are_concentric_with_exact_radius(radius: float, length: float, left: bool, yaw: float) -> None:
    offsets = np.array([-5.25, -1.75, 1.75])
    kappa = (1.0 if left else -1.0) / radius
    geom = sweep(np.array([3.0, -4.0]), yaw, length, kappa, offsets)
    assert geom.lanes.shape[0] == 3
    for lane, off in zip(geom.lanes, offsets, strict=True):
        if len(lane) >= 3:
            expected = 1.0 / (radius - off if left else radius + off)
            assert np.allclose(geometry.curvature(lane)[1:-1], expected, rtol=1e-6)
        # the chord of the first and last segments is within 0.01 rad of the true tangent
        d0 = lane[1] - lane[0]
        assert abs(geometry.wrap_angle(np.arctan2(d0[1], d0[0]) - yaw)) < 0.01
    assert np.isclose(geom.end_yaw, yaw + kappa * length)


def test_taper_shifts_one_lane_smoothly_onto_its_neighbour() -> None:
    geom = sweep(np.zeros(2), 0.0, 30.0, 0.0, np.array([-1.75, -5.25]), np.array([-1.75, -1.75]))
    merging = geom.lanes[1]
    assert np.allclose(merging[0], [0.0, -5.25]) and np.allclose(merging[-1], geom.lanes[0][-1])
    assert geometry.curvature(merging).max() < 1.0 / 25.0
    # zero lateral slope at both ends: tangent-continuous with the straight lanes before and after
    assert abs(merging[1, 1] - merging[0, 1]) < 1e-3 and abs(merging[-1, 1] - merging[-2, 1]) < 1e-3


def test_hermite_path_meets_both_poses_exactly() -> None:
    p0, p1 = np.array([1.0, 2.0]), np.array([15.0, -9.0])
    path = hermite_path(p0, 0.0, p1, -np.pi / 2.0, 1.0)
    assert np.array_equal(path[0], p0) and np.array_equal(path[-1], p1)
    d0, d1 = path[1] - path[0], path[-1] - path[-2]
    assert abs(np.arctan2(d0[1], d0[0])) < 0.05
    assert abs(geometry.wrap_angle(np.arctan2(d1[1], d1[0]) + np.pi / 2.0)) < 0.05
    assert np.diff(geometry.polyline_lengths(path)).max() < 1.6
    straight = hermite_path(p0, 0.0, p0 + [20.0, 0.0], 0.0, 2.0)
    assert np.allclose(straight[:, 1], 2.0)


def test_exit_distance_along_a_ray() -> None:
    assert np.isclose(exit_distance(np.zeros(2), 0.0, 32.0), 32.0)
    assert np.isclose(exit_distance(np.array([0.0, 10.0]), np.pi / 2.0, 32.0), 22.0)
    assert np.isclose(exit_distance(np.zeros(2), np.pi / 4.0, 32.0), 32.0 * np.sqrt(2.0))
    assert exit_distance(np.array([40.0, 0.0]), 0.0, 32.0) == 0.0
