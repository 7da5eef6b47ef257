"""Invariants of generated road networks, shared by the procedural-generator tests.

Each function returns a list of human-readable violations (empty when the invariant holds), so a failing
test shows what broke and where.
"""

from __future__ import annotations

import numpy as np
from shapely import STRtree
from shapely.geometry import LineString

from vectorworld import geometry
from vectorworld.generation.base import TileContent, TileFrame
from vectorworld.scene import LaneGraph, LaneType

MAX_GAP_M = 0.01
MAX_YAW_JUMP_RAD = 0.05
BORDER_TOLERANCE_M = 1.0


def continuity_violations(graph: LaneGraph) -> list[str]:
    """Every successor edge: end of one lane == start of the next (<= 1 cm), headings continuous."""
    out = []
    for lane in graph.lanes.values():
        for nxt in lane.successors:
            if nxt not in graph:
                continue
            gap = float(np.linalg.norm(lane.points[-1] - graph[nxt].points[0]))
            jump = abs(float(geometry.wrap_angle(lane.end_pose[1] - graph[nxt].start_pose[1])))
            if gap > MAX_GAP_M or jump > MAX_YAW_JUMP_RAD:
                out.append(f"{lane.id}->{nxt}: gap {gap:.4f} m, heading jump {jump:.3f} rad")
    return out


def dead_end_violations(frame: TileFrame, content: TileContent) -> list[str]:
    """New lane ends without successor / starts without predecessor more than 1 m inside the tile."""
    succ = {a for a, _ in content.links} | {lane.id for lane in content.lanes if lane.successors}
    pred = {b for _, b in content.links} | {lane.id for lane in content.lanes if lane.predecessors}
    limit = frame.size_m / 2.0 - BORDER_TOLERANCE_M
    out = []
    for lane in content.lanes:
        for open_end, point, what in ((lane.id not in succ, lane.points[-1], "end"),
                                      (lane.id not in pred, lane.points[0], "start")):
            if open_end and float(np.abs(frame.to_local(point)).max()) < limit:
                out.append(f"lane {lane.id} {what} dangles at {frame.to_local(point).round(2)} (tile frame)")
    return out


def crossing_violations(graph: LaneGraph, min_from_end_m: float = 0.3) -> list[str]:
    """Non-connector lanes that cross each other away from their end points (only junction connectors
    may cross other lanes)."""
    ids = [i for i, lane in graph.lanes.items() if lane.lane_type != LaneType.CONNECTOR]
    lines = [LineString(graph[i].points) for i in ids]
    tree = STRtree(lines)
    out = []
    for k, i in enumerate(ids):
        for j in tree.query(lines[k], predicate="intersects"):
            if ids[j] <= i:
                continue
            inter = lines[k].intersection(lines[j])
            points = [np.asarray(g.coords[0]) for g in getattr(inter, "geoms", [inter]) if not g.is_empty]
            ends = np.vstack([graph[i].points[[0, -1]], graph[ids[j]].points[[0, -1]]])
            far = [p for p in points if np.min(np.linalg.norm(ends - p, axis=-1)) > min_from_end_m]
            if far:
                out.append(f"lanes {i} and {ids[j]} cross at {np.round(far[0], 2)}")
    return out


def curvature_violations(graph: LaneGraph, min_radius_m: float = 25.0) -> list[str]:
    """Non-connector lanes with a radius of curvature below ``min_radius_m``."""
    out = []
    for lane in graph.lanes.values():
        if lane.lane_type == LaneType.CONNECTOR:
            continue
        kappa = float(geometry.curvature(lane.points).max())
        if kappa > 1.0 / min_radius_m + 1e-6:
            out.append(f"lane {lane.id}: radius {1.0 / kappa:.1f} m")
    return out


def overlap_violations(graph: LaneGraph, content: TileContent, known_ids: set[int], slack_m: float = 0.6) -> list[str]:
    """New non-connector lanes that come closer to a known non-connector lane than their half widths
    (minus ``slack_m``), unless the two are linked (up to two successor / predecessor hops, or neighbours
    of those)."""
    out = []
    for lane in content.lanes:
        if lane.lane_type == LaneType.CONNECTOR or lane.id not in graph:
            continue
        linked = {lane.id}
        for _ in range(2):  # two hops: a short lane (a crossing, a taper) may sit between the two
            for other in list(linked):
                if other in graph:
                    linked |= set(graph[other].successors) | set(graph[other].predecessors)
        for other in list(linked):
            if other in graph:
                linked |= set(graph[other].left_neighbors) | set(graph[other].right_neighbors)
        for k in known_ids:
            known = graph.lanes.get(k)
            if known is None or k in linked or known.lane_type == LaneType.CONNECTOR:
                continue
            if np.abs(known.points.mean(0) - lane.points.mean(0)).max() > 120.0:
                continue
            d = geometry.point_segment_distance(lane.points, known.points[:-1], known.points[1:]).min()
            if d < (lane.width_m + known.width_m) / 2.0 - slack_m:
                out.append(f"new lane {lane.id} is {d:.2f} m from known lane {k}")
    return out
