"""Traffic for a new tile: moving and stopped vehicles on the new lanes, parked cars at the curb, a few
cyclists and pedestrians.

Agents are placed only on the new lanes and only in the generated half of the tile (tile-frame x >= 0;
the whole tile for a first tile). Moving vehicles follow each other with bumper gaps of at least
``min_gap_m`` (typically 10-40 m) at speeds near the speed limit, limited to sqrt(a_lat * R) on curves and
by a one-second headway to the vehicle ahead. Parked cars stand in rows along the right curb of the
rightmost lanes, cyclists ride near the right edge of a rightmost lane, pedestrians walk on the sidewalk
beyond the curb. Nothing overlaps another agent, and no agent comes within ``existing_clearance_m`` of an
agent already in the world. Motion codes are the last ~1 s of each agent's path along its lane, in its
body frame (zeros for static agents). Agents in a lane carry its id; parked cars and pedestrians, who are
beside the lanes, carry lane_id -1 (a lane-following policy should leave them alone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import AgentSpawns, TileRequest
from vectorworld.scene import AgentType, Lane, LaneGraph, LaneType

MOTION_POINTS = 6
MOTION_HORIZON_S = 1.0
MAX_MOTION_M = 12.0

OFF_LANE = -1
STOP_MARGIN_M = 2.0
"""A moving spawn can stop (comfortable braking) this far behind the agent ahead, should that one stop."""
"""lane_id of agents that are not on a lane: parked cars at the curb, pedestrians on the sidewalk."""
PARKED_INTRUSION_M = 0.3
"""How far a parked car at the curb reaches into its lane (m), unless that puts its centre more than
PARKED_MAX_OFFSET_M from the lane centre (wide lanes): traffic passes it at the lane centre."""
PARKED_MAX_OFFSET_M = 2.45  # inside the 2.5 m off-lane threshold (DESIGN.md section 8)

Eligible = Callable[[np.ndarray], np.ndarray]
"""Whether global points (..., 2) lie where agents may be spawned."""


@dataclass(frozen=True)
class SpawnConfig:
    """Traffic density and sizes. Lengths in m, speeds in m/s, probabilities per lane / tile."""

    min_gap_m: float = 8.0
    mean_extra_gap_m: float = 20.0
    connector_prob: float = 0.0  # vehicles spawned inside a junction could meet on crossing connectors
    stopped_prob: float = 0.15
    speed_factor: tuple[float, float] = (0.7, 1.05)
    max_lateral_accel_mps2: float = 3.0
    comfort_decel_mps2: float = 2.0
    headway_s: float = 1.0
    truck_prob: float = 0.05
    parked_prob: float = 0.35
    parked_row: tuple[int, int] = (1, 4)
    cyclist_prob: float = 0.12
    pedestrian_prob: float = 0.25
    existing_clearance_m: float = 10.0
    first_tile_clear_radius_m: float = 12.0
    max_agents: int = 24
    car_length_m: tuple[float, float] = (4.75, 0.3)
    car_width_m: tuple[float, float] = (2.0, 0.1)
    """Mean and standard deviation of car sizes (m)."""
    pedestrians: tuple[int, int] = (1, 2)
    """How many pedestrians (min, max) a tile gets when it gets any (``pedestrian_prob``)."""
    sidewalk_offset_m: tuple[float, float] = (2.3, 3.3)
    """Where pedestrians stand: this far (m) beyond the curb lane's edge."""
    pedestrian_clearance_m: float = 1.0
    """Pedestrians keep this far (m) beyond the edge of every lane (turns sweep past street corners)."""
    pedestrian_pair_prob: float = 0.0
    """Chance that a pedestrian walks with a companion 1.05-1.5 m beside."""
    queue_prob: float = 0.0
    """Chance that a lane ending at a junction starts with a queue of stopped cars at its end."""
    queue_cars: tuple[int, int] = (1, 4)
    queue_gap_m: tuple[float, float] = (1.5, 3.5)
    """Bumper gaps (m) in a standing queue."""


@dataclass
class _Candidate:
    xy: np.ndarray
    yaw: float
    speed: float
    length: float
    width: float
    agent_type: int
    lane_id: int
    motion: np.ndarray
    moving_in_lane: bool


