"""Start-up logit penalty of DeltaSim: a standing agent whose way ahead is free sets off.

An imitation policy copies the history it sees: an agent that has stood for a while -- at a light that has
turned green, behind a leader that has driven away, at a junction it has just been granted -- keeps
choosing to stand, and stands until the stuck clock removes it. The penalty pushes the standing candidates
of such an agent down by ``penalty`` logits. It applies only to an agent that stands (below
``standing_mps``) on a route while nothing is in its route corridor within ``free_m`` ahead of its front:
no neighbour and no junction stop token (a held agent sees its token in that corridor, so a hold is never
overridden). Moving candidates still answer to the collision penalty, which is far steeper, so a car
does not set off into a pedestrian or crossing traffic to avoid standing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.deltasim.observation import polyline_distance


@dataclass(frozen=True)
class StartShapingConfig:
    """Logits taken from standing candidates of a free standing agent; what counts as standing (agent
    speed m/s, candidate step m) and as free (corridor length ahead of the front, lateral margin, m)."""

    penalty: float = 6.0
    standing_mps: float = 0.5
    standing_step_m: float = 0.01
    free_m: float = 6.0
    corridor_margin_m: float = 0.5


def free_to_start(neighbors: np.ndarray, neighbor_mask: np.ndarray, route_ahead: np.ndarray, static: np.ndarray,
                  speed: np.ndarray, config: StartShapingConfig) -> np.ndarray:
    """(S,) bool: agents that stand with a free route corridor ahead.

    neighbors: (S, N, 11) agent-frame features (x, y, cos, sin, vx, vy, length, width, ...; the stop token
    included), neighbor_mask: (S, N); route_ahead: (S, R, 4) route targets (x, y, valid, cap); static: (S, 5)
    (length, width, ...); speed: (S,) m/s.
    """
    route_ok = route_ahead[..., 2] > 0.5
    free = (np.abs(speed) < config.standing_mps) & route_ok[:, :2].all(1)
    rows = np.flatnonzero(free)  # only standing agents on a route can be free: the corridor test is for them
    if not len(rows):
        return free
    nb = neighbors[rows]
    own_length, own_width = static[rows, 0:1], static[rows, 1:2]
    x, y = nb[..., 0], nb[..., 1]
    cos, sin = np.abs(nb[..., 2]), np.abs(nb[..., 3])
    half_along = (nb[..., 6] * cos + nb[..., 7] * sin) / 2     # extents along / across the agent's heading
    half_across = (nb[..., 6] * sin + nb[..., 7] * cos) / 2
    lateral = polyline_distance(x, y, route_ahead[rows, :, :2], route_ok[rows])  # (S', N)
    ahead = (x + half_along > 0) & (x - half_along < own_length / 2 + config.free_m)
    in_corridor = lateral < own_width / 2 + half_across + config.corridor_margin_m
    free[rows] = ~(neighbor_mask[rows] & ahead & in_corridor).any(1)
    return free


def start_penalty(candidate_steps: np.ndarray, free: np.ndarray, config: StartShapingConfig) -> np.ndarray:
    """Penalty (S, C) >= 0: ``config.penalty`` on the candidates of free agents (S,) whose step (S, C, 2)
    (dx, dy m) is shorter than ``standing_step_m``."""
    standing = np.hypot(candidate_steps[..., 0], candidate_steps[..., 1]) < config.standing_step_m
    return np.where(free[:, None] & standing, config.penalty, 0.0)
