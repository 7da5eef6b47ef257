"""Cutting a tile out of a :class:`~vectorworld.generation.procedural.city_plan.CityPlan`.

A tile gets every plan piece that reaches into its square and is not in the known world yet, and every
connector of a junction it touches (junctions come whole, so no connector appears later beside traffic
already on its neighbours). Pieces already known are recognised by their end points (the plan computes
them bit for bit the same every time); edges to them become links. A port is *on the plan* when a plan
piece ends (out port) or starts (in port) exactly there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import TileFrame
from vectorworld.generation.procedural.city_plan import CityPlan, Key, PlanLane
from vectorworld.generation.procedural.city_signals import CitySignals
from vectorworld.scene import Crosswalk, Lane, LaneGraph

MATCH_DECIMALS = 3
SAMPLE_M = 1.0


@dataclass(frozen=True)
class PlacedPiece:
    """A plan piece in the global frame: its points, the centre and radius (m) of a circle holding them, and
    its first and last point rounded to :data:`MATCH_DECIMALS` (how ports and known lanes are matched)."""

    points: np.ndarray
    mid: np.ndarray
    radius: float
    start: tuple[float, float]
    end: tuple[float, float]


@dataclass(frozen=True)
class PlacedCell:
    """The plan pieces of one node (its junction's connectors and the road segments that start there), placed:
    ``keys`` in plan order with their lanes, points, circle centres (n, 2) and radii (n,); ``starts`` and
    ``ends``: their rounded end points; ``feeds``: for each successor key, this cell's pieces leading into it;
    ``connectors``: the keys of the junction's connectors."""

    keys: tuple[Key, ...]
    lanes: dict[Key, PlanLane]
    points: dict[Key, np.ndarray]
    mids: np.ndarray
    radii: np.ndarray
    starts: frozenset[tuple[float, float]]
    ends: frozenset[tuple[float, float]]
    feeds: dict[Key, tuple[Key, ...]]
    connectors: tuple[Key, ...]


@dataclass(frozen=True)
class CityAnchor:
    """Where the plan frame sits in the world: origin (2,) m global and yaw (rad); ``cache`` keeps every
    piece once placed and ``cells`` every node's pieces (the plan never changes)."""

    origin: np.ndarray
    yaw: float
    cache: dict = field(default_factory=dict, compare=False, repr=False)
    cells: dict = field(default_factory=dict, compare=False, repr=False)

    def placed(self, lane: PlanLane) -> PlacedPiece:
        hit = self.cache.get(lane.key)
        if hit is None:
            pts = geometry.to_global(lane.points, self.origin, self.yaw)
            mid = pts.mean(0)
            ends = np.round(pts[[0, -1]], MATCH_DECIMALS).tolist()
            hit = self.cache[lane.key] = PlacedPiece(pts, mid, float(np.linalg.norm(pts - mid, axis=-1).max()),
                                                     tuple(ends[0]), tuple(ends[1]))
        return hit

    def cell(self, plan: CityPlan, i: int, j: int) -> PlacedCell:
        """The placed pieces of node (i, j) of ``plan``."""
        hit = self.cells.get((i, j))
        if hit is None:
            lanes = [*plan.junction(i, j), *plan.segment(i, j, 0), *(plan.segment(i, j, 1) if plan.has_block(i, j)
                                                                    else ())]
            placed = [self.placed(lane) for lane in lanes]
            feeds: dict[Key, list[Key]] = {}
            for lane in lanes:
                for s in lane.successors:
                    feeds.setdefault(s, []).append(lane.key)
            hit = self.cells[(i, j)] = PlacedCell(
                tuple(lane.key for lane in lanes), {lane.key: lane for lane in lanes},
                {lane.key: piece.points for lane, piece in zip(lanes, placed, strict=True)},
                np.array([piece.mid for piece in placed]).reshape(-1, 2), np.array([piece.radius for piece in placed]),
                frozenset(piece.start for piece in placed), frozenset(piece.end for piece in placed),
                {k: tuple(v) for k, v in feeds.items()}, tuple(lane.key for lane in lanes if lane.key[0] == "conn"))
        return hit


def _end_key(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    return tuple(np.round(np.concatenate([a, b]), MATCH_DECIMALS).tolist())  # type: ignore[return-value]


class CityRegion:
    """The plan pieces around a tile, in the global frame, with their predecessors (node by node, each node's
    pieces placed once per world: :meth:`CityAnchor.cell`)."""

    def __init__(self, plan: CityPlan, anchor: CityAnchor, frame: TileFrame, margin_m: float = 80.0) -> None:
        self.plan, self.anchor = plan, anchor
        corners = geometry.to_local(
            geometry.box_corners(frame.center_xy, np.float64(frame.yaw), np.float64(frame.size_m),
                                 np.float64(frame.size_m)), anchor.origin, anchor.yaw)
        lo, hi = corners.min(0) - margin_m, corners.max(0) + margin_m
        self.cells = {node: anchor.cell(plan, *node) for node in self._nodes(lo, hi)}
        cells = list(self.cells.values())
        self.lanes: dict[Key, PlanLane] = {}
        self.points: dict[Key, np.ndarray] = {}
        for cell in cells:
            self.lanes.update(cell.lanes)
            self.points.update(cell.points)
        self._keys = [key for cell in cells for key in cell.keys]
        self._mids = np.concatenate([cell.mids for cell in cells]) if cells else np.zeros((0, 2))
        self._radii = np.concatenate([cell.radii for cell in cells]) if cells else np.zeros(0)
        self.starts = frozenset().union(*(cell.starts for cell in cells))
        self.ends = frozenset().union(*(cell.ends for cell in cells))

    def _nodes(self, lo: np.ndarray, hi: np.ndarray) -> list[tuple[int, int]]:
        plan, spacing = self.plan, self.plan.config.spacing_m
        i_lo, i_hi = math.floor(lo[0] / spacing) - 1, math.ceil(hi[0] / spacing) + 1
        j_lo, j_hi = math.floor(lo[1] / spacing) - 1, math.ceil(hi[1] / spacing) + 1
        out: list[tuple[int, int]] = []
        for j in range(j_lo, j_hi + 1):
            i = plan.next_junction(i_lo, j, -1)
            while i <= i_hi:
                out.append((i, j))
                i = plan.next_junction(i, j, 1)
        return out

    def predecessors(self, key: Key) -> list[Key]:
        """The region's pieces leading into ``key``, in plan order."""
        return [p for cell in self.cells.values() for p in cell.feeds.get(key, ())]

    def on_plan(self, xy: np.ndarray, is_out: bool) -> bool:
        point = tuple(np.round(xy, MATCH_DECIMALS).tolist())
        return point in (self.ends if is_out else self.starts)

    def selected(self, frame: TileFrame) -> list[Key]:
        """Keys (sorted) of the pieces reaching into the tile, with every connector of touched junctions."""
        hit = set()
        reach = frame.size_m / np.sqrt(2.0) + 1.0
        near = np.linalg.norm(self._mids - frame.center_xy, axis=-1) <= reach + self._radii
        for index in np.flatnonzero(near).tolist():
            key = self._keys[index]
            pts = self.points[key]
            dense = geometry.resample_by_spacing(pts, SAMPLE_M) if len(pts) == 2 else pts
            if bool(frame.contains(dense, 0.5).any()):
                hit.add(key)
        for node in {key[1:3] for key in hit if key[0] == "conn"}:
            hit.update(self.cells[node].connectors)
        return sorted(hit, key=repr)


def known_by_ends(graph: LaneGraph, center_xy: np.ndarray, radius_m: float) -> dict[tuple, int]:
    """Known lanes near ``center_xy`` by their rounded (start, end) points."""
    out = {}
    for lane_id in graph.near(center_xy, radius_m):
        lane = graph[lane_id]
        out[_end_key(lane.points[0], lane.points[-1])] = lane_id
    return out


def cut_tile(region: CityRegion, frame: TileFrame, graph: LaneGraph, lane_ids,  # noqa: ANN001
             signals: CitySignals | None = None) -> CutTile:
    """The new lanes (with edges among themselves), links to known lanes, the crosswalks of the new junctions,
    and how many junctions and left-turn pockets they hold. lane_ids: the request's IdAllocator; signals: the
    lights of the plan (the connectors of signalised junctions carry theirs)."""
    known = known_by_ends(graph, frame.center_xy, frame.size_m * 2.5)

    def known_id(key: Key) -> int | None:
        pts = region.points.get(key)
        return None if pts is None else known.get(_end_key(pts[0], pts[-1]))

    keys = [k for k in region.selected(frame) if known_id(k) is None]
    ids = {k: lane_ids() for k in keys}
    succ: dict[int, list[int]] = {i: [] for i in ids.values()}
    pred: dict[int, list[int]] = {i: [] for i in ids.values()}
    links: list[tuple[int, int]] = []
    for key in keys:
        me = ids[key]
        for s in region.lanes[key].successors:
            if s in ids:
                succ[me].append(ids[s])
                pred[ids[s]].append(me)
            elif (other := known_id(s)) is not None:
                links.append((me, other))
        for p in region.predecessors(key):
            if p not in ids and (other := known_id(p)) is not None:
                links.append((other, me))
    left: dict[int, list[int]] = {i: [] for i in ids.values()}
    right: dict[int, list[int]] = {i: [] for i in ids.values()}
    for key in keys:
        lk = region.lanes[key].left
        if lk is not None and lk in ids:
            left[ids[key]].append(ids[lk])
            right[ids[lk]].append(ids[key])
    lanes = []
    for key in keys:
        plan_lane, i = region.lanes[key], ids[key]
        lanes.append(Lane(i, region.points[key], width_m=plan_lane.width_m, speed_limit_mps=plan_lane.speed_limit_mps,
                          lane_type=plan_lane.lane_type, successors=tuple(succ[i]), predecessors=tuple(pred[i]),
                          left_neighbors=tuple(left[i]), right_neighbors=tuple(right[i]),
                          signal=None if signals is None else signals.lane_signal(key)))
    nodes = sorted({k[1:3] for k in keys if k[0] == "conn"})
    crosswalks = tuple(walk for node in nodes for walk in _crosswalks(region, node, ids, lanes))
    return CutTile(tuple(lanes), tuple(links), crosswalks, len(nodes), sum(k[0] == "pocket" for k in keys))


def _crosswalks(region: CityRegion, node: tuple[int, int], ids: dict[Key, int], lanes: list[Lane]
                ) -> list[Crosswalk]:
    """The crosswalks of a junction cut whole into this tile, in the global frame (through movements only
    where they carry lights)."""
    signalised = {lane.id for lane in lanes if lane.signal is not None}
    out = []
    for plan_walk in region.plan.crosswalks(*node):
        if not all(k in ids for k in plan_walk.conflicts):
            continue  # the junction came with an earlier tile (or another generator's lanes)
        walk = geometry.to_global(plan_walk.walk, region.anchor.origin, region.anchor.yaw)
        out.append(Crosswalk(-1, walk, plan_walk.half_width_m, tuple(ids[k] for k in plan_walk.conflicts),
                             tuple(ids[k] for k in plan_walk.through if ids[k] in signalised)))
    return out


@dataclass(frozen=True)
class CutTile:
    """What :func:`cut_tile` cuts: new lanes, links to known lanes, crosswalks, junction and pocket counts."""

    lanes: tuple[Lane, ...]
    links: tuple[tuple[int, int], ...]
    crosswalks: tuple[Crosswalk, ...]
    junctions: int
    pockets: int
