"""One recorded driving scenario, whatever its source: WOMD, nuPlan or the procedural world.

A :class:`Scenario` holds a map (:class:`RoadMap`: the lane graph plus road lines, road edges, crosswalks,
stop signs, ... as plain arrays), the agents' tracks as a struct of arrays (:class:`Tracks`), traffic-signal
states per step (:class:`TrafficSignals`) and where it came from (:class:`ScenarioSource`).

Conventions: global frame of the source (UTM metres for nuPlan, Waymo's local metres for WOMD), SI units,
10 Hz steps (``timestamps_s`` relative to the first step), yaw in (-pi, pi]. Readers fill invalid track
entries with zeros; ``Tracks.valid`` is authoritative.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import shapely

from vectorworld import geometry
from vectorworld.scene import HISTORY_STEPS, Agents, AgentType, LaneGraph
from vectorworld.signals import SignalState

DEFAULT_LANE_WIDTH_M = 3.7
"""Lane width (m) readers use when the source gives none and no estimate is possible."""
DEFAULT_SPEED_LIMIT_MPS = 13.9
"""Speed limit (m/s, 50 km/h) readers use when the source gives none."""


@dataclass(frozen=True, eq=False)
class Polylines:
    """Ragged polylines (or polygon rings) in CSR layout.

    ids: (P,) int64 source feature ids
    types: (P,) int16 source type codes (meaning depends on the layer, e.g. WOMD RoadLine.type)
    points: (N, 2) float64, m, global frame: all polylines concatenated
    offsets: (P + 1,) int64: polyline i is ``points[offsets[i]:offsets[i + 1]]``
    """

    ids: np.ndarray
    types: np.ndarray
    points: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_list(cls, ids: Sequence[int], types: Sequence[int],
                  polylines: Sequence[np.ndarray]) -> Polylines:
        sizes = [len(p) for p in polylines]
        points = (np.concatenate([np.asarray(p, np.float64).reshape(-1, 2) for p in polylines])
                  if polylines else np.zeros((0, 2)))
        return cls(ids=np.asarray(ids, np.int64).reshape(-1), types=np.asarray(types, np.int16).reshape(-1),
                   points=points, offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))

    @classmethod
    def empty(cls) -> Polylines:
        return cls.from_list([], [], [])

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> np.ndarray:
        """Polyline i: (n_i, 2)."""
        return self.points[self.offsets[i]: self.offsets[i + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[i] for i in range(len(self)))


@dataclass(frozen=True, eq=False)
class StopSigns:
    """ids: (K,) int64; xy: (K, 2) float64 m global; lane_ids: per sign, the ids of the lanes it controls."""

    ids: np.ndarray
    xy: np.ndarray
    lane_ids: tuple[tuple[int, ...], ...]

    @classmethod
    def empty(cls) -> StopSigns:
        return cls(ids=np.zeros(0, np.int64), xy=np.zeros((0, 2)), lane_ids=())

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, eq=False)
class RoadMap:
    """The static map of a scenario, global frame.

    ``drivable_polygons`` is the drivable area when the source provides one (nuPlan); otherwise
    :attr:`drivable_area` derives it from the lanes (each centreline buffered by half its width, round
    caps and joins, unioned).
    """

    lanes: LaneGraph
    road_lines: Polylines = field(default_factory=Polylines.empty)
    road_edges: Polylines = field(default_factory=Polylines.empty)
    crosswalks: Polylines = field(default_factory=Polylines.empty)
    speed_bumps: Polylines = field(default_factory=Polylines.empty)
    driveways: Polylines = field(default_factory=Polylines.empty)
    stop_signs: StopSigns = field(default_factory=StopSigns.empty)
    drivable_polygons: shapely.Geometry | None = None

    @functools.cached_property
    def drivable_area(self) -> shapely.Geometry:
        """Drivable area (shapely Polygon/MultiPolygon, global frame); empty if the map has no lanes."""
        if self.drivable_polygons is not None:
            return self.drivable_polygons
        return lanes_drivable_area(self.lanes)

    def extent(self) -> tuple[float, float, float, float] | None:
        """(xmin, ymin, xmax, ymax) m over lanes, road lines and edges; None for an empty map."""
        parts = [lane.points for lane in self.lanes.lanes.values()]
        parts += [self.road_lines.points, self.road_edges.points]
        pts = np.concatenate([p for p in parts if len(p)]) if any(len(p) for p in parts) else None
        if pts is None:
            return None
        lo, hi = pts.min(0), pts.max(0)
        return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])


def lanes_drivable_area(lanes: LaneGraph) -> shapely.Geometry:
    """Union of every lane centreline buffered by half its width (round caps), global frame."""
    if len(lanes) == 0:
        return shapely.Polygon()
    ordered = list(lanes.lanes.values())
    sizes = [len(lane.points) for lane in ordered]
    lines = shapely.linestrings(np.concatenate([lane.points for lane in ordered]),
                                indices=np.repeat(np.arange(len(ordered)), sizes))
    halves = np.array([lane.width_m / 2.0 for lane in ordered])
    return shapely.union_all(shapely.buffer(lines, halves, quad_segs=4))


@dataclass(frozen=True, eq=False)
class Tracks:
    """Agent tracks, T tracks over S steps, struct of arrays.

    ids: (T,) int64 source track ids (nuPlan: derived from the track token, the ego is 0)
    types: (T,) int8 :class:`~vectorworld.scene.AgentType`
    xy: (T, S, 2) float64, m, box centre, global frame
    yaw: (T, S) float64, rad, box heading
    velocity: (T, S, 2) float64, m/s, global frame
    length, width, height: (T,) float64, m (the box at the current step, else the median over valid steps)
    valid: (T, S) bool
    """

    ids: np.ndarray
    types: np.ndarray
    xy: np.ndarray
    yaw: np.ndarray
    velocity: np.ndarray
    length: np.ndarray
    width: np.ndarray
    height: np.ndarray
    valid: np.ndarray

    def __post_init__(self) -> None:
        t, s = self.valid.shape
        expected = {"ids": (t,), "types": (t,), "xy": (t, s, 2), "yaw": (t, s), "velocity": (t, s, 2),
                    "length": (t,), "width": (t,), "height": (t,)}
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"Tracks.{name} has shape {getattr(self, name).shape}, expected {shape}")

    @property
    def num_tracks(self) -> int:
        return self.valid.shape[0]

    @property
    def num_steps(self) -> int:
        return self.valid.shape[1]

    @functools.cached_property
    def speed(self) -> np.ndarray:
        """(T, S) m/s, velocity projected on the heading (negative = reversing). Computed once."""
        return self.velocity[..., 0] * np.cos(self.yaw) + self.velocity[..., 1] * np.sin(self.yaw)


@dataclass(frozen=True, eq=False)
class TrafficSignals:
    """Traffic-signal states per step, fixed capacity M per step.

    lane_ids: (S, M) int64 controlled lane id, -1 in free slots
    states: (S, M) int8 :class:`SignalState`
    stop_xy: (S, M, 2) float64, m, global frame: the stop point (NaN if unknown)
    valid: (S, M) bool
    """

    lane_ids: np.ndarray
    states: np.ndarray
    stop_xy: np.ndarray
    valid: np.ndarray

    @classmethod
    def empty(cls, num_steps: int) -> TrafficSignals:
        return cls(lane_ids=np.full((num_steps, 0), -1, np.int64), states=np.zeros((num_steps, 0), np.int8),
                   stop_xy=np.zeros((num_steps, 0, 2)), valid=np.zeros((num_steps, 0), bool))

    @classmethod
    def from_steps(cls, steps: Sequence[Sequence[tuple[int, int, float, float]]]) -> TrafficSignals:
        """Build from per-step lists of (lane_id, state, stop_x, stop_y)."""
        width = max((len(s) for s in steps), default=0)
        num = len(steps)
        out = cls(lane_ids=np.full((num, width), -1, np.int64), states=np.zeros((num, width), np.int8),
                  stop_xy=np.full((num, width, 2), np.nan), valid=np.zeros((num, width), bool))
        for i, entries in enumerate(steps):
            for j, (lane, state, x, y) in enumerate(entries):
                out.lane_ids[i, j], out.states[i, j], out.valid[i, j] = lane, state, True
                out.stop_xy[i, j] = (x, y)
        return out

    def at(self, step: int) -> dict[int, SignalState]:
        """Lane id -> state at ``step``."""
        keep = self.valid[step]
        return {int(lane): SignalState(int(state))
                for lane, state in zip(self.lane_ids[step][keep], self.states[step][keep], strict=True)}


@dataclass(frozen=True)
class ScenarioSource:
    """Where a scenario came from: dataset name ("womd", "nuplan", "procedural"), file, record / scene."""

    dataset: str
    path: str = ""
    index: int = 0
    name: str = ""


@dataclass(frozen=True, eq=False)
class Scenario:
    """A recorded (or generated) scenario: map, tracks over S steps at 10 Hz, signals, provenance.

    timestamps_s: (S,) float64, s, relative to the first step
    current_index: the "now" step (WOMD: 10, i.e. 1.1 s of history including now)
    sdc_index: index into the tracks of the ego / self-driving car, -1 if none
    predict_indices: (K,) int64 track indices the source marks as interesting (WOMD tracks_to_predict)
    metadata: JSON-serialisable extras (e.g. nuPlan tokens, map name)
    """

    scenario_id: str
    timestamps_s: np.ndarray
    current_index: int
    tracks: Tracks
    map: RoadMap
    signals: TrafficSignals
    source: ScenarioSource
    sdc_index: int = -1
    predict_indices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        s = len(self.timestamps_s)
        if self.tracks.num_steps != s or self.signals.valid.shape[0] != s:
            raise ValueError(f"scenario {self.scenario_id}: tracks/signals do not have {s} steps")
        if not 0 <= self.current_index < max(s, 1):
            raise ValueError(
                f"scenario {self.scenario_id}: current_index {self.current_index} not in [0, {s})")
        if not -1 <= self.sdc_index < self.tracks.num_tracks:
            raise ValueError(f"scenario {self.scenario_id}: sdc_index {self.sdc_index} out of range")

    @property
    def num_steps(self) -> int:
        return len(self.timestamps_s)

    @property
    def duration_s(self) -> float:
        return float(self.timestamps_s[-1] - self.timestamps_s[0]) if self.num_steps else 0.0

    def agents_at(self, step: int | None = None, history_steps: int = HISTORY_STEPS,
                  include_ego: bool = True, capacity: int | None = None) -> Agents:
        """The agents valid at ``step`` (default: the current step) as :class:`~vectorworld.scene.Agents`.

        History: the last ``history_steps`` steps up to and including ``step``, oldest first; steps before
        the start of the log are invalid. Slots follow track order; ``capacity`` (default: the number of
        selected tracks) pads with free slots and raises ValueError if too small.
        """
        step = self.current_index if step is None else step
        if not 0 <= step < self.num_steps:
            raise ValueError(f"step {step} not in [0, {self.num_steps})")
        tr = self.tracks
        keep = tr.valid[:, step].copy()
        if not include_ego and self.sdc_index >= 0:
            keep[self.sdc_index] = False
        rows = np.nonzero(keep)[0]
        capacity = len(rows) if capacity is None else capacity
        if capacity < len(rows):
            raise ValueError(f"capacity {capacity} < {len(rows)} agents valid at step {step}")
        agents = Agents.empty(capacity, history_steps)
        n = len(rows)
        speed = tr.speed
        steps = np.arange(step - history_steps + 1, step + 1)
        inside = steps >= 0
        cols = np.clip(steps, 0, None)
        hist = np.concatenate(
            [tr.xy[rows][:, cols], tr.yaw[rows][:, cols, None], speed[rows][:, cols, None]], -1)
        hist_valid = tr.valid[rows][:, cols] & inside[None]
        agents.id[:n] = tr.ids[rows]
        agents.valid[:n] = True
        agents.agent_type[:n] = tr.types[rows]
        agents.xy[:n] = tr.xy[rows, step]
        agents.yaw[:n] = geometry.wrap_angle(tr.yaw[rows, step])
        agents.speed[:n] = speed[rows, step]
        agents.length[:n] = tr.length[rows]
        agents.width[:n] = tr.width[rows]
        agents.history[:n] = np.where(hist_valid[..., None], hist, 0.0)
        agents.history_valid[:n] = hist_valid
        return agents

    def ego_state(self, step: int | None = None) -> tuple[np.ndarray, float, float]:
        """(xy (2,), yaw rad, speed m/s) of the ego at ``step`` (default current). KeyError without ego."""
        step = self.current_index if step is None else step
        if self.sdc_index < 0 or not self.tracks.valid[self.sdc_index, step]:
            raise KeyError(f"scenario {self.scenario_id} has no valid ego at step {step}")
        tr = self.tracks
        return (tr.xy[self.sdc_index, step].copy(), float(tr.yaw[self.sdc_index, step]),
                float(tr.speed[self.sdc_index, step]))

    def type_counts(self) -> dict[str, int]:
        """Number of tracks per agent type name (lower case), e.g. {"vehicle": 70, ...}."""
        types, counts = np.unique(self.tracks.types, return_counts=True)
        return {AgentType(int(t)).name.lower(): int(c) for t, c in zip(types, counts, strict=True)}
