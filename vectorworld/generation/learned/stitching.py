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
    max_turn_rad: float = 4.0
    """A lane whose heading turns more than this in all (summed along it) is a loop, not a road: dropped
    (U-turns turn pi; a decoded Bézier can curl into a 12 m loop that traffic cannot drive)."""
    prune_spurs: bool = True
    """Drop new lanes with a dangling end (repeatedly: a lane left dangling by that goes too) instead of
    rejecting the candidate; the verdict then rests on the ports still being continued. Off: the strict
    filter (any dangling end rejects), used to test the filter on ground truth."""


@dataclass(frozen=True)
class FrontierPort:
    """A place where a new lane may start (``is_out``: a known lane ends there) or end (a known lane starts
    there), in the tile frame: xy (2,) m, yaw rad (direction of travel).

    ``required`` ports must be continued by a new lane (the frontier's open ends); the others are joints
    a new lane may use (open ends deep in the known half, starts / ends of known lanes inside the tile: a
    new road merging into a known one). ``index`` points into the request's ports (-1 for a joint that is
    not an open port); ``lane_id`` is the known lane.
    """

    index: int
    xy: np.ndarray
    yaw: float
    is_out: bool
    required: bool = True
    lane_id: int = -1


@dataclass
class CandidateCheck:
    """Result of checking one candidate. ``keep`` indexes the candidate's lanes that survive."""

    keep: np.ndarray
    port_links: list[tuple[int, int]] = field(default_factory=list)
    """(position in the checked ports list, kept-lane position) pairs: the lane starts at (out port) / ends
    at (in port) that port. Several lanes may share one port (a junction fanning out at the frontier)."""
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


@dataclass(frozen=True)
class KnownLanes:
    """The known lanes of a tile for the duplicate test: points (M, 2) and headings (M,) (tile frame)."""

    points: np.ndarray
    headings: np.ndarray


def _end_yaw(points: np.ndarray, at_end: bool) -> float:
    d = points[-1] - points[-3] if at_end else points[2] - points[0]
    return float(np.arctan2(d[1], d[0]))


def _end_yaws(lanes: np.ndarray, at_end: bool) -> np.ndarray:
    """Heading (K,) at the start or end of fixed-size polylines (K, P, 2)."""
    d = lanes[:, -1] - lanes[:, -3] if at_end else lanes[:, 2] - lanes[:, 0]
    return np.arctan2(d[:, 1], d[:, 0])


def border_distance(xy: np.ndarray, half: float = HALF_TILE_M) -> np.ndarray:
    """Distance (...) of points (..., 2) to the tile border (0 on it, positive inside or outside)."""
    return np.abs(half - np.max(np.abs(xy), axis=-1))


def _point_headings(lanes: np.ndarray) -> np.ndarray:
    """Heading (K, P) at every vertex of polylines (K, P, 2) (central differences)."""
    g = np.gradient(lanes, axis=1)
    return np.arctan2(g[..., 1], g[..., 0])


_PROBE = slice(1, None, 2)
"""The lane vertices probed by the duplicate test (every other one)."""


def _near_aligned(probe: np.ndarray, probe_yaw: np.ndarray, points: np.ndarray, yaw: np.ndarray,
                  config: StitchConfig) -> np.ndarray:
    """(S, M) bool: probe point s lies within ``overlap_m`` of point m with headings within
    ``connect_yaw_rad`` -- one 2-D distance matrix, no per-lane-pair 4-D tensor."""
    d2 = (probe * probe).sum(-1)[:, None] + (points * points).sum(-1)[None, :] - 2.0 * probe @ points.T
    close = d2 < config.overlap_m ** 2
    rows, cols = np.nonzero(close)
    if len(rows):  # headings only where close (a small share of the pairs)
        close[rows, cols] = np.abs(geometry.wrap_angle(probe_yaw[rows] - yaw[cols])) < config.connect_yaw_rad
    return close


def lanes_reference(lanes: np.ndarray) -> KnownLanes:
    """Known lanes as fixed-size polylines (K, P, 2) -> points and headings for the duplicate test."""
    return KnownLanes(lanes.reshape(-1, 2), _point_headings(lanes).reshape(-1))


