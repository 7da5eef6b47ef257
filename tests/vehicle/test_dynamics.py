"""Kinematics: bicycle model limits, delta clipping, trajectory tracking."""

import numpy as np

from vectorworld.vehicle.dynamics import BicycleLimits, apply_deltas, bicycle_step, track_trajectory


def test_bicycle_straight_and_limits():
    xy, yaw, v = bicycle_step(np.zeros(2), 0.0, 10.0, 100.0, 0.0, 0.1)
    assert np.isclose(v, 10.0 + BicycleLimits().max_accel_mps2 * 0.1)
    assert np.isclose(xy[0], v * 0.1) and yaw == 0.0
    _, _, v = bicycle_step(np.zeros(2), 0.0, 0.3, -8.0, 0.0, 0.1)
    assert v == 0.0  # never reverses


def test_bicycle_turns_left_with_positive_steering():
    _, yaw, _ = bicycle_step(np.zeros(2), 0.0, 10.0, 0.0, 0.2, 0.1)
    assert yaw > 0


def test_apply_deltas_clips_reverse_and_yaw():
    xy, yaw, speed = apply_deltas(np.zeros((1, 2)), np.zeros(1), np.zeros(1), np.array([[-5.0, 0.0, 2.0]]), 0.1)
    assert xy[0, 0] >= -0.5 and abs(yaw[0]) <= 0.3 + 1e-9


def test_tracker_follows_straight_trajectory():
    xy, yaw, v = np.zeros(2), 0.2, 5.0
    for _ in range(100):
        poses = np.stack([xy[0] + np.arange(1, 31) * 0.8, np.zeros(30), np.zeros(30)], -1)
        poses[:, 0] = np.maximum(poses[:, 0], xy[0] + 1e-3)
        accel, steer = track_trajectory(xy, yaw, v, poses, 0.1)
        xy, yaw, v = bicycle_step(xy, yaw, v, accel, steer, 0.1)
    assert abs(xy[1]) < 0.3 and abs(yaw) < 0.05 and abs(v - 8.0) < 0.5
