"""Collision-avoidance logit penalty of DeltaSim, evaluated at inference for candidate primitives.

For each candidate primitive the agent is imagined to take that step and then brake at
``brake_decel_mps2`` straight along its new heading (a primitive is judged by its speed and first turn,
not by an imagined sustained swerve, which would make swerving off the road look safe); each neighbour
ahead of the agent is predicted at constant velocity, except that a leader (ahead, driving the agent's way)
is predicted braking hard (:func:`predicted_neighbor_xy`). At each check time t the clearance between the two
boxes (the agent's box swept over the motion since the previous check time) is their separating-axis
distance: the largest gap along the four box axes, negative (minus the penetration depth) when they
overlap. The missing clearance is ``relu(margin_t - clearance_t)`` plus, in contact, ``contact_m`` and the
boxes' overlap along the agent's heading; it never shrinks again along a candidate's path (once in contact, always in
contact), and the penalty is ``sum_t weight_t * missing_t`` (logits), worst neighbour per candidate.

Faster primitives towards an obstacle are pushed down more, and the steep first-step term (large weight,
small margin) makes a step into contact lose against any step that avoids it, even at crawling speed where
the candidates differ by centimetres. Neighbours whose centre is behind the agent's rear are ignored (the
follower is responsible for the gap); those alongside count, so a turning agent does not sweep its flank
over a car standing beside it. All in the agent's own frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vectorworld.errors import ConfigError

STANDING_MPS = 0.1
"""Neighbours slower than this (m/s) stand (:attr:`CollisionShapingConfig.standing_margin_m`)."""


@dataclass(frozen=True)
class CollisionShapingConfig:
    """Check times (s), braking deceleration (m/s^2) after the first step, and per check time the clearance
    margin (m) and weight (logit per m of clearance missing); ``contact_m`` is added to the missing clearance
    of boxes that touch, so a step into contact loses clearly against any step that avoids it;
    ``follow_route``: brake along the route rather than straight ahead (:func:`follow_route`)."""

    times_s: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 4.0)
    weights: tuple[float, ...] = (200.0, 30.0, 10.0, 4.0, 2.0)
    margins_m: tuple[float, ...] = (0.3, 0.5, 0.7, 1.0, 1.0)
    contact_m: float = 2.0
    follow_route: bool = True
    brake_decel_mps2: float = 4.0
    lead_brake_mps2: float = 6.0
    """Neighbours ahead that drive the agent's way are predicted braking this hard (the others at constant
    velocity), so a follower keeps the gap that survives its leader's hard stop instead of tailgating."""
    max_range_m: float = 40.0
    standing_margin_m: float = 0.3
    """A standing neighbour's margin is at most this (m): traffic passes a car parked at the curb 0.4-0.5 m
    beside its path, as IDM traffic (the teacher) does, instead of stopping behind it for good."""

    def __post_init__(self) -> None:
        if not len(self.times_s) == len(self.weights) == len(self.margins_m):
            raise ConfigError("collision shaping: times_s, weights and margins_m need one entry per check time")


def primitive_positions(primitives: np.ndarray, times_s: tuple[float, ...], brake_decel_mps2: float,
                        dt_s: float = 0.1) -> np.ndarray:
    """Positions (K, T, 2) in the agent frame at ``times_s`` of each primitive (K, 3): the first step exactly,
    then braking at ``brake_decel_mps2`` straight along the new heading."""
    prims = np.asarray(primitives, dtype=np.float64)
    v1 = np.maximum(prims[:, 0] / dt_s, 0.0)
    heading = prims[:, 2]
    out = np.zeros((len(prims), len(times_s), 2))
    for j, t in enumerate(times_s):
        tau = np.clip(t - dt_s, 0.0, v1 / brake_decel_mps2)
        s = v1 * tau - 0.5 * brake_decel_mps2 * tau * tau     # braking distance after the first step
        out[:, j] = np.stack([prims[:, 0] + s * np.cos(heading), prims[:, 1] + s * np.sin(heading)], -1)
    return out


