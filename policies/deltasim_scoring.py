"""DeltaSim scoring: the network, kinematic logit shaping, the candidate set and the collision pre-filter
as one traceable module.

Given the observation tensors and each agent's speed and type, :class:`DeltaSimScorer` returns

* ``h`` (S, d): the agent features (for the residual of the primitive picked later);
* ``cand`` (S, C) int64: the top ``candidates`` primitives by shaped logit, plus the hardest feasible
  braking step as the last column (the escape option);
* ``cand_logits`` (S, C): their shaped logits;
* ``cost`` (S, K): the soft kinematic cost of every primitive (:func:`policies.feasibility.kinematic_cost`
  with the shaping limits);
* ``cand_paths`` (S, C, T, 3): the candidates' poses at the collision check times (agent frame);
* ``reachable`` (S, N) bool: the neighbours that :func:`policies.collision_shaping.collision_penalty` can
  penalise at all (see :func:`reachable_neighbors`); the others are dropped from its mask, which gives the
  same penalty with much less work (in dense traffic most neighbours are out of reach).

Shaping is ``logits - shaping_weight * cost - HARD_PENALTY * [metric-infeasible]`` (no shaping: the raw
logits). The module holds no data-dependent Python control flow, so :func:`trace_scorer` can record it
once with ``torch.jit.trace`` for any number of agents.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from policies.deltasim_infer import INPUTS, DeltaSimInference
from policies.feasibility import METRIC_LIMITS, kinematic_cost

HARD_PENALTY = 1.0e4
"""Logit penalty of primitives that break the metric's limits (on top of the soft shaping cost)."""

BRAKE_COST_WEIGHT = 100.0
"""Weight of the kinematic cost against dx (m) when picking the hardest feasible braking primitive."""

REACH_MARGIN_M = 1e-3
"""Slack (m) of :func:`reachable_neighbors`, so float rounding can never drop a neighbour in reach."""


def reachable_neighbors(cand_paths: torch.Tensor, own_length: torch.Tensor, own_width: torch.Tensor,
                        neighbors: torch.Tensor, neighbor_mask: torch.Tensor, times_s: torch.Tensor
                        ) -> torch.Tensor:
    """``neighbor_mask`` (S, N) restricted to neighbours whose box can touch a candidate's box at a check time.

    cand_paths: (S, C, T, 3) own poses at ``times_s`` (T,) s; own_length/width: (S,) m; neighbors: (S, N, 11)
    observation features, predicted at constant velocity. Two boxes can only overlap when their centres are
    closer than the sum of their circumradii; a neighbour farther than that from the bounding box of all
    candidate centres at every check time is dropped (:func:`collision_penalty` uses the same bound as its
    broad phase, so dropping such neighbours does not change the penalty).
    """
    xy = cand_paths[..., :2]
    lo, hi = xy.amin(1)[:, None], xy.amax(1)[:, None]                              # (S, 1, T, 2)
    nb_xy = neighbors[:, :, None, 0:2] + neighbors[:, :, None, 4:6] * times_s[:, None]  # (S, N, T, 2)
    gap = torch.clamp(torch.maximum(lo - nb_xy, nb_xy - hi), min=0.0)
    bound = (torch.hypot(own_length, own_width)[:, None] + torch.hypot(neighbors[..., 6], neighbors[..., 7])) / 2
    bound = bound + REACH_MARGIN_M                                                 # (S, N)
    near = ((gap * gap).sum(-1) < (bound * bound)[..., None]).any(-1)
    return neighbor_mask & near


class DeltaSimScorer(nn.Module):
    """Network + shaping + candidates + collision pre-filter. ``primitives``: (K, 3) float32 vocabulary;
    ``dt_s``: its step; ``paths``: (K, T, 3) float32 poses of each primitive at the check times ``times_s``
    (:func:`policies.collision_shaping.primitive_paths`)."""

    def __init__(self, network: DeltaSimInference, primitives: torch.Tensor, dt_s: float, shaping: bool,
                 shaping_weight: float, candidates: int, paths: torch.Tensor, times_s: tuple[float, ...]) -> None:
        super().__init__()
        self.network = network
        self.register_buffer("primitives", primitives[None].contiguous())          # (1, K, 3)
        self.register_buffer("paths", paths.contiguous())                          # (K, T, 3)
        self.register_buffer("times_s", torch.tensor(times_s, dtype=paths.dtype))  # (T,)
        self.dt_s = dt_s
        self.shaping = shaping
        self.shaping_weight = shaping_weight
        self.candidates = min(candidates, primitives.shape[0])

    def forward(self, history: torch.Tensor, static: torch.Tensor, neighbors: torch.Tensor,
                neighbor_mask: torch.Tensor, lane_points: torch.Tensor, lane_features: torch.Tensor,
                lane_mask: torch.Tensor, route_ahead: torch.Tensor, speed: torch.Tensor, agent_type: torch.Tensor
                ) -> tuple[torch.Tensor, ...]:
        """Observation tensors as :meth:`DeltaSimInference.forward`, speed (S,) float32 m/s, agent_type (S,)
        int64; returns (h, cand, cand_logits, cost, cand_paths, reachable) as in the module docstring."""
        h, logits = self.network(history, static, neighbors, neighbor_mask, lane_points, lane_features,
                                 lane_mask, route_ahead)
        speed, agent_type = speed[:, None], agent_type[:, None]
        cost = kinematic_cost(self.primitives, speed, agent_type, self.dt_s)        # (S, K)
        shaped = logits
        if self.shaping:
            # Soft, differentiable push-down inside the margins, plus a hard floor for anything the metric
            # would call infeasible (so no logit scale can sample one while a feasible primitive exists).
            hard = kinematic_cost(self.primitives, speed, agent_type, self.dt_s, METRIC_LIMITS) > 0
            shaped = logits - self.shaping_weight * cost - HARD_PENALTY * hard
        cand = torch.topk(shaped, self.candidates, dim=1).indices
        brake = torch.argmin(cost * BRAKE_COST_WEIGHT + self.primitives[:, :, 0], dim=1, keepdim=True)
        cand = torch.cat([cand, brake], 1)
        cand_paths = self.paths[cand]                                              # (S, C, T, 3)
        reachable = reachable_neighbors(cand_paths, static[:, 0], static[:, 1], neighbors, neighbor_mask,
                                        self.times_s)
        return h, cand, torch.gather(shaped, 1, cand), cost, cand_paths, reachable


SCORER_INPUTS = (*INPUTS, "speed", "agent_type")
"""Names of :meth:`DeltaSimScorer.forward`'s inputs, in order."""


def trace_scorer(scorer: DeltaSimScorer, example: dict[str, torch.Tensor]) -> torch.jit.ScriptModule:
    """``scorer`` traced on ``example`` (inputs named as in SCORER_INPUTS, any batch size > 0) and frozen.

    The graph has no batch-size-dependent control flow, so it serves any number of agents and computes the
    same ops as the eager module, without the Python overhead of its ~150 small ops.
    """
    with torch.no_grad(), warnings.catch_warnings():
        # TorchScript is deprecated upstream but still shipped; tests compare the trace with eager mode.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(scorer.eval(), tuple(example[name] for name in SCORER_INPUTS), check_trace=False)
        return torch.jit.freeze(traced)
