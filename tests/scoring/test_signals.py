"""The comfort signals are derived as nuPlan's state extractors derive them: Savitzky-Golay fits evaluated to
the edges (scipy's ``mode="interp"``), acceleration smoothed (window 8) then differentiated (window 15) for
jerk, the jerk of the acceleration's *magnitude*, and the heading's derivatives over 5 samples."""

from __future__ import annotations

import numpy as np

from vectorworld.scoring.metrics import COMFORT_YAW_ACCEL_RPS2, ego_is_comfortable
from vectorworld.scoring.signals import EgoKinematics, savgol

DT = 0.1
T = np.arange(60) * DT


def test_savgol_is_exact_on_a_quadratic_up_to_the_edges():
    x = 0.5 * T**2 + 2.0 * T + 1.0
    for window in (5, 8, 15):
        np.testing.assert_allclose(savgol(x, DT, 0, window), x, atol=1e-9)
        np.testing.assert_allclose(savgol(x, DT, 1, window), T + 2.0, atol=1e-9)
        np.testing.assert_allclose(savgol(x, DT, 2, window), np.ones_like(T), atol=1e-9)
    # A window longer than the signal shrinks to it (nuPlan: min(window_length, len)).
    np.testing.assert_allclose(savgol(x[:6], DT, 1, 15), T[:6] + 2.0, atol=1e-9)


def test_an_episode_starting_at_constant_acceleration_has_no_jerk():
    """Padding the edges with the end values (the first version) made a kink at the start: 2.5 m/s^3 of jerk
    and half the acceleration at the first samples."""
    k = EgoKinematics.of(np.zeros_like(T), 10.0 + 2.0 * T, DT)
    np.testing.assert_allclose(k.lon_accel, 2.0, atol=1e-9)
    np.testing.assert_allclose(k.lon_jerk, 0.0, atol=1e-9)
    np.testing.assert_allclose(k.jerk_magnitude, 0.0, atol=1e-9)


def test_jerk_is_the_derivative_of_the_acceleration_magnitude():
    """A steady circle (8 m/s, radius 14 m): constant |a| = v^2 / R, so no jerk (nuPlan differentiates the
    magnitude); the norm of the jerk vector would be v^3 / R^2."""
    speed = np.full_like(T, 8.0)
    k = EgoKinematics.of(np.cumsum(np.full_like(T, 8.0 / 14.0)) * DT, speed, DT)
    np.testing.assert_allclose(k.lat_accel, 64.0 / 14.0, atol=1e-9)
    np.testing.assert_allclose(k.jerk_magnitude, 0.0, atol=1e-9)
    assert ego_is_comfortable(k) == 1.0


def test_a_sudden_yaw_rate_step_breaks_the_yaw_acceleration_bound():
    """0 -> 0.6 rad/s in one step at 5 m/s: nuPlan's 5-sample, order-3 second derivative sees ~2.6 rad/s^2
    (a 15-sample fit would smooth it to ~0.8 and let it pass)."""
    rate = np.where(T >= 3.0, 0.6, 0.0)
    k = EgoKinematics.of(np.cumsum(rate) * DT, np.full_like(T, 5.0), DT)
    assert np.abs(k.yaw_accel).max() > COMFORT_YAW_ACCEL_RPS2
    assert ego_is_comfortable(k) == 0.0
    smooth = EgoKinematics.of(np.cumsum(np.clip((T - 3.0) / 1.0, 0.0, 1.0) * 0.6) * DT, np.full_like(T, 5.0), DT)
    assert ego_is_comfortable(smooth) == 1.0  # the same turn-in over 1 s