def primitive_paths(primitives: np.ndarray, config: CollisionShapingConfig, dt_s: float = 0.1) -> np.ndarray:
    """Swept boxes (K, T, 4) in the agent frame for each primitive (K, 3): the first step exactly, then
    braking straight along the new heading.

    Entry j covers the motion from check time j - 1 (the start for j = 0) to check time j: the centre of that
    stretch (x, y), the heading at time j, and the distance travelled (m), by which the agent's box is
    lengthened -- so a fast candidate cannot jump through an obstacle between two check times.
    """
    prims = np.asarray(primitives, dtype=np.float64)
    xy = primitive_positions(prims, config.times_s, config.brake_decel_mps2, dt_s)    # (K, T, 2)
    previous = np.concatenate([np.zeros((len(prims), 1, 2)), xy[:, :-1]], 1)
    heading = np.repeat(prims[:, None, 2:3], len(config.times_s), 1)
    extra = np.linalg.norm(xy - previous, axis=-1)[..., None]
    return np.concatenate([(previous + xy) / 2, heading, extra], -1)


def primitive_arcs(primitives: np.ndarray, times_s: tuple[float, ...], brake_decel_mps2: float,
                   dt_s: float = 0.1) -> np.ndarray:
    """Distance travelled (K, T) m by each primitive (K, 3) up to ``times_s``: its first step, then braking
    at ``brake_decel_mps2`` (the speed profile of :func:`primitive_positions`)."""
    prims = np.asarray(primitives, dtype=np.float64)
    v1 = np.maximum(prims[:, 0] / dt_s, 0.0)
    out = np.zeros((len(prims), len(times_s)))
    for j, t in enumerate(times_s):
        tau = np.clip(t - dt_s, 0.0, v1 / brake_decel_mps2)
        out[:, j] = np.hypot(prims[:, 0], prims[:, 1]) + v1 * tau - 0.5 * brake_decel_mps2 * tau * tau
    return out


def predicted_neighbor_xy(neighbors: torch.Tensor, times_s: torch.Tensor, lead_brake_mps2: float,
                          lead_cos: float = 0.7) -> torch.Tensor:
    """Positions (..., T, 2) at ``times_s`` (T,) of neighbours (..., 11) (agent-frame features x, y, cos, sin,
    vx, vy, ...): at constant velocity, but a leader -- centre ahead of the agent (x > 0), heading within
    ``acos(lead_cos)`` of the agent's -- braking at ``lead_brake_mps2`` to a stop."""
    xy, vel = neighbors[..., None, 0:2], neighbors[..., None, 4:6]
    speed = vel.norm(dim=-1)                                                   # (..., 1)
    leader = (neighbors[..., 0] > 0) & (neighbors[..., 2] > lead_cos)
    tau = torch.minimum(times_s, speed / lead_brake_mps2)                      # (..., T)
    braking = tau - 0.5 * lead_brake_mps2 * tau * tau / speed.clamp(min=1e-6)  # distance / speed
    along = torch.where(leader[..., None], braking, times_s.expand_as(tau))
    return xy + vel * along[..., None]


