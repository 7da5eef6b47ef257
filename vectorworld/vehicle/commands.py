"""Ego commands: control (accel, steering), trajectory (tracked by the simulator), or next state.

All poses are in the global world frame. ``validate_command`` rejects NaN/inf and out-of-range fields with
a :class:`CommandError` that names the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vectorworld.errors import CommandError

MAX_ACCEL_MPS2 = 10.0
MAX_STEERING_RAD = 0.7
MAX_TRAJECTORY_POSES = 200
MAX_SPEED_MPS = 60.0
MAX_STATE_JUMP_M = 20.0


@dataclass(frozen=True)
class ControlCommand:
    """Longitudinal acceleration (m/s^2) and front-wheel steering angle (rad, + = left)."""

    accel_mps2: float
    steering_rad: float


@dataclass(frozen=True)
class TrajectoryCommand:
    """Future poses (T, 3) = (x m, y m, yaw rad), global frame, at 0.1 s, 0.2 s, ... from now.

    The simulator's controller tracks it (nuPlan style)."""

    poses: np.ndarray


@dataclass(frozen=True)
class StateCommand:
    """Teleport the ego to this pose and speed at the next step (log replay, tests)."""

    x_m: float
    y_m: float
    yaw_rad: float
    speed_mps: float


EgoCommand = ControlCommand | TrajectoryCommand | StateCommand


def _finite(name: str, value: float, limit: float | None = None) -> None:
    if not math.isfinite(value):
        raise CommandError(f"{name} must be finite, got {value}")
    if limit is not None and abs(value) > limit:
        raise CommandError(f"{name} = {value} is out of range [-{limit}, {limit}]")


def validate_command(command: EgoCommand, ego_xy: np.ndarray) -> EgoCommand:
    """Check every field; return the command (with arrays converted) or raise CommandError."""
    if isinstance(command, ControlCommand):
        _finite("control.accel_mps2", command.accel_mps2, MAX_ACCEL_MPS2)
        _finite("control.steering_rad", command.steering_rad, MAX_STEERING_RAD)
        return command
    if isinstance(command, TrajectoryCommand):
        poses = np.asarray(command.poses, dtype=np.float64)
        if poses.ndim != 2 or poses.shape[1] != 3 or not 1 <= len(poses) <= MAX_TRAJECTORY_POSES:
            raise CommandError(f"trajectory.poses must have shape (T, 3) with 1 <= T <= "
                               f"{MAX_TRAJECTORY_POSES}, got {poses.shape}")
        if not np.isfinite(poses).all():
            bad = int(np.argwhere(~np.isfinite(poses))[0][0])
            raise CommandError(f"trajectory.poses[{bad}] is not finite")
        step = np.linalg.norm(np.diff(np.vstack([ego_xy, poses[:, :2]]), axis=0), axis=1)
        if (step > MAX_SPEED_MPS * 0.1).any():
            bad = int(np.argmax(step > MAX_SPEED_MPS * 0.1))
            raise CommandError(f"trajectory.poses[{bad}] implies a speed above {MAX_SPEED_MPS} m/s")
        return TrajectoryCommand(poses)
    if isinstance(command, StateCommand):
        for name in ("x_m", "y_m", "yaw_rad", "speed_mps"):
            _finite(f"state.{name}", getattr(command, name))
        _finite("state.speed_mps", command.speed_mps, MAX_SPEED_MPS)
        jump = float(np.hypot(command.x_m - ego_xy[0], command.y_m - ego_xy[1]))
        if jump > MAX_STATE_JUMP_M:
            raise CommandError(f"state moves the ego {jump:.1f} m in one step (max {MAX_STATE_JUMP_M} m)")
        return command
    raise CommandError(f"unknown command type {type(command).__name__}")
