"""The k-disks motion vocabulary of DeltaSim: a few hundred per-step motion primitives.

A motion is a body-frame pose delta (dx m, dy m, dtheta rad) over one 0.1 s step, expressed in the frame
of the agent at the start of the step (x forward, y left). The vocabulary is built greedily: pick a motion
from the data, remove every motion within ``eps`` of it, repeat. Distances use the weighted metric
``|(dx, dy, theta_weight * dtheta)|`` so that a metre and a radian are comparable.

Trajectories are tokenised in closed loop (each step picks the primitive that best reaches the next logged
pose from the pose reconstructed so far), so quantisation errors do not accumulate over long horizons.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.errors import ConfigError


def apply_body_delta(pose: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Compose poses (..., 3) (x, y, yaw; global) with body-frame deltas (..., 3); returns (..., 3)."""
    pose = np.asarray(pose, dtype=np.float64)
    delta = np.asarray(delta, dtype=np.float64)
    c, s = np.cos(pose[..., 2]), np.sin(pose[..., 2])
    x = pose[..., 0] + c * delta[..., 0] - s * delta[..., 1]
    y = pose[..., 1] + s * delta[..., 0] + c * delta[..., 1]
    return np.stack([x, y, geometry.wrap_angle(pose[..., 2] + delta[..., 2])], -1)


def body_delta(pose_from: np.ndarray, pose_to: np.ndarray) -> np.ndarray:
    """Body-frame delta (..., 3) taking ``pose_from`` (..., 3) to ``pose_to`` (..., 3); inverse of
    :func:`apply_body_delta`."""
    pose_from = np.asarray(pose_from, dtype=np.float64)
    pose_to = np.asarray(pose_to, dtype=np.float64)
    d = pose_to[..., :2] - pose_from[..., :2]
    c, s = np.cos(pose_from[..., 2]), np.sin(pose_from[..., 2])
    dx = c * d[..., 0] + s * d[..., 1]
    dy = -s * d[..., 0] + c * d[..., 1]
    return np.stack([dx, dy, geometry.wrap_angle(pose_to[..., 2] - pose_from[..., 2])], -1)


