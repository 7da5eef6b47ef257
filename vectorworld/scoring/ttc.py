"""Time to collision as nuPlan computes it: the ego and the relevant agents projected at constant velocity
(each along its own heading) in 0.1 s steps; the first step whose boxes overlap is the TTC.

Relevant agents (``time_to_collision_within_bound``): those ahead (within 30 deg of the ego's heading, seen
from its rear axle), and, while the ego is between lanes, off the drivable area or in a junction, every
agent not behind it (more than 150 deg off). Agents the ego already collided with are left out.
"""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.scoring.collisions import AHEAD_ANGLE_RAD, BEHIND_ANGLE_RAD, rear_axle, relative_angle
from vectorworld.scoring.metrics import EGO_STOPPED_TTC_MPS, TTC_HORIZON_S, TTC_STEP_S


def relevant_agents(ego_xy: np.ndarray, ego_yaw: float, xy: np.ndarray, wide: bool) -> np.ndarray:
    """(N,) bool: agents at ``xy`` (N, 2) that enter the TTC. ``wide``: the ego is between lanes, off the
    drivable area or in a junction (lateral agents count too)."""
    angle = relative_angle(rear_axle(np.asarray(ego_xy, float), ego_yaw), ego_yaw, xy)
    return (angle < AHEAD_ANGLE_RAD) | (wide & (angle <= BEHIND_ANGLE_RAD))


def projection_times(horizon_s: float = TTC_HORIZON_S, step_s: float = TTC_STEP_S) -> np.ndarray:
    """(K,) s: step, 2 step, ... below the horizon (nuPlan's ``np.arange(step, horizon, step)``)."""
    return np.arange(1, int(round(horizon_s / step_s))) * step_s


def time_to_collision(ego_xy: np.ndarray, ego_yaw: float, ego_speed: float, ego_length: float, ego_width: float,
                      xy: np.ndarray, yaw: np.ndarray, speed: np.ndarray, length: np.ndarray,
                      width: np.ndarray) -> float:
    """TTC (s) of the ego against N agents (arrays (N, 2) / (N,)), inf if none within the horizon or the
    ego stands still."""
    if ego_speed <= EGO_STOPPED_TTC_MPS or len(xy) == 0:
        return float("inf")
    t = projection_times()
    reach = (abs(ego_speed) + np.abs(speed)) * t[-1] + 0.5 * (np.hypot(ego_length, ego_width)
                                                              + np.hypot(length, width))
    near = np.linalg.norm(xy - ego_xy, axis=-1) <= reach
    if not near.any():
        return float("inf")
    xy, yaw, speed, length, width = xy[near], yaw[near], speed[near], length[near], width[near]
    heading = np.array([np.cos(ego_yaw), np.sin(ego_yaw)])
    ego_at = np.asarray(ego_xy, float) + t[:, None] * ego_speed * heading  # (K, 2)
    vel = speed[:, None] * np.stack([np.cos(yaw), np.sin(yaw)], -1)  # (N, 2)
    agents_at = xy[:, None] + t[None, :, None] * vel[:, None]  # (N, K, 2)
    # Only (agent, time) pairs whose circumcircles meet can overlap: the exact test runs on those alone.
    gap = agents_at - ego_at[None]
    bound = 0.5 * (np.hypot(ego_length, ego_width) + np.hypot(length, width)) + 1e-6
    n_idx, k_idx = np.nonzero(np.einsum("nki,nki->nk", gap, gap) <= (bound * bound)[:, None])
    if not len(n_idx):
        return float("inf")
    ego_corners = geometry.box_corners(ego_at[k_idx], np.full(len(k_idx), ego_yaw), np.full(len(k_idx), ego_length),
                                       np.full(len(k_idx), ego_width))
    corners = geometry.box_corners(agents_at[n_idx, k_idx], yaw[n_idx], length[n_idx], width[n_idx])
    hit = geometry.boxes_overlap(ego_corners, corners)
    return float(t[k_idx[hit].min()]) if hit.any() else float("inf")