def route_stations(arcs: torch.Tensor, distances: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where distances ``arcs`` (...) m fall among the route targets at ``distances`` (R,) m: the target before
    (... int64, the one after is the next), the fraction of the way to the next (...), and whether the arc is
    within the targets (... bool). Depends on the arcs only, so it is computed once per vocabulary."""
    r = distances.shape[0]
    j = torch.clamp(torch.bucketize(arcs, distances), 1, r - 1)
    i = j - 1
    frac = torch.clamp((arcs - distances[i]) / (distances[j] - distances[i]), 0.0, 1.0)
    return i, frac, arcs <= distances[-1]


def follow_route(straight: torch.Tensor, first: torch.Tensor, arcs: torch.Tensor, route_ahead: torch.Tensor,
                 distances: torch.Tensor) -> torch.Tensor:
    """Swept boxes (S, C, T, 4) of candidates that brake *along the agent's route* after their first step.

    straight: (S, C, T, 4) the straight-braking boxes (:func:`primitive_paths` of the candidates); first:
    (S, C, 3) the candidates' first steps; arcs: (S, C, T) distance travelled up to each check time
    (:func:`primitive_arcs`); route_ahead: (S, R, 4) route targets (x, y, valid, cap; agent frame) at
    ``distances`` (R,) m along the route. After the first check time, each box is the chord of the route
    (shifted to pass through the candidate's first-step position, so a candidate beside the route stays
    beside it) between the positions at consecutive check times; where the route is not known that far the
    straight box is kept. A car turning through a junction thus checks the cars on its turn, not those
    straight ahead of its current heading.
    """
    return follow_route_at(straight, first, route_stations(arcs, distances), route_ahead)


def follow_route_at(straight: torch.Tensor, first: torch.Tensor,
                    stations: tuple[torch.Tensor, torch.Tensor, torch.Tensor], route_ahead: torch.Tensor
                    ) -> torch.Tensor:
    """:func:`follow_route` with the candidates' arcs already placed among the route targets
    (:func:`route_stations`, each (S, C, T))."""
    lo, frac, in_range = stations
    s, c, t = lo.shape
    pts, ok = route_ahead[..., :2], route_ahead[..., 2] > 0.5                   # (S, R, 2), (S, R)
    # Both neighbouring targets of every (candidate, time) by one gather: rows [lo | lo + 1].
    index = torch.cat([lo.reshape(s, c * t), lo.reshape(s, c * t) + 1], 1)      # (S, 2CT)
    ends = torch.gather(pts, 1, index[..., None].expand(-1, -1, 2))
    a, b = ends[:, : c * t].reshape(s, c, t, 2), ends[:, c * t:].reshape(s, c, t, 2)
    ends_ok = torch.gather(ok, 1, index)
    pos = a + frac[..., None] * (b - a)
    pos_ok = ends_ok[:, : c * t].reshape(s, c, t) & ends_ok[:, c * t:].reshape(s, c, t) & in_range
    # Entry 0 is the route point after the first step: shift the route through the first-step position.
    pos = pos + (first[..., :2] - pos[:, :, 0])[:, :, None]
    known = pos_ok & pos_ok[:, :, :1]
    previous = torch.cat([first[:, :, None, :2], pos[:, :, :-1]], 2)
    chord = pos - previous
    length = torch.sqrt((chord * chord).sum(-1))
    heading = torch.where(length > 1e-3, torch.atan2(chord[..., 1], chord[..., 0]), straight[..., 2])
    boxes = torch.cat([(previous + pos) / 2, heading[..., None], length[..., None]], -1)
    use = known & (torch.arange(t) > 0)                                         # the first step stays exact
    return torch.where(use[..., None], boxes, straight)


def box_gaps(d: torch.Tensor, cos_rel: torch.Tensor, sin_rel: torch.Tensor, yaw: torch.Tensor,
             half_l1: torch.Tensor, half_w1: torch.Tensor, half_l2: torch.Tensor, half_w2: torch.Tensor
             ) -> torch.Tensor:
    """Gaps (Q, 4) m between the projections of box 1 and box 2 on box 1's heading, box 1's normal, box 2's
    heading and box 2's normal (negative: the projections overlap by that much). Box 1 is centred at 0 with
    heading ``yaw`` (Q,), box 2 at -``d`` (d: (Q, 2), centre 1 minus centre 2) with heading ``yaw`` plus the
    relative heading (cos_rel, sin_rel) (Q,); half lengths and widths (Q,) m."""
    u = torch.stack([torch.cos(yaw), torch.sin(yaw)], -1)                      # (Q, 2) box 1 axis
    w = torch.stack([u[:, 0] * cos_rel - u[:, 1] * sin_rel, u[:, 1] * cos_rel + u[:, 0] * sin_rel], -1)
    du = d[:, 0] * u[:, 0] + d[:, 1] * u[:, 1]
    dun = d[:, 1] * u[:, 0] - d[:, 0] * u[:, 1]
    dw = d[:, 0] * w[:, 0] + d[:, 1] * w[:, 1]
    dwn = d[:, 1] * w[:, 0] - d[:, 0] * w[:, 1]
    c, s = cos_rel.abs(), sin_rel.abs()
    return torch.stack([du.abs() - half_l1 - half_l2 * c - half_w2 * s,
                        dun.abs() - half_w1 - half_l2 * s - half_w2 * c,
                        dw.abs() - half_l2 - half_l1 * c - half_w1 * s,
                        dwn.abs() - half_w2 - half_l1 * s - half_w1 * c], -1)


def box_clearance(d: torch.Tensor, cos_rel: torch.Tensor, sin_rel: torch.Tensor, yaw: torch.Tensor,
                  half_l1: torch.Tensor, half_w1: torch.Tensor, half_l2: torch.Tensor, half_w2: torch.Tensor
                  ) -> torch.Tensor:
    """Separating-axis clearance (Q,) m between the boxes of :func:`box_gaps` (same arguments): the largest
    gap over the four axes; positive when they are apart (a lower bound of their distance), minus the
    penetration depth along the best axis when they overlap."""
    return box_gaps(d, cos_rel, sin_rel, yaw, half_l1, half_w1, half_l2, half_w2).amax(-1)


def collision_penalty(paths: torch.Tensor, own_length: torch.Tensor, own_width: torch.Tensor,
                      neighbors: torch.Tensor, neighbor_mask: torch.Tensor,
                      config: CollisionShapingConfig) -> torch.Tensor:
    """Penalty (S, Kc) >= 0 for candidate primitive paths.

    paths: (S, Kc, T, 4) own swept boxes in the agent frame up to each check time (centre x, y, heading,
    extra length; see :func:`primitive_paths`); own_length/width: (S,) m;
    neighbors: (S, N, 11) observation features (x, y, cos, sin, vx, vy, length, width, ...) in the agent
    frame; neighbor_mask: (S, N) bool. Only (agent, neighbour) pairs with the neighbour's centre ahead of the
    agent's rear and within ``max_range_m`` are evaluated.

    No data-dependent Python control flow (empty selections flow through as empty tensors), so the
    function can be recorded by ``torch.jit.trace`` inside :class:`policies.deltasim.scoring.DeltaSimScorer`.
    """
    dtype = paths.dtype
    beside_or_ahead = neighbors[..., 0] > -own_length[:, None] / 2
    active = neighbor_mask & beside_or_ahead & (neighbors[..., :2].norm(dim=-1) < config.max_range_m)
    rows, cols = torch.nonzero(active, as_tuple=True)
    times = torch.tensor(config.times_s, dtype=dtype)
    weights = torch.tensor(config.weights, dtype=dtype)
    margins = torch.tensor(config.margins_m, dtype=dtype)
    nb = neighbors[rows, cols]                                                 # (P, 11)
    own_path = paths[rows]                                                     # (P, Kc, T, 4)
    nb_xy = predicted_neighbor_xy(nb, times, config.lead_brake_mps2)           # (P, T, 2)
    standing = nb[:, 4:6].norm(dim=-1) < STANDING_MPS
    margins = torch.where(standing[:, None], margins.clamp(max=config.standing_margin_m), margins)  # (P, T)
    # Broad phase: bounding circles of both boxes plus the margin; only close (pair, candidate, time) go on.
    own_len = own_length[rows][:, None, None] + own_path[..., 3]               # (P, Kc, T) swept lengths
    reach = (torch.hypot(own_len, own_width[rows][:, None, None]) + torch.hypot(nb[:, 6], nb[:, 7])[:, None, None]) / 2
    reach = reach + margins[:, None]                                           # (P, Kc, T)
    centre_d2 = ((own_path[..., :2] - nb_xy[:, None]) ** 2).sum(-1)           # (P, Kc, T)
    p_i, k_i, t_i = torch.nonzero(centre_d2 < reach * reach, as_tuple=True)
    pose = own_path[p_i, k_i, t_i]                                             # (Q, 4)
    nbq = nb[p_i]
    # The neighbour's heading relative to the candidate pose: (cos, sin) of (nb yaw - pose yaw).
    cp, sp = torch.cos(pose[:, 2]), torch.sin(pose[:, 2])
    cos_rel = nbq[:, 2] * cp + nbq[:, 3] * sp
    sin_rel = nbq[:, 3] * cp - nbq[:, 2] * sp
    gaps = box_gaps(pose[:, :2] - nb_xy[p_i, t_i], cos_rel, sin_rel, pose[:, 2],
                    own_len[p_i, k_i, t_i] / 2, own_width[rows][p_i] / 2, nbq[:, 6] / 2, nbq[:, 7] / 2)
    clearance = gaps.amax(-1)                                                  # (Q,)
    # Missing clearance per (pair, candidate, time), plus, in contact, how far the boxes overlap along the
    # agent's heading (the penetration depth alone saturates at the lateral overlap, so a faster step into a
    # car ahead would look no worse than a slower one). Once a candidate is in contact it stays so at least
    # as deeply: its imagined braking path beyond an obstacle would otherwise look like an escape.
    overlap = (torch.relu(-gaps[:, 0]) + config.contact_m) * (clearance < 0)
    # Scattered through flat indices: an index_put recorded by torch.jit.trace fails on an empty selection.
    blank = torch.zeros_like(own_path[..., 0])                                 # (P, Kc, T)
    flat = (p_i * blank.shape[1] + k_i) * blank.shape[2] + t_i
    missing = blank.reshape(-1).scatter(0, flat, torch.relu(margins[p_i, t_i] - clearance) + overlap)
    missing = missing.view_as(blank)
    per_pair = (torch.cummax(missing, dim=2).values * weights).sum(-1)         # (P, Kc)
    # Worst neighbour per agent: scatter-max the pairs back to their agents.
    index = rows[:, None].expand_as(per_pair)
    penalty = torch.zeros_like(paths[..., 0, 0])                               # (S, Kc)
    return penalty.scatter_reduce(0, index, per_pair, reduce="amax", include_self=True)
