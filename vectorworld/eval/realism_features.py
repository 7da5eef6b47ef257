"""Realism features of one road world at one moment: per tile, per lane and per agent samples.

A *snapshot* is a lane graph, the road users in it (struct of arrays) and the tile anchors (centre, yaw)
to look at. The same code measures real maps (WOMD, nuPlan) and generated worlds, so every figure has
one definition:

* per tile (64 m, cut with :func:`vectorworld.data.tiles.crop_lanes`): lanes (clipped runs), agents,
  pedestrians, cyclists;
* per agent in a tile: distance to the nearest other agent in the tile, heading relative to the tile
  anchor; per vehicle: speed, standing still (< 0.5 m/s), length, width;
* per lane touched by a tile (each lane once per world): length, whether its tightest 5 m turns on a
  radius < 50 m, successor out-degree, lanes per direction beside it, lateral spacing to the next lane
  in the same direction (lane width; geometric, so maps without widths compare), speed limit;
* junction lanes are those that cross a lane they are not connected to, share a predecessor or a
  successor with another lane (turn connectors), or are typed CONNECTOR; *junction spacing* is the
  length of a chain of non-junction lanes with a junction at both ends; *crossing angle* is the angle
  (0-90 deg) between two crossing, unconnected lanes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.data.tiles import TileConfig, crop_lanes
from vectorworld.scene import AgentType, Lane, LaneGraph, LaneType

STANDING_MPS = 0.5
TURN_WINDOW_M = 5.0
TIGHT_TURN_M = 50.0
PARALLEL_RAD = 0.3
"""Lanes whose headings differ by less than this run in the same direction."""
MAX_LATERAL_M = 20.0
NEIGHBOUR_GAP_M = (2.0, 5.5)
"""Lateral spacing (m) of two adjacent lanes of one carriageway."""


@dataclass(frozen=True)
class Snapshot:
    """A world at one moment. agents: arrays of equal length A (xy (A, 2) m, yaw rad, speed m/s, length and
    width m, agent_type :class:`AgentType`); anchors: tile centres (T, 2) m and yaws (T,) rad."""

    graph: LaneGraph
    xy: np.ndarray
    yaw: np.ndarray
    speed: np.ndarray
    length: np.ndarray
    width: np.ndarray
    agent_type: np.ndarray
    anchor_xy: np.ndarray
    anchor_yaw: np.ndarray


@dataclass
class Samples:
    """Pooled samples, by feature name (see :data:`vectorworld.eval.realism.FEATURES`)."""

    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, values: object) -> None:
        self.values.setdefault(name, []).extend(np.asarray(values, np.float64).ravel().tolist())

    def extend(self, other: Samples) -> None:
        for name, values in other.values.items():
            self.add(name, values)

    def array(self, name: str) -> np.ndarray:
        return np.asarray(self.values.get(name, []), np.float64)


def tile_samples(snap: Snapshot, tile: TileConfig = TileConfig(), out: Samples | None = None) -> Samples:
    """Per-tile and per-agent samples of every anchor of ``snap``."""
    out = out if out is not None else Samples()
    half = tile.size_m / 2.0
    for center, yaw in zip(snap.anchor_xy, snap.anchor_yaw, strict=True):
        lanes = crop_lanes(snap.graph, center, float(yaw), tile)
        local = geometry.to_local(snap.xy, center, float(yaw)) if len(snap.xy) else np.zeros((0, 2))
        inside = np.all(np.abs(local) <= half, axis=-1) & np.isin(
            snap.agent_type, [AgentType.VEHICLE, AgentType.PEDESTRIAN, AgentType.CYCLIST])
        types = snap.agent_type[inside]
        out.add("lanes_per_tile", [len(lanes["lane_ids"])])
        out.add("agents_per_tile", [int(inside.sum())])
        out.add("pedestrians_per_tile", [int((types == AgentType.PEDESTRIAN).sum())])
        out.add("cyclists_per_tile", [int((types == AgentType.CYCLIST).sum())])
        pts = local[inside]
        if len(pts) > 1:
            d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
            np.fill_diagonal(d, np.inf)
            nearest = d.min(1)
            out.add("nn_distance_m", nearest)
            out.add("nn_below_2m", nearest < 2.0)
        rel = np.degrees(np.abs(geometry.wrap_angle(snap.yaw[inside] - yaw)))
        out.add("heading_rel_deg", rel)
        vehicle = inside & (snap.agent_type == AgentType.VEHICLE)
        out.add("vehicle_speed_mps", np.abs(snap.speed[vehicle]))
        out.add("vehicle_standing", np.abs(snap.speed[vehicle]) < STANDING_MPS)
        out.add("vehicle_length_m", snap.length[vehicle])
        out.add("vehicle_width_m", snap.width[vehicle])
    return out


def lanes_touched(snap: Snapshot, tile: TileConfig = TileConfig()) -> set[int]:
    """Ids of the lanes that some tile of ``snap`` cuts a run out of."""
    ids: set[int] = set()
    for center, yaw in zip(snap.anchor_xy, snap.anchor_yaw, strict=True):
        ids.update(crop_lanes(snap.graph, center, float(yaw), tile)["lane_ids"].tolist())
    return ids


def min_turn_radius(lane: Lane) -> float:
    """The tightest radius (m) of the lane, its heading change measured over ``TURN_WINDOW_M`` windows."""
    if lane.length_m < 1e-6:
        return np.inf
    if lane.length_m <= TURN_WINDOW_M:
        turn = abs(float(geometry.wrap_angle(lane.end_pose[1] - lane.start_pose[1])))
        return lane.length_m / turn if turn > 1e-6 else np.inf
    pts = geometry.resample_by_spacing(lane.points, 1.0)
    seg = np.diff(pts, axis=0)
    yaw = np.unwrap(np.arctan2(seg[:, 1], seg[:, 0]))
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(seg, axis=-1))])[:-1]
    far = np.searchsorted(s, s + TURN_WINDOW_M)
    ok = far < len(s)
    if not ok.any():
        return np.inf
    turn = np.abs(yaw[far[ok]] - yaw[ok])
    ds = s[far[ok]] - s[ok]
    radius = np.where(turn > 1e-9, ds / np.maximum(turn, 1e-9), np.inf)
    return float(radius.min())


def junction_lanes(graph: LaneGraph, ids: set[int]) -> tuple[set[int], list[float]]:
    """Junction lanes among (and around) ``ids``, and the crossing angles (deg) of their crossing pairs."""
    import shapely

    near: set[int] = set(ids)
    for lane_id in ids:
        lane = graph[lane_id]
        near.update(i for i in (*lane.successors, *lane.predecessors) if i in graph)
    order = sorted(near)
    lines = [shapely.LineString(graph[i].points) for i in order]
    tree = shapely.STRtree(lines)
    junction = {i for i in order if graph[i].lane_type == LaneType.CONNECTOR}
    for i in order:
        lane = graph[i]
        for p in lane.predecessors:
            if p in graph and len([s for s in graph[p].successors if s in graph]) > 1:
                junction.add(i)
        for s in lane.successors:
            if s in graph and len([p for p in graph[s].predecessors if p in graph]) > 1:
                junction.add(i)
    angles: list[float] = []
    a_idx, b_idx = tree.query(lines, predicate="crosses")
    for a, b in zip(a_idx.tolist(), b_idx.tolist(), strict=True):
        la, lb = graph[order[a]], graph[order[b]]
        if a >= b or _connected(la, lb):
            continue
        junction.update((la.id, lb.id))
        if la.id in ids or lb.id in ids:
            meet = shapely.intersection(lines[a], lines[b])
            point = np.asarray(shapely.get_coordinates(meet))[:1]
            if len(point):
                _, _, ya = geometry.project_to_polyline(point, la.points)
                _, _, yb = geometry.project_to_polyline(point, lb.points)
                angle = abs(float(geometry.wrap_angle(ya[0] - yb[0])))
                angles.append(float(np.degrees(min(angle, np.pi - angle))))
    return junction, angles


def _connected(la: Lane, lb: Lane) -> bool:
    direct = set(la.successors + la.predecessors + la.left_neighbors + la.right_neighbors)
    return (lb.id in direct or bool(set(la.successors) & set(lb.successors))
            or bool(set(la.predecessors) & set(lb.predecessors)))


def _parallel_offsets(graph: LaneGraph, lane: Lane, skip: set[int]) -> np.ndarray:
    """Signed lateral offsets (m, + left) of the non-junction lanes running beside ``lane``'s midpoint in
    its direction."""
    mid = geometry.interpolate_polyline(lane.points, lane.arc_length, np.array([lane.length_m / 2.0]))
    heading = geometry.polyline_headings(lane.points)
    k = min(int(np.searchsorted(lane.arc_length, lane.length_m / 2.0)), len(heading) - 1)
    yaw = float(heading[max(k - 1, 0)])
    left = np.array([-np.sin(yaw), np.cos(yaw)])
    offsets = []
    for other_id in graph.near(mid[0], MAX_LATERAL_M):
        if other_id == lane.id or other_id in skip:
            continue
        other = graph[other_id]
        s, lat, oyaw = geometry.project_to_polyline(mid, other.points)
        if not (0.0 < s[0] < other.length_m) or abs(float(lat[0])) > MAX_LATERAL_M:
            continue
        if abs(float(geometry.wrap_angle(oyaw[0] - yaw))) > PARALLEL_RAD:
            continue
        foot = geometry.interpolate_polyline(other.points, other.arc_length, s)
        offsets.append(float(np.dot(foot[0] - mid[0], left)))
    return np.array(offsets)


def _chain_count(offsets: np.ndarray) -> int:
    """1 + the lanes reached from offset 0 stepping left and right by adjacent-lane spacings."""
    count = 1
    for side in (1.0, -1.0):
        at = 0.0
        for o in sorted(o * side for o in offsets if o * side > 0.5):
            if NEIGHBOUR_GAP_M[0] <= o - at <= NEIGHBOUR_GAP_M[1]:
                count += 1
                at = o
            elif o - at > NEIGHBOUR_GAP_M[1]:
                break
    return count


def lane_samples(graph: LaneGraph, ids: set[int], out: Samples | None = None, spacing: bool = True) -> Samples:
    """Per-lane samples of the lanes ``ids`` of ``graph`` (crossing angles included, and with ``spacing`` the
    junction spacing along the chains inside ``ids``)."""
    out = out if out is not None else Samples()
    ids = {i for i in ids if i in graph}
    if not ids:
        return out
    junction, angles = junction_lanes(graph, ids)
    out.add("crossing_angle_deg", angles)
    for lane_id in sorted(ids):
        lane = graph[lane_id]
        out.add("lane_length_m", [lane.length_m])
        out.add("turn_radius_below_50m", [min_turn_radius(lane) < TIGHT_TURN_M])
        out.add("successor_out_degree", [len([s for s in lane.successors if s in graph])])
        out.add("speed_limit_mps", [lane.speed_limit_mps])
        if lane_id in junction:
            continue
        offsets = _parallel_offsets(graph, lane, junction)
        out.add("lanes_per_direction", [_chain_count(offsets)])
        adjacent = np.abs(offsets)[(np.abs(offsets) >= NEIGHBOUR_GAP_M[0]) & (np.abs(offsets) <= NEIGHBOUR_GAP_M[1])]
        if len(adjacent):
            out.add("lane_width_m", [float(adjacent.min())])
    if spacing:
        out.add("junction_spacing_m", junction_spacing(graph, ids, junction))
    return out


def junction_spacing(graph: LaneGraph, ids: set[int], junction: set[int]) -> list[float]:
    """Lengths (m) of the chains of non-junction lanes (among ``ids``) with a junction lane at both ends."""

    def unique_next(lane: Lane) -> int | None:
        succ = [s for s in lane.successors if s in graph]
        if len(succ) != 1 or succ[0] in junction or succ[0] not in ids:
            return None
        nxt = graph[succ[0]]
        return nxt.id if len([p for p in nxt.predecessors if p in graph]) == 1 else None

    nexts = {i: unique_next(graph[i]) for i in ids if i not in junction}
    has_prev = {n for n in nexts.values() if n is not None}
    spacings = []
    for start in sorted(set(nexts) - has_prev):
        if not any(p in junction for p in graph[start].predecessors):
            continue
        total, at, seen = 0.0, start, set()
        while True:
            seen.add(at)
            total += graph[at].length_m
            nxt = nexts.get(at)
            if nxt is None or nxt in seen:
                break
            at = nxt
        if any(s in junction for s in graph[at].successors):
            spacings.append(total)
    return spacings
