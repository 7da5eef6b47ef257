"""Choosing and placing a junction at the end of a growing road.

:func:`sample_junction` draws the arms (4-way, T with the road going on, or T where the road ends and
turns), their cross-sections (side roads are two-way or one-way either way) and the corner size.
:func:`place_junction` lays it out (:mod:`junctions`), checks that the box and its connectors fit the tile
and overlap nothing, drops side arms whose straight corridor to the border is taken, then flushes the
road, adds the connector lanes with their edges, continues the road through the straight arm and hands
back the side arms as new roads whose corridors stay reserved until they are grown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from vectorworld.generation.procedural.junctions import (
    STRAIGHT_MAX_RAD,
    ArmSpec,
    Connector,
    JunctionLayout,
    layout_junction,
)
from vectorworld.generation.procedural.occupancy import HomeZone
from vectorworld.generation.procedural.road_state import GrowthConfig, Road, Slot, sample_cross_section, sample_speed
from vectorworld.generation.procedural.roads import LaneSpec, PieceGeometry, cross_section, exit_distance, sweep
from vectorworld.generation.procedural.tile_draft import NewLane, TileDraft
from vectorworld.scene import LaneType

if TYPE_CHECKING:
    from vectorworld.generation.procedural.road_growth import RoadGrower

ARM_MARGIN_M = 3.0
"""Every arm of a junction starts at least this far (m) inside the tile border."""


@dataclass(frozen=True)
class JunctionPlan:
    """Arms (angle relative to the road, cross-section), their speed limits (m/s) and the corner size (m)."""

    arms: tuple[ArmSpec, ...]
    speeds_mps: tuple[float, ...]
    corner_m: float


def sample_junction(road: Road, rng: np.random.Generator, config: GrowthConfig) -> JunctionPlan | None:
    """Draw a junction for the end of ``road``: 4-way, T-junction with the road going on, or T-end."""
    if not road.slots:
        return None
    r = rng.random()
    t_end = config.t_end_prob if road.kind != "first" else 0.0  # the first tile's road crosses it all
    if r < config.four_way_prob:
        angles = [0.0, np.pi / 2.0, -np.pi / 2.0]
    elif r < config.four_way_prob + t_end:
        angles = [np.pi / 2.0, -np.pi / 2.0]
    else:
        angles = [0.0, np.pi / 2.0 if rng.random() < 0.5 else -np.pi / 2.0]
    arms, speeds = [], []
    for angle in angles:
        if angle == 0.0:
            arms.append(ArmSpec(0.0, _straight_lanes(road, rng, config)))
            speeds.append(road.speed_mps)
            continue
        lanes = sample_cross_section(rng, config)
        if all(s.forward for s in lanes) and rng.random() < 0.5:
            lanes = tuple(LaneSpec(s.offset_m, False, s.width_m) for s in lanes)
        skew = float(rng.uniform(-config.side_arm_skew_rad, config.side_arm_skew_rad))
        arms.append(ArmSpec(angle + skew, lanes))
        speeds.append(min(sample_speed(rng, config), road.speed_mps + 2.5))
    return JunctionPlan(tuple(arms), tuple(speeds), float(rng.uniform(*config.corner_m)))


def _straight_lanes(road: Road, rng: np.random.Generator, config: GrowthConfig) -> tuple[LaneSpec, ...]:
    """The road's cross-section after the junction: unchanged, or one lane more / fewer per direction."""
    if rng.random() >= config.straight_change_prob:
        return road.specs
    fwd, bwd = road.counts()
    fwd = int(np.clip(fwd + rng.choice([-1, 1]), 1, 3))
    bwd = 0 if bwd == 0 else int(np.clip(bwd + rng.choice([-1, 0, 1]), 1, 3))
    return cross_section(fwd, bwd, road.width_m)


def _is_side(arm: ArmSpec) -> bool:
    return abs(arm.angle_rad) > STRAIGHT_MAX_RAD


def _fits(grower: RoadGrower, road: Road, layout: JunctionLayout) -> bool:
    if float(grower.frame.to_local(layout.center_xy)[0]) < road.min_junction_x_m:
        return False
    refs = np.stack([a.xy for a in layout.approaches[1:]])
    return bool(np.all(np.abs(grower.frame.to_local(refs)).max(-1) <= grower.half_m - ARM_MARGIN_M))


def _stub(grower: RoadGrower, xy: np.ndarray, yaw: float, lanes: tuple[LaneSpec, ...]) -> PieceGeometry:
    """The straight corridor of a side arm from the box to just past the tile border."""
    local, local_yaw = grower.local_pose(xy, yaw)
    length = exit_distance(local, local_yaw, grower.half_m) + 2.0
    return sweep(xy, yaw, length, 0.0, np.array([s.offset_m for s in lanes]))


