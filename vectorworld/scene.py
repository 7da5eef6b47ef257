"""The data model: lanes and the lane graph, agents (struct-of-arrays), tiles.

All coordinates here are in the global world frame (m) unless a name says otherwise.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from vectorworld import geometry
from vectorworld.signals import LaneSignal

TILE_SIZE_M = 64.0
"""Edge length of a tile (m). A new tile overlaps the known world by half its length."""


class LaneType(IntEnum):
    """Lane types; 0-3 follow WOMD's LaneCenter.type, CONNECTOR marks lanes inside intersections."""

    UNDEFINED = 0
    FREEWAY = 1
    SURFACE_STREET = 2
    BIKE_LANE = 3
    CONNECTOR = 4


class AgentType(IntEnum):
    """Road-user types (WOMD numbering)."""

    UNSET = 0
    VEHICLE = 1
    PEDESTRIAN = 2
    CYCLIST = 3
    OTHER = 4


@dataclass(frozen=True)
class Lane:
    """One lane centreline with its attributes and graph edges.

    points: (N, 2) float64, m, global frame, in the direction of travel (N >= 2).
    """

    id: int
    points: np.ndarray
    width_m: float = 3.5
    speed_limit_mps: float = 13.9
    lane_type: LaneType = LaneType.SURFACE_STREET
    successors: tuple[int, ...] = ()
    predecessors: tuple[int, ...] = ()
    left_neighbors: tuple[int, ...] = ()
    right_neighbors: tuple[int, ...] = ()
    tile_id: int = -1
    signal: LaneSignal | None = field(default=None, compare=False)
    """The traffic light over this lane (its stop point is the lane's first point), None if unsignalised."""
    arc_length: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pts = np.asarray(self.points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[0] < 2 or pts.shape[1] != 2:
            raise ValueError(f"lane {self.id}: points must have shape (N>=2, 2), got {pts.shape}")
        object.__setattr__(self, "points", pts)
        object.__setattr__(self, "arc_length", geometry.polyline_lengths(pts))

    @property
    def length_m(self) -> float:
        return float(self.arc_length[-1])

    @property
    def start_pose(self) -> tuple[np.ndarray, float]:
        d = self.points[1] - self.points[0]
        return self.points[0], float(np.arctan2(d[1], d[0]))

    @property
    def end_pose(self) -> tuple[np.ndarray, float]:
        d = self.points[-1] - self.points[-2]
        return self.points[-1], float(np.arctan2(d[1], d[0]))


class LaneGraph:
    """A mutable set of lanes with a uniform-grid spatial index ("lanes near x").

    Lanes are immutable values; edges are updated by replacing the lane. Ids are stable for a lane's life.
    """

    def __init__(self, cell_m: float = 16.0) -> None:
        self.cell_m = cell_m
        self.lanes: dict[int, Lane] = {}
        self.version = 0
        """Bumped by every change (lanes added or removed, edges, types): caches compare it."""
        self._cells: dict[tuple[int, int], set[int]] = defaultdict(set)
        self._lane_cells: dict[int, set[tuple[int, int]]] = {}
        self._vertices: tuple[int, np.ndarray, np.ndarray] | None = None  # version, all points (T, 2), owners (T,)

    def __len__(self) -> int:
        return len(self.lanes)

    def __contains__(self, lane_id: int) -> bool:
        return lane_id in self.lanes

    def __getitem__(self, lane_id: int) -> Lane:
        return self.lanes[lane_id]

    def add(self, lanes: Iterable[Lane]) -> None:
        self.version += 1
        for lane in lanes:
            if lane.id in self.lanes:
                raise ValueError(f"lane id {lane.id} already in the graph")
            self.lanes[lane.id] = lane
            cells = self._covered_cells(lane.points)
            self._lane_cells[lane.id] = cells
            for c in cells:
                self._cells[c].add(lane.id)

    def remove(self, lane_ids: Iterable[int]) -> None:
        """Remove lanes and every edge that points at them."""
        self.version += 1
        removed = {i for i in lane_ids if i in self.lanes}
        touched: set[int] = set()
        for lane_id in removed:
            lane = self.lanes.pop(lane_id)
            for c in self._lane_cells.pop(lane_id):
                self._cells[c].discard(lane_id)
                if not self._cells[c]:
                    del self._cells[c]
            touched.update(lane.successors + lane.predecessors + lane.left_neighbors + lane.right_neighbors)
        for other in touched - removed:
            if other in self.lanes:
                lane = self.lanes[other]
                self.lanes[other] = dataclasses.replace(
                    lane,
                    successors=tuple(i for i in lane.successors if i not in removed),
                    predecessors=tuple(i for i in lane.predecessors if i not in removed),
                    left_neighbors=tuple(i for i in lane.left_neighbors if i not in removed),
                    right_neighbors=tuple(i for i in lane.right_neighbors if i not in removed),
                )

    def set_type(self, lane_id: int, lane_type: LaneType) -> None:
        """Change a lane's type (e.g. mark a through-lane crossed by a connector as part of a junction)."""
        self.version += 1
        self.lanes[lane_id] = dataclasses.replace(self.lanes[lane_id], lane_type=lane_type)

    def connect(self, from_id: int, to_id: int) -> None:
        """Add the successor edge from_id -> to_id (and the matching predecessor edge)."""
        self.version += 1
        a, b = self.lanes[from_id], self.lanes[to_id]
        if to_id not in a.successors:
            self.lanes[from_id] = dataclasses.replace(a, successors=a.successors + (to_id,))
        if from_id not in b.predecessors:
            self.lanes[to_id] = dataclasses.replace(b, predecessors=b.predecessors + (from_id,))

    def near(self, xy: np.ndarray, radius_m: float) -> list[int]:
        """Ids of lanes with a vertex cell within ``radius_m`` of ``xy`` (a superset, sorted)."""
        r = int(np.ceil(radius_m / self.cell_m))
        cx, cy = int(np.floor(xy[0] / self.cell_m)), int(np.floor(xy[1] / self.cell_m))
        found: set[int] = set()
        for i in range(cx - r, cx + r + 1):
            for j in range(cy - r, cy + r + 1):
                found |= self._cells.get((i, j), set())
        return sorted(found)

    def within(self, xy: np.ndarray, radius_m: float) -> list[int]:
        """Ids (sorted) of lanes with a vertex within ``radius_m`` of ``xy``: one vectorised test over every
        vertex of the graph (kept as one array until the graph changes)."""
        if self._vertices is None or self._vertices[0] != self.version:
            lanes = [self.lanes[i] for i in sorted(self.lanes)]
            points = np.concatenate([lane.points for lane in lanes]) if lanes else np.zeros((0, 2))
            owners = np.repeat([lane.id for lane in lanes], [len(lane.points) for lane in lanes])
            self._vertices = (self.version, points, owners.astype(np.int64))
        _, points, owners = self._vertices
        delta = points - np.asarray(xy, dtype=np.float64)
        inside = np.einsum("ij,ij->i", delta, delta) <= radius_m * radius_m
        return np.unique(owners[inside]).tolist()

    def nearest(self, xy: np.ndarray, yaw: float | None = None, radius_m: float = 10.0) -> tuple[int, float]:
        """The lane closest to ``xy`` (and best aligned with ``yaw`` if given) and its distance (m).

        Returns (-1, inf) when no lane is within ``radius_m``.
        """
        best, best_cost, best_dist = -1, np.inf, np.inf
        for lane_id in self.near(xy, radius_m):
            lane = self.lanes[lane_id]
            s, lat, heading = geometry.project_to_polyline(xy[None], lane.points)
            dist = abs(float(lat[0])) + max(0.0, -float(s[0])) + max(0.0, float(s[0]) - lane.length_m)
            if dist > radius_m:  # ``near`` answers by grid cell: it may hold lanes a little farther away
                continue
            cost = dist
            if yaw is not None:
                cost += 4.0 * abs(float(geometry.wrap_angle(yaw - heading[0])))
            if cost < best_cost:
                best, best_cost, best_dist = lane_id, cost, dist
        return best, best_dist

    def _covered_cells(self, points: np.ndarray) -> set[tuple[int, int]]:
        dense = geometry.resample_by_spacing(points, self.cell_m / 2.0)
        idx = np.floor(dense / self.cell_m).astype(np.int64)
        return {(int(a), int(b)) for a, b in idx}


@dataclass(frozen=True, eq=False)
class Crosswalk:
    """A marked pedestrian crossing over one arm of a junction, between the stop line and the junction.

    walk: (P, 2) m global, the path a pedestrian walks from one kerb to the other (either way round);
    half_width_m: half the strip's width along the road; conflicts: the lanes (connectors) whose vehicles cross
    the strip -- entering the junction from this arm or leaving it into this arm; through: the signalised
    straight movements along the crossed road (empty at a junction without lights): pedestrians walk only
    while these show red. id: assigned by the world (-1 from a generator); tile_id: the tile it came with.
    """

    id: int
    walk: np.ndarray
    half_width_m: float
    conflicts: tuple[int, ...]
    through: tuple[int, ...] = ()
    tile_id: int = -1

    @property
    def length_m(self) -> float:
        return float(geometry.polyline_lengths(self.walk)[-1])

    @property
    def direction(self) -> np.ndarray:
        """Unit vector (2,) from the first kerb to the other."""
        d = self.walk[-1] - self.walk[0]
        return d / max(float(np.linalg.norm(d)), 1e-9)

    def polygon(self) -> np.ndarray:
        """Corners (4, 2) of the strip (for drawing), counter-clockwise."""
        start, end = self.walk[0], self.walk[-1]
        along = self.direction
        side = np.array([-along[1], along[0]]) * self.half_width_m
        return np.stack([start - side, end - side, end + side, start + side])


@dataclass(frozen=True)
class Tile:
    """A 64 m x 64 m square placed in the world.

    The tile frame has its origin at the tile centre, x along ``yaw``; the tile spans [-32, 32]^2 m.
    Its back half (x < 0) overlapped the known world when it was generated; the front half is new.
    """

    id: int
    center_xy: np.ndarray
    yaw: float
    order: int
    generator: str
    lane_ids: tuple[int, ...]
    latency_ms: float = 0.0
    size_m: float = TILE_SIZE_M
    fallback: bool = False
    """The straight last-resort lane laid where no generator could continue a port (no generator ran, so
    it has no latency to report)."""

    def contains(self, xy: np.ndarray, margin_m: float = 0.0) -> np.ndarray:
        """Boolean (...) whether global points (..., 2) lie inside the square (grown by ``margin_m``)."""
        return geometry.in_square(xy, self.center_xy, self.yaw, self.size_m / 2.0 + margin_m)

    def corners(self) -> np.ndarray:
        """Corners (4, 2) of the square in the global frame."""
        return geometry.box_corners(self.center_xy, np.float64(self.yaw), np.float64(self.size_m),
                                    np.float64(self.size_m))


HISTORY_STEPS = 11
"""Steps of history kept per agent: 1.1 s at 10 Hz, the current step included (WOMD convention)."""


@dataclass(frozen=True)
class Agents:
    """Road users as a struct of arrays with a fixed capacity C and a ``valid`` mask.

    id: (C,) int64, stable for an agent's life, -1 in free slots
    valid: (C,) bool
    agent_type: (C,) int8, :class:`AgentType`
    xy: (C, 2) float64, m, box centre, global frame
    yaw: (C,) float64, rad
    speed: (C,) float64, m/s along the heading (negative = reversing)
    length, width: (C,) float64, m
    history: (C, H, 4) float64, (x, y, yaw, speed) of the last H steps, oldest first; the last entry is the
        current state
    history_valid: (C, H) bool
    """

    id: np.ndarray
    valid: np.ndarray
    agent_type: np.ndarray
    xy: np.ndarray
    yaw: np.ndarray
    speed: np.ndarray
    length: np.ndarray
    width: np.ndarray
    history: np.ndarray
    history_valid: np.ndarray

    @classmethod
    def empty(cls, capacity: int, history_steps: int = HISTORY_STEPS) -> Agents:
        return cls(
            id=np.full(capacity, -1, np.int64),
            valid=np.zeros(capacity, bool),
            agent_type=np.zeros(capacity, np.int8),
            xy=np.zeros((capacity, 2)),
            yaw=np.zeros(capacity),
            speed=np.zeros(capacity),
            length=np.zeros(capacity),
            width=np.zeros(capacity),
            history=np.zeros((capacity, history_steps, 4)),
            history_valid=np.zeros((capacity, history_steps), bool),
        )

    @property
    def capacity(self) -> int:
        return len(self.id)

    @property
    def velocity(self) -> np.ndarray:
        """(C, 2) m/s, global frame."""
        return self.speed[:, None] * np.stack([np.cos(self.yaw), np.sin(self.yaw)], -1)

    def slot_of(self, agent_id: int) -> int:
        hits = np.nonzero(self.valid & (self.id == agent_id))[0]
        if len(hits) == 0:
            raise KeyError(f"no valid agent with id {agent_id}")
        return int(hits[0])

    def with_state(self, xy: np.ndarray, yaw: np.ndarray, speed: np.ndarray) -> Agents:
        """A copy moved to a new state; the history shifts by one step. Invalid slots are untouched."""
        yaw = geometry.wrap_angle(yaw)
        history = np.concatenate([self.history[:, 1:], np.concatenate(
            [xy, yaw[:, None], speed[:, None]], -1)[:, None]], 1)
        history_valid = np.concatenate([self.history_valid[:, 1:], self.valid[:, None]], 1)
        keep = self.valid
        return dataclasses.replace(
            self,
            xy=np.where(keep[:, None], xy, self.xy),
            yaw=np.where(keep, yaw, self.yaw),
            speed=np.where(keep, speed, self.speed),
            history=np.where(keep[:, None, None], history, self.history),
            history_valid=np.where(keep[:, None], history_valid, self.history_valid),
        )
