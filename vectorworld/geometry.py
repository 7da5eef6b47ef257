"""SE(2) maths, polylines and oriented boxes.

Frames are right-handed, x forward, y left, yaw counter-clockwise from +x and wrapped to (-pi, pi].
Every function is vectorised over leading batch dimensions and uses float64 unless stated.
"""

from __future__ import annotations

import numpy as np

Array = np.ndarray


def clamp(values: Array, lo: Array | float, hi: Array | float) -> Array:
    """``np.clip(values, lo, hi)`` as its two ufuncs (the same values, without ``np.clip``'s dispatch cost on
    the small arrays of the per-step hot paths)."""
    return np.minimum(np.maximum(values, lo), hi)


def pair(x: Array, y: Array) -> Array:
    """``np.stack([x, y], -1)`` for two arrays of one shape, written into one new (..., 2) array."""
    out = np.empty(np.shape(x) + (2,), np.result_type(x, y))
    out[..., 0] = x
    out[..., 1] = y
    return out


def sq_norms(v: Array) -> Array:
    """Squared lengths (...) of vectors (..., 2): ``(v ** 2).sum(-1)``'s values, per coordinate (a numpy
    reduction over a last axis of 2 runs one slow inner loop per vector)."""
    return v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1]


def norms(v: Array) -> Array:
    """Lengths (...) of vectors (..., 2): ``np.linalg.norm(v, axis=-1)``'s values, per coordinate."""
    return np.sqrt(sq_norms(v))


def wrap_angle(angle: Array | float) -> Array:
    """Wrap angles (rad) to (-pi, pi]."""
    wrapped = np.mod(np.asarray(angle, dtype=np.float64) + np.pi, 2.0 * np.pi) - np.pi
    return np.where(wrapped <= -np.pi, wrapped + 2.0 * np.pi, wrapped)


def to_local(points: Array, origin_xy: Array, origin_yaw: Array | float) -> Array:
    """Express global points (..., 2) in the frame at (origin_xy (2,), origin_yaw)."""
    d = np.asarray(points, dtype=np.float64) - origin_xy
    c, s = np.cos(origin_yaw), np.sin(origin_yaw)
    return pair(c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1])


def in_square(points: Array, center_xy: Array, yaw: float, half_m: float) -> Array:
    """Boolean (...) whether global points (..., 2) lie in the square of half side ``half_m`` at
    (``center_xy``, ``yaw``) (tiles and tile frames)."""
    local = to_local(points, center_xy, yaw)
    return (np.abs(local[..., 0]) <= half_m) & (np.abs(local[..., 1]) <= half_m)


def to_global(points: Array, origin_xy: Array, origin_yaw: Array | float) -> Array:
    """Inverse of :func:`to_local`: frame points (..., 2) to global."""
    p = np.asarray(points, dtype=np.float64)
    c, s = np.cos(origin_yaw), np.sin(origin_yaw)
    return pair(c * p[..., 0] - s * p[..., 1], s * p[..., 0] + c * p[..., 1]) + origin_xy


def polyline_lengths(points: Array) -> Array:
    """Cumulative arc length (..., N) of polylines (..., N, 2), starting at 0."""
    points = np.asarray(points)
    seg = norms(points[..., 1:, :] - points[..., :-1, :])
    out = np.zeros(seg.shape[:-1] + (seg.shape[-1] + 1,))
    np.cumsum(seg, axis=-1, out=out[..., 1:])
    return out


def chord_offsets(points: Array) -> Array:
    """Largest distance (...) of polylines (..., N, 2) from their chords, the lines through their end points."""
    chord = points[..., -1, :] - points[..., 0, :]
    normal = np.stack([-chord[..., 1], chord[..., 0]], -1) / np.maximum(np.linalg.norm(chord, axis=-1), 1e-9)[..., None]
    return np.abs(((points - points[..., :1, :]) * normal[..., None, :]).sum(-1)).max(-1)


def polyline_headings(points: Array) -> Array:
    """Heading (N,) of a polyline (N, 2) at each vertex (central differences, one-sided at ends)."""
    d = np.gradient(points, axis=0) if len(points) > 2 else np.repeat(np.diff(points, axis=0), 2, 0)
    return np.arctan2(d[:, 1], d[:, 0])


def resample_polyline(points: Array, num_points: int) -> Array:
    """Resample a polyline (N, 2) to ``num_points`` points equally spaced in arc length."""
    s = polyline_lengths(points)
    targets = np.linspace(0.0, s[-1], num_points)
    return interpolate_polyline(points, s, targets)


