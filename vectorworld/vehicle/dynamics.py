"""Vehicle dynamics: the kinematic bicycle for the ego, feasibility clipping for policy deltas, and the
trajectory-tracking controller that turns a planned trajectory into (accel, steering)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry


@dataclass(frozen=True)
class BicycleLimits:
    """Kinematic bicycle parameters (rear-axle-free centre formulation)."""

    wheelbase_m: float = 2.9
    max_accel_mps2: float = 4.0
    max_decel_mps2: float = 8.0
    max_steering_rad: float = 0.6
    max_speed_mps: float = 40.0


def bicycle_step(xy: np.ndarray, yaw: float, speed: float, accel: float, steering: float, dt_s: float,
                 limits: BicycleLimits = BicycleLimits()) -> tuple[np.ndarray, float, float]:
    """One step of the kinematic bicycle model (semi-implicit Euler). Returns (xy, yaw, speed)."""
    accel = float(geometry.clamp(accel, -limits.max_decel_mps2, limits.max_accel_mps2))
    steering = float(geometry.clamp(steering, -limits.max_steering_rad, limits.max_steering_rad))
    v_next = float(geometry.clamp(speed + accel * dt_s, 0.0, limits.max_speed_mps))
    yaw_rate = v_next / limits.wheelbase_m * np.tan(steering)
    yaw_mid = yaw + 0.5 * yaw_rate * dt_s
    xy_next = xy + v_next * dt_s * np.array([np.cos(yaw_mid), np.sin(yaw_mid)])
    return xy_next, float(geometry.wrap_angle(yaw + yaw_rate * dt_s)), v_next


@dataclass(frozen=True)
class DeltaLimits:
    """Hard physical bounds on a policy's per-step motion. Deliberately looser than the kinematic
    infeasibility thresholds of the metrics (DESIGN.md section 7), so the metric measures the policy,
    not this clip."""

    max_accel_mps2: float = 10.0
    max_reverse_m: float = 0.5
    max_yaw_rate_rps: float = 3.0
    max_lateral_ratio: float = 0.5


def apply_deltas(xy: np.ndarray, yaw: np.ndarray, speed: np.ndarray, deltas: np.ndarray, dt_s: float,
                 limits: DeltaLimits = DeltaLimits()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move agents by body-frame deltas (N, 3) after clipping; returns new (xy, yaw, speed)."""
    dx = deltas[:, 0]
    v_max = np.maximum(speed, 0.0) + limits.max_accel_mps2 * dt_s
    v_min = speed - limits.max_accel_mps2 * dt_s
    dx = geometry.clamp(dx, np.maximum(v_min * dt_s, -limits.max_reverse_m), v_max * dt_s)
    dy = geometry.clamp(deltas[:, 1], -limits.max_lateral_ratio * np.abs(dx) - 0.05,
                 limits.max_lateral_ratio * np.abs(dx) + 0.05)
    dyaw = geometry.clamp(deltas[:, 2], -limits.max_yaw_rate_rps * dt_s, limits.max_yaw_rate_rps * dt_s)
    c, s = np.cos(yaw), np.sin(yaw)
    xy_next = xy + np.stack([c * dx - s * dy, s * dx + c * dy], -1)
    # Speed along the heading, from the length of the step (a curved step is not slower than a straight one).
    return xy_next, geometry.wrap_angle(yaw + dyaw), np.sign(dx) * np.hypot(dx, dy) / dt_s


@dataclass(frozen=True)
class TrackerGains:
    """Pure-pursuit steering; speed is tracked feed-forward to the first pose."""

    lookahead_min_m: float = 4.0
    lookahead_time_s: float = 0.6


def track_trajectory(xy: np.ndarray, yaw: float, speed: float, poses: np.ndarray, dt_s: float,
                     limits: BicycleLimits = BicycleLimits(),
                     gains: TrackerGains = TrackerGains()) -> tuple[float, float]:
    """(accel, steering) that follows ``poses`` (T, 3) given at dt_s, 2*dt_s, ... from now."""
    path = np.vstack([xy, poses[:, :2]])
    heading = np.array([np.cos(yaw), np.sin(yaw)])
    # Feed-forward: the planned speed of the first step. From the spacing of the planned poses when there
    # are three or more (v1 = 2 v2 - v3, independent of how far the ego is off the plan), else the speed
    # that reaches the first pose in one step along the heading.
    if len(poses) >= 3:
        gaps = np.linalg.norm(np.diff(poses[:3, :2], axis=0), axis=1) / dt_s
        target_speed = max(2.0 * gaps[0] - gaps[1], 0.0)
    else:
        target_speed = max(float((poses[0, :2] - xy) @ heading) / dt_s, 0.0)
    accel = (target_speed - speed) / dt_s
    if target_speed < 0.05 and speed < 0.5:
        return -limits.max_decel_mps2, 0.0
    lookahead = max(gains.lookahead_min_m, gains.lookahead_time_s * speed)
    s = geometry.polyline_lengths(path)
    if s[-1] < 1e-3:
        return accel, 0.0
    target = geometry.interpolate_polyline(path, s, np.array([min(lookahead, s[-1])]))[0]
    local = geometry.to_local(target[None], xy, yaw)[0]
    dist2 = float(local @ local)
    if dist2 < 1e-6:
        return accel, 0.0
    steering = float(np.arctan2(2.0 * limits.wheelbase_m * local[1], dist2))
    return accel, steering


