"""Validity filter and stitching of decoded candidate lanes, in the tile frame (m).

A candidate's new lanes are checked against the frontier (ports: where the known world's lanes must
continue) and the known lanes:

* duplicates of known lanes (most points within ``overlap_m`` and aligned) are dropped;
* every must-connect port needs a new lane starting (out port) or ending (in port) near it;
* every new lane start / end must be at a port, at another new lane's end / start, or at the tile border
  (otherwise it dangles inside the tile).

Stitching moves the winner's lane ends exactly onto the joint nodes (ports, shared junction points, the
border): each end displacement is blended linearly along the lane's arc length, so the rest of the lane
keeps its shape and the continuity gap at a link is exactly zero (up to float rounding).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M


@dataclass(frozen=True)
class StitchConfig:
    """Tolerances of the validity filter (m, rad)."""

    connect_m: float = 3.0
    connect_yaw_rad: float = 0.6
    border_m: float = 6.0
    overlap_m: float = 1.2
    overlap_fraction: float = 0.5
    min_length_m: float = 3.0


@dataclass(frozen=True)
class FrontierPort:
    """A port in the tile frame: xy (2,) m, yaw rad, is_out; ``index`` into the request's ports."""

    index: int
    xy: np.ndarray
    yaw: float
    is_out: bool


@dataclass
class CandidateCheck:
    """Result of checking one candidate. ``keep`` indexes the candidate's lanes that survive."""

    keep: np.ndarray
    port_lane: dict[int, int] = field(default_factory=dict)
    """port index -> kept-lane position (in ``keep``) connected to it."""
    successors: list[tuple[int, int]] = field(default_factory=list)
    """(i, j) kept-lane positions with end(i) joined to start(j)."""
    unmatched_ports: int = 0
    dangling: int = 0

    @property
    def valid(self) -> bool:
        return self.unmatched_ports == 0 and self.dangling == 0 and len(self.keep) > 0

    def score(self) -> tuple[float, ...]:
        """Larger is better: valid first, then fewer missing ports and dangling ends, then more lanes."""
        return (float(self.valid), -float(self.unmatched_ports), -float(self.dangling), float(len(self.keep)))


def _end_yaw(points: np.ndarray, at_end: bool) -> float:
    d = points[-1] - points[-3] if at_end else points[2] - points[0]
    return float(np.arctan2(d[1], d[0]))


def _yaw_close(a: float, b: float, tol: float) -> bool:
    return abs(float(geometry.wrap_angle(a - b))) <= tol


def border_distance(xy: np.ndarray, half: float = HALF_TILE_M) -> np.ndarray:
    """Distance (...) of points (..., 2) to the tile border (0 on it, positive inside or outside)."""
    return np.abs(half - np.max(np.abs(xy), axis=-1))


def _point_headings(lanes: np.ndarray) -> np.ndarray:
    """Heading (K, P) at every vertex of polylines (K, P, 2) (central differences)."""
    g = np.gradient(lanes, axis=1)
    return np.arctan2(g[..., 1], g[..., 0])


def _close_fraction(lanes: np.ndarray, yaw: np.ndarray, reference: np.ndarray, reference_yaw: np.ndarray,
                    config: StitchConfig) -> np.ndarray:
    """Fraction (K, R) of the points of each lane (K, P, 2) lying within ``overlap_m`` of polyline r's points
    (R, Q, 2), aligned within ``connect_yaw_rad``."""
    dist = np.linalg.norm(lanes[:, :, None, None] - reference[None, None], axis=-1)   # (K, P, R, Q)
    nearest = dist.argmin(-1)                                                        # (K, P, R)
    d = np.take_along_axis(dist, nearest[..., None], -1)[..., 0]
    ref_yaw = np.broadcast_to(reference_yaw[None, None], nearest.shape + reference_yaw.shape[-1:])
    near_yaw = np.take_along_axis(ref_yaw, nearest[..., None], -1)[..., 0]
    aligned = np.abs(geometry.wrap_angle(yaw[:, :, None] - near_yaw)) < config.connect_yaw_rad
    return ((d < config.overlap_m) & aligned).mean(1)


