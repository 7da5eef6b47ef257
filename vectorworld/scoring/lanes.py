"""Where the ego is on the lane graph, for the lane-based sub-metrics: the lane it is in (its speed limit,
its direction, whether it is a junction connector) and whether its box stays within that lane or lanes
connected to it end to end (nuPlan's ``ego_lane_change`` "common or connected route objects")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.scene import Lane, LaneGraph, LaneType

SEARCH_M = 8.0
END_SLACK_M = 0.5


@dataclass(frozen=True)
class LanePosition:
    """lane_id -1 when the ego's centre is in no lane; s_m: arc position on that lane's centreline."""

    lane_id: int
    s_m: float
    speed_limit_mps: float
    in_junction: bool
    between_lanes: bool


def _inside(lane: Lane, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(M,) bool whether points (M, 2) lie within the lane's corridor, and their arc positions."""
    s, lat, _ = geometry.project_to_polyline(points, lane.points)
    within = (s >= -END_SLACK_M) & (s <= lane.length_m + END_SLACK_M) & (np.abs(lat) <= lane.width_m / 2.0)
    return within, s


def locate(graph: LaneGraph, xy: np.ndarray, yaw: float, length: float, width: float,
           previous_lane: int = -1) -> LanePosition:
    """The lane holding the ego's centre (the previous one while it still does, else the closest centreline)
    and whether the box corners all lie in it or in lanes connected to it."""
    best, best_lat, best_s = -1, np.inf, 0.0
    candidates = graph.near(xy, SEARCH_M)
    if previous_lane in graph:  # still in the lane of the previous step: no search
        candidates = [previous_lane, *candidates]
    for lane_id in candidates:
        lane = graph[lane_id]
        s, lat, _ = geometry.project_to_polyline(xy[None], lane.points)
        if not (-END_SLACK_M <= s[0] <= lane.length_m + END_SLACK_M and abs(lat[0]) <= lane.width_m / 2.0):
            continue
        if lane_id == previous_lane:
            best, best_s = lane_id, float(s[0])
            break
        if abs(lat[0]) < best_lat:
            best, best_lat, best_s = lane_id, abs(float(lat[0])), float(s[0])
    if best < 0:
        return LanePosition(-1, 0.0, np.inf, False, True)
    lane = graph[best]
    corners = geometry.box_corners(np.asarray(xy, float), np.float64(yaw), np.float64(length), np.float64(width))
    covered = np.zeros(4, bool)
    for lane_id in (best, *lane.successors, *lane.predecessors):
        if lane_id in graph:
            covered |= _inside(graph[lane_id], corners)[0]
            if covered.all():
                break
    return LanePosition(best, best_s, lane.speed_limit_mps, lane.lane_type == LaneType.CONNECTOR,
                        not bool(covered.all()))