def rollout_tracked(xy: np.ndarray, yaw: np.ndarray, speed: np.ndarray, poses: np.ndarray, steps: int, dt_s: float,
                    limits: BicycleLimits = BicycleLimits(),
                    gains: TrackerGains = TrackerGains()) -> np.ndarray:
    """Forecast P egos that each track their trajectory: :func:`track_trajectory` then :func:`bicycle_step`,
    batched, for ``steps`` steps. At step k the remaining poses ``poses[:, k:]`` are tracked (the plan is
    followed, not re-planned). xy (P, 2), yaw (P,), speed (P,), poses (P, T, 3) with T >= steps + 3.
    Returns (P, steps, 4) states (x, y, yaw, speed) after each step."""
    x, y = np.array(xy, float)[:, 0].copy(), np.array(xy, float)[:, 1].copy()
    yaw, speed = geometry.wrap_angle(np.array(yaw, float)), np.array(speed, float)
    n = len(x)
    rows = np.arange(n)
    out = np.zeros((4, steps, n))
    px, py = np.ascontiguousarray(poses[..., 0], float), np.ascontiguousarray(poses[..., 1], float)
    dx, dy = np.diff(px, axis=1), np.diff(py, axis=1)
    seg = np.sqrt(dx * dx + dy * dy)  # (P, T-1)
    cum = np.concatenate([np.zeros((n, 1)), np.cumsum(seg, 1)], 1)  # (P, T) arc length along the poses
    seg_speed = seg / dt_s
    wheelbase, max_decel, max_accel = limits.wheelbase_m, limits.max_decel_mps2, limits.max_accel_mps2
    max_steer = limits.max_steering_rad
    for k in range(steps):
        target_speed = np.maximum(2.0 * seg_speed[:, k] - seg_speed[:, k + 1], 0.0)
        fx, fy = px[:, k] - x, py[:, k] - y
        s = cum[:, k:] + (np.sqrt(fx * fx + fy * fy) - cum[:, k])[:, None]  # arc of poses k.. from the ego, via k
        last = s[:, -1]
        lookahead = np.minimum(np.maximum(gains.lookahead_min_m, gains.lookahead_time_s * speed), last)
        j = np.minimum((s < lookahead[:, None]).sum(1), s.shape[1] - 1)  # segment [j-1, j] of [ego, poses k..]
        has = j > 0
        jm = np.maximum(j - 1, 0)
        s_lo = np.where(has, s[rows, jm], 0.0)
        lo_x = np.where(has, px[rows, k + jm], x)
        lo_y = np.where(has, py[rows, k + jm], y)
        span = s[rows, j] - s_lo
        long = span > 1e-12
        w = np.where(long, (lookahead - s_lo) / np.where(long, span, 1.0), 0.0)
        rel_x = lo_x + w * (px[rows, k + j] - lo_x) - x  # the lookahead target, relative to the ego
        rel_y = lo_y + w * (py[rows, k + j] - lo_y) - y
        c, si = np.cos(yaw), np.sin(yaw)
        dist2 = rel_x * rel_x + rel_y * rel_y
        stop = (target_speed < 0.05) & (speed < 0.5)
        steering = np.arctan2(2.0 * wheelbase * (c * rel_y - si * rel_x), np.maximum(dist2, 1e-12))
        steering[(dist2 < 1e-6) | (last < 1e-3) | stop] = 0.0
        accel = (target_speed - speed) / dt_s
        accel[stop] = -max_decel
        accel = np.minimum(np.maximum(accel, -max_decel), max_accel)
        steering = np.minimum(np.maximum(steering, -max_steer), max_steer)
        v_next = np.minimum(np.maximum(speed + accel * dt_s, 0.0), limits.max_speed_mps)
        yaw_rate = v_next / wheelbase * np.tan(steering)
        yaw_mid = yaw + 0.5 * yaw_rate * dt_s
        step = v_next * dt_s
        x = x + step * np.cos(yaw_mid)
        y = y + step * np.sin(yaw_mid)
        yaw, speed = yaw + yaw_rate * dt_s, v_next  # wrapped once at the end (cos / sin do not mind)
        out[0, k], out[1, k], out[2, k], out[3, k] = x, y, yaw, speed
    out[2] = geometry.wrap_angle(out[2])
    return out.transpose(2, 1, 0)