def _lane_poses(lane: Lane, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points (M, 2) and headings (M,) rad at arc lengths ``s`` (M,), extrapolated straight beyond the ends."""
    pts, arc = lane.points, lane.arc_length
    k = np.clip(np.searchsorted(arc, s, side="right") - 1, 0, len(pts) - 2)
    seg = pts[k + 1] - pts[k]
    seg_len = np.maximum(arc[k + 1] - arc[k], 1e-9)
    xy = pts[k] + ((s - arc[k]) / seg_len)[:, None] * seg
    return xy, np.arctan2(seg[:, 1], seg[:, 0])


def _lane_pose(lane: Lane, s: float) -> tuple[np.ndarray, float]:
    """Point (2,) and heading (rad) at arc length ``s``."""
    xy, yaw = _lane_poses(lane, np.array([s]))
    return xy[0], float(yaw[0])


def _motion_codes(lane: Lane, s: np.ndarray, lateral: np.ndarray, xy: np.ndarray, yaw: np.ndarray,
                  speed: np.ndarray) -> np.ndarray:
    """(V, 6, 2) body-frame points of the path each agent drove in the last second along ``lane``
    (oldest first, ending at (0, 0); zeros when static). s, lateral, yaw, speed: (V,); xy: (V, 2)."""
    back = np.minimum(speed * MOTION_HORIZON_S, MAX_MOTION_M)[:, None] * np.linspace(1.0, 0.0, MOTION_POINTS)[None]
    pts, headings = _lane_poses(lane, (s[:, None] - back).ravel())
    pts = pts + np.repeat(lateral, MOTION_POINTS)[:, None] * np.stack([-np.sin(headings), np.cos(headings)], -1)
    d = pts.reshape(len(s), MOTION_POINTS, 2) - xy[:, None]
    c, sn = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    code = np.stack([c * d[..., 0] + sn * d[..., 1], -sn * d[..., 0] + c * d[..., 1]], -1)
    code[:, -1] = 0.0
    code[speed <= 0.0] = 0.0
    return code


def _max_curvature(lane: Lane, kappa: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Largest curvature (V,) 1/m (``kappa`` per vertex) from 5 m behind to 15 m ahead of each ``s`` (V,)."""
    arc = lane.arc_length[None]
    window = (arc >= s[:, None] - 5.0) & (arc <= s[:, None] + 15.0)
    return np.where(window, kappa[None], 0.0).max(1)


class _Clearance:
    """Distances from points to lane centrelines, excluding chosen lanes (parked cars, pedestrians)."""

    def __init__(self, lanes: list[Lane]) -> None:
        self.a = np.concatenate([lane.points[:-1] for lane in lanes])
        self.b = np.concatenate([lane.points[1:] for lane in lanes])
        counts = [len(lane.points) - 1 for lane in lanes]
        self.ids = np.repeat([lane.id for lane in lanes], counts)
        self.half = np.repeat([lane.width_m / 2.0 for lane in lanes], counts)
        self.mid = 0.5 * (self.a + self.b)

    def clear(self, points: np.ndarray, margin_m: float, exclude: tuple[int, ...]) -> bool:
        """Whether ``points`` (M, 2) keep ``margin_m`` beyond the half width of every lane not excluded."""
        near = np.all(np.abs(self.mid - points.mean(0)) < 15.0, -1)
        for lane_id in exclude:
            near &= self.ids != lane_id
        if not near.any():
            return True
        dist = geometry.point_segment_distance(points, self.a[near], self.b[near])
        return bool(np.all(dist >= self.half[near][None] + margin_m))


def spawn_agents(lanes: tuple[Lane, ...], request: TileRequest, first_tile: bool, config: SpawnConfig
                 ) -> AgentSpawns:
    """Agents for the new ``lanes`` of a tile (see the module docstring)."""
    rng, frame = request.rng, request.frame
    half = frame.size_m / 2.0
    known = [request.graph[i] for i in request.graph.near(frame.center_xy, half * 1.5)]
    clearance = _Clearance(list(lanes) + known)
    by_id = {lane.id: lane for lane in lanes}

    def eligible(xy: np.ndarray) -> np.ndarray:
        local = frame.to_local(xy)
        ok = np.all(np.abs(local) <= half - 1.0, -1)
        if first_tile:
            return ok & (np.linalg.norm(local, axis=-1) >= config.first_tile_clear_radius_m)
        return ok & (local[..., 0] >= 0.0)

    candidates = _vehicles(lanes, rng, config, eligible, _successor_curvature(lanes, request.graph),
                           _ends_at_junction(lanes, request.graph))
    candidates += _parked(lanes, by_id, rng, config, eligible, clearance)
    candidates += _vulnerable(lanes, rng, config, eligible, clearance)
    return _accept(candidates, request.existing_agents_xy, config)


def _ends_at_junction(lanes: tuple[Lane, ...], graph: LaneGraph) -> dict[int, bool]:
    """Whether each (non-connector) lane leads into junction connectors only."""
    by_id = {lane.id: lane for lane in lanes}
    out = {}
    for lane in lanes:
        nxt = [by_id.get(i) or (graph[i] if i in graph else None) for i in lane.successors]
        out[lane.id] = (lane.lane_type != LaneType.CONNECTOR and bool(nxt)
                        and all(n is not None and n.lane_type == LaneType.CONNECTOR for n in nxt))
    return out


def _size(rng: np.random.Generator, config: SpawnConfig, trucks: bool = True) -> tuple[float, float]:
    if trucks and rng.random() < config.truck_prob:
        return float(rng.uniform(7.0, 11.0)), float(rng.uniform(2.3, 2.6))
    (length, sd), (width, wsd) = config.car_length_m, config.car_width_m
    return (float(np.clip(rng.normal(length, sd), 4.2, length + 0.65)),
            float(np.clip(rng.normal(width, wsd), 1.8, width + 0.2)))


def _successor_curvature(lanes: tuple[Lane, ...], graph: LaneGraph) -> dict[int, float]:
    """Largest curvature (1/m) over the successors of each lane (0 if none is known)."""
    by_id = {lane.id: lane for lane in lanes}
    out = {}
    for lane in lanes:
        nxt = [by_id.get(i) or (graph[i] if i in graph else None) for i in lane.successors]
        out[lane.id] = max((float(geometry.curvature(n.points).max(initial=0.0)) for n in nxt if n is not None),
                           default=0.0)
    return out


def _vehicles(lanes: tuple[Lane, ...], rng: np.random.Generator, config: SpawnConfig,
              eligible: Eligible, next_kappa: dict[int, float],
              queued_at_end: dict[int, bool] | None = None) -> list[_Candidate]:
    """Moving (and some stopped) vehicles in lane, queued from each lane's downstream end backwards.

    Speeds respect the lane's limit, its curves, the gap ahead, and the curve after the lane's end
    (reachable with comfortable braking)."""
    out = []
    queued_at_end = queued_at_end or {}
    for lane in lanes:
        if lane.lane_type == LaneType.CONNECTOR and rng.random() >= config.connector_prob:
            continue
        ok = eligible(lane.points)
        if not ok.any():
            continue
        s_lo, s_hi = float(lane.arc_length[ok].min()), float(lane.arc_length[ok].max())
        rows = []  # s, length, width, lateral, speed factor, stopped, heading noise, gap to the one ahead
        s, gap_ahead = s_hi - float(rng.uniform(0.0, config.mean_extra_gap_m)), np.inf
        queue = 0
        if (config.queue_prob > 0.0 and queued_at_end.get(lane.id, False) and bool(ok[-1])
                and rng.random() < config.queue_prob):
            queue = int(rng.integers(config.queue_cars[0], config.queue_cars[1] + 1))
            s = s_hi - float(rng.uniform(2.5, 4.0))  # the first car waits at the stop line
        while s >= s_lo:
            length, width = _size(rng, config)
            stopped = len(rows) < queue or rng.random() < config.stopped_prob
            rows.append((s, length, width, float(np.clip(rng.normal(0.0, 0.15), -0.3, 0.3)),
                         float(rng.uniform(*config.speed_factor)), float(stopped),
                         float(rng.normal(0.0, 0.02)), gap_ahead))
            in_queue = len(rows) < queue
            gap_ahead = (float(rng.uniform(*config.queue_gap_m)) if in_queue
                         else config.min_gap_m + float(rng.exponential(config.mean_extra_gap_m)))
            s -= length + gap_ahead
        if not rows:
            continue
        v = np.array(rows)
        # bumper gaps as placed: centre distance less both half lengths (the planned gap counted the one ahead)
        v[1:, 7] = v[:-1, 0] - v[1:, 0] - (v[:-1, 1] + v[1:, 1]) / 2.0
        xy, yaw = _lane_poses(lane, v[:, 0])
        keep = np.cumprod(eligible(xy)).astype(bool)  # stop at the first one outside the area
        radius = 1.0 / np.maximum(_max_curvature(lane, geometry.curvature(lane.points), v[:, 0]), 1e-4)
        next_curve = np.sqrt(config.max_lateral_accel_mps2 / max(next_kappa.get(lane.id, 0.0), 1e-4))
        before_next = np.sqrt(next_curve**2 + 2.0 * config.comfort_decel_mps2 * np.maximum(lane.length_m - v[:, 0], 0))
        speed = np.minimum.reduce([lane.speed_limit_mps * v[:, 4], np.sqrt(config.max_lateral_accel_mps2 * radius),
                                   v[:, 7] / config.headway_s, before_next])
        if lane.lane_type != LaneType.CONNECTOR:  # nobody stands still inside a junction
            speed = np.where(v[:, 5] > 0.0, 0.0, speed)
        for i in range(1, len(speed)):  # each can stop behind the one ahead (row i - 1) if that one brakes
            speed[i] = min(speed[i], np.sqrt(speed[i - 1] ** 2 + 2.0 * config.comfort_decel_mps2
                                             * max(v[i, 7] - STOP_MARGIN_M, 0.0)))
        pos = xy + v[:, 3:4] * np.stack([-np.sin(yaw), np.cos(yaw)], -1)
        heading = geometry.wrap_angle(yaw + v[:, 6])
        codes = _motion_codes(lane, v[:, 0], v[:, 3], pos, heading, speed)
        for i in np.flatnonzero(keep):
            out.append(_Candidate(pos[i], float(heading[i]), float(speed[i]), float(v[i, 1]), float(v[i, 2]),
                                  AgentType.VEHICLE, lane.id, codes[i], True))
    return out


def _rightmost(lanes: tuple[Lane, ...]) -> list[Lane]:
    return [lane for lane in lanes if lane.lane_type != LaneType.CONNECTOR and not lane.right_neighbors
            and lane.length_m >= 12.0]


def _parked(lanes: tuple[Lane, ...], by_id: dict[int, Lane], rng: np.random.Generator, config: SpawnConfig,
            eligible: Eligible, clearance: _Clearance) -> list[_Candidate]:
    """Rows of parked cars along the right curb of rightmost lanes (speed 0, static motion code)."""
    out = []
    for lane in _rightmost(lanes):
        if rng.random() >= config.parked_prob:
            continue
        count = int(rng.integers(config.parked_row[0], config.parked_row[1] + 1))
        s = float(rng.uniform(3.0, max(lane.length_m - 3.0, 3.1)))
        related = (lane.id,) + tuple(i for i in lane.successors + lane.predecessors
                                     if i in by_id and by_id[i].lane_type != LaneType.CONNECTOR)
        for _ in range(count):
            length, width = _size(rng, config, trucks=False)
            width = min(width, 2.0)  # with the offset below, traffic passes 1.45 m from the lane centre
            if s > lane.length_m - 3.0:
                break
            xy, yaw = _lane_pose(lane, s)
            offset = -min(max(lane.width_m / 2.0 - PARKED_INTRUSION_M, 1.45) + width / 2.0, PARKED_MAX_OFFSET_M)
            pos = xy + offset * np.array([-np.sin(yaw), np.cos(yaw)])
            corners = geometry.box_corners(pos, np.float64(yaw), np.float64(length), np.float64(width))
            if eligible(pos) and clearance.clear(np.vstack([corners, pos[None]]), 0.2, related):
                out.append(_Candidate(pos, yaw, 0.0, length, width, AgentType.VEHICLE, OFF_LANE,
                                      np.zeros((MOTION_POINTS, 2)), False))
            s += length + float(rng.uniform(1.4, 2.6))
    return out


def _vulnerable(lanes: tuple[Lane, ...], rng: np.random.Generator, config: SpawnConfig, eligible: Eligible,
                clearance: _Clearance) -> list[_Candidate]:
    """At most one cyclist near the right edge of a rightmost lane and 1-2 pedestrians on a sidewalk."""
    out = []
    curbs = _rightmost(lanes)
    if not curbs:
        return out
    if rng.random() < config.cyclist_prob:
        lane = curbs[int(rng.integers(len(curbs)))]
        s = float(rng.uniform(0.0, lane.length_m))
        xy, yaw = _lane_pose(lane, s)
        lateral = -(lane.width_m / 2.0 - 0.55)
        pos = xy + lateral * np.array([-np.sin(yaw), np.cos(yaw)])
        kappa = float(_max_curvature(lane, geometry.curvature(lane.points), np.array([s]))[0])
        speed = min(float(rng.uniform(3.0, 6.0)), float(np.sqrt(config.max_lateral_accel_mps2 / max(kappa, 1e-4))))
        if eligible(pos):
            code = _motion_codes(lane, np.array([s]), np.array([lateral]), pos[None], np.array([yaw]),
                                 np.array([speed]))[0]
            out.append(_Candidate(pos, yaw, speed, 1.8, 0.7, AgentType.CYCLIST, lane.id, code, True))
    if rng.random() < config.pedestrian_prob:
        for _ in range(int(rng.integers(config.pedestrians[0], config.pedestrians[1] + 1))):
            lane = curbs[int(rng.integers(len(curbs)))]
            s = float(rng.uniform(0.0, lane.length_m))
            xy, yaw = _lane_pose(lane, s)
            pos = xy - (lane.width_m / 2.0 + float(rng.uniform(*config.sidewalk_offset_m))) * np.array(
                [-np.sin(yaw), np.cos(yaw)])
            heading = float(geometry.wrap_angle(yaw + (np.pi if rng.random() < 0.5 else 0.0)))
            speed = 0.0 if rng.random() < 0.3 else float(rng.uniform(0.8, 1.6))
            motion = np.zeros((MOTION_POINTS, 2))
            if speed > 0.0:
                motion[:, 0] = -speed * MOTION_HORIZON_S * np.linspace(1.0, 0.0, MOTION_POINTS)
            if eligible(pos) and clearance.clear(pos[None], config.pedestrian_clearance_m, ()):
                out.append(_Candidate(pos, heading, speed, 0.6, 0.6, AgentType.PEDESTRIAN, OFF_LANE, motion, False))
                if config.pedestrian_pair_prob > 0.0 and rng.random() < config.pedestrian_pair_prob:
                    beside = pos + float(rng.uniform(1.05, 1.5)) * np.array([np.sin(yaw), -np.cos(yaw)])
                    if eligible(beside) and clearance.clear(beside[None], config.pedestrian_clearance_m, ()):
                        out.append(_Candidate(beside, heading, speed, 0.6, 0.6, AgentType.PEDESTRIAN, OFF_LANE,
                                              motion.copy(), False))
    return out


def _accept(candidates: list[_Candidate], existing_xy: np.ndarray, config: SpawnConfig) -> AgentSpawns:
    """Greedy acceptance: clear of existing agents, no box overlap, bumper gaps within a lane."""
    kept: list[_Candidate] = []
    boxes = np.zeros((len(candidates), 4, 2))
    centers = np.zeros((len(candidates), 2))
    radii = np.zeros(len(candidates))
    existing = np.asarray(existing_xy, np.float64).reshape(-1, 2)
    for c in candidates:
        if len(kept) >= config.max_agents:
            break
        if len(existing) and np.min(np.linalg.norm(existing - c.xy, axis=-1)) < config.existing_clearance_m:
            continue
        n = len(kept)
        dist = np.linalg.norm(centers[:n] - c.xy, axis=-1)
        box = geometry.box_corners(c.xy, np.float64(c.yaw), np.float64(c.length + 0.6), np.float64(c.width + 0.4))
        touching = np.flatnonzero(dist < radii[:n] + 0.5 * np.hypot(c.length + 0.6, c.width + 0.4))
        if len(touching) and geometry.boxes_overlap(box[None], boxes[touching]).any():
            continue
        near = np.flatnonzero(dist < c.length + config.min_gap_m + 6.0)
        if c.moving_in_lane and len(near) and not _headway_ok(c, [kept[i] for i in near], config):
            continue
        radii[n] = 0.5 * np.hypot(c.length + 0.6, c.width + 0.4)
        boxes[n], centers[n] = box, c.xy
        kept.append(c)
    if not kept:
        return AgentSpawns.none()
    return AgentSpawns(
        xy=np.stack([c.xy for c in kept]), yaw=np.array([c.yaw for c in kept]),
        speed=np.array([c.speed for c in kept]), length=np.array([c.length for c in kept]),
        width=np.array([c.width for c in kept]), agent_type=np.array([c.agent_type for c in kept], np.int8),
        lane_id=np.array([c.lane_id for c in kept], np.int64), motion_code=np.stack([c.motion for c in kept]))


def _headway_ok(c: _Candidate, others: list[_Candidate], config: SpawnConfig) -> bool:
    """No other in-lane agent of the same direction within the minimum bumper gap ahead or behind."""
    for k in others:
        if not k.moving_in_lane or abs(float(geometry.wrap_angle(k.yaw - c.yaw))) > 0.5:
            continue
        rel = geometry.to_local(k.xy[None], c.xy, c.yaw)[0]
        if abs(rel[1]) < 1.6 and abs(rel[0]) < (c.length + k.length) / 2.0 + config.min_gap_m:
            return False
    return True
