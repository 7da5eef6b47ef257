"""The state of a road while it is being grown, its configuration, and turning its pending geometry into lanes.

A :class:`Road` is the open end of a road: the reference pose where the next piece starts and one
:class:`Slot` per lane. A slot accumulates the polyline of its current lane (growth order) until the road
is *flushed* at an event (junction, lane-count change, tile exit); then every slot becomes one new lane
and the ids it must be linked to are updated. Slots and roads are mutable working objects of a single
``generate`` call; nothing survives between calls.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from vectorworld.generation.procedural.occupancy import HomeZone
from vectorworld.generation.procedural.roads import LaneSpec, cross_section, lane_points_at
from vectorworld.generation.procedural.tile_draft import NewLane, TileDraft
from vectorworld.scene import LaneType


@dataclass(frozen=True)
class GrowthConfig:
    """How roads are grown. Lengths in m, angles in rad, probabilities per piece choice."""

    lane_width_m: tuple[float, float] = (3.2, 3.7)
    speed_limits_mps: tuple[float, ...] = (8.9, 11.2, 13.4, 15.6, 17.9)
    min_radius_m: float = 25.0
    max_radius_m: float = 500.0
    straight_length_m: tuple[float, float] = (8.0, 35.0)
    arc_length_m: tuple[float, float] = (10.0, 40.0)
    max_arc_angle_rad: float = 0.9
    taper_length_m: tuple[float, float] = (26.0, 36.0)
    taper_min_exit_m: float = 12.0
    junction_prob: float = 0.5
    arc_prob: float = 0.45
    taper_prob: float = 0.12
    min_junction_gap_m: float = 12.0
    corner_m: tuple[float, float] = (2.0, 4.5)
    side_arm_skew_rad: float = 0.15
    straight_change_prob: float = 0.2
    one_way_prob: float = 0.12
    four_way_prob: float = 0.45
    t_end_prob: float = 0.15
    junctions_per_road: int = 2
    tapers_per_road: int = 1
    clearance_gap_m: float = 0.5
    join_gap_m: float = 2.5
    min_crossing_angle_rad: float = 0.52
    home_radius_m: float = 15.0
    exit_overshoot_m: float = 0.3
    exit_tolerance_m: float = 0.5
    max_road_length_m: float = 240.0
    max_pieces: int = 24
    max_tries: int = 24
    retry_tries: int = 10
    min_tries: int = 6
    tile_max_tries: int = 120
    port_stub_m: float = 12.0
    adapter_length_m: float = 8.0


@dataclass
class Slot:
    """One lane of a growing road: spec (offset, direction, width), speed limit (m/s), ``links`` (ids the
    next flushed lane connects to: predecessors of a forward lane, successors of a backward one), pending
    polyline chunks in growth order, and an exact start point (2,) to snap the first vertex to."""

    spec: LaneSpec
    speed_mps: float
    links: tuple[int, ...]
    chunks: list[np.ndarray] = field(default_factory=list)
    snap_xy: np.ndarray | None = None

    def copy(self) -> Slot:
        return dataclasses.replace(self, chunks=list(self.chunks))

    def append(self, points: np.ndarray) -> None:
        """Append a piece (M, 2) that starts where the pending polyline ends."""
        self.chunks.append(points if not self.chunks else points[1:])


@dataclass
class Road:
    """The open end of a road being grown.

    key: occupancy owner of its lanes; xy (2,) m global, yaw rad: reference pose; kind: "port" (continues
    ports), "arm" (leaves a junction made in this tile) or "first" (first tile); home: where it starts;
    since_junction_m: road length since the last junction; min_junction_x_m: junction centres must lie at
    tile-frame x >= this; stub_m: length of an arm's reserved straight corridor.
    """

    key: int
    xy: np.ndarray
    yaw: float
    slots: list[Slot]
    speed_mps: float
    width_m: float
    kind: str
    home: HomeZone | None
    since_junction_m: float
    junctions_left: int
    tapers_left: int
    min_junction_x_m: float
    stub_m: float = 0.0
    adapter: bool = False
    port_poses: tuple[tuple[np.ndarray, float], ...] = ()
    length_m: float = 0.0
    pieces: int = 0
    ended: bool = False

    def copy(self) -> Road:
        return dataclasses.replace(self, slots=[s.copy() for s in self.slots])

    @property
    def offsets(self) -> np.ndarray:
        """(S,) m lateral offsets of the slots."""
        return np.array([s.spec.offset_m for s in self.slots])

    @property
    def specs(self) -> tuple[LaneSpec, ...]:
        return tuple(s.spec for s in self.slots)

    def end_points(self) -> np.ndarray:
        """(S, 2) m global: where each lane currently ends (growth order)."""
        return lane_points_at(self.xy, self.yaw, self.offsets)

    def link_ids(self) -> tuple[int, ...]:
        """All ids the slots are linked to (for a port road: the port lanes)."""
        return tuple(i for s in self.slots for i in s.links)

    def counts(self) -> tuple[int, int]:
        """(forward lanes, backward lanes)."""
        fwd = sum(s.spec.forward for s in self.slots)
        return fwd, len(self.slots) - fwd


@dataclass
class GrowthReport:
    """Counters of one ``generate`` call (for statistics and tests)."""

    roads: int = 0
    stopped: int = 0
    junctions: int = 0
    joins: int = 0
    crossings: int = 0
    bridges: int = 0
    turnarounds: int = 0
    tapers: int = 0
    pieces: int = 0
    forced_arms: int = 0
    skipped_groups: int = 0


def sample_cross_section(rng: np.random.Generator, config: GrowthConfig, allow_one_way: bool = True
                         ) -> tuple[LaneSpec, ...]:
    """A random urban cross-section: 1-3 lanes per direction (mostly 1-2), sometimes one-way."""
    width = float(rng.uniform(*config.lane_width_m))
    num_fwd = int(rng.choice([1, 2, 3], p=[0.55, 0.37, 0.08]))
    if allow_one_way and rng.random() < config.one_way_prob:
        return cross_section(min(num_fwd + 1, 3), 0, width)
    num_bwd = int(np.clip(num_fwd + rng.choice([-1, 0, 1], p=[0.15, 0.75, 0.1]), 1, 3))
    return cross_section(num_fwd, num_bwd, width)


def sample_speed(rng: np.random.Generator, config: GrowthConfig) -> float:
    return float(rng.choice(config.speed_limits_mps))


def flush(road: Road, draft: TileDraft, lane_type: LaneType = LaneType.SURFACE_STREET) -> list[int | None]:
    """Turn every slot's pending polyline into a new lane (provisional id) with its edges; set the
    neighbour pairs between adjacent same-direction lanes (not for connectors). Returns the new id per
    slot (None if a slot had nothing pending)."""
    ids: list[int | None] = []
    for slot in road.slots:
        if not slot.chunks:
            ids.append(None)
            continue
        pts = np.concatenate(slot.chunks) if len(slot.chunks) > 1 else slot.chunks[0].copy()
        if len(pts) < 2 or float(np.linalg.norm(pts[-1] - pts[0])) < 0.05:
            ids.append(None)  # too short to be a lane: keep the chunk for the next flush
            continue
        if slot.snap_xy is not None:
            pts[0] = slot.snap_xy
            slot.snap_xy = None
        slot.chunks = []
        forward = slot.spec.forward
        pid = draft.new_pid()
        draft.lanes.append(NewLane(pid, pts if forward else pts[::-1].copy(), slot.spec.width_m,
                                   slot.speed_mps, lane_type, road.key))
        draft.edges.extend((link, pid) if forward else (pid, link) for link in slot.links)
        slot.links = (pid,)
        ids.append(pid)
    for forward in (True, False) if lane_type != LaneType.CONNECTOR else ():
        same = sorted((s.spec.offset_m, i) for s, i in zip(road.slots, ids, strict=True)
                      if i is not None and s.spec.forward == forward)
        for (o1, lower), (o2, upper) in zip(same, same[1:], strict=False):
            if o2 - o1 < 1.6 * road.width_m:
                # Forward lanes: the lower offset is on the right; backward lanes: on the left.
                draft.neighbours.append((lower, upper) if forward else (upper, lower))
    return ids
