"""The last resort for a two-way road that can go nowhere: a turnaround loop (a cul-de-sac).

When no piece, crossing or join fits, a two-way road ends in keyhole-shaped connector loops from its
forward lanes into its backward lanes, so traffic (and the ego) can turn back instead of meeting a dead
end. Each loop veers right by an angle alpha, turns left by pi + 2 alpha and veers right by alpha again,
all on circles of ``TURN_RADIUS_M``; alpha is chosen so that the loop ends exactly on the backward lane.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from vectorworld import geometry
from vectorworld.generation.procedural.road_state import Road
from vectorworld.generation.procedural.roads import CONNECTOR_SPACING_M, arc_grid, normal, reference_path
from vectorworld.generation.procedural.tile_draft import NewLane, TileDraft
from vectorworld.scene import LaneType

if TYPE_CHECKING:
    from vectorworld.generation.procedural.road_growth import RoadGrower

TURN_RADIUS_M = 6.0
"""Radius (m) of the loop's arcs: a passenger car's turning circle with some margin."""


def _keyhole(alpha: float, radius: float, sampled: bool) -> tuple[np.ndarray, np.ndarray]:
    """Keyhole loop in its own frame (start at the origin heading +x): points (M, 2) (only the end point
    when not ``sampled``) and the end point (2,)."""
    xy, yaw, chunks = np.zeros(2), 0.0, []
    for angle, sign in ((alpha, -1.0), (np.pi + 2.0 * alpha, 1.0), (alpha, -1.0)):
        if angle <= 1e-9:
            continue
        s = arc_grid(angle * radius, CONNECTOR_SPACING_M) if sampled else np.array([angle * radius])
        pts, yaws = reference_path(xy, yaw, s, sign / radius)
        chunks.append(pts if not chunks else pts[1:])
        xy, yaw = pts[-1], float(yaws[-1])
    return np.concatenate(chunks), xy


def keyhole_path(start_xy: np.ndarray, start_yaw: float, lateral_m: float,
                 radius_m: float = TURN_RADIUS_M) -> np.ndarray | None:
    """A loop (M, 2) m global from (start_xy, start_yaw) back to the point ``lateral_m`` to the left of the
    start, heading the opposite way; None if ``lateral_m`` is not in (0, 2 * radius]."""
    if not 0.0 < lateral_m <= 2.0 * radius_m:
        return None
    lo, hi = 0.0, np.pi / 2.0  # the end's lateral offset falls from 2 R (alpha = 0) as alpha grows
    for _ in range(24):
        mid = 0.5 * (lo + hi)
        if _keyhole(mid, radius_m, sampled=False)[1][1] > lateral_m:
            lo = mid
        else:
            hi = mid
    pts, _ = _keyhole(0.5 * (lo + hi), radius_m, sampled=True)
    pts = geometry.to_global(pts, start_xy, start_yaw)
    pts[-1] = start_xy + lateral_m * normal(start_yaw)
    return pts


def place_turnaround(grower: RoadGrower, road: Road, draft: TileDraft) -> bool:
    """End a two-way ``road`` in turnaround loops from each forward lane into a backward lane."""
    fwd = sorted((i for i, s in enumerate(road.slots) if s.spec.forward), key=lambda i: -road.slots[i].spec.offset_m)
    bwd = sorted((i for i, s in enumerate(road.slots) if not s.spec.forward), key=lambda i: road.slots[i].spec.offset_m)
    if not fwd or not bwd:
        return False
    ends = road.end_points()
    pairs = [(f, bwd[min(k, len(bwd) - 1)]) for k, f in enumerate(fwd)]
    pairs += [(fwd[min(k, len(fwd) - 1)], b) for k, b in enumerate(bwd) if k >= len(fwd)]
    loops = []
    for f, b in pairs:
        lateral = float((ends[b] - ends[f]) @ normal(road.yaw))
        path = keyhole_path(ends[f], road.yaw, lateral)
        if path is None:
            return False
        path[-1] = ends[b]
        loops.append(path)
    if grower.blocked(road, np.concatenate([p[1:-1] for p in loops])):
        return False
    grower.flush(road, draft)
    for (f, b), path in zip(pairs, loops, strict=True):
        fs, bs = road.slots[f], road.slots[b]
        points = path.copy()
        if fs.snap_xy is not None:
            points[0] = fs.snap_xy
        if bs.snap_xy is not None:
            points[-1] = bs.snap_xy
        pid = draft.new_pid()
        draft.lanes.append(NewLane(pid, points, fs.spec.width_m, fs.speed_mps, LaneType.CONNECTOR, road.key))
        grower.occ.add(points, fs.spec.width_m / 2.0, road.key)
        draft.edges.extend((link, pid) for link in fs.links)
        draft.edges.extend((pid, link) for link in bs.links)
    road.ended = True
    road.slots = []
    grower.report.turnarounds += 1
    return True

