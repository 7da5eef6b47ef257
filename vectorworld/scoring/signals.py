"""Smoothed ego kinematics for the comfort metric, derived as nuPlan's state extractors derive them
(``nuplan/planning/metrics/utils/state_extractors.py``), on (..., T) arrays (an episode, or many planner
proposals at once):

* accelerations: the state's acceleration (here: the per-step change of speed, and speed x yaw rate for the
  lateral part, at the box centre) smoothed by a Savitzky-Golay filter of window 8, order 2;
* jerks: the first derivative (window 15, order 2) of those smoothed accelerations, longitudinal and of the
  acceleration's magnitude;
* yaw rate: the first derivative of the unwrapped heading (window 5, order 2); yaw acceleration its second
  derivative (window 5, order 3).

Edges are fitted like scipy's ``savgol_filter(mode="interp")`` (nuPlan's default): the first and last
window's polynomial is evaluated at the samples it covers, so an episode that starts or ends moving gets no
artificial kink from padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import factorial

import numpy as np

ACCEL_WINDOW = 8
"""Samples smoothing the acceleration (nuPlan ``extract_ego_acceleration``: 8, order 2)."""
JERK_WINDOW = 15
"""Samples of the jerk's derivative filter (nuPlan ``extract_ego_jerk``: 15, order 2)."""
YAW_WINDOW = 5
"""Samples of the heading's derivative filters (nuPlan ``approximate_derivatives`` default: 5)."""
YAW_RATE_ORDER = 2
YAW_ACCEL_ORDER = 3
SAVGOL_ORDER = 2


@lru_cache(maxsize=64)
def _fit(window: int, order: int) -> np.ndarray:
    """(order + 1, window) least-squares map from a window's samples to the coefficients of the polynomial
    in the sample offset from the window's centre."""
    j = np.arange(window, dtype=float) - (window - 1) / 2.0
    return np.linalg.pinv(j[:, None] ** np.arange(order + 1)[None])


@lru_cache(maxsize=256)
def _plan(t: int, window: int, order: int, deriv: int) -> tuple[np.ndarray, np.ndarray]:
    """For a length-``t`` signal: each sample's window start (t,) and the basis (t, order + 1) giving the
    ``deriv``-th derivative of that window's polynomial at the sample."""
    start = np.clip(np.arange(t) - window // 2, 0, t - window)
    u = np.arange(t) - start - (window - 1) / 2.0
    basis = np.zeros((t, order + 1))
    for p in range(deriv, order + 1):
        basis[:, p] = factorial(p) / factorial(p - deriv) * u ** (p - deriv)
    return start, basis


def savgol(values: np.ndarray, dt_s: float, deriv: int = 0, window: int = JERK_WINDOW,
           order: int = SAVGOL_ORDER) -> np.ndarray:
    """Savitzky-Golay smoothed ``deriv``-th derivative of (..., T) samples spaced ``dt_s``: at every sample,
    the least-squares polynomial of degree ``order`` over the ``window`` samples around it (``window // 2``
    before; the first / last full window at the edges), differentiated there. A window longer than the
    signal shrinks to it (as nuPlan's ``min(window_length, len)``); derivatives of signals with no more
    samples than ``order`` are zero."""
    x = np.asarray(values, dtype=float)
    t = x.shape[-1]
    w = min(window, t)
    if w <= order:
        return x.copy() if deriv == 0 else np.zeros_like(x)
    coeffs = np.lib.stride_tricks.sliding_window_view(x, w, axis=-1) @ _fit(w, order).T  # (..., t-w+1, o+1)
    start, basis = _plan(t, w, order, deriv)
    return np.einsum("...tp,tp->...t", coeffs[..., start, :], basis) / dt_s**deriv


def _rate(values: np.ndarray, dt_s: float) -> np.ndarray:
    """Per-step change / dt, the first sample repeating the second's (the state's rate over its last step)."""
    d = np.diff(values, axis=-1) / dt_s
    if d.shape[-1] == 0:
        return np.zeros_like(values)
    return np.concatenate([d[..., :1], d], -1)


@dataclass(frozen=True)
class EgoKinematics:
    """(..., T) smoothed signals: longitudinal / lateral acceleration (m/s^2), yaw rate (rad/s), yaw
    acceleration (rad/s^2), longitudinal jerk and the jerk of the acceleration's magnitude (m/s^3, signed)."""

    lon_accel: np.ndarray
    lat_accel: np.ndarray
    yaw_rate: np.ndarray
    yaw_accel: np.ndarray
    lon_jerk: np.ndarray
    jerk_magnitude: np.ndarray

    @classmethod
    def of(cls, yaw: np.ndarray, speed: np.ndarray, dt_s: float) -> EgoKinematics:
        """From headings (..., T) and speeds (..., T) of the box centre sampled every ``dt_s``."""
        yaw = np.unwrap(np.asarray(yaw, float), axis=-1)
        speed = np.asarray(speed, float)
        raw_lon = _rate(speed, dt_s)
        raw_lat = speed * _rate(yaw, dt_s)
        lon = savgol(raw_lon, dt_s, 0, ACCEL_WINDOW)
        lat = savgol(raw_lat, dt_s, 0, ACCEL_WINDOW)
        magnitude = savgol(np.hypot(raw_lon, raw_lat), dt_s, 0, ACCEL_WINDOW)
        return cls(lon_accel=lon, lat_accel=lat,
                   yaw_rate=savgol(yaw, dt_s, 1, YAW_WINDOW, YAW_RATE_ORDER),
                   yaw_accel=savgol(yaw, dt_s, 2, YAW_WINDOW, YAW_ACCEL_ORDER),
                   lon_jerk=savgol(lon, dt_s, 1, JERK_WINDOW), jerk_magnitude=savgol(magnitude, dt_s, 1, JERK_WINDOW))
