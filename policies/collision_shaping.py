"""Collision-avoidance logit penalty of DeltaSim, evaluated at inference for candidate primitives.

For each candidate primitive the agent is imagined to take that step and then brake at
``brake_decel_mps2`` straight along its new heading (a primitive is judged by its speed and first turn,
not by an imagined sustained swerve, which would make swerving off the road look safe); each neighbour ahead of
the agent is predicted at constant velocity. Both boxes are covered by ``circles`` discs along their
length; the penalty is the weighted sum over check times of the deepest disc penetration (m), so faster
primitives towards an obstacle are pushed down more. Neighbours behind the agent's centre are ignored
(the follower is responsible for the gap). All in the agent's own frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class CollisionShapingConfig:
    """Check times (s), braking deceleration (m/s^2) after the first step, weights (logit per m of
    penetration) per check time, discs per box."""

    times_s: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0)
    weights: tuple[float, ...] = (40.0, 15.0, 8.0, 4.0)
    brake_decel_mps2: float = 4.0
    circles: int = 3
    max_range_m: float = 40.0


def primitive_paths(primitives: np.ndarray, config: CollisionShapingConfig, dt_s: float = 0.1) -> np.ndarray:
    """Poses (K, T, 3) in the agent frame at ``config.times_s`` for each primitive (K, 3): the first step
    exactly, then braking straight along the new heading."""
    prims = np.asarray(primitives, dtype=np.float64)
    dx = prims[:, 0]
    v1 = np.maximum(dx / dt_s, 0.0)
    out = np.zeros((len(prims), len(config.times_s), 3))
    b = config.brake_decel_mps2
    heading = prims[:, 2]
    for j, t in enumerate(config.times_s):
        tau = np.clip(t - dt_s, 0.0, v1 / b)
        s = v1 * tau - 0.5 * b * tau * tau     # braking distance after the first step
        x = prims[:, 0] + s * np.cos(heading)
        y = prims[:, 1] + s * np.sin(heading)
        out[:, j] = np.stack([x, y, heading], -1)
    return out


def _disc_centres(xy: torch.Tensor, yaw: torch.Tensor, length: torch.Tensor, n: int) -> torch.Tensor:
    """Disc centres (..., n, 2) along boxes at xy (..., 2), yaw (...), length (...)."""
    frac = (torch.arange(n, dtype=xy.dtype) + 0.5) / n - 0.5
    off = length[..., None] * frac                                  # (..., n)
    return xy[..., None, :] + off[..., None] * torch.stack([torch.cos(yaw), torch.sin(yaw)], -1)[..., None, :]


def collision_penalty(paths: torch.Tensor, own_length: torch.Tensor, own_width: torch.Tensor,
                      neighbors: torch.Tensor, neighbor_mask: torch.Tensor,
                      config: CollisionShapingConfig) -> torch.Tensor:
    """Penalty (S, Kc) >= 0 for candidate primitive paths.

    paths: (S, Kc, T, 3) own poses in the agent frame at the check times; own_length/width: (S,) m;
    neighbors: (S, N, 11) observation features (x, y, cos, sin, vx, vy, length, width, ...) in the agent
    frame; neighbor_mask: (S, N) bool. Only (agent, neighbour) pairs with the neighbour ahead and within
    ``max_range_m`` are evaluated.
    """
    n = config.circles
    penalty = torch.zeros(paths.shape[:2], dtype=paths.dtype)
    active = neighbor_mask & (neighbors[..., 0] > 0.0) & (neighbors[..., :2].norm(dim=-1) < config.max_range_m)
    rows, cols = torch.nonzero(active, as_tuple=True)
    if len(rows) == 0:
        return penalty
    times = torch.tensor(config.times_s, dtype=paths.dtype)
    weights = torch.tensor(config.weights, dtype=paths.dtype)
    nb = neighbors[rows, cols]                                                 # (P, 11)
    own_path = paths[rows]                                                     # (P, Kc, T, 3)
    nb_xy = nb[:, None, 0:2] + nb[:, None, 4:6] * times[:, None]               # (P, T, 2)
    # Broad phase: bounding circles of both boxes; only touching (pair, candidate, time) go further.
    bound = (torch.hypot(own_length, own_width)[rows] + torch.hypot(nb[:, 6], nb[:, 7])) / 2
    centre_d2 = ((own_path[..., :2] - nb_xy[:, None]) ** 2).sum(-1)           # (P, Kc, T)
    p_i, k_i, t_i = torch.nonzero(centre_d2 < (bound * bound)[:, None, None], as_tuple=True)
    if len(p_i) == 0:
        return penalty
    own_len = own_length[rows][p_i]
    own_r = torch.hypot(own_width[rows][p_i] / 2, own_len / (2 * n))            # (Q,)
    pose = own_path[p_i, k_i, t_i]                                             # (Q, 3)
    own_c = _disc_centres(pose[:, :2], pose[:, 2], own_len, n)                 # (Q, n, 2)
    nbq = nb[p_i]
    nb_c = _disc_centres(nb_xy[p_i, t_i], torch.atan2(nbq[:, 3], nbq[:, 2]), nbq[:, 6], n)
    nb_r = torch.hypot(nbq[:, 7] / 2, nbq[:, 6] / (2 * n))
    diff = own_c[:, :, None] - nb_c[:, None]                                   # (Q, n, n, 2)
    d2 = (diff * diff).sum(-1).amin(dim=(-1, -2))                              # (Q,)
    depth = torch.relu(own_r + nb_r - torch.sqrt(d2 + 1e-9)) * weights[t_i]
    per_pair = torch.zeros(own_path.shape[:2], dtype=paths.dtype)
    per_pair.index_put_((p_i, k_i), depth, accumulate=True)                    # (P, Kc)
    # Worst neighbour per agent: scatter-max the pairs back to their agents.
    index = rows[:, None].expand_as(per_pair)
    return penalty.scatter_reduce(0, index, per_pair, reduce="amax", include_self=True)
