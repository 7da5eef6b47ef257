"""Joining a growing road into a road that blocks its way: a T-junction onto the other road's lane nodes.

Lanes of the known world are read-only, so a road that runs into another one cannot split its lanes.
It can, however, link to the other road's *nodes*: the points where one of its lanes ends and the next
begins (tile borders, earlier splits). The growing road stops a little before the other road; its
forward lanes turn right or left into lanes that start at one cross-section cut of the other road, and
its backward lanes are fed by lanes that end at a cut, with Hermite connectors. Left turns cross the near
lanes of the other road, as they would at any junction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.procedural.roads import CONNECTOR_SPACING_M, LaneSpec, direction, hermite_path, normal

PERPENDICULAR_TOL_RAD = 1.05
"""A node lane counts as crossing the road's way if its heading is within this of +-90 deg (rad)."""
MIN_TURN_M = 4.0
"""Lateral room (m) a turn connector needs between a lane and its node."""
MIN_AHEAD_M = 3.0
MAX_AHEAD_M = 30.0
MAX_LATERAL_M = 35.0
"""Nodes are looked for this far (m) ahead of the entry and to either side."""
MAX_CURVATURE = 0.34
"""Join connectors tighter than this (1/m, radius ~3 m) are implausible; the join is not made."""
SAME_CUT_M = 1.5
MAX_CUT_WIDTH_M = 12.0
"""Nodes less than SAME_CUT_M apart along the other road's direction and MAX_CUT_WIDTH_M across it belong
to one cross-section cut (m)."""


@dataclass(frozen=True)
class NodeLane:
    """A lane near a join: lane_id (real id, or provisional id of a lane of this tile), owner (occupancy
    owner of its ground), points (N, 2) m global in the direction of travel, width (m), and whether it is
    a junction connector (connectors block and belong to a junction, but take no joins)."""

    lane_id: int
    owner: int
    points: np.ndarray
    width_m: float
    connector: bool = False


@dataclass(frozen=True)
class JoinConnector:
    """A connector of a join: from a road slot (``from_slot``) or from the end of ``from_lane``, to a road
    slot (``to_slot``) or to the start of ``to_lane``; points (M, 2) m global."""

    from_slot: int | None
    from_lane: int | None
    to_slot: int | None
    to_lane: int | None
    points: np.ndarray


def first_hit(origins: np.ndarray, yaw: float, lanes: list[NodeLane], max_dist_m: float
              ) -> tuple[float, int] | None:
    """The first lane crossed by any of the parallel rays from ``origins`` (R, 2) with heading ``yaw``:
    its distance (m) along the ray and its index in ``lanes``."""
    if not lanes:
        return None
    a = np.concatenate([lane.points[:-1] for lane in lanes])
    e = np.concatenate([np.diff(lane.points, axis=0) for lane in lanes])
    which = np.repeat(np.arange(len(lanes)), [len(lane.points) - 1 for lane in lanes])
    d = direction(yaw)
    denom = d[0] * e[:, 1] - d[1] * e[:, 0]
    ok = np.abs(denom) > 1e-9
    safe = np.where(ok, denom, 1.0)
    w = a[None] - np.asarray(origins, np.float64)[:, None]
    t = (w[..., 0] * e[:, 1] - w[..., 1] * e[:, 0]) / safe
    u = (w[..., 0] * d[1] - w[..., 1] * d[0]) / safe
    hit = ok & (t > 0.0) & (t <= max_dist_m) & (u >= 0.0) & (u <= 1.0)
    if not hit.any():
        return None
    t = np.where(hit, t, np.inf)
    i = int(np.argmin(t.min(0)))
    return float(t[:, i].min()), int(which[i])