def resample_by_spacing(points: Array, spacing_m: float) -> Array:
    """Resample a polyline (N, 2) at about ``spacing_m`` metres, keeping both end points exactly."""
    s = polyline_lengths(points)
    count = max(2, int(np.ceil(s[-1] / spacing_m)) + 1)
    return interpolate_polyline(points, s, np.linspace(0.0, s[-1], count))


def interpolate_polyline(points: Array, s: Array, targets: Array) -> Array:
    """Points (M, 2) at arc lengths ``targets`` (M,) along a polyline with cumulative lengths ``s``."""
    targets = clamp(targets, s[0], s[-1])
    out = pair(np.interp(targets, s, points[:, 0]), np.interp(targets, s, points[:, 1]))
    out[targets >= s[-1]] = points[-1]
    return out


def polyline_piece(points: Array, s: Array, a: float, b: float) -> Array:
    """The part of a polyline (N, 2) with cumulative lengths ``s`` between arc lengths ``a`` < ``b``."""
    inside = (s > a) & (s < b)
    ends = interpolate_polyline(points, s, np.array([a, b]))
    return np.concatenate([ends[:1], points[inside], ends[1:]])


def project_to_polyline(points: Array, polyline: Array) -> tuple[Array, Array, Array]:
    """Project points (M, 2) onto a polyline (N, 2).

    Returns arc length along the polyline (M,), signed lateral offset (M,; + is left of the direction
    of travel) and the heading of the polyline at the projection (M,).
    """
    a = polyline[:-1]
    ab = polyline[1:] - a
    raw_len2 = np.sum(ab * ab, -1)
    seg_len2 = np.maximum(raw_len2, 1e-12)
    ap = points[:, None, :] - a
    t = np.minimum(np.maximum(np.sum(ap * ab, -1) / seg_len2, 0.0), 1.0)
    dist2 = np.sum((points[:, None, :] - (a + t[..., None] * ab)) ** 2, -1)
    seg = np.argmin(dist2, axis=1)
    seg_len = np.sqrt(seg_len2[seg])
    s_before = np.concatenate([[0.0], np.cumsum(np.sqrt(raw_len2))])[seg]  # polyline_lengths, without its calls
    s = s_before + t[np.arange(len(points)), seg] * seg_len
    direction = ab[seg] / seg_len[:, None]
    rel = ap[np.arange(len(points)), seg]
    lateral = direction[:, 0] * rel[:, 1] - direction[:, 1] * rel[:, 0]
    return s, lateral, np.arctan2(direction[:, 1], direction[:, 0])


def point_segment_distance(points: Array, a: Array, b: Array) -> Array:
    """Distance (M, K) from points (M, 2) to segments a->b (K, 2)."""
    ab = b - a
    t = np.sum((points[:, None] - a[None]) * ab[None], -1) / np.maximum(np.sum(ab * ab, -1), 1e-12)[None]
    closest = a[None] + np.clip(t, 0.0, 1.0)[..., None] * ab[None]
    return norms(points[:, None] - closest)


def segment_crossing(p: Array, r: Array, q: Array, s: Array) -> tuple[Array, Array, Array]:
    """Where segments p + t r and q + u s (broadcast (..., 2)) meet: t (...), u (...) and the cross product
    r x s (...). The lines are parallel where r x s is 0 (t and u are then meaningless); the segments
    cross where it is not and both t and u lie in [0, 1]."""
    denom = r[..., 0] * s[..., 1] - r[..., 1] * s[..., 0]
    safe = np.where(denom == 0.0, 1.0, denom)
    qp = q - p
    t = (qp[..., 0] * s[..., 1] - qp[..., 1] * s[..., 0]) / safe
    u = (qp[..., 0] * r[..., 1] - qp[..., 1] * r[..., 0]) / safe
    return t, u, denom


def box_corners(xy: Array, yaw: Array, length: Array, width: Array) -> Array:
    """Corners (..., 4, 2) of oriented boxes, counter-clockwise from front-left."""
    half = pair(length / 2.0, width / 2.0)[..., None, :]
    signs = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
    local = half * signs
    c, s = np.cos(yaw)[..., None], np.sin(yaw)[..., None]
    gx = c * local[..., 0] - s * local[..., 1]
    gy = s * local[..., 0] + c * local[..., 1]
    return pair(gx, gy) + np.asarray(xy)[..., None, :]