def lanes_reference(lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points (K * P, 2) and headings of fixed-size polylines (K, P, 2) (for the duplicate test)."""
    return lanes.reshape(-1, 2), _point_headings(lanes).reshape(-1)


def dense_reference(lanes: list[np.ndarray], spacing_m: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Densified points (M, 2) and headings (M,) of polylines (for the duplicate test)."""
    if not lanes:
        return np.zeros((0, 2)), np.zeros(0)
    pts, yaws = [], []
    for lane in lanes:
        dense = geometry.resample_by_spacing(lane, spacing_m)
        pts.append(dense)
        yaws.append(geometry.polyline_headings(dense))
    return np.concatenate(pts), np.concatenate(yaws)


def check_candidate(lanes: np.ndarray, ports: list[FrontierPort], known: tuple[np.ndarray, np.ndarray],
                    config: StitchConfig) -> CandidateCheck:
    """Check one candidate's new lanes (K, P, 2) (tile frame) against ports and known lanes.

    Lanes connected to nothing at either end (no port, no other new lane, away from the border) are
    dropped as debris before the verdict; any other dangling end makes the candidate invalid.
    """
    check, isolated = _check(lanes, ports, known, config)
    if not isolated:
        return check
    rest = np.array([k for pos, k in enumerate(check.keep) if pos not in isolated], np.int64)
    sub, _ = _check(lanes[rest], ports, known, config, dedupe=False)
    sub.keep = rest[sub.keep]
    return sub


def _check(lanes: np.ndarray, ports: list[FrontierPort], known: tuple[np.ndarray, np.ndarray],
           config: StitchConfig, dedupe: bool = True) -> tuple[CandidateCheck, set[int]]:
    """The candidate check proper; also returns the kept positions of lanes dangling at both ends."""
    keep: list[int] = []
    if len(lanes):
        length = geometry.polyline_lengths(lanes)[:, -1]
        yaw = _point_headings(lanes)
        dup_known = np.zeros(len(lanes), bool)
        if dedupe and len(known[0]):
            dup_known = (_close_fraction(lanes, yaw, known[0][None], known[1][None], config)[:, 0]
                         > config.overlap_fraction)
        mutual = _close_fraction(lanes, yaw, lanes, yaw, config) if dedupe else np.zeros((len(lanes),) * 2)
        for k in range(len(lanes)):
            if length[k] < config.min_length_m or dup_known[k]:
                continue
            if keep and np.any(mutual[k, keep] > config.overlap_fraction):
                continue
            keep.append(k)
    check = CandidateCheck(keep=np.array(keep, np.int64))
    kept = lanes[check.keep] if keep else np.zeros((0,) + lanes.shape[1:])
    starts, ends = kept[:, 0], kept[:, -1]
    start_yaw = np.array([_end_yaw(p, False) for p in kept])
    end_yaw = np.array([_end_yaw(p, True) for p in kept])
    start_used, end_used = np.zeros(len(kept), bool), np.zeros(len(kept), bool)
    for port in ports:
        ends_xy, yaws, used = (starts, start_yaw, start_used) if port.is_out else (ends, end_yaw, end_used)
        if len(kept) == 0:
            check.unmatched_ports += 1
            continue
        gap = np.linalg.norm(ends_xy - port.xy, axis=-1)
        ok = (gap < config.connect_m) & ~used & np.array([_yaw_close(y, port.yaw, config.connect_yaw_rad)
                                                           for y in yaws])
        if not ok.any():
            check.unmatched_ports += 1
            continue
        best = int(np.argmin(np.where(ok, gap, np.inf)))
        used[best] = True
        check.port_lane[port.index] = best
    joined = (np.linalg.norm(ends[:, None] - starts[None], axis=-1) < config.connect_m) & (
        np.abs(geometry.wrap_angle(end_yaw[:, None] - start_yaw[None])) <= config.connect_yaw_rad)
    np.fill_diagonal(joined, False)
    check.successors = [(int(i), int(j)) for i, j in zip(*np.nonzero(joined), strict=True)]
    start_ok = start_used | joined.any(0) | (border_distance(starts) < config.border_m)
    end_ok = end_used | joined.any(1) | (border_distance(ends) < config.border_m)
    check.dangling = int((~start_ok).sum() + (~end_ok).sum())
    isolated = set(np.flatnonzero(~start_ok & ~end_ok).tolist())
    return check, isolated


def _blend(points: np.ndarray, d_start: np.ndarray, d_end: np.ndarray) -> np.ndarray:
    """Move a polyline's ends by d_start / d_end, blending linearly in arc length in between."""
    s = geometry.polyline_lengths(points)
    w = (s / max(s[-1], 1e-9))[:, None]
    return points + (1.0 - w) * d_start + w * d_end


def _border_exit(xy: np.ndarray, yaw: float, half: float = HALF_TILE_M) -> np.ndarray:
    """The point where the ray from xy along yaw leaves the square [-half, half]^2 (xy inside it)."""
    d = np.array([np.cos(yaw), np.sin(yaw)])
    steps = []
    for axis in range(2):
        if abs(d[axis]) > 1e-9:
            bound = half if d[axis] > 0 else -half
            steps.append((bound - xy[axis]) / d[axis])
    return xy + max(0.0, min(steps)) * d


def _clip_inside(points: np.ndarray, half: float = HALF_TILE_M) -> np.ndarray:
    """Clamp points into the tile square (a lane that overshoots the border a little ends on it)."""
    return np.clip(points, -half, half)


def stitch(lanes: np.ndarray, check: CandidateCheck, ports: list[FrontierPort], config: StitchConfig
           ) -> list[np.ndarray]:
    """Snap the kept lanes (tile frame) onto ports, shared junction nodes and the border.

    Returns the stitched polylines, one per entry of ``check.keep``: starts of out-port lanes equal the
    port xy exactly, ends of in-port lanes too, and successor pairs share one end point.
    """
    kept = [_clip_inside(lanes[k].astype(np.float64)) for k in check.keep]
    n = len(kept)
    # Union-find over lane ends: node 2i = start of lane i, 2i+1 = end of lane i.
    parent = list(range(2 * n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i, j in check.successors:
        parent[find(2 * i + 1)] = find(2 * j)
    anchor: dict[int, np.ndarray] = {}
    for port in ports:
        if port.index in check.port_lane:
            lane = check.port_lane[port.index]
            anchor[find(2 * lane if port.is_out else 2 * lane + 1)] = port.xy
    groups: dict[int, list[np.ndarray]] = {}
    for node in range(2 * n):
        lane, is_end = divmod(node, 2)
        groups.setdefault(find(node), []).append(kept[lane][-1 if is_end else 0])
    target = {root: anchor.get(root, np.mean(pts, 0)) for root, pts in groups.items()}
    out = []
    for i, pts in enumerate(kept):
        d = []
        for is_end in (0, 1):
            node = 2 * i + is_end
            root = find(node)
            end_xy = pts[-1] if is_end else pts[0]
            if len(groups[root]) > 1 or root in anchor:
                d.append(target[root] - end_xy)
            elif border_distance(end_xy) < config.border_m:
                yaw = _end_yaw(pts, bool(is_end)) + (0.0 if is_end else np.pi)
                d.append(_border_exit(end_xy, yaw) - end_xy)
            else:
                d.append(np.zeros(2))
        out.append(_blend(pts, d[0], d[1]))
    return out