def dense_reference(lanes: list[np.ndarray], spacing_m: float = 1.0) -> KnownLanes:
    """Known lanes as ragged polylines, densified at ``spacing_m`` (for the duplicate test)."""
    if not lanes:
        return KnownLanes(np.zeros((0, 2)), np.zeros(0))
    pts, yaws = [], []
    for lane in lanes:
        dense = geometry.resample_by_spacing(lane, spacing_m)
        pts.append(dense)
        yaws.append(geometry.polyline_headings(dense))
    return KnownLanes(np.concatenate(pts), np.concatenate(yaws))


def duplicate_lanes(lanes: np.ndarray, known: KnownLanes, config: StitchConfig,
                    first: np.ndarray | None = None) -> np.ndarray:
    """Which lanes (K, P, 2) to drop (K,) bool: a lane is a duplicate if more than ``overlap_fraction`` of
    its probed vertices lie close to and aligned with a known lane, or with a lane kept before it; shorter
    than ``min_length_m`` counts as a duplicate too. Lanes flagged in ``first`` (K,) bool (the ones closing a
    required port) are considered first, so of two overlapping lanes the one that closes a port stays; they
    are never duplicates of a known lane, and duplicates of another lane only if both ends coincide (two
    ports merging into one lane are two lanes)."""
    k, p = lanes.shape[:2]
    if k == 0:
        return np.zeros(0, bool)
    yaw = _point_headings(lanes)
    probe, probe_yaw = lanes[:, _PROBE].reshape(-1, 2), yaw[:, _PROBE].reshape(-1)
    per_lane = len(range(p)[_PROBE])
    drop = geometry.polyline_lengths(lanes)[:, -1] < config.min_length_m
    if len(known.points):  # a lane that closes a port is kept even where it runs along a known lane (a merge)
        hit = _near_aligned(probe, probe_yaw, known.points, known.headings, config).any(1)
        dup_known = hit.reshape(k, per_lane).mean(1) > config.overlap_fraction
        drop |= dup_known if first is None else dup_known & ~first
    near = _near_aligned(probe, probe_yaw, lanes.reshape(-1, 2), yaw.reshape(-1), config)
    # fraction[i, j]: share of lane i's probes near lane j (reduce over j's vertices, then i's probes)
    fraction = near.reshape(k, per_lane, k, p).any(3).mean(1)
    kept: list[int] = []
    order = range(k) if first is None else np.argsort(~first, kind="stable")
    for i in order:
        if drop[i]:
            continue
        dup = fraction[i, kept] > config.overlap_fraction if kept else np.zeros(0, bool)
        if first is not None and first[i] and dup.any():  # a port closer only duplicates a lane on its ends
            same = ((np.linalg.norm(lanes[kept, 0] - lanes[i, 0], axis=-1) < config.connect_m)
                    & (np.linalg.norm(lanes[kept, -1] - lanes[i, -1], axis=-1) < config.connect_m))
            dup &= same
        if dup.any():
            drop[i] = True
            continue
        kept.append(i)
    return drop


def looped_lanes(lanes: np.ndarray, config: StitchConfig) -> np.ndarray:
    """(K,) bool: lanes (K, P, 2) whose heading turns more than ``max_turn_rad`` in all."""
    if len(lanes) == 0:
        return np.zeros(0, bool)
    seg = np.diff(lanes, axis=1)
    heading = np.arctan2(seg[..., 1], seg[..., 0])
    return np.abs(geometry.wrap_angle(np.diff(heading, axis=1))).sum(1) > config.max_turn_rad


def check_candidate(lanes: np.ndarray, ports: list[FrontierPort], known: KnownLanes,
                    config: StitchConfig) -> CandidateCheck:
    """Check one candidate's new lanes (K, P, 2) (tile frame) against ports and known lanes.

    Duplicates (of known lanes or of each other), too-short lanes and loops are dropped first. Lanes connected to
    nothing at either end (no port, no other new lane, away from the border) are then dropped as debris,
    and with ``prune_spurs`` every lane with a dangling end; any dangling end left, or a port no lane
    continues, makes the candidate invalid.
    """
    drop = duplicate_lanes(lanes, known, config, _touches_required(lanes, ports, config)) | looped_lanes(lanes, config)
    keep = np.flatnonzero(~drop)
    check, dangling, isolated = _connect(lanes[keep], ports, config)
    if isolated.any():
        keep = keep[~isolated]
        check, dangling, _ = _connect(lanes[keep], ports, config)
    while config.prune_spurs and dangling.any() and not dangling.all():
        keep = keep[~dangling]
        check, dangling, _ = _connect(lanes[keep], ports, config)
    check.keep = keep
    return check