@dataclass(frozen=True)
class MotionVocabulary:
    """K motion primitives.

    primitives: (K, 3) float64, (dx m, dy m, dtheta rad) per step, body frame. Row 0 is standing still.
    eps: disk radius used to build it (weighted metric). theta_weight: metres per radian in the metric.
    dt_s: the step the primitives are defined for.
    """

    primitives: np.ndarray
    eps: float
    theta_weight: float
    dt_s: float = 0.1

    def __post_init__(self) -> None:
        prims = np.asarray(self.primitives, dtype=np.float64)
        if prims.ndim != 2 or prims.shape[1] != 3 or len(prims) < 1:
            raise ConfigError(f"vocabulary primitives must have shape (K>=1, 3), got {prims.shape}")
        if not np.all(np.isfinite(prims)):
            raise ConfigError("vocabulary primitives must be finite")
        object.__setattr__(self, "primitives", prims)

    @property
    def size(self) -> int:
        return len(self.primitives)

    @property
    def metric_scale(self) -> np.ndarray:
        """(3,) per-component scale of the distance metric."""
        return np.array([1.0, 1.0, self.theta_weight])

    def nearest(self, motions: np.ndarray) -> np.ndarray:
        """Index (...,) int64 of the closest primitive to each motion (..., 3) under the weighted metric."""
        m = np.asarray(motions, dtype=np.float64) * self.metric_scale
        p = self.primitives * self.metric_scale
        flat = m.reshape(-1, 3)
        # |m - p|^2 = |m|^2 - 2 m.p + |p|^2; the |m|^2 term does not change the argmin.
        d2 = (p * p).sum(-1)[None] - 2.0 * flat @ p.T
        return np.argmin(d2, axis=1).reshape(m.shape[:-1]).astype(np.int64)

    def tokenize_trajectory(self, poses: np.ndarray, valid: np.ndarray | None = None
                            ) -> tuple[np.ndarray, np.ndarray]:
        """Closed-loop tokens of trajectories.

        poses: (N, T, 3) global (x, y, yaw) at 0.1 s steps; valid: (N, T) bool (default all valid).
        Returns tokens (N, T-1) int64 (-1 where step t or t+1 is invalid) and residuals (N, T-1, 3): the
        logged motion minus the chosen primitive (so tokens + residuals detokenise to the log exactly).
        Tokens are chosen to reach the next logged pose from the pose reconstructed from tokens alone;
        after an invalid step the reconstruction restarts from the logged pose.
        """
        poses = np.asarray(poses, dtype=np.float64)
        n, t = poses.shape[:2]
        valid = np.ones((n, t), bool) if valid is None else np.asarray(valid, bool)
        tokens = np.full((n, t - 1), -1, np.int64)
        residuals = np.zeros((n, t - 1, 3))
        recon = poses[:, 0].copy()
        for step in range(t - 1):
            ok = valid[:, step] & valid[:, step + 1]
            recon = np.where(valid[:, step, None], recon, poses[:, step])
            idx = self.nearest(body_delta(recon, poses[:, step + 1]))
            logged = body_delta(poses[:, step], poses[:, step + 1])
            tokens[ok, step] = idx[ok]
            residuals[ok, step] = (logged - self.primitives[idx])[ok]
            recon = np.where(ok[:, None], apply_body_delta(recon, self.primitives[idx]), poses[:, step + 1])
        return tokens, residuals

    def detokenize(self, start_pose: np.ndarray, tokens: np.ndarray,
                   residuals: np.ndarray | None = None) -> np.ndarray:
        """Integrate tokens (N, T-1) (+ residuals (N, T-1, 3)) from start poses (N, 3); returns poses
        (N, T, 3). Tokens of -1 are treated as standing still."""
        tokens = np.asarray(tokens, dtype=np.int64)
        deltas = self.primitives[np.maximum(tokens, 0)] * (tokens >= 0)[..., None]
        if residuals is not None:
            deltas = deltas + np.asarray(residuals) * (tokens >= 0)[..., None]
        out = [np.asarray(start_pose, dtype=np.float64)]
        for step in range(tokens.shape[1]):
            out.append(apply_body_delta(out[-1], deltas[:, step]))
        return np.stack(out, 1)


def straight_motions(max_speed_mps: float, spacing_m: float, dt_s: float = 0.1) -> np.ndarray:
    """Straight-ahead motions (M, 3) from standstill to ``max_speed_mps`` every ``spacing_m`` per step.

    Added to the data pool before building a vocabulary so that a feasible primitive exists at every
    speed (braking and keeping speed are always available to the shaped policy)."""
    dx = np.arange(0.0, max_speed_mps * dt_s + spacing_m, spacing_m)
    return np.stack([dx, np.zeros_like(dx), np.zeros_like(dx)], -1)


def build_kdisks(motions: np.ndarray, rng: np.random.Generator, eps: float = 0.035,
                 theta_weight: float = 10.0, max_size: int = 384, dt_s: float = 0.1) -> MotionVocabulary:
    """Greedy k-disks: pick a random remaining motion, drop all within ``eps``, repeat.

    motions: (M, 3) per-step body-frame motions from data. The zero motion is always picked first.
    Stops after ``max_size`` primitives or when every motion is covered.
    """
    if eps <= 0 or max_size < 1:
        raise ConfigError(f"k-disks needs eps > 0 and max_size >= 1, got eps={eps}, max_size={max_size}")
    pool = np.asarray(motions, dtype=np.float64).reshape(-1, 3)
    pool = pool[np.all(np.isfinite(pool), axis=1)]
    scale = np.array([1.0, 1.0, theta_weight])
    scaled = pool * scale
    chosen = [np.zeros(3)]
    alive = np.linalg.norm(scaled, axis=1) > eps
    order = rng.permutation(len(pool))
    cursor = 0
    while len(chosen) < max_size:
        while cursor < len(order) and not alive[order[cursor]]:
            cursor += 1
        if cursor >= len(order):
            break
        pick = order[cursor]
        chosen.append(pool[pick])
        alive &= np.linalg.norm(scaled - scaled[pick], axis=1) > eps
    return MotionVocabulary(np.stack(chosen), eps=eps, theta_weight=theta_weight, dt_s=dt_s)
