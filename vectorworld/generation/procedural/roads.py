"""Road cross-sections and the geometry of road pieces (straight, arc, lane taper, Hermite curves).

A road is grown along a *reference line* in its *growth direction* (away from the known world). Its
lanes are parallel curves at lateral offsets from that line (``offset_m`` > 0 is left of the growth
direction). ``forward`` lanes travel along the growth direction, backward lanes against it; with
right-hand traffic forward lanes lie right of backward ones. All points are in the global frame (m).

Pieces are sampled at about ``SAMPLE_SPACING_M`` plus one extra sample ``END_REFINE_M`` from each end, so
that the heading of a lane's first / last segment (which is what ``Lane.start_pose`` / ``end_pose`` and
the world's ports report) equals the true tangent to within ~0.005 rad even on tight curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vectorworld import geometry

SAMPLE_SPACING_M = 2.0
"""Nominal spacing (m) of lane polyline vertices on straight and arc pieces."""
CONNECTOR_SPACING_M = 1.0
"""Nominal spacing (m) of vertices on junction connectors and adapters (tighter curves)."""
END_REFINE_M = 0.25
"""An extra vertex this far (m) from each end of a piece keeps end headings accurate."""


@dataclass(frozen=True)
class LaneSpec:
    """One lane of a cross-section: lateral offset (m, + left of the growth direction), direction of
    travel (True = along the growth direction) and width (m)."""

    offset_m: float
    forward: bool
    width_m: float


def cross_section(num_forward: int, num_backward: int, width_m: float) -> tuple[LaneSpec, ...]:
    """A regular cross-section sorted by offset: forward lanes right of the centre line, backward left.

    A one-way road (one count zero) is centred on the reference line.
    """
    if num_backward == 0 or num_forward == 0:
        n = num_forward + num_backward
        offsets = (np.arange(n) - (n - 1) / 2.0) * width_m
        return tuple(LaneSpec(float(o), num_forward > 0, width_m) for o in offsets)
    fwd = [LaneSpec(-(i + 0.5) * width_m, True, width_m) for i in reversed(range(num_forward))]
    bwd = [LaneSpec((i + 0.5) * width_m, False, width_m) for i in range(num_backward)]
    return tuple(fwd + bwd)


def half_width(specs: tuple[LaneSpec, ...] | list[LaneSpec]) -> float:
    """Distance (m) from the reference line to the farther road edge."""
    return max((abs(s.offset_m) + s.width_m / 2.0 for s in specs), default=0.0)


def normal(yaw: np.ndarray | float) -> np.ndarray:
    """Left unit normals (..., 2) of headings (...,) rad."""
    if isinstance(yaw, float | int | np.floating):
        return np.array([-math.sin(yaw), math.cos(yaw)])
    yaw = np.asarray(yaw, dtype=np.float64)
    return np.stack([-np.sin(yaw), np.cos(yaw)], -1)


def direction(yaw: np.ndarray | float) -> np.ndarray:
    """Unit direction vectors (..., 2) of headings (...,) rad."""
    if isinstance(yaw, float | int | np.floating):
        return np.array([math.cos(yaw), math.sin(yaw)])
    yaw = np.asarray(yaw, dtype=np.float64)
    return np.stack([np.cos(yaw), np.sin(yaw)], -1)


def arc_grid(length_m: float, spacing_m: float = SAMPLE_SPACING_M) -> np.ndarray:
    """Arc lengths (M,) from 0 to ``length_m``: uniform at <= ``spacing_m`` inside, plus a sample
    ``END_REFINE_M`` from each end (pieces shorter than 1 m get only their ends and midpoint)."""
    if length_m < 1.0:
        return np.array([0.0, 0.5 * length_m, length_m]) if length_m > 0.2 else np.array([0.0, length_m])
    inner = length_m - 2.0 * END_REFINE_M
    count = max(1, int(math.ceil(inner / spacing_m)))
    s = np.empty(count + 3)
    s[0], s[-1] = 0.0, length_m
    s[1:-1] = END_REFINE_M + (inner / count) * np.arange(count + 1)
    return s


def reference_path(xy: np.ndarray, yaw: float, s: np.ndarray, curvature: float) -> tuple[np.ndarray, np.ndarray]:
    """Points (M, 2) and headings (M,) at arc lengths ``s`` (M,) along a straight line (curvature 0) or
    a circular arc of signed ``curvature`` (1/m, + turns left) starting at pose (xy (2,), yaw)."""
    yaws = yaw + curvature * s
    if abs(curvature) < 1e-9:
        return xy + s[:, None] * direction(yaw), yaws
    c = 1.0 / curvature
    pts = np.empty((len(s), 2))
    pts[:, 0] = (np.sin(yaws) - math.sin(yaw)) * c + xy[0]
    pts[:, 1] = (math.cos(yaw) - np.cos(yaws)) * c + xy[1]
    return pts, yaws


def taper_blend(s: np.ndarray, length_m: float) -> np.ndarray:
    """Cosine blend weight (M,) from 0 at s = 0 to 1 at s = length, with zero slope at both ends.

    A lateral shift d over length L then has maximum curvature d * pi^2 / (2 L^2).
    """
    t = np.clip(s / max(length_m, 1e-9), 0.0, 1.0)
    return 0.5 * (1.0 - np.cos(np.pi * t))


@dataclass(frozen=True)
class PieceGeometry:
    """The lanes of one road piece, in growth order.

    lanes: (S, M, 2) m global, one polyline per slot of the cross-section;
    end_xy (2,), end_yaw: the reference pose at the end of the piece; length_m: reference arc length.
    """

    lanes: np.ndarray
    end_xy: np.ndarray
    end_yaw: float
    length_m: float


def sweep(xy: np.ndarray, yaw: float, length_m: float, curvature: float, offsets_from: np.ndarray,
          offsets_to: np.ndarray | None = None, spacing_m: float = SAMPLE_SPACING_M) -> PieceGeometry:
    """Sweep a cross-section along a straight / arc reference piece.

    offsets_from: (S,) lane offsets (m) at the start; offsets_to: (S,) at the end (a taper blends between
    them with :func:`taper_blend`; None keeps them constant). Lanes with constant offset on an arc are
    concentric arcs, so their radius is 1/|curvature| - offset (left turn).
    """
    s = arc_grid(length_m, spacing_m)
    ref, yaws = reference_path(xy, yaw, s, curvature)
    offsets = np.asarray(offsets_from, dtype=np.float64)[:, None] * np.ones_like(s)[None]
    if offsets_to is not None:
        delta = np.asarray(offsets_to, dtype=np.float64) - np.asarray(offsets_from, dtype=np.float64)
        offsets = offsets + delta[:, None] * taper_blend(s, length_m)[None]
    lanes = ref[None] + offsets[..., None] * normal(yaws)[None]
    return PieceGeometry(lanes, ref[-1].copy(), float(yaw + curvature * length_m), float(length_m))


def lane_points_at(xy: np.ndarray, yaw: float, offsets: np.ndarray) -> np.ndarray:
    """Positions (S, 2) of lanes at ``offsets`` (S,) across the reference pose (xy, yaw)."""
    return xy[None] + np.asarray(offsets, dtype=np.float64)[:, None] * normal(yaw)[None]


def hermite_path(p0: np.ndarray, yaw0: float, p1: np.ndarray, yaw1: float,
                 spacing_m: float = CONNECTOR_SPACING_M) -> np.ndarray:
    """A tangent-continuous cubic curve (M, 2) from pose (p0, yaw0) to (p1, yaw1).

    Built with :func:`vectorworld.geometry.hermite_curve` on a dense parameter grid (~0.2 m), then thinned
    to about ``spacing_m`` while keeping the second and second-last dense vertices (accurate end headings).
    Between aligned poses on one line the curve is that straight segment, traversed uniformly.
    """
    chord = float(np.linalg.norm(np.asarray(p1) - np.asarray(p0)))
    dense_n = max(6, int(math.ceil(1.3 * chord / END_REFINE_M)) + 1)
    dense = geometry.hermite_curve(np.asarray(p0, np.float64), yaw0, np.asarray(p1, np.float64), yaw1, dense_n)
    step = max(2, int(round(spacing_m * (dense_n - 1) / max(1.2 * chord, 1e-6))))
    inner = np.arange(step, dense_n - 2, step)
    return dense[np.concatenate([[0, 1], inner, [dense_n - 2, dense_n - 1]])]


def exit_distance(local_xy: np.ndarray, local_yaw: float, half_m: float) -> float:
    """Distance (m) along the ray from a tile-frame point (2,) with heading ``local_yaw`` to the border of
    the square [-half, half]^2 (0 if the point is already outside)."""
    if np.max(np.abs(local_xy)) >= half_m:
        return 0.0
    d = direction(local_yaw)
    best = np.inf
    for k in range(2):
        if abs(d[k]) > 1e-9:
            bound = half_m if d[k] > 0 else -half_m
            best = min(best, (bound - local_xy[k]) / d[k])
    return float(best)