def place_junction(grower: RoadGrower, road: Road, draft: TileDraft, plan: JunctionPlan, arms_out: list[Road],
                   reserved: list[int]) -> bool:
    """Place ``plan`` at the end of ``road`` if it fits; on success the road continues past it (or ends,
    for a T-end) and the side arms are appended to ``arms_out`` with reserved corridors."""
    cfg = grower.config
    arms, speeds = list(plan.arms), list(plan.speeds_mps)
    stubs: dict[int, PieceGeometry] = {}
    for _ in range(3):
        layout = layout_junction(road.xy, road.yaw, road.specs, tuple(arms), plan.corner_m)
        if layout is None or not _fits(grower, road, layout):
            return False
        stubs, bad = {}, []
        for k, arm in enumerate(arms):
            if not _is_side(arm):
                continue
            approach = layout.approaches[k + 1]
            stub = _stub(grower, approach.xy, approach.yaw, arm.lanes)
            half = max(s.width_m for s in arm.lanes) / 2.0
            home = HomeZone(approach.xy, approach.yaw, cfg.home_radius_m)
            if grower.occ.blocked(stub.lanes.reshape(-1, 2), half, cfg.clearance_gap_m, home=home):
                bad.append(k)
            else:
                stubs[k] = stub
        if not bad:
            break
        arms = [a for k, a in enumerate(arms) if k not in bad]
        speeds = [v for k, v in enumerate(speeds) if k not in bad]
        if not any(_is_side(a) for a in arms):
            return False
    else:
        return False
    connectors = layout.connectors()
    if grower.blocked(road, np.concatenate([c.points[1:] for c in connectors])):
        return False
    grower.flush(road, draft)
    arm_links = _add_connectors(grower, road, draft, layout, connectors, speeds)
    _continue_arms(grower, road, layout, arms, speeds, arm_links, stubs, arms_out, reserved)
    grower.report.junctions += 1
    return True


def _add_connectors(grower: RoadGrower, road: Road, draft: TileDraft, layout: JunctionLayout,
                    connectors: tuple[Connector, ...], speeds: list[float]) -> list[list[list[int]]]:
    """Add the connector lanes and their edges to the road's lanes. Returns, per approach and lane, the
    connectors that the arm lanes still to be grown must link to."""
    approach_speed = [road.speed_mps] + list(speeds)
    arm_links: list[list[list[int]]] = [[[] for _ in a.lanes] for a in layout.approaches]
    for c in connectors:
        pid = draft.new_pid()
        width = layout.approaches[c.from_approach].lanes[c.from_lane].width_m
        speed = min(approach_speed[c.from_approach], approach_speed[c.to_approach])
        points = c.points.copy()
        # A junction right at the ports: connectors start / end exactly at the port points.
        if c.from_approach == 0 and road.slots[c.from_lane].snap_xy is not None:
            points[0] = road.slots[c.from_lane].snap_xy
        if c.to_approach == 0 and road.slots[c.to_lane].snap_xy is not None:
            points[-1] = road.slots[c.to_lane].snap_xy
        draft.lanes.append(NewLane(pid, points, width, speed, LaneType.CONNECTOR, road.key))
        grower.occ.add(points, width / 2.0, road.key)
        if c.from_approach == 0:
            draft.edges.extend((link, pid) for link in road.slots[c.from_lane].links)
        else:
            arm_links[c.from_approach][c.from_lane].append(pid)
        if c.to_approach == 0:
            draft.edges.extend((pid, link) for link in road.slots[c.to_lane].links)
        else:
            arm_links[c.to_approach][c.to_lane].append(pid)
    return arm_links


def _continue_arms(grower: RoadGrower, road: Road, layout: JunctionLayout, arms: list[ArmSpec],
                   speeds: list[float], arm_links: list[list[list[int]]], stubs: dict[int, PieceGeometry],
                   arms_out: list[Road], reserved: list[int]) -> None:
    cfg = grower.config
    through = False
    for k, arm in enumerate(arms):
        approach = layout.approaches[k + 1]
        slots = [Slot(spec, speeds[k], tuple(arm_links[k + 1][i])) for i, spec in enumerate(approach.lanes)]
        width = float(np.mean([s.width_m for s in arm.lanes]))
        if not _is_side(arm):
            depth = float(np.linalg.norm(approach.xy - road.xy))
            road.xy, road.yaw, road.slots = approach.xy.copy(), approach.yaw, slots
            road.speed_mps, road.width_m = speeds[k], width
            road.length_m += depth
            road.since_junction_m = 0.0
            road.junctions_left -= 1
            road.pieces += 1
            road.home = None
            through = True
            continue
        key = grower.new_key()
        stub = stubs[k]
        for lane_pts, spec in zip(stub.lanes, arm.lanes, strict=True):
            grower.occ.add(lane_pts, spec.width_m / 2.0, key)
        reserved.append(key)
        arms_out.append(Road(key=key, xy=approach.xy.copy(), yaw=approach.yaw, slots=slots, speed_mps=speeds[k],
                             width_m=width, kind="arm",
                             home=HomeZone(approach.xy, approach.yaw, cfg.home_radius_m), since_junction_m=0.0,
                             junctions_left=0, tapers_left=cfg.tapers_per_road, min_junction_x_m=-np.inf,
                             stub_m=stub.length_m))
    if not through:
        road.ended = True
        road.slots = []
