"""Infer road cross-sections from the open ports of the known world.

Ports come from roads this generator made earlier but also from real maps, so nothing is assumed beyond
the ports themselves. Each port gets a *growth direction* pointing away from the known world (an out
port's heading, an in port's heading + pi). Ports whose growth directions agree, that lie side by side
across that direction and close along it, form one road: out ports are its forward lanes, in ports its
backward lanes, ordered by lateral offset; across the road the direction changes at most once (ports of
two roads side by side are not merged). A lone port is a one-lane road. Ports at the same spot (a lane
split or merge ending exactly at the frontier) become one lane slot linked to all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import Port
from vectorworld.generation.procedural.roads import LaneSpec, direction, normal


@dataclass(frozen=True)
class PortLane:
    """A lane slot of a port road.

    spec: offset from the road's reference line (m), direction, width; lane_ids: the known lanes it
    continues (several for ports at one spot); xy (2,) m global: the exact port point; growth_yaw: the
    lane's heading at the port in growth order (rad; an in port's yaw + pi).
    """

    spec: LaneSpec
    speed_mps: float
    lane_ids: tuple[int, ...]
    xy: np.ndarray
    growth_yaw: float


@dataclass(frozen=True)
class PortRoad:
    """A road end inferred from ports: reference pose (origin_xy (2,) m global, yaw rad = growth
    direction) and lane slots sorted by offset. The origin lies at the most advanced port along the growth
    direction, on the divider between the directions (or the middle of a one-way road)."""

    origin_xy: np.ndarray
    yaw: float
    lanes: tuple[PortLane, ...]

    @property
    def lane_ids(self) -> tuple[int, ...]:
        return tuple(i for lane in self.lanes for i in lane.lane_ids)


@dataclass(frozen=True)
class GroupingConfig:
    """max_yaw_rad: growth directions closer than this are (anti-)parallel; max_along_m: longest
    stagger along the road; gap_factor: adjacent lanes at most this many lane widths apart; same_spot_m:
    ports closer than this across the road are one slot."""

    max_yaw_rad: float = 0.2
    max_along_m: float = 6.0
    gap_factor: float = 1.45
    same_spot_m: float = 0.8


def plausible_width(width_m: float) -> float:
    """A port's lane width (m) for the new lanes: real maps may leave it unset or odd; 3.5 m then."""
    return float(width_m) if 2.8 <= width_m <= 4.5 else 3.5


def plausible_speed(speed_mps: float) -> float:
    """A port's speed limit (m/s) for the new lanes: kept if urban-plausible, else 13.4 m/s (30 mph)."""
    return float(speed_mps) if 8.0 <= speed_mps <= 20.0 else 13.4


def growth_yaw(port: Port) -> float:
    """Direction (rad) in which a road grows away from the known world at ``port``."""
    return float(port.yaw) if port.is_out else float(geometry.wrap_angle(port.yaw + np.pi))


def group_ports(ports: tuple[Port, ...] | list[Port], center_xy: np.ndarray,
                config: GroupingConfig = GroupingConfig()) -> list[PortRoad]:
    """Group ports into roads; groups are seeded from the port nearest ``center_xy`` (2,) outwards and
    returned in that order. Deterministic for a given port order."""
    n = len(ports)
    if n == 0:
        return []
    xy = np.stack([np.asarray(p.xy, np.float64) for p in ports])
    g = np.array([growth_yaw(p) for p in ports])
    order = sorted(range(n), key=lambda i: (float(np.linalg.norm(xy[i] - center_xy)), i))
    assigned = np.zeros(n, bool)
    roads = []
    for seed in order:
        if assigned[seed]:
            continue
        members = _members(seed, ports, xy, g, assigned, config)
        assigned[members] = True
        roads.append(_make_road(seed, members, ports, xy, g, config))
    return roads


def _members(seed: int, ports: tuple[Port, ...] | list[Port], xy: np.ndarray, g: np.ndarray,
             assigned: np.ndarray, config: GroupingConfig) -> list[int]:
    """Unassigned ports forming one road with ``seed``: aligned, close along, a lateral chain."""
    u, nrm = direction(g[seed]), normal(g[seed])
    rel = xy - xy[seed]
    along, lateral = rel @ u, rel @ nrm
    ok = (~assigned & (np.abs(geometry.wrap_angle(g - g[seed])) <= config.max_yaw_rad)
          & (np.abs(along) <= config.max_along_m))
    ok[seed] = True
    cand = sorted(np.flatnonzero(ok).tolist(), key=lambda i: (lateral[i], i))
    k = cand.index(seed)
    lo = hi = k
    while True:
        grow_lo = lo > 0 and _adjacent(ports[cand[lo - 1]], ports[cand[lo]],
                                       lateral[cand[lo]] - lateral[cand[lo - 1]], config)
        if grow_lo and _one_switch([ports[i].is_out for i in cand[lo - 1:hi + 1]]):
            lo -= 1
            continue
        grow_hi = hi + 1 < len(cand) and _adjacent(ports[cand[hi]], ports[cand[hi + 1]],
                                                   lateral[cand[hi + 1]] - lateral[cand[hi]], config)
        if grow_hi and _one_switch([ports[i].is_out for i in cand[lo:hi + 2]]):
            hi += 1
            continue
        return cand[lo:hi + 1]


def _adjacent(a: Port, b: Port, gap_m: float, config: GroupingConfig) -> bool:
    return gap_m <= config.gap_factor * max(a.width_m, b.width_m)


def _one_switch(directions: list[bool]) -> bool:
    """A road's lanes, in lateral order, change direction at most once (all of one direction on each side)."""
    return sum(a != b for a, b in zip(directions, directions[1:], strict=False)) <= 1


def _make_road(seed: int, members: list[int], ports: tuple[Port, ...] | list[Port], xy: np.ndarray,
               g: np.ndarray, config: GroupingConfig) -> PortRoad:
    yaw = float(g[seed])
    u, nrm = direction(yaw), normal(yaw)
    rel = xy[members] - xy[seed]
    along, lateral = rel @ u, rel @ nrm
    # Slots: merge ports at the same spot (same direction); an opposite port on the same spot is dropped.
    slots: list[tuple[float, list[int]]] = []
    for k, i in enumerate(members):
        if slots and lateral[k] - slots[-1][0] < config.same_spot_m:
            if ports[slots[-1][1][0]].is_out == ports[i].is_out:
                slots[-1][1].append(i)
            continue
        slots.append((float(lateral[k]), [i]))
    fwd = [off for off, ids in slots if ports[ids[0]].is_out]
    bwd = [off for off, ids in slots if not ports[ids[0]].is_out]
    if fwd and bwd and max(fwd) < min(bwd):
        divider = 0.5 * (max(fwd) + min(bwd))
    else:
        divider = float(np.mean([off for off, _ in slots]))
    origin = xy[seed] + float(along.max()) * u + divider * nrm
    lanes = []
    for off, ids in slots:
        first = ports[ids[0]]
        lanes.append(PortLane(LaneSpec(off - divider, first.is_out, plausible_width(first.width_m)),
                              plausible_speed(first.speed_limit_mps), tuple(ports[i].lane_id for i in ids),
                              np.asarray(first.xy, np.float64), growth_yaw(first)))
    return PortRoad(origin, yaw, tuple(lanes))