def _nodes(lanes: list[NodeLane], starts: bool) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Node points (K, 2), headings (K,) and lane ids of lane starts (or ends)."""
    if not lanes:
        return np.zeros((0, 2)), np.zeros(0), []
    pts = np.stack([lane.points[0] if starts else lane.points[-1] for lane in lanes])
    seg = np.stack([lane.points[1] - lane.points[0] if starts else lane.points[-1] - lane.points[-2]
                    for lane in lanes])
    return pts, np.arctan2(seg[:, 1], seg[:, 0]), [lane.lane_id for lane in lanes]


def _pick_cut(entry_xy: np.ndarray, entry_yaw: float, pts: np.ndarray, yaws: np.ndarray,
              want: list[tuple[float, float, float]]) -> tuple[list[int], float] | None:
    """Choose the nearest admissible node and return the indices of its cut (sorted right to left in
    their direction of travel) and the turn sign (-1 right / +1 left relative to the node heading).

    want: (relative heading, min lateral, max lateral) windows that are admissible.
    """
    if len(pts) == 0:
        return None
    rel_xy = pts - entry_xy
    ahead, lateral = rel_xy @ direction(entry_yaw), rel_xy @ normal(entry_yaw)
    rel = geometry.wrap_angle(yaws - entry_yaw)
    best, best_cost, best_rel, best_ok = -1, np.inf, 0.0, np.zeros(len(pts), bool)
    for rel_heading, lat_lo, lat_hi in want:
        ok = ((np.abs(geometry.wrap_angle(rel - rel_heading)) < PERPENDICULAR_TOL_RAD)
              & (ahead >= MIN_AHEAD_M) & (ahead <= MAX_AHEAD_M) & (lateral >= lat_lo) & (lateral <= lat_hi)
              & (np.abs(lateral) <= MAX_LATERAL_M))
        for i in np.flatnonzero(ok):
            cost = abs(float(lateral[i])) + float(ahead[i])
            if cost < best_cost:
                best, best_cost, best_rel, best_ok = int(i), cost, rel_heading, ok
    if best < 0:
        return None
    rel_best = pts - pts[best]
    along = rel_best @ direction(float(yaws[best]))
    across_all = rel_best @ normal(float(yaws[best]))
    same = np.flatnonzero(best_ok & (np.abs(along) < SAME_CUT_M) & (np.abs(across_all) < MAX_CUT_WIDTH_M)
                          & (np.abs(geometry.wrap_angle(yaws - yaws[best])) < PERPENDICULAR_TOL_RAD))
    across = (pts[same] - pts[best]) @ normal(float(yaws[best]))
    return [int(i) for i in same[np.argsort(across, kind="stable")]], best_rel


def plan_join(entry_xy: np.ndarray, entry_yaw: float, specs: tuple[LaneSpec, ...],
              lanes: list[NodeLane]) -> list[JoinConnector] | None:
    """Connectors joining a road that ends at (entry_xy, entry_yaw) with cross-section ``specs`` into the
    lanes ``lanes`` of the road ahead, or None if some lane of the road would get no exit / no feeder."""
    lanes = [lane for lane in lanes if not lane.connector]
    u_n = normal(entry_yaw)
    lane_xy = [entry_xy + s.offset_m * u_n for s in specs]
    fwd = sorted((i for i, s in enumerate(specs) if s.forward), key=lambda i: specs[i].offset_m)
    bwd = sorted((i for i, s in enumerate(specs) if not s.forward), key=lambda i: -specs[i].offset_m)
    out: list[JoinConnector] = []
    if fwd:
        pts, yaws, ids = _nodes(lanes, starts=True)
        lo, hi = specs[fwd[0]].offset_m, specs[fwd[-1]].offset_m
        cut = _pick_cut(entry_xy, entry_yaw, pts, yaws, [(-np.pi / 2.0, -np.inf, lo - MIN_TURN_M),
                                                         (np.pi / 2.0, hi + MIN_TURN_M, np.inf)])
        if cut is None:
            return None
        nodes, rel = cut
        for k, slot in enumerate(fwd if rel < 0 else fwd[::-1]):
            node = nodes[min(k, len(nodes) - 1)] if rel < 0 else nodes[max(len(nodes) - 1 - k, 0)]
            path = hermite_path(lane_xy[slot], entry_yaw, pts[node], float(yaws[node]), CONNECTOR_SPACING_M)
            out.append(JoinConnector(slot, None, None, ids[node], path))
    if bwd:
        pts, yaws, ids = _nodes(lanes, starts=False)
        lo, hi = specs[bwd[-1]].offset_m, specs[bwd[0]].offset_m
        cut = _pick_cut(entry_xy, entry_yaw, pts, yaws, [(-np.pi / 2.0, hi + MIN_TURN_M, np.inf),
                                                         (np.pi / 2.0, -np.inf, lo - MIN_TURN_M)])
        if cut is None:
            return None
        nodes, rel = cut
        back_yaw = float(entry_yaw + np.pi)
        for k, slot in enumerate(bwd if rel < 0 else bwd[::-1]):
            node = nodes[min(k, len(nodes) - 1)] if rel < 0 else nodes[max(len(nodes) - 1 - k, 0)]
            path = hermite_path(pts[node], float(yaws[node]), lane_xy[slot], back_yaw, CONNECTOR_SPACING_M)
            out.append(JoinConnector(None, ids[node], slot, None, path))
    if any(geometry.curvature(c.points).max() > MAX_CURVATURE for c in out):
        return None
    return out


def crossing_owners(xy: np.ndarray, yaw: float, lanes: list[NodeLane], radius_m: float) -> tuple[int, ...]:
    """Owners of the lanes that cross the way (heading within tolerance of +-90 deg of ``yaw``) near
    ``xy`` (2,): the road being joined, whose ground the join's connectors may touch."""
    owners: list[int] = []
    for lane in lanes:
        if lane.connector:
            continue
        dist = np.linalg.norm(lane.points - xy, axis=-1)
        i = int(np.argmin(dist))
        if dist[i] > radius_m:
            continue
        j = min(i + 1, len(lane.points) - 1)
        seg = lane.points[j] - lane.points[j - 1]
        rel = float(geometry.wrap_angle(np.arctan2(seg[1], seg[0]) - yaw))
        if abs(abs(rel) - np.pi / 2.0) < PERPENDICULAR_TOL_RAD and lane.owner not in owners:
            owners.append(lane.owner)
    return tuple(owners)


def junction_owners(xy: np.ndarray, lanes: list[NodeLane], radius_m: float) -> tuple[int, ...]:
    """Owners of the connectors with a vertex within ``radius_m`` of ``xy`` (2,): a junction in the way."""
    owners: list[int] = []
    for lane in lanes:
        if lane.connector and lane.owner not in owners and np.min(np.abs(lane.points - xy).max(-1)) < radius_m:
            owners.append(lane.owner)
    return tuple(owners)
