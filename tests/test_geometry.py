"""Geometry units and properties: SE(2) round trips, polylines, boxes."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorworld import geometry

finite = st.floats(-1e3, 1e3, allow_nan=False)
angles = st.floats(-20.0, 20.0, allow_nan=False)


@given(angles)
def test_wrap_angle_range_and_equivalence(a):
    w = float(geometry.wrap_angle(a))
    assert -np.pi < w <= np.pi
    assert np.isclose(np.cos(w), np.cos(a)) and np.isclose(np.sin(w), np.sin(a))


@settings(max_examples=50)
@given(finite, finite, angles, finite, finite)
def test_local_global_round_trip(ox, oy, yaw, px, py):
    origin, p = np.array([ox, oy]), np.array([[px, py]])
    back = geometry.to_global(geometry.to_local(p, origin, yaw), origin, yaw)
    assert np.allclose(back, p, atol=1e-6)


def test_to_local_puts_point_ahead_on_x():
    local = geometry.to_local(np.array([[1.0, 1.0]]), np.zeros(2), np.pi / 4)
    assert np.allclose(local, [[np.sqrt(2), 0.0]])


def test_resample_keeps_ends_and_spacing():
    pts = np.array([[0.0, 0.0], [10.0, 0.0], [10.0, 10.0]])
    out = geometry.resample_polyline(pts, 21)
    assert np.allclose(out[0], pts[0]) and np.allclose(out[-1], pts[-1])
    assert np.allclose(np.linalg.norm(np.diff(out, axis=0), axis=1), 1.0)


def test_project_to_polyline_signed_offset():
    line = np.array([[0.0, 0.0], [10.0, 0.0]])
    s, lat, heading = geometry.project_to_polyline(np.array([[3.0, 2.0], [4.0, -1.0]]), line)
    assert np.allclose(s, [3.0, 4.0]) and np.allclose(lat, [2.0, -1.0]) and np.allclose(heading, 0.0)


def test_box_overlap_cases():
    a = geometry.box_corners(np.zeros(2), np.float64(0.0), np.float64(4.0), np.float64(2.0))
    touching = geometry.box_corners(np.array([3.9, 0.0]), np.float64(0.0), np.float64(4.0), np.float64(2.0))
    apart = geometry.box_corners(np.array([4.2, 0.0]), np.float64(0.0), np.float64(4.0), np.float64(2.0))
    rotated = geometry.box_corners(np.array([2.5, 2.5]), np.float64(np.pi / 4), np.float64(4.0), np.float64(2.0))
    assert geometry.boxes_overlap(a, touching)
    assert not geometry.boxes_overlap(a, apart)
    assert geometry.boxes_overlap(a, rotated)


def test_pairwise_overlap_matrix():
    xy = np.array([[0.0, 0.0], [3.0, 0.0], [30.0, 0.0]])
    m = geometry.pairwise_box_overlap(xy, np.zeros(3), np.full(3, 4.0), np.full(3, 2.0), np.ones(3, bool))
    assert m[0, 1] and m[1, 0] and not m[0, 2] and not m.diagonal().any()


@settings(max_examples=30)
@given(st.floats(5.0, 300.0))
def test_curvature_of_circle(radius):
    t = np.linspace(0, 0.5, 50)
    circle = radius * np.stack([np.sin(t), 1 - np.cos(t)], -1)
    assert np.allclose(geometry.curvature(circle)[1:-1], 1.0 / radius, rtol=1e-3)


def test_hermite_curve_tangents():
    curve = geometry.hermite_curve(np.zeros(2), 0.0, np.array([10.0, 10.0]), np.pi / 2, 50)
    heads = geometry.polyline_headings(curve)
    assert abs(heads[0]) < 0.05 and abs(heads[-1] - np.pi / 2) < 0.05


def test_segment_crossing_gives_both_parameters_and_flags_parallel_segments():
    t, u, denom = geometry.segment_crossing(np.array([0.0, 0.0]), np.array([4.0, 0.0]),
                                            np.array([1.0, -2.0]), np.array([0.0, 8.0]))
    assert (float(t), float(u)) == (0.25, 0.25) and float(denom) == 32.0
    _, _, parallel = geometry.segment_crossing(np.array([0.0, 0.0]), np.array([4.0, 0.0]),
                                               np.array([0.0, 1.0]), np.array([2.0, 0.0]))
    assert float(parallel) == 0.0


def test_chord_offsets_is_the_largest_distance_from_the_chord():
    x = np.linspace(0.0, 20.0, 21)
    bow = np.stack([x, 0.5 * (1.0 - (x / 10.0 - 1.0) ** 2)], -1)          # 0.5 m off its chord at x = 10
    line = np.stack([x, 0.3 * x], -1)
    rotated = geometry.to_global(bow, np.array([3.0, -2.0]), 0.7)
    assert np.allclose(geometry.chord_offsets(np.stack([bow, line, rotated])), [0.5, 0.0, 0.5])


def test_norms_and_polyline_lengths_give_numpys_values_exactly():
    """The per-coordinate helpers replace numpy's reductions over a last axis of 2 on the filter's hot paths;
    they must return the very same floats (the learned generator's tiles may not change by a bit)."""
    v = np.random.default_rng(0).normal(size=(7, 5, 2)) * 30.0
    assert np.array_equal(geometry.norms(v), np.linalg.norm(v, axis=-1))
    assert np.array_equal(geometry.sq_norms(v), (v ** 2).sum(-1))
    expected = np.concatenate([np.zeros((7, 1)), np.cumsum(np.linalg.norm(np.diff(v, axis=-2), axis=-1), -1)], -1)
    assert np.array_equal(geometry.polyline_lengths(v), expected)
    assert np.array_equal(geometry.polyline_lengths(v[0]), expected[0])
    assert geometry.polyline_lengths([[0.0, 0.0], [3.0, 4.0]]).tolist() == [0.0, 5.0]