def boxes_overlap(corners_a: Array, corners_b: Array) -> Array:
    """Separating-axis test between convex quads (..., 4, 2) and (..., 4, 2) (broadcast). Bool (...)."""
    ca, cb = np.broadcast_arrays(corners_a, corners_b)
    overlap = np.ones(ca.shape[:-2], dtype=bool)
    for corners in (ca, cb):
        for i in range(2):
            edge = corners[..., i + 1, :] - corners[..., i, :]
            ax, ay = -edge[..., 1, None], edge[..., 0, None]        # the edge's normal, per corner
            pa = ca[..., 0] * ax + ca[..., 1] * ay
            pb = cb[..., 0] * ax + cb[..., 1] * ay
            separated = (pa.max(-1) < pb.min(-1)) | (pb.max(-1) < pa.min(-1))
            overlap &= ~separated
    return overlap


def pairwise_box_overlap(xy: Array, yaw: Array, length: Array, width: Array, valid: Array,
                         changed: Array | None = None) -> Array:
    """Symmetric boolean matrix (N, N) of overlapping valid boxes; the diagonal is False.

    A cheap circle test prunes pairs before the exact separating-axis test. With ``changed`` (N,) bool,
    only pairs with at least one changed box are tested (the others are False in the result).
    """
    n = len(xy)
    result = np.zeros((n, n), dtype=bool)
    live = np.nonzero(valid)[0]
    rows = live if changed is None else np.nonzero(valid & changed)[0]
    if len(live) < 2 or len(rows) == 0:
        return result
    radius = 0.5 * np.hypot(length, width)
    delta = xy[rows][:, None] - xy[live][None]
    reach = radius[rows][:, None] + radius[live][None]
    near = np.einsum("ijk,ijk->ij", delta, delta) < reach * reach
    i, j = np.nonzero(near)
    a, b = rows[i], live[j]
    # Each pair once: a < b, or b's own row is not searched (its box did not change).
    keep = (a < b) if changed is None else ((a < b) | ~changed[b]) & (a != b)
    a, b = a[keep], b[keep]
    if len(a) == 0:
        return result
    hit = boxes_overlap(box_corners(xy[a], yaw[a], length[a], width[a]),
                        box_corners(xy[b], yaw[b], length[b], width[b]))
    a, b = a[hit], b[hit]
    result[a, b] = True
    result[b, a] = True
    return result


def hermite_curve(p0: Array, yaw0: float, p1: Array, yaw1: float, num_points: int) -> Array:
    """A cubic Hermite curve (num_points, 2) from pose (p0, yaw0) to (p1, yaw1), tangent-continuous."""
    scale = np.linalg.norm(np.asarray(p1) - np.asarray(p0))
    t0 = scale * np.array([np.cos(yaw0), np.sin(yaw0)])
    t1 = scale * np.array([np.cos(yaw1), np.sin(yaw1)])
    t = np.linspace(0.0, 1.0, num_points)[:, None]
    h00 = 2 * t**3 - 3 * t**2 + 1
    h10 = t**3 - 2 * t**2 + t
    h01 = -2 * t**3 + 3 * t**2
    h11 = t**3 - t**2
    return h00 * p0 + h10 * t0 + h01 * p1 + h11 * t1


def box_reach_m(length_m: float, width_m: float, curvature_per_m: float) -> float:
    """How far (m) a box of ``length_m`` x ``width_m`` centred and tangent on a path of curvature
    ``curvature_per_m`` reaches to the side of the path: half its width on a straight, more on a curve,
    where its outer front and rear corners swing out (a long vehicle sweeps wider than its lane)."""
    if curvature_per_m <= 1e-6:
        return width_m / 2.0
    radius = 1.0 / curvature_per_m
    return float(np.hypot(radius + width_m / 2.0, length_m / 2.0) - radius)


def curvature(points: Array) -> Array:
    """Unsigned curvature (..., N) 1/m at each vertex of polylines (..., N, 2) (zero at the ends)."""
    out = np.zeros(points.shape[:-1])
    if points.shape[-2] < 3:
        return out
    a, b, c = points[..., :-2, :], points[..., 1:-1, :], points[..., 2:, :]
    ab, bc, ac = norms(b - a), norms(c - b), norms(c - a)
    cross = np.abs((b - a)[..., 0] * (c - a)[..., 1] - (b - a)[..., 1] * (c - a)[..., 0])
    out[..., 1:-1] = 2.0 * cross / np.maximum(ab * bc * ac, 1e-9)
    return out
