"""Validity filter of decoded agents (tile frame): on a lane, aligned with it, clear of other agents.

Moving vehicles must lie within ``max_lane_offset_m`` of a lane centreline, standing ones within
``max_parked_offset_m`` (cars parked at the curb stand beside the lane: 2.45 m from its centre in the
procedural city; 2.5 m is where DESIGN §8's ``offlane_rate`` starts), and within ``max_heading_rad`` of its
direction. Cyclists ride lanes too (the session routes them): the same test at the moving reach, and they
keep their offset (they ride near the curb). Pedestrians stand off the carriageway (``walker_clearance_m``
from every lane). Other road users only need to be inside the tile. Only agents on a lane get one. Boxes
may not overlap each other, and no spawn may come closer than ``clearance_m`` + its half length to an agent
already in the world.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M

VEHICLE, PEDESTRIAN, CYCLIST = 0, 1, 2
"""Tile-tensor agent types (WOMD type - 1, see tile_corpus) of the road users that must ride a lane."""


@dataclass(frozen=True)
class SpawnFilterConfig:
    max_lane_offset_m: float = 2.0
    max_parked_offset_m: float = 2.5
    parked_speed_mps: float = 0.5
    """Vehicles slower than this stand (``max_parked_offset_m`` applies)."""
    curb_offset_m: float = 2.25
    """A standing vehicle at least this far from the centreline is parked at the curb: it keeps its heading,
    stands at least ``curb_place_m`` out and gets no lane (no route), as the procedural city's parked cars,
    and its inner side stays clear of a passing car's band (IDM: half a car width + 0.2 m). Nearer, it
    stands in traffic: moved onto the centreline and routed. (Routed where they were decoded, 1-2.4 m beside
    their lane, such cars drove off with a box corner off the road.)"""
    curb_place_m: float = 2.45
    """A car parked at the curb stands at least this far from the centreline (the procedural city's curb):
    decoded 2.25 m out, it left a 10.3 m bus passing on the lane 0.03 m, and the bus hit it."""
    max_heading_rad: float = np.deg2rad(25.0)
    clearance_m: float = 1.0
    min_x_m: float = 0.0
    """Spawns must lie in the generated half (tile-frame x >= this)."""
    walker_clearance_m: float = 2.5
    """Pedestrians stand off the carriageway: at least this far from every lane centreline (the procedural
    city puts its sidewalks 4-5 m out; a decoded pedestrian on a lane would stand in traffic)."""


def _segment_offsets(xy: np.ndarray, lanes: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Distance (M, K) of points (M, 2) to each lane's centreline, and the unit direction (M, K, 2) of the
    lane's segment nearest to each point. All lanes in one batch: their segments padded to the longest
    lane's (a padded segment is never nearest)."""
    width = max(len(p) for p in lanes) - 1
    a = np.zeros((len(lanes), width, 2))
    ab = np.zeros((len(lanes), width, 2))
    real = np.zeros((len(lanes), width), bool)
    for k, pts in enumerate(lanes):
        a[k, :len(pts) - 1], ab[k, :len(pts) - 1], real[k, :len(pts) - 1] = pts[:-1], np.diff(pts, axis=0), True
    len2 = np.maximum(geometry.sq_norms(ab), 1e-12)                                  # (K, W)
    rel = xy[:, None, None] - a[None]                                               # (M, K, W, 2)
    t = np.clip((rel[..., 0] * ab[None, ..., 0] + rel[..., 1] * ab[None, ..., 1]) / len2[None], 0.0, 1.0)
    gap = xy[:, None, None] - (a[None] + t[..., None] * ab[None])
    dist2 = np.where(real[None], geometry.sq_norms(gap), np.inf)
    seg = dist2.argmin(2)                                                          # (M, K)
    off = np.sqrt(np.take_along_axis(dist2, seg[..., None], 2)[..., 0])
    lanes_k = np.arange(len(lanes))[None]
    return off, ab[lanes_k, seg] / np.sqrt(len2[lanes_k, seg])[..., None]


def nearest_lane(xy: np.ndarray, yaw: np.ndarray, lanes: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray,
                                                                                    np.ndarray]:
    """For points (M, 2) with headings (M,): index of the best lane (M,) (-1 if none), distance to its
    centreline (M,) m and absolute heading error (M,) rad. Lanes are polylines (N_i, 2), same frame.

    The best lane minimises offset + 4 m per rad of heading error (the first on ties); the heading is the
    one of the lane's segment nearest to the point.
    """
    m = len(xy)
    if m == 0 or not lanes:
        return np.full(m, -1, np.int64), np.full(m, np.inf), np.full(m, np.pi)
    off, d = _segment_offsets(xy, lanes)
    err = np.abs(geometry.wrap_angle(yaw[:, None] - np.arctan2(d[..., 1], d[..., 0])))
    best = np.argmin(off + 4.0 * err, 1)
    rows = np.arange(m)
    return best.astype(np.int64), off[rows, best], err[rows, best]


def lane_clearance(xy: np.ndarray, lanes: list[np.ndarray]) -> np.ndarray:
    """Distance (M,) m of points (M, 2) to the nearest lane centreline (inf without lanes)."""
    if len(xy) == 0 or not lanes:
        return np.full(len(xy), np.inf)
    return _segment_offsets(xy, lanes)[0].min(1)


def filter_spawns(state: np.ndarray, agent_type: np.ndarray, lanes: list[np.ndarray],
                  existing_xy: np.ndarray, config: SpawnFilterConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which decoded agents to keep, each one's lane index, and its pose.

    state: (M, 7) SI (x, y, speed, cos, sin, length, width), tile frame; agent_type: (M,) in [0, 4)
    (0 = vehicle); lanes: candidate lanes (tile frame); existing_xy: (E, 2) tile frame.
    Returns keep (M,) bool, lane index (M,) int64 (-1 unless the agent stands on that lane: a routed agent
    off its lane would leave it at once; -1 for a car parked at the curb, see ``curb_offset_m``) and pose
    (M, 3) (x, y, heading; tile frame): a vehicle or cyclist on a lane takes the lane's heading at its
    position, and a vehicle in traffic (moving, or standing nearer than ``curb_offset_m``) its centreline
    (decoded headings within the filter's 25 deg and offsets within its 2 m are noise: real traffic drives
    on its lane's centre, only parked cars stand off it), a car parked at the curb nearer than
    ``curb_place_m`` moves out to it; the others keep the decoded pose. Greedy:
    earlier agents win overlaps (judged at those poses).
    """
    m = len(state)
    if m == 0:
        return np.zeros(0, bool), np.zeros(0, np.int64), np.zeros((0, 3))
    xy = state[:, :2].astype(np.float64)
    yaw = np.arctan2(state[:, 4], state[:, 3]).astype(np.float64)
    lane, off, err = nearest_lane(xy, yaw, lanes) if lanes else (np.full(m, -1), np.full(m, np.inf),
                                                                  np.full(m, np.pi))
    inside = (np.maximum(np.abs(xy[:, 0]), np.abs(xy[:, 1])) <= HALF_TILE_M) & (xy[:, 0] >= config.min_x_m)
    vehicle = agent_type == VEHICLE
    rider = vehicle | (agent_type == CYCLIST)
    parked = vehicle & (state[:, 2] < config.parked_speed_mps)
    reach = np.where(parked, config.max_parked_offset_m, config.max_lane_offset_m)
    on_lane = (lane >= 0) & (off <= reach) & (err <= config.max_heading_rad)
    curb = parked & (off >= config.curb_offset_m)
    keep = inside & (~rider | on_lane)
    walker = agent_type == PEDESTRIAN
    if walker.any():
        keep[walker] &= lane_clearance(xy[walker], lanes) >= config.walker_clearance_m
    if len(existing_xy):
        gap = geometry.norms(xy[:, None] - existing_xy[None]).min(1)
        keep &= gap >= state[:, 5] / 2.0 + 2.5 + config.clearance_m
    aligned = rider & keep
    for k in np.unique(lane[aligned]).tolist():
        rows = np.flatnonzero(aligned & (lane == k))
        _, lateral, heading = geometry.project_to_polyline(xy[rows], lanes[k])
        yaw[rows] = heading
        in_traffic = vehicle[rows] & ~curb[rows]
        left = np.stack([-np.sin(heading), np.cos(heading)], -1)
        xy[rows[in_traffic]] -= lateral[in_traffic, None] * left[in_traffic]
        out = curb[rows] & (np.abs(lateral) < config.curb_place_m)
        push = np.sign(lateral[out]) * config.curb_place_m - lateral[out]
        xy[rows[out]] += push[:, None] * left[out]
    corners = geometry.box_corners(xy, yaw, state[:, 5], state[:, 6])
    hit = geometry.boxes_overlap(corners[:, None], corners[None])      # (M, M), every pair at once
    accepted: list[int] = []
    for i in np.flatnonzero(keep):
        if accepted and hit[i, accepted].any():
            keep[i] = False
            continue
        accepted.append(int(i))
    return keep, np.where(keep & on_lane & ~curb, lane, -1), np.concatenate([xy, yaw[:, None]], -1)


def downstream(lanes: list[np.ndarray], successors: list[tuple[int, int]]) -> list[dict[int, float]]:
    """Per lane, every lane reachable from it over ``successors`` links (itself included) with the arc length
    (m) from its start to that lane's start (the first path found, breadth first)."""
    length = [float(geometry.polyline_lengths(p)[-1]) for p in lanes]
    nxt: dict[int, list[int]] = {}
    for i, j in successors:
        nxt.setdefault(i, []).append(j)
    out = []
    for k in range(len(lanes)):
        reach, queue = {k: 0.0}, [k]
        while queue:
            i = queue.pop(0)
            for j in nxt.get(i, []):
                if j not in reach:
                    reach[j] = reach[i] + length[i]
                    queue.append(j)
        out.append(reach)
    return out


def follow_speeds(pose: np.ndarray, speed: np.ndarray, length: np.ndarray, lane: np.ndarray, lanes: list[np.ndarray],
                  successors: list[tuple[int, int]] = (), brake_mps2: float = 2.5, min_gap_m: float = 2.5
                  ) -> np.ndarray:
    """Speeds (M,) the kept agents can drive off with: an agent is at most as fast as lets it brake at
    ``brake_mps2`` to the speed of any one ahead on its way within their bumper gap less ``min_gap_m``, and
    one closer than ``min_gap_m`` starts slower in proportion to the gap. (The model decodes each agent's speed
    on its own: two spawned 4.4 m apart at 14.4 and 6.5 m/s met 0.7 s later.)

    Ahead on its way: farther along its lane, on a lane it leads to over ``successors`` (kept-lane index
    pairs), or nearer the start of a lane both lead to (a merge). ``lane`` (M,) indexes ``lanes`` (-1: none);
    ``pose`` (M, 3) tile frame, ``speed`` and ``length`` (M,)."""
    out = np.array(speed, np.float64, copy=True)
    routed = np.flatnonzero(lane >= 0)
    if len(routed) < 2:
        return out
    reach = downstream(lanes, list(successors))
    arc = np.zeros(len(lane))
    for k in np.unique(lane[routed]).tolist():
        rows = np.flatnonzero(lane == k)
        arc[rows] = geometry.project_to_polyline(pose[rows, :2], lanes[k])[0]
    # gap[a, b]: bumper gap from a to b when b is ahead on a's way, else nan.
    gap = np.full((len(lane), len(lane)), np.nan)
    for a in routed:
        for b in routed:
            common = [m for m in reach[lane[a]] if m in reach[lane[b]]] if a != b else []
            if common:
                m = common[0]
                along = (reach[lane[a]][m] - arc[a]) - (reach[lane[b]][m] - arc[b])
                if along > 0.0:
                    gap[a, b] = along - (length[a] + length[b]) / 2.0
    for _ in range(len(routed)):  # caps only fall: a chain of followers settles within as many passes
        before = out.copy()
        for a, b in zip(*np.nonzero(~np.isnan(gap)), strict=True):
            g = gap[a, b]
            cap = (np.sqrt(out[b] ** 2 + 2.0 * brake_mps2 * (g - min_gap_m)) if g >= min_gap_m
                   else out[b] * max(g, 0.0) / min_gap_m)
            out[a] = min(out[a], cap)
        if np.array_equal(before, out):
            break
    return out


def clear_paths(pose: np.ndarray, speed: np.ndarray, length: np.ndarray, width: np.ndarray,
                horizon_s: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0), margin_m: float = 0.5,
                min_angle_rad: float = 0.5) -> np.ndarray:
    """Which spawns (M,) to keep so that no two meet head-on or across each other's way within the horizon:
    each driven straight on at its speed, a spawn whose box (grown by ``margin_m``) overlaps the box of a
    kept one heading another way (``min_angle_rad`` or more) at one of the ``horizon_s`` times is dropped
    (earlier spawns win). Right of way cannot arbitrate between agents spawned inside a junction or on two
    lanes drawn too close: on 20 learned 1 km rollouts, spawned pairs met head-on 0.2-2 s after they appeared.
    Followers on one way are :func:`follow_speeds`' business. ``pose`` (M, 3) and the rest (M,)."""
    m = len(pose)
    keep = np.ones(m, bool)
    if m < 2:
        return keep
    times = np.array(horizon_s)
    heading = np.stack([np.cos(pose[:, 2]), np.sin(pose[:, 2])], -1)
    xy = pose[None, :, :2] + times[:, None, None] * speed[None, :, None] * heading[None]        # (T, M, 2)
    corners = geometry.box_corners(xy.reshape(-1, 2), np.tile(pose[:, 2], len(times)),
                                   np.tile(length + 2 * margin_m, len(times)),
                                   np.tile(width + 2 * margin_m, len(times))).reshape(len(times), m, 4, 2)
    crossing = np.abs(geometry.wrap_angle(pose[:, None, 2] - pose[None, :, 2])) >= min_angle_rad
    for j in range(1, m):
        others = np.flatnonzero(keep[:j] & crossing[j, :j])
        if len(others) and geometry.boxes_overlap(corners[:, j, None], corners[:, others]).any():
            keep[j] = False
    return keep
