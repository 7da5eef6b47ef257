"""DeltaSim scoring: the network, kinematic logit shaping, the candidate set and the collision penalty as
one traceable module.

Given the observation tensors and each agent's speed and type, :class:`DeltaSimScorer` returns

* ``h`` (S, d): the agent features (for the residual of the primitive picked later);
* ``cand`` (S, C) int64: the top ``candidates`` primitives by shaped logit, plus the hardest feasible
  braking step as the last column (the escape option);
* ``cand_logits`` (S, C): their shaped logits, minus the collision penalty
  (:func:`policies.deltasim.collision_shaping.collision_penalty`) when collision avoidance is on and the route-keeping
  penalty (:func:`policies.deltasim.route_shaping.route_penalty`) when route keeping is on;
* ``cost`` (S, K): the soft kinematic cost of every primitive (:func:`policies.deltasim.feasibility.kinematic_cost`
  with the shaping limits);
* ``wanted`` (S,) int64: the network's own first choice (argmax of the raw logits);
* ``conflict`` (S, C): the collision penalty of each candidate (zeros with collision avoidance off).

Shaping is ``logits - shaping_weight * cost - HARD_PENALTY * [metric-infeasible]`` (no shaping: the raw
logits), minus the route speed penalty (:func:`policies.deltasim.route_shaping.speed_penalty`) when route
keeping is on. The imagined paths of the collision check brake along the agent's route after the first step
(:func:`policies.deltasim.collision_shaping.follow_route`); before the collision penalty, the neighbour mask is cut
to the neighbours it can penalise at all (:func:`reachable_neighbors`), which gives the same penalty with
much less work (in dense traffic most neighbours are out of reach). The module holds no data-dependent
Python control flow, so :func:`trace_scorer` can record it once with ``torch.jit.trace`` for any number of
agents, and :func:`vectorworld.frozen_graphs.static_runtime` can run that trace under PyTorch's Static Runtime.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from policies.deltasim.collision_shaping import (
    CollisionShapingConfig,
    collision_penalty,
    follow_route_at,
    predicted_neighbor_xy,
    primitive_arcs,
    route_stations,
)
from policies.deltasim.feasibility import VocabularyFeasibility
from policies.deltasim.infer import INPUTS, DeltaSimInference
from policies.deltasim.route_shaping import RouteShapingConfig, route_penalty, speed_penalty
from policies.deltasim.routes import ROUTE_AHEAD_M
from vectorworld.frozen_graphs import freeze_trace

HARD_PENALTY = 1.0e4
"""Logit penalty of primitives that break the metric's limits (on top of the soft shaping cost)."""

BRAKE_COST_WEIGHT = 100.0
"""Weight of the kinematic cost against dx (m) when picking the hardest feasible braking primitive."""

REACH_MARGIN_M = 1e-3
"""Slack (m) of :func:`reachable_neighbors`, so float rounding can never drop a neighbour in reach."""


def reachable_neighbors(cand_paths: torch.Tensor, own_length: torch.Tensor, own_width: torch.Tensor,
                        neighbors: torch.Tensor, neighbor_mask: torch.Tensor, times_s: torch.Tensor,
                        margin_m: float = 0.0, lead_brake_mps2: float = CollisionShapingConfig.lead_brake_mps2
                        ) -> torch.Tensor:
    """``neighbor_mask`` (S, N) restricted to neighbours whose box can touch a candidate's box at a check time.

    cand_paths: (S, C, T, 4) own swept boxes up to ``times_s`` (T,) s (centre x, y, heading, extra length;
    :func:`policies.deltasim.collision_shaping.primitive_paths`); own_length/width: (S,) m; neighbors: (S, N, 11)
    observation features, predicted as :func:`collision_penalty` predicts them
    (:func:`policies.deltasim.collision_shaping.predicted_neighbor_xy`). Two boxes can only come within
    ``margin_m`` of each other when their centres are closer than the sum of their circumradii plus the
    margin; a neighbour farther than that from the bounding box of all candidate centres at every check time is dropped
    (:func:`collision_penalty` uses the same bound, with the largest margin, as its broad phase, so dropping
    such neighbours does not change the penalty).
    """
    xy = cand_paths[..., :2]
    lo, hi = xy.amin(1)[:, None], xy.amax(1)[:, None]                              # (S, 1, T, 2)
    nb_xy = predicted_neighbor_xy(neighbors, times_s, lead_brake_mps2)            # (S, N, T, 2)
    gap = torch.clamp(torch.maximum(lo - nb_xy, nb_xy - hi), min=0.0)
    longest = own_length + cand_paths[..., 3].amax((1, 2))                        # (S,) longest swept box
    bound = (torch.hypot(longest, own_width)[:, None] + torch.hypot(neighbors[..., 6], neighbors[..., 7])) / 2
    bound = bound + margin_m + REACH_MARGIN_M                                      # (S, N)
    near = ((gap * gap).sum(-1) < (bound * bound)[..., None]).any(-1)
    return neighbor_mask & near