def _touches_required(lanes: np.ndarray, ports: list[FrontierPort], config: StitchConfig) -> np.ndarray:
    """(K,) bool: the lane starts at a required out port or ends at a required in port (distance only)."""
    touch = np.zeros(len(lanes), bool)
    for port in ports:
        if port.required and len(lanes):
            end = lanes[:, 0] if port.is_out else lanes[:, -1]
            touch |= ((end - port.xy) ** 2).sum(-1) < config.connect_m ** 2
    return touch


def _connect(kept: np.ndarray, ports: list[FrontierPort], config: StitchConfig
             ) -> tuple[CandidateCheck, np.ndarray, np.ndarray]:
    """Port links, successor joints and dangling ends of the kept lanes (K, P, 2); also which kept lanes
    dangle at an end, and which at both ends (touch nothing), each (K,) bool."""
    check = CandidateCheck(keep=np.arange(len(kept)))
    n = len(kept)
    if n == 0:
        check.unmatched_ports = sum(p.required for p in ports)
        return check, np.zeros(0, bool), np.zeros(0, bool)
    starts, ends = kept[:, 0], kept[:, -1]
    start_yaw, end_yaw = _end_yaws(kept, False), _end_yaws(kept, True)
    tol = config.connect_yaw_rad
    start_used, end_used = np.zeros(n, bool), np.zeros(n, bool)
    if ports:
        p_xy = np.array([p.xy for p in ports], np.float64).reshape(-1, 2)
        p_yaw = np.array([p.yaw for p in ports], np.float64)
        p_out = np.array([p.is_out for p in ports], bool)
        p_req = np.array([p.required for p in ports], bool)
        xy = np.where(p_out[:, None, None], starts[None], ends[None])              # (Pt, K, 2)
        yaws = np.where(p_out[:, None], start_yaw[None], end_yaw[None])           # (Pt, K)
        d2 = ((xy - p_xy[:, None]) ** 2).sum(-1)
        ok = (d2 < config.connect_m ** 2) & (np.abs(geometry.wrap_angle(yaws - p_yaw[:, None])) <= tol)
        # a lane end links to every required port it reaches (a port may be shared by several lanes, and
        # known lanes may merge at one port), or else to its nearest optional joint only: an end snapped
        # onto a port and a joint metres apart would leave a gap at one of them
        for side in (p_out, ~p_out):
            req = ok & (side & p_req)[:, None]
            opt = ok & (side & ~p_req)[:, None]
            nearest = np.where(opt, d2, np.inf).argmin(0)
            single = np.zeros_like(opt)
            single[nearest, np.arange(n)] = opt[nearest, np.arange(n)]
            ok[side] = np.where(req.any(0)[None], req, single)[side]
        start_used = (ok & p_out[:, None]).any(0)
        end_used = (ok & ~p_out[:, None]).any(0)
        check.unmatched_ports = int((p_req & ~ok.any(1)).sum())
        check.port_links = [(int(k), int(i)) for k, i in zip(*np.nonzero(ok), strict=True)]
    joined = (np.linalg.norm(ends[:, None] - starts[None], axis=-1) < config.connect_m) & (
        np.abs(geometry.wrap_angle(end_yaw[:, None] - start_yaw[None])) <= tol)
    np.fill_diagonal(joined, False)
    check.successors = [(int(i), int(j)) for i, j in zip(*np.nonzero(joined), strict=True)]
    start_ok = start_used | joined.any(0) | (border_distance(starts) < config.border_m)
    end_ok = end_used | joined.any(1) | (border_distance(ends) < config.border_m)
    check.dangling = int((~start_ok).sum() + (~end_ok).sum())
    return check, ~start_ok | ~end_ok, ~start_ok & ~end_ok


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
    for index, lane in check.port_links:
        port = ports[index]
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
