"""Smoothed ego kinematics for the comfort metric: Savitzky-Golay derivatives (order 2), as nuPlan smooths its
state extractors before checking the comfort bounds. Works on (..., T) arrays (an episode, or many planner
proposals at once)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SAVGOL_WINDOW = 15
"""Samples per fit window (1.5 s at 10 Hz); shorter signals use the largest odd window that fits."""
SAVGOL_ORDER = 2


@lru_cache(maxsize=64)
def _coefficients(window: int, order: int, deriv: int) -> np.ndarray:
    """Least-squares filter taps (window,) giving the ``deriv``-th derivative (per sample^deriv) at the centre."""
    half = window // 2
    j = np.arange(-half, half + 1, dtype=float)
    vandermonde = j[:, None] ** np.arange(order + 1)[None]
    pinv = np.linalg.pinv(vandermonde)
    return pinv[deriv] * float(np.prod(np.arange(1, deriv + 1)))


def savgol(values: np.ndarray, dt_s: float, deriv: int = 0, window: int = SAVGOL_WINDOW,
           order: int = SAVGOL_ORDER) -> np.ndarray:
    """Savitzky-Golay smoothed ``deriv``-th derivative of (..., T) samples spaced ``dt_s``; edges padded with
    the end values. Signals shorter than ``order + 2`` samples give zeros for derivatives."""
    x = np.asarray(values, dtype=float)
    t = x.shape[-1]
    w = min(window, t if t % 2 == 1 else t - 1)
    if w <= order:
        return x.copy() if deriv == 0 else np.zeros_like(x)
    taps = _coefficients(w, min(order, w - 1), deriv)
    half = w // 2
    padded = np.concatenate([np.repeat(x[..., :1], half, -1), x, np.repeat(x[..., -1:], half, -1)], -1)
    windows = np.lib.stride_tricks.sliding_window_view(padded, w, axis=-1)
    return windows @ taps / dt_s**deriv


@dataclass(frozen=True)
class EgoKinematics:
    """(..., T) smoothed signals: longitudinal / lateral acceleration (m/s^2), yaw rate (rad/s), yaw
    acceleration (rad/s^2), longitudinal jerk and jerk magnitude (m/s^3)."""

    lon_accel: np.ndarray
    lat_accel: np.ndarray
    yaw_rate: np.ndarray
    yaw_accel: np.ndarray
    lon_jerk: np.ndarray
    jerk_magnitude: np.ndarray

    @classmethod
    def of(cls, xy: np.ndarray, yaw: np.ndarray, speed: np.ndarray, dt_s: float) -> EgoKinematics:
        """From poses (..., T, 2), headings (..., T) and speeds (..., T) sampled every ``dt_s``."""
        yaw = np.unwrap(np.asarray(yaw, float), axis=-1)
        speed = np.asarray(speed, float)
        vx, vy = speed * np.cos(yaw), speed * np.sin(yaw)
        ax, ay = savgol(vx, dt_s, 1), savgol(vy, dt_s, 1)
        jx, jy = savgol(vx, dt_s, 2), savgol(vy, dt_s, 2)
        heading = np.stack([np.cos(yaw), np.sin(yaw)], -1)
        lon_accel = savgol(speed, dt_s, 1)
        yaw_rate = savgol(yaw, dt_s, 1)
        return cls(lon_accel=lon_accel, lat_accel=ay * heading[..., 0] - ax * heading[..., 1],
                   yaw_rate=yaw_rate, yaw_accel=savgol(yaw, dt_s, 2), lon_jerk=savgol(speed, dt_s, 2),
                   jerk_magnitude=np.hypot(jx, jy))
