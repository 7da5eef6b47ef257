"""Where roads start: from a group of ports of the known world, or (first tile) across the empty tile."""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import TileFrame
from vectorworld.generation.procedural.occupancy import HomeZone
from vectorworld.generation.procedural.port_groups import PortRoad
from vectorworld.generation.procedural.road_state import GrowthConfig, Road, Slot, sample_cross_section, sample_speed
from vectorworld.generation.procedural.roads import direction, lane_points_at, normal
from vectorworld.scene import LaneGraph, LaneType

ADAPTER_ALONG_M = 0.1
ADAPTER_LATERAL_M = 0.05
ADAPTER_YAW_RAD = 0.02
"""Ports farther than these from a regular cross-section (m, m, rad) get a Hermite adapter piece; closer
ones are snapped exactly onto the port point."""
FIRST_JUNCTION_MIN_X_M = 12.0
"""In the first tile no junction centre lies before this tile-frame x (the origin stays on a plain road)."""


def road_from_ports(port_road: PortRoad, key: int, graph: LaneGraph, config: GrowthConfig) -> Road:
    """A road continuing ``port_road``: every slot is linked to its port lanes; slots start exactly at the
    port points (snapped, or through an adapter piece when the ports are staggered or skewed)."""
    lanes = port_road.lanes
    offsets = np.array([lane.spec.offset_m for lane in lanes])
    port_xy = np.stack([lane.xy for lane in lanes])
    rel = port_xy - lane_points_at(port_road.origin_xy, port_road.yaw, offsets)
    along, lateral = rel @ direction(port_road.yaw), rel @ normal(port_road.yaw)
    yaw_err = geometry.wrap_angle(np.array([lane.growth_yaw for lane in lanes]) - port_road.yaw)
    adapter = bool(np.any(np.abs(along) > ADAPTER_ALONG_M) or np.any(np.abs(lateral) > ADAPTER_LATERAL_M)
                   or np.any(np.abs(yaw_err) > ADAPTER_YAW_RAD))
    slots = [Slot(lane.spec, lane.speed_mps, lane.lane_ids, snap_xy=None if adapter else lane.xy)
             for lane in lanes]
    out = lanes[0].spec.forward
    return Road(key=key, xy=port_road.origin_xy.copy(), yaw=port_road.yaw, slots=slots,
                speed_mps=max(lane.speed_mps for lane in lanes),
                width_m=float(np.mean([lane.spec.width_m for lane in lanes])), kind="port",
                home=HomeZone(port_road.origin_xy, port_road.yaw, config.home_radius_m),
                since_junction_m=distance_since_junction(graph, lanes[0].lane_ids[0], out),
                junctions_left=config.junctions_per_road, tapers_left=config.tapers_per_road,
                min_junction_x_m=-np.inf, adapter=adapter,
                port_poses=tuple((lane.xy, lane.growth_yaw) for lane in lanes))


def first_road(frame: TileFrame, key: int, rng: np.random.Generator, config: GrowthConfig) -> Road:
    """The road of a first tile: enters at the back border on the tile's x axis, heading +x."""
    specs = sample_cross_section(rng, config, allow_one_way=False)
    speed = sample_speed(rng, config)
    start = frame.to_global(np.array([-frame.size_m / 2.0, 0.0]))
    return Road(key=key, xy=start, yaw=float(frame.yaw), slots=[Slot(s, speed, ()) for s in specs],
                speed_mps=speed, width_m=specs[0].width_m, kind="first", home=None, since_junction_m=0.0,
                junctions_left=config.junctions_per_road, tapers_left=config.tapers_per_road,
                min_junction_x_m=FIRST_JUNCTION_MIN_X_M)


def distance_since_junction(graph: LaneGraph, lane_id: int, out: bool, cap_m: float = 60.0) -> float:
    """Road length (m) from a port back to the nearest junction connector upstream (capped)."""
    total = 0.0
    while lane_id in graph and total < cap_m:
        lane = graph[lane_id]
        if lane.lane_type == LaneType.CONNECTOR:
            return total
        total += lane.length_m
        upstream = lane.predecessors if out else lane.successors
        if not upstream:
            return cap_m
        lane_id = upstream[0]
    return min(total, cap_m)
