"""Route-keeping logit penalties of DeltaSim: stay near the route, and slow down in time for what is ahead.

**Lateral.** The agent's route near it is the polyline through its first route targets (:mod:`policies.deltasim.routes`:
the route path at 0, 3, 6, 10 and 15 m ahead of the agent's projection onto it, in the agent frame). For
each candidate primitive, the centre of the agent after the first step and on its braking path at the
early check times is compared with that polyline; the penalty is ``sum_t weight_t * relu(distance_t -
tolerance_m)`` (logits per metre). A candidate that drifts away from the lane -- or that keeps going
straight where the route turns -- is pushed down against one that follows it; agents without a valid route
get no penalty. It complements the collision penalty (:mod:`policies.deltasim.collision_shaping`): the drivable area
is the union of the lanes, so staying near the route keeps a vehicle on the road.

**Speed.** Each route target carries the lowest speed cap of the route stretch before it (lane speed limit,
curve speed). A primitive whose speed after the step exceeds ``sqrt((speed_factor * cap_j)^2 + 2 *
decel_mps2 * d_j)`` for any target j -- d_j the distance to the start of that stretch -- could not brake to the
cap in time at a comfortable deceleration; it is pushed down by ``speed_weight`` logits per m/s of excess
(:func:`speed_penalty`, on the whole vocabulary before the candidates are chosen). ``speed_factor`` lets the
fastest drivers of the data (IDM drivers run at 0.7-1.15 x the limit) keep their speed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vectorworld.errors import ConfigError


@dataclass(frozen=True)
class RouteShapingConfig:
    """``lateral``: whether the lateral term is on; its check times (s), weight per check time (logit per
    metre beyond the tolerance), the tolerance (m) and how many route targets form the polyline; then the
    speed term (see the module docstring)."""

    lateral: bool = True
    times_s: tuple[float, ...] = (0.5, 1.0)
    weights: tuple[float, ...] = (10.0, 5.0)
    tolerance_m: float = 0.6
    targets: int = 5
    speed_weight: float = 4.0
    decel_mps2: float = 2.5
    speed_factor: float = 1.15

    def __post_init__(self) -> None:
        if len(self.times_s) != len(self.weights) or self.targets < 2 or self.tolerance_m < 0:
            raise ConfigError("route shaping: one weight per check time, >= 2 targets, tolerance >= 0")
        if self.speed_weight < 0 or self.decel_mps2 <= 0 or self.speed_factor <= 0:
            raise ConfigError("route shaping: speed_weight >= 0, decel_mps2 > 0 and speed_factor > 0 required")


def route_penalty(centres: torch.Tensor, route_ahead: torch.Tensor, config: RouteShapingConfig) -> torch.Tensor:
    """Penalty (S, C) >= 0 of candidate centres (S, C, T, 2) (agent frame, at ``config.times_s``) given the
    route targets (S, R, 4) (x, y, valid, cap; agent frame)."""
    pts = route_ahead[:, : config.targets]                                     # (S, P, 4)
    ok = pts[..., 2] > 0.5                                                     # (S, P)
    # Segments a -> a + (bx, by) between consecutive targets, as (S, 1, P-1) rows (x and y apart: the
    # products below then run over contiguous (S, C*T, P-1) blocks).
    ax, ay = pts[:, None, :-1, 0], pts[:, None, :-1, 1]
    bx, by = pts[:, None, 1:, 0] - ax, pts[:, None, 1:, 1] - ay
    seg_ok = ok[:, :-1] & ok[:, 1:]                                            # (S, P-1)
    inv = torch.where(seg_ok[:, None], 1.0 / torch.clamp(bx * bx + by * by, min=1e-9), torch.zeros_like(bx))
    s, c, t, _ = centres.shape
    fx = centres[..., 0].reshape(s, c * t, 1) - ax                             # (S, C*T, P-1)
    fy = centres[..., 1].reshape(s, c * t, 1) - ay
    u = torch.clamp((fx * bx + fy * by) * inv, 0.0, 1.0)
    ox, oy = fx - u * bx, fy - u * by
    d2 = (ox * ox + oy * oy) + (~seg_ok)[:, None] * 1e12                      # (S, C*T, P-1)
    dist = torch.sqrt(d2.amin(-1)).reshape(s, c, t)
    weights = torch.tensor(config.weights, dtype=centres.dtype)
    return (torch.relu(dist - config.tolerance_m) * weights * seg_ok.any(-1)[:, None, None]).sum(-1)


def speed_penalty(speed_after: torch.Tensor, route_ahead: torch.Tensor, distances: torch.Tensor,
                  config: RouteShapingConfig) -> torch.Tensor:
    """Penalty (S, K) >= 0 of primitives with speeds after the step ``speed_after`` (1, K) m/s, given the
    route targets (S, R, 4) (x, y, valid, cap m/s) at ``distances`` (R,) m along the route. The stretch ending
    at target j starts at target j - 1 (the agent for j = 0)."""
    start = torch.cat([distances[:1] * 0.0, distances[:-1]])                      # (R,)
    reach = torch.sqrt((config.speed_factor * route_ahead[..., 3]) ** 2 + 2.0 * config.decel_mps2 * start)
    reach = torch.where(route_ahead[..., 2] > 0.5, reach, torch.full_like(reach, float("inf")))
    limit = reach.amin(-1, keepdim=True)                                          # (S, 1)
    return torch.relu(speed_after - limit) * config.speed_weight
