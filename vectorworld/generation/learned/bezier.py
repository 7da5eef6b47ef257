"""Lanes as cubic Bézier curves: the learned generator's lane representation, and port pinning.

A lane centreline is four control points P0..P3 (tile frame, m): P0 and P3 are its ends, P1 and P2 set the
end headings (P1 - P0 along the start, P3 - P2 along the end). A small model learns 8 numbers per lane far
more easily than a 20-point polyline, and a decoded curve is smooth by construction (no wiggles).

* :func:`fit_bezier` fits polylines (ends exact, P1 / P2 by least squares at chord-length parameters);
* :func:`bezier_pieces` cuts a curve into exact sub-curves;
* :func:`bezier_points` evaluates control points at ``LANE_POINTS`` uniform parameters (numpy), and
  :func:`bezier_basis` is the same linear map for torch;
* :func:`pin_to_ports` moves a decoded lane's end onto its port: the end control point onto the port, the
  next one along the port heading, so the port gap is exactly zero and the heading continues the port's.
"""

from __future__ import annotations

import functools

import numpy as np

CONTROL_POINTS = 4
BEZIER_FEATURES = CONTROL_POINTS * 2
MIN_HANDLE_M = 0.5
"""Shortest handle |P1 - P0| (|P3 - P2|) kept by pinning, so the port heading is well defined."""


def bernstein(t: np.ndarray) -> np.ndarray:
    """Cubic Bernstein basis (..., 4) at parameters t (...)."""
    t = np.asarray(t, np.float64)
    s = 1.0 - t
    return np.stack([s**3, 3.0 * s**2 * t, 3.0 * s * t**2, t**3], -1)


def bezier_basis(points: int) -> np.ndarray:
    """(points, 4) float32 basis at ``points`` uniform parameters in [0, 1]: curve = basis @ control."""
    return bernstein(np.linspace(0.0, 1.0, points)).astype(np.float32)


@functools.cache
def _uniform_basis(points: int) -> np.ndarray:
    """(points, 4) float64 basis at ``points`` uniform parameters in [0, 1] (computed once, read-only)."""
    basis = bernstein(np.linspace(0.0, 1.0, points))
    basis.flags.writeable = False
    return basis


def bezier_points(control: np.ndarray, points: int = 20) -> np.ndarray:
    """Evaluate control points (..., 4, 2) at ``points`` uniform parameters -> (..., points, 2)."""
    return _uniform_basis(points) @ np.asarray(control, np.float64)


def bezier_pieces(control: np.ndarray, params: list[float]) -> list[np.ndarray]:
    """Cut one cubic (4, 2) at the increasing parameters ``params`` in (0, 1): the control points of its
    len(params) + 1 pieces, each the exact sub-curve (de Casteljau), in order; consecutive pieces share their
    joint and its tangent direction."""
    pieces, rest, done = [], np.asarray(control, np.float64), 0.0
    for u in params:
        v = (u - done) / (1.0 - done)                   # the cut on the rest, which runs over [done, 1]
        a = rest[:-1] + v * (rest[1:] - rest[:-1])
        b = a[:-1] + v * (a[1:] - a[:-1])
        c = b[0] + v * (b[1] - b[0])
        pieces.append(np.stack([rest[0], a[0], b[0], c]))
        rest, done = np.stack([c, b[1], a[2], rest[3]]), u
    return [*pieces, rest]


def fit_bezier(polylines: np.ndarray) -> np.ndarray:
    """Least-squares cubic Bézier control points (..., 4, 2) of polylines (..., P, 2), P >= 2.

    The ends are kept exactly; P1 and P2 minimise the squared distance at chord-length parameters. A
    degenerate (zero-length) polyline gets P1 = P2 = its points' mean.
    """
    pts = np.asarray(polylines, np.float64)
    seg = np.linalg.norm(np.diff(pts, axis=-2), axis=-1)                         # (..., P - 1)
    total = seg.sum(-1, keepdims=True)
    t = np.concatenate([np.zeros(seg.shape[:-1] + (1,)), np.cumsum(seg, -1)], -1) / np.maximum(total, 1e-9)
    b = bernstein(t)                                                             # (..., P, 4)
    p0, p3 = pts[..., 0, :], pts[..., -1, :]
    rhs = pts - b[..., 0:1] * p0[..., None, :] - b[..., 3:4] * p3[..., None, :]  # (..., P, 2)
    a = b[..., 1:3]                                                              # (..., P, 2)
    ata = np.einsum("...pi,...pj->...ij", a, a)                                  # (..., 2, 2)
    atb = np.einsum("...pi,...pd->...id", a, rhs)                                # (..., 2, 2)
    det = ata[..., 0, 0] * ata[..., 1, 1] - ata[..., 0, 1] * ata[..., 1, 0]
    ok = (np.abs(det) > 1e-12) & (total[..., 0] > 1e-6)
    safe = np.where(ok, det, 1.0)[..., None, None]
    inv = np.stack([np.stack([ata[..., 1, 1], -ata[..., 0, 1]], -1),
                    np.stack([-ata[..., 1, 0], ata[..., 0, 0]], -1)], -2) / safe
    mid = np.einsum("...ij,...jd->...id", inv, atb)                              # (..., 2, 2): P1, P2
    mean = pts.mean(-2, keepdims=True)
    mid = np.where(ok[..., None, None], mid, np.broadcast_to(mean, mid.shape))
    return np.concatenate([p0[..., None, :], mid, p3[..., None, :]], -2)


def pin_to_ports(control: np.ndarray, hints: np.ndarray) -> np.ndarray:
    """Pin the lanes (L, 4, 2) (tile frame, m) whose port hint (L, 6) is set (see tile_tensors.port_hints:
    (starts at an out port, ends at an in port, x / 32, y / 32, cos, sin)).

    A lane starting at an out port gets P0 = port and P1 = port + h * heading (h = its decoded handle
    length, at least ``MIN_HANDLE_M``); a lane ending at an in port gets P3 = port, P2 = port - h * heading.
    Lanes without a hint are returned unchanged. Returns a new array.
    """
    from vectorworld.generation.learned.tile_tensors import HALF_TILE_M

    out = np.array(control, np.float64, copy=True)
    xy = hints[:, 2:4].astype(np.float64) * HALF_TILE_M
    heading = hints[:, 4:6].astype(np.float64)
    heading = heading / np.maximum(np.linalg.norm(heading, axis=-1, keepdims=True), 1e-9)
    for flag, end, inner, sign in ((0, 0, 1, 1.0), (1, 3, 2, -1.0)):
        rows = np.flatnonzero(hints[:, flag] > 0.5)
        if len(rows) == 0:
            continue
        handle = np.maximum(np.linalg.norm(out[rows, inner] - out[rows, end], axis=-1), MIN_HANDLE_M)
        out[rows, end] = xy[rows]
        out[rows, inner] = xy[rows] + sign * handle[:, None] * heading[rows]
    return out
