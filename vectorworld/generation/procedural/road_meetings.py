"""What a growing road does when it meets another road: bridge, cross, or join it.

* **bridge**: another open road end of the same tile faces this one (head-on, same lane counts mirrored):
  both are connected lane by lane with tangent-continuous curves and become one road.
* **cross**: a road runs across the way: the lanes stop before it, straight connector lanes cross its
  lanes (as at any intersection; the crossed lanes are read-only and stay unsplit) and the road goes on.
* **join**: end in a T-junction onto the crossing road's lane nodes (see :mod:`joins`); also used when
  the way is blocked by a junction.

These are tried as fallbacks when plain pieces are blocked, so networks grown from different frontier
ports connect instead of ending in dead ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from vectorworld import geometry
from vectorworld.generation.procedural.joins import (
    JoinConnector,
    NodeLane,
    crossing_owners,
    first_hit,
    junction_owners,
    plan_join,
)
from vectorworld.generation.procedural.road_state import Road
from vectorworld.generation.procedural.roads import PieceGeometry, direction, hermite_path, normal, sweep
from vectorworld.generation.procedural.tile_draft import NewLane, TileDraft
from vectorworld.scene import LaneType

if TYPE_CHECKING:
    from vectorworld.generation.procedural.road_growth import RoadGrower

BRIDGE_RANGE_M = 70.0
"""Facing road ends farther than this (m) are not bridged."""
BRIDGE_FACING_RAD = 0.5
"""Road ends whose growth directions are opposite to within this (rad) face each other."""


@dataclass(frozen=True)
class Blocker:
    """What blocks a road's way: nearby lanes, distance to the first crossed lane along the road (m), the
    longest approach that keeps a gap to it (m), owners whose ground a crossing / join may touch, and
    whether the first lane in the way is a junction connector."""

    lanes: list[NodeLane]
    dist: float
    longest: float
    owners: tuple[int, ...]
    junction: bool


def nearby_lanes(grower: RoadGrower, xy: np.ndarray, radius_m: float) -> list[NodeLane]:
    """Lanes near ``xy`` that a road may cross or join: known lanes and lanes of roads already finished
    in this tile."""
    lanes = []
    for i in grower.graph.near(xy, radius_m):
        lane = grower.graph[i]
        lanes.append(NodeLane(i, i, lane.points, lane.width_m, lane.lane_type == LaneType.CONNECTOR))
    for lane in grower.draft.lanes:
        if np.min(np.abs(lane.points - xy).max(-1)) < radius_m:
            lanes.append(NodeLane(lane.pid, lane.road_key, lane.points, lane.width_m,
                                  lane.lane_type == LaneType.CONNECTOR))
    return lanes


def blocker(grower: RoadGrower, road: Road) -> Blocker | None:
    """The road or junction in ``road``'s way ahead, or None when nothing crosses the way at an angle of
    at least ``min_crossing_angle_rad`` (memoised for the road's current pose)."""
    memo = (road.key, float(road.xy[0]), float(road.xy[1]), road.yaw)
    if grower.blocker_memo is not None and grower.blocker_memo[0] == memo:
        return grower.blocker_memo[1]
    result = _find_blocker(grower, road)
    grower.blocker_memo = (memo, result)
    return result


def _find_blocker(grower: RoadGrower, road: Road) -> Blocker | None:
    lanes = nearby_lanes(grower, road.xy, 60.0)
    origins = np.vstack([road.xy[None], road.end_points()])
    hit = first_hit(origins, road.yaw, lanes, min(60.0, grower.exit_distance(road) + 20.0))
    if hit is None:
        return None
    dist, k = hit
    hit_xy = road.xy + dist * direction(road.yaw)
    owners = crossing_owners(hit_xy, road.yaw, lanes, 45.0)
    if lanes[k].connector:
        owners = owners + junction_owners(hit_xy, lanes, 30.0)
        return Blocker(lanes, dist, dist - grower.config.join_gap_m - 2.0, owners, True)
    if lanes[k].owner not in owners:
        return None  # the lane in the way runs along the road, not across it
    pts = lanes[k].points
    i = int(np.argmin(np.linalg.norm(0.5 * (pts[1:] + pts[:-1]) - hit_xy, axis=-1)))
    seg = pts[i + 1] - pts[i]
    sin_t = abs(float(np.sin(np.arctan2(seg[1], seg[0]) - road.yaw)))
    if sin_t < np.sin(grower.config.min_crossing_angle_rad):
        return None
    cot_t = np.sqrt(max(1.0 - sin_t**2, 0.0)) / sin_t
    reach = float(np.max(np.abs(road.offsets))) + road.width_m / 2.0
    longest = dist - (lanes[k].width_m / 2.0 + grower.config.join_gap_m) / sin_t - reach * cot_t
    return Blocker(lanes, dist, longest, owners, False)


def _approach(grower: RoadGrower, road: Road, length: float) -> PieceGeometry | None | bool:
    """A straight approach of ``length`` (None when too short to matter; False when blocked)."""
    if length <= 0.5:
        return None
    geom = sweep(road.xy, road.yaw, length, 0.0, road.offsets)
    return False if grower.blocked(road, geom.lanes[:, 1:].reshape(-1, 2)) else geom


def _apply(grower: RoadGrower, road: Road, geom: PieceGeometry | None) -> None:
    if geom is not None:
        for i, slot in enumerate(road.slots):
            slot.append(geom.lanes[i])
        grower.advance(road, geom.end_xy, geom.end_yaw, geom.length_m)


def place_join(grower: RoadGrower, road: Road, draft: TileDraft) -> bool:
    """End the road in a T-junction onto the road (or junction) that blocks its way."""
    found = blocker(grower, road) if road.slots else None
    if found is None:
        return False
    for length in (found.longest, found.longest - 3.0, found.longest - 6.0, 0.0):
        if length < 0.0 or (length == 0.0 and found.longest > 6.0):
            continue
        geom = _approach(grower, road, length)
        if geom is False:
            continue
        entry = geom.end_xy if geom is not None else road.xy
        connectors = plan_join(entry, road.yaw, road.specs, found.lanes)
        if connectors is None or grower.blocked(road, np.concatenate([c.points[1:-1] for c in connectors]),
                                                also_ignore=found.owners):
            continue
        _apply(grower, road, geom)
        _add_join(grower, road, draft, connectors)
        return True
    return False


def _add_join(grower: RoadGrower, road: Road, draft: TileDraft, connectors: list[JoinConnector]) -> None:
    grower.flush(road, draft)
    for c in connectors:
        pid = draft.new_pid()
        points = c.points.copy()
        slot = road.slots[c.from_slot if c.from_slot is not None else c.to_slot]
        if slot.snap_xy is not None:  # joined right at the ports
            points[0 if c.from_slot is not None else -1] = slot.snap_xy
        draft.lanes.append(NewLane(pid, points, slot.spec.width_m, slot.speed_mps, LaneType.CONNECTOR, road.key))
        grower.occ.add(points, slot.spec.width_m / 2.0, road.key)
        if c.from_slot is not None:
            draft.edges.extend((link, pid) for link in slot.links)
            draft.edges.append((pid, c.to_lane))
        else:
            draft.edges.append((c.from_lane, pid))
            draft.edges.extend((pid, link) for link in slot.links)
    road.ended = True
    road.slots = []
    grower.report.joins += 1


def place_cross(grower: RoadGrower, road: Road, draft: TileDraft) -> bool:
    """Cross the road that blocks the way with straight connector lanes and go on behind it."""
    found = blocker(grower, road) if road.slots else None
    if found is None or found.junction:
        return False
    geom = _approach(grower, road, max(found.longest, 0.0))
    if geom is False:
        return False
    start = geom.length_m if geom is not None else 0.0
    for extra in np.arange(8.0, 40.0, 2.0):
        crossing = sweep(road.xy + start * direction(road.yaw), road.yaw, found.dist - start + extra, 0.0,
                         road.offsets)
        beyond = sweep(crossing.end_xy, road.yaw, 6.0, 0.0, road.offsets)
        if grower.blocked(road, beyond.lanes.reshape(-1, 2)):
            continue
        if (grower.blocked(road, crossing.lanes[:, 1:].reshape(-1, 2), also_ignore=found.owners)
                or _open_end_inside(grower, found, crossing, road)):
            return False
        _apply(grower, road, geom)
        grower.flush(road, draft)
        for i, slot in enumerate(road.slots):
            slot.append(crossing.lanes[i])
        grower.advance(road, crossing.end_xy, crossing.end_yaw, crossing.length_m)
        grower.flush(road, draft, LaneType.CONNECTOR)
        road.since_junction_m = 0.0
        grower.report.crossings += 1
        return True
    return False


def _open_end_inside(grower: RoadGrower, found: Blocker, crossing: PieceGeometry, road: Road) -> bool:
    """Whether a crossed lane has an open end (no successor / no predecessor) inside the crossing: its
    continuation would be cut off. Lane boundaries (an end and the next lane's start) do not count."""
    linked_from = {a for a, _ in grower.draft.edges}
    linked_to = {b for _, b in grower.draft.edges}
    ends = []
    for lane in found.lanes:
        if lane.owner not in found.owners:
            continue
        known = grower.graph[lane.lane_id] if lane.lane_id in grower.graph else None
        has_succ = lane.lane_id in linked_from or (known is not None and bool(known.successors))
        has_pred = lane.lane_id in linked_to or (known is not None and bool(known.predecessors))
        ends += ([lane.points[-1]] if not has_succ else []) + ([lane.points[0]] if not has_pred else [])
    if not ends:
        return False
    reach = float(np.max(np.abs(road.offsets))) + road.width_m / 2.0 + 1.0
    dist = geometry.point_segment_distance(np.stack(ends), crossing.lanes[:, 0].mean(0)[None],
                                           crossing.end_xy[None])
    return bool(np.any(dist < reach))


def facing_road(grower: RoadGrower, road: Road) -> Road | None:
    """The nearest not yet grown port road of this tile that faces ``road`` head-on within range and has
    the mirrored lane counts, or None."""
    if not road.slots:
        return None
    fwd, bwd = road.counts()
    u, n = direction(road.yaw), normal(road.yaw)
    best, best_dist = None, BRIDGE_RANGE_M
    for other in grower.pending.values():
        if other.key in grower.consumed or not other.slots or other.counts() != (bwd, fwd):
            continue
        rel = other.xy - road.xy
        ahead, lateral = float(rel @ u), float(rel @ n)
        facing = abs(float(geometry.wrap_angle(other.yaw - road.yaw - np.pi))) < BRIDGE_FACING_RAD
        dist = float(np.hypot(ahead, lateral))
        if facing and ahead > 2.0 and abs(lateral) <= 0.5 * ahead and dist < best_dist:
            best, best_dist = other, dist
    return best


def place_bridge(grower: RoadGrower, road: Road, draft: TileDraft) -> bool:
    """Connect ``road`` lane by lane to the facing port road of this tile (which is then not grown)."""
    other = facing_road(grower, road)
    if other is None:
        return False
    mine = sorted(range(len(road.slots)), key=lambda i: (not road.slots[i].spec.forward, road.slots[i].spec.offset_m))
    theirs = sorted(range(len(other.slots)),
                    key=lambda i: (other.slots[i].spec.forward, -other.slots[i].spec.offset_m))
    ends = road.end_points()
    paths = []
    for i, j in zip(mine, theirs, strict=True):
        q, q_yaw = other.port_poses[j]
        path = hermite_path(ends[i], road.yaw, q, float(q_yaw + np.pi), 2.0)
        if geometry.curvature(path).max() > 1.0 / grower.config.min_radius_m:
            return False
        paths.append(path)
    homes = tuple(h for h in (road.home, other.home) if h is not None)
    half = max(s.spec.width_m for s in road.slots) / 2.0
    if grower.occ.blocked(np.concatenate([p[1:-1] for p in paths]), half, grower.config.clearance_gap_m,
                          ignore=(road.key, other.key) + grower.ignore_keys + other.link_ids(), home=homes):
        return False
    for i, path in zip(mine, paths, strict=True):
        road.slots[i].append(path)
    grower.advance(road, other.xy.copy(), float(geometry.wrap_angle(other.yaw + np.pi)),
                   float(np.linalg.norm(other.xy - road.xy)))
    ids = grower.flush(road, draft)
    for i, j in zip(mine, theirs, strict=True):
        pid = ids[i]
        for lane_id in other.slots[j].links:
            draft.edges.append((pid, lane_id) if road.slots[i].spec.forward else (lane_id, pid))
    road.ended = True
    road.slots = []
    grower.consumed.add(other.key)
    grower.report.bridges += 1
    return True