class DeltaSimScorer(nn.Module):
    """Network + shaping + candidates + collision and route penalties. ``primitives``: (K, 3) float32
    vocabulary; ``dt_s``: its step; ``paths``: (K, T, 4) float32 swept boxes of each primitive up to the check
    times of ``collision`` (:func:`policies.deltasim.collision_shaping.primitive_paths`); ``collision`` None switches
    the collision penalty off; ``route`` (with ``route_points`` (K, T', 2), the primitives' positions at its
    check times, :func:`policies.deltasim.collision_shaping.primitive_positions`) switches the route-keeping penalty
    on."""

    def __init__(self, network: DeltaSimInference, primitives: torch.Tensor, dt_s: float, shaping: bool,
                 shaping_weight: float, candidates: int, paths: torch.Tensor,
                 collision: CollisionShapingConfig | None, route: RouteShapingConfig | None = None,
                 route_points: torch.Tensor | None = None) -> None:
        super().__init__()
        if (route is None) != (route_points is None):
            raise ValueError("route shaping needs both its config and the primitives' positions")
        self.route = route
        self.register_buffer("route_points", route_points.contiguous() if route_points is not None
                             else torch.zeros(0))                                  # (K, T', 2)
        self.register_buffer("route_distances", torch.tensor(ROUTE_AHEAD_M, dtype=primitives.dtype))  # (R,)
        self.register_buffer("speed_after", (primitives[:, 0] / dt_s)[None].contiguous())            # (1, K)
        self.network = network
        self.register_buffer("primitives", primitives[None].contiguous())          # (1, K, 3)
        self.feasibility = VocabularyFeasibility(primitives, dt_s)
        self.register_buffer("paths", paths.contiguous())                          # (K, T, 4)
        times = collision.times_s if collision is not None else ()
        self.register_buffer("times_s", torch.tensor(times, dtype=paths.dtype))    # (T,)
        arcs = (primitive_arcs(primitives.double().numpy(), collision.times_s, collision.brake_decel_mps2, dt_s)
                if collision is not None and collision.follow_route else np.zeros((0, 0)))
        # Where each primitive's braking path reaches among the route targets (:func:`route_stations`).
        lo, frac, in_range = route_stations(torch.from_numpy(arcs).to(paths.dtype), self.route_distances)
        self.register_buffer("station_lo", lo)                                     # (K, T)
        self.register_buffer("station_frac", frac)                                 # (K, T)
        self.register_buffer("station_in_range", in_range)                         # (K, T)
        self.collision = collision
        self.dt_s = dt_s
        self.shaping = shaping
        self.shaping_weight = shaping_weight
        self.candidates = min(candidates, primitives.shape[0])

    def forward(self, history: torch.Tensor, static: torch.Tensor, neighbors: torch.Tensor,
                neighbor_mask: torch.Tensor, lane_points: torch.Tensor, lane_features: torch.Tensor,
                lane_mask: torch.Tensor, route_ahead: torch.Tensor, speed: torch.Tensor, agent_type: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Observation tensors as :meth:`DeltaSimInference.forward`, speed (S,) float32 m/s, agent_type (S,)
        int64; returns (h, cand, cand_logits, cost, wanted, conflict) as in the module docstring."""
        h, logits = self.network(history, static, neighbors, neighbor_mask, lane_points, lane_features,
                                 lane_mask, route_ahead)
        speed, agent_type = speed[:, None], agent_type[:, None]
        cost, hard = self.feasibility(speed, agent_type)                            # (S, K) each
        shaped = logits
        if self.shaping:
            # Soft, differentiable push-down inside the margins, plus a hard floor for anything the metric
            # would call infeasible (so no logit scale can sample one while a feasible primitive exists).
            shaped = logits - self.shaping_weight * cost - HARD_PENALTY * hard
        if self.route is not None:
            shaped = shaped - speed_penalty(self.speed_after, route_ahead, self.route_distances, self.route)
        cand = torch.topk(shaped, self.candidates, dim=1).indices
        brake = torch.argmin(cost * BRAKE_COST_WEIGHT + self.primitives[:, :, 0], dim=1, keepdim=True)
        cand = torch.cat([cand, brake], 1)
        cand_logits = torch.gather(shaped, 1, cand)
        conflict = torch.zeros_like(cand_logits)
        if self.collision is not None:
            cand_paths = self.paths[cand]                                          # (S, C, T, 4)
            if self.collision.follow_route:
                stations = (self.station_lo[cand], self.station_frac[cand], self.station_in_range[cand])
                cand_paths = follow_route_at(cand_paths, self.primitives[0][cand], stations, route_ahead)
            reachable = reachable_neighbors(cand_paths, static[:, 0], static[:, 1], neighbors, neighbor_mask,
                                            self.times_s, max(self.collision.margins_m),
                                            self.collision.lead_brake_mps2)
            conflict = collision_penalty(cand_paths, static[:, 0], static[:, 1], neighbors, reachable,
                                         self.collision)
            cand_logits = cand_logits - conflict
        if self.route is not None and self.route.lateral:
            cand_logits = cand_logits - route_penalty(self.route_points[cand], route_ahead, self.route)
        return h, cand, cand_logits, cost, logits.argmax(1), conflict


SCORER_INPUTS = (*INPUTS, "speed", "agent_type")
"""Names of :meth:`DeltaSimScorer.forward`'s inputs, in order."""


def trace_scorer(scorer: DeltaSimScorer, example: dict[str, torch.Tensor]) -> torch.jit.ScriptModule:
    """``scorer`` traced on ``example`` (inputs named as in SCORER_INPUTS, any batch size > 0) and frozen.

    The graph has no batch-size-dependent control flow, so it serves any number of agents and computes the
    same ops as the eager module, without the Python overhead of its ~150 small ops. Run it under Static
    Runtime with :func:`vectorworld.frozen_graphs.static_runtime` (~15% less per call for its ~670 small ops,
    ``tools/bench_rollout.py``).
    """
    return freeze_trace(scorer, tuple(example[name] for name in SCORER_INPUTS))
