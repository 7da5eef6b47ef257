"""Ego collisions as nuPlan classifies them (``no_ego_at_fault_collisions``), batched over the pairs.

A collision is classified at its first step of box overlap, from the states of that step:

* STOPPED_EGO: the ego's speed is at most 0.05 m/s;
* STOPPED_TRACK: the other's speed is at most 0.05 m/s (static objects are always stopped);
* ACTIVE_REAR: the other's centre lies more than 150 deg off the ego's heading, seen from the ego's rear
  axle (it came from behind);
* ACTIVE_FRONT: the ego's front bumper (the segment between its two front corners) touches the other box;
* ACTIVE_LATERAL: any other contact.

At fault: ACTIVE_FRONT and STOPPED_TRACK always; ACTIVE_LATERAL only while the ego straddles lanes that are
neither the same nor connected, or is off the drivable area. A stopped ego, or one hit from behind, is
never at fault.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from vectorworld import geometry
from vectorworld.scene import AgentType

STOPPED_SPEED_MPS = 0.05
BEHIND_ANGLE_RAD = np.deg2rad(150.0)
AHEAD_ANGLE_RAD = np.deg2rad(30.0)
REAR_AXLE_BACK_M = 1.45
"""The ego's rear axle behind its box centre: half the bicycle's 2.9 m wheelbase."""


class CollisionType(IntEnum):
    """nuPlan's collision types (``collision_utils.CollisionType``)."""

    STOPPED_EGO = 0
    STOPPED_TRACK = 1
    ACTIVE_FRONT = 2
    ACTIVE_REAR = 3
    ACTIVE_LATERAL = 4


class ObjectClass(IntEnum):
    """What nuPlan scores a collision with: vulnerable road users, vehicles, static objects."""

    VRU = 0
    VEHICLE = 1
    OBJECT = 2


def object_class(agent_type: np.ndarray) -> np.ndarray:
    """(N,) :class:`ObjectClass` of agent types: pedestrians and cyclists are VRUs, vehicles vehicles, and
    anything else (WOMD's OTHER / unset: cones, barriers, debris) a static object."""
    t = np.asarray(agent_type)
    return np.where((t == AgentType.PEDESTRIAN) | (t == AgentType.CYCLIST), ObjectClass.VRU,
                    np.where(t == AgentType.VEHICLE, ObjectClass.VEHICLE, ObjectClass.OBJECT)).astype(np.int8)


def rear_axle(xy: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """(..., 2) the rear axle of boxes centred at ``xy`` (..., 2) heading ``yaw`` (...)."""
    yaw = np.asarray(yaw)
    return xy - REAR_AXLE_BACK_M * np.stack([np.cos(yaw), np.sin(yaw)], -1)


def relative_angle(origin_xy: np.ndarray, origin_yaw: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """(...) angle in [0, pi] between a heading and the direction from ``origin_xy`` to ``xy``."""
    d = np.asarray(xy) - origin_xy
    norm = np.linalg.norm(d, axis=-1)
    cos = (d[..., 0] * np.cos(origin_yaw) + d[..., 1] * np.sin(origin_yaw)) / np.maximum(norm, 1e-9)
    return np.where(norm > 1e-9, np.arccos(np.clip(cos, -1.0, 1.0)), 0.0)


def segment_touches_box(a: np.ndarray, b: np.ndarray, xy: np.ndarray, yaw: np.ndarray, length: np.ndarray,
                        width: np.ndarray) -> np.ndarray:
    """(...) whether segments a-b (..., 2) intersect the boxes (Liang-Barsky clipping in the box frame)."""
    pa, pb = geometry.to_local(a, xy, yaw), geometry.to_local(b, xy, yaw)
    d = pb - pa
    half = np.stack([length / 2.0, width / 2.0], -1)
    t0, t1 = np.zeros(np.shape(d)[:-1]), np.ones(np.shape(d)[:-1])
    ok = np.ones(np.shape(d)[:-1], bool)
    for axis in (0, 1):
        for sign in (-1.0, 1.0):
            p = sign * d[..., axis]
            q = half[..., axis] - sign * pa[..., axis]
            parallel = np.abs(p) < 1e-12
            ok &= ~(parallel & (q < 0))
            r = np.where(parallel, 0.0, q / np.where(parallel, 1.0, p))
            t0 = np.where(~parallel & (p < 0), np.maximum(t0, r), t0)
            t1 = np.where(~parallel & (p > 0), np.minimum(t1, r), t1)
    return ok & (t0 <= t1)


def classify_collisions(ego_xy: np.ndarray, ego_yaw: float, ego_speed: float, ego_length: float, ego_width: float,
                        xy: np.ndarray, yaw: np.ndarray, speed: np.ndarray, length: np.ndarray, width: np.ndarray,
                        agent_type: np.ndarray) -> np.ndarray:
    """(N,) :class:`CollisionType` of the ego's contact with each of N agents (arrays (N, 2) / (N,))."""
    n = len(xy)
    if n == 0:
        return np.zeros(0, np.int8)
    corners = geometry.box_corners(np.asarray(ego_xy, float), np.float64(ego_yaw), np.float64(ego_length),
                                   np.float64(ego_width))
    front = segment_touches_box(np.broadcast_to(corners[0], (n, 2)), np.broadcast_to(corners[3], (n, 2)),
                                xy, yaw, length, width)
    behind = relative_angle(rear_axle(np.asarray(ego_xy, float), ego_yaw), ego_yaw, xy) > BEHIND_ANGLE_RAD
    track_stopped = (np.abs(speed) <= STOPPED_SPEED_MPS) | (object_class(agent_type) == ObjectClass.OBJECT)
    out = np.where(front, CollisionType.ACTIVE_FRONT, CollisionType.ACTIVE_LATERAL)
    out = np.where(behind, CollisionType.ACTIVE_REAR, out)
    out = np.where(track_stopped, CollisionType.STOPPED_TRACK, out)
    if abs(ego_speed) <= STOPPED_SPEED_MPS:
        out[:] = CollisionType.STOPPED_EGO
    return out.astype(np.int8)


def at_fault(collision_type: np.ndarray, ego_between_lanes: bool | np.ndarray) -> np.ndarray:
    """(N,) whether each collision is the ego's fault (nuPlan's rule; see the module docstring).

    ego_between_lanes: the ego's box was not within one lane (or lanes connected end to end) at that step,
    or was off the drivable area."""
    t = np.asarray(collision_type)
    return ((t == CollisionType.ACTIVE_FRONT) | (t == CollisionType.STOPPED_TRACK)
            | ((t == CollisionType.ACTIVE_LATERAL) & np.asarray(ego_between_lanes)))
