"""Bézier lanes: the fit reproduces lane shapes, and pinning puts a decoded lane exactly on its port."""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.bezier import MIN_HANDLE_M, bezier_points, fit_bezier, pin_to_ports
from vectorworld.generation.learned.candidates import decode_lanes
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, lane_control_points, lane_features


def _arc(radius: float, sweep: float, n: int = 20) -> np.ndarray:
    a = np.linspace(0.0, sweep, n)
    return np.stack([radius * np.sin(a), radius * (1.0 - np.cos(a))], -1)


def test_fit_reproduces_straight_and_curved_lanes() -> None:
    lanes = np.stack([np.linspace([0.0, 0.0], [30.0, 5.0], 20), _arc(15.0, np.pi / 2), _arc(40.0, 0.6)])
    control = fit_bezier(lanes)
    assert control.shape == (3, 4, 2)
    np.testing.assert_array_equal(control[:, 0], lanes[:, 0])
    np.testing.assert_array_equal(control[:, -1], lanes[:, -1])
    dense = bezier_points(control, 400)
    err = np.sqrt(((lanes[:, :, None] - dense[:, None]) ** 2).sum(-1)).min(-1)
    assert err.max() < 0.06
    curv = geometry.curvature(bezier_points(control[1:2], 20)[0])[2:-2]
    np.testing.assert_allclose(curv, 1.0 / 15.0, rtol=0.15)      # smooth: near the arc curvature, no wiggle
    assert np.all(np.abs(np.diff(curv, 2)) < 1e-3)
    np.testing.assert_allclose(lane_control_points(lane_features(lanes)), control, atol=1e-4)


def test_degenerate_polyline_does_not_blow_up() -> None:
    control = fit_bezier(np.zeros((1, 20, 2)))
    assert np.isfinite(control).all() and np.abs(control).max() == 0.0


def test_pinning_puts_the_lane_exactly_on_its_port() -> None:
    rng = np.random.default_rng(0)
    control = rng.uniform(-20.0, 20.0, (4, 4, 2))
    hints = np.zeros((4, 6), np.float32)
    port_out, yaw_out = np.array([1.25, -3.5]), 0.3
    port_in, yaw_in = np.array([-0.5, 7.0]), np.pi
    hints[1] = [1, 0, *(port_out / HALF_TILE_M), np.cos(yaw_out), np.sin(yaw_out)]
    hints[2] = [0, 1, *(port_in / HALF_TILE_M), np.cos(yaw_in), np.sin(yaw_in)]
    pinned = pin_to_ports(control, hints)
    np.testing.assert_array_equal(pinned[[0, 3]], control[[0, 3]])            # unhinted slots untouched
    out_xy = hints[1, 2:4].astype(np.float64) * HALF_TILE_M
    in_xy = hints[2, 2:4].astype(np.float64) * HALF_TILE_M
    assert np.array_equal(pinned[1, 0], out_xy) and np.array_equal(pinned[2, 3], in_xy)
    d_out, d_in = pinned[1, 1] - pinned[1, 0], pinned[2, 3] - pinned[2, 2]
    assert abs(np.arctan2(d_out[1], d_out[0]) - yaw_out) < 1e-6                 # leaves along the port
    assert abs(geometry.wrap_angle(np.arctan2(d_in[1], d_in[0]) - yaw_in)) < 1e-6
    assert np.linalg.norm(d_out) >= MIN_HANDLE_M and np.linalg.norm(d_in) >= MIN_HANDLE_M
    # after the whole decode (features -> control -> pinned -> 20 points) the port gap is exactly 0
    _, lanes = decode_lanes((control / HALF_TILE_M).reshape(4, 8).astype(np.float32), hints)
    assert np.linalg.norm(lanes[1, 0] - out_xy) == 0.0 and np.linalg.norm(lanes[2, -1] - in_xy) == 0.0


def test_pieces_are_exact_sub_curves_that_share_their_joints() -> None:
    from vectorworld.generation.learned.bezier import bernstein, bezier_pieces

    control = np.array([[0.0, 0.0], [10.0, 8.0], [25.0, -6.0], [32.0, 4.0]])
    pieces = bezier_pieces(control, [0.25, 0.7])
    assert len(pieces) == 3
    for piece, (u0, u1) in zip(pieces, [(0.0, 0.25), (0.25, 0.7), (0.7, 1.0)], strict=True):
        v = np.linspace(0.0, 1.0, 9)
        np.testing.assert_allclose(bernstein(v) @ piece, bernstein(u0 + v * (u1 - u0)) @ control, atol=1e-9)
    for a, b in zip(pieces[:-1], pieces[1:], strict=True):
        np.testing.assert_allclose(a[3], b[0], atol=1e-12)
        out, into = a[3] - a[2], b[1] - b[0]
        assert abs(out[0] * into[1] - out[1] * into[0]) < 1e-9 and out @ into > 0.0   # no kink at a cut
