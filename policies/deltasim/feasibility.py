"""Kinematic feasibility of per-step motions: the differentiable cost behind DeltaSim's logit shaping.

A motion (dx, dy, dtheta) over one step dt, taken by an agent moving at ``speed0`` (m/s along its heading),
implies (all in the agent frame at the start of the step):

    v1       = dx / dt                             speed after the step, m/s (as the engine reads it back)
    a_long   = (v1 - speed0) / dt                  m/s^2
    yaw_rate = dtheta / dt                         rad/s
    a_lat    = max(|speed0|, |v1|) * yaw_rate      m/s^2 (conservative)
    backward = -dx                                 m per step

The metric limits (DESIGN.md section 7) declare a step infeasible when |a_long| > 6, |a_lat| > 8,
|yaw rate| > 1.5 at speed > 1 m/s, or the agent moves backward more than 0.05 m. The shaping cost uses
tighter limits (margins inside those), so a motion with zero cost is feasible with room to spare, and
every metric-infeasible motion has a clearly positive cost. Pedestrians may turn on the spot: the yaw-rate
limit for them is relaxed. The shaping limits add one constraint the metric does not check: vehicles and
cyclists cannot turn on the spot, |dtheta| <= max_curvature * |dx| + slack (a minimum turning radius).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vectorworld import geometry
from vectorworld.scene import AgentType


@dataclass(frozen=True)
class KinematicLimits:
    """Limits on one step's motion. Units: m, m/s, m/s^2, rad/s."""

    max_backward_m: float = 0.05
    max_yaw_rate_rps: float = 1.5
    yaw_rate_min_speed_mps: float = 1.0
    max_lat_accel_mps2: float = 8.0
    max_long_accel_mps2: float = 6.0
    pedestrian_yaw_rate_rps: float = 6.0
    max_curvature_per_m: float = float("inf")
    curvature_slack_rad: float = 0.004


METRIC_LIMITS = KinematicLimits()
"""The limits of the kinematic infeasibility metric (DESIGN.md section 7)."""

SHAPING_LIMITS = KinematicLimits(max_backward_m=0.03, max_yaw_rate_rps=1.4, yaw_rate_min_speed_mps=0.9,
                                 max_lat_accel_mps2=7.5, max_long_accel_mps2=5.7,
                                 pedestrian_yaw_rate_rps=5.0, max_curvature_per_m=0.25)
"""Limits of logit shaping and the projection: 5-10 % margins inside the metric (IDM brakes at up to
5.5 m/s^2, so a wider a_long margin would forbid braking the data needs), plus a 4 m turning radius."""


def _yaw_limit(agent_type: torch.Tensor, limits: KinematicLimits, dtype: torch.dtype) -> torch.Tensor:
    ped = agent_type == int(AgentType.PEDESTRIAN)
    return torch.where(ped, torch.full_like(agent_type, limits.pedestrian_yaw_rate_rps, dtype=dtype),
                       torch.full_like(agent_type, limits.max_yaw_rate_rps, dtype=dtype))


def implied_quantities(motion: torch.Tensor, speed0: torch.Tensor, dt_s: float
                       ) -> dict[str, torch.Tensor]:
    """Kinematic quantities implied by motions (..., 3) from speeds (...) (broadcast). Each value (...)."""
    dx, dth = motion[..., 0], motion[..., 2]
    v1 = dx / dt_s
    yaw_rate = dth / dt_s
    return {
        "v1": v1,
        "a_long": (v1 - speed0) / dt_s,
        "yaw_rate": yaw_rate,
        "a_lat": torch.maximum(speed0.abs(), v1.abs()) * yaw_rate,
        "backward": -dx,
    }


def kinematic_cost(motion: torch.Tensor, speed0: torch.Tensor, agent_type: torch.Tensor, dt_s: float = 0.1,
                   limits: KinematicLimits = SHAPING_LIMITS) -> torch.Tensor:
    """Differentiable feasibility cost (...) >= 0 of motions (..., 3) given speed0 (...) m/s and agent
    types (...) int (all broadcast). Zero inside ``limits``; grows quadratically with the relative
    violation of each limit."""
    return _cost(motion, implied_quantities(motion, speed0, dt_s), speed0, agent_type, limits)


def cost_and_violation(motion: torch.Tensor, speed0: torch.Tensor, agent_type: torch.Tensor, dt_s: float = 0.1,
                       limits: KinematicLimits = SHAPING_LIMITS, hard: KinematicLimits = METRIC_LIMITS
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`kinematic_cost` with ``limits`` and whether each motion breaks ``hard`` (bool, the same as
    ``kinematic_cost(..., hard) > 0`` for limits without a turning radius), sharing the implied quantities."""
    if np.isfinite(hard.max_curvature_per_m):
        raise ValueError("cost_and_violation: the hard limits must not constrain the turning radius")
    q = implied_quantities(motion, speed0, dt_s)
    cost = _cost(motion, q, speed0, agent_type, limits)
    moving = torch.maximum(speed0.abs(), q["v1"].abs()) > hard.yaw_rate_min_speed_mps
    bad = ((q["a_long"].abs() > hard.max_long_accel_mps2) | (q["a_lat"].abs() > hard.max_lat_accel_mps2)
           | (moving & (q["yaw_rate"].abs() > _yaw_limit(agent_type, hard, motion.dtype)))
           | (q["backward"] > hard.max_backward_m))
    return cost, bad


def _cost(motion: torch.Tensor, q: dict[str, torch.Tensor], speed0: torch.Tensor, agent_type: torch.Tensor,
          limits: KinematicLimits) -> torch.Tensor:
    yaw_lim = _yaw_limit(agent_type, limits, motion.dtype)
    moving = torch.maximum(speed0.abs(), q["v1"].abs()) > limits.yaw_rate_min_speed_mps
    yaw_excess = torch.relu(q["yaw_rate"].abs() - yaw_lim) / yaw_lim * moving
    terms = [
        torch.relu(q["a_long"].abs() - limits.max_long_accel_mps2) / limits.max_long_accel_mps2,
        torch.relu(q["a_lat"].abs() - limits.max_lat_accel_mps2) / limits.max_lat_accel_mps2,
        yaw_excess,
        torch.relu(q["backward"] - limits.max_backward_m) / 0.05,
    ]
    if np.isfinite(limits.max_curvature_per_m):
        steered = agent_type != int(AgentType.PEDESTRIAN)
        turn_limit = limits.max_curvature_per_m * motion[..., 0].abs() + limits.curvature_slack_rad
        terms.append(torch.relu(motion[..., 2].abs() - turn_limit) / 0.05 * steered)
    return sum(t * t + t for t in terms)


class VocabularyFeasibility(torch.nn.Module):
    """:func:`cost_and_violation` of a fixed vocabulary of motions, with every term that does not depend on
    the agent's speed computed once (the same values bit for bit, in about half the tensor operations).

    ``motions``: (K, 3) float tensor. :meth:`forward` takes speeds (S, 1) m/s and agent types (S, 1) int and
    returns (cost, violation), each (S, K).
    """

    def __init__(self, motions: torch.Tensor, dt_s: float = 0.1, limits: KinematicLimits = SHAPING_LIMITS,
                 hard: KinematicLimits = METRIC_LIMITS) -> None:
        super().__init__()
        if np.isfinite(hard.max_curvature_per_m):
            raise ValueError("VocabularyFeasibility: the hard limits must not constrain the turning radius")
        self.dt_s, self.limits, self.hard = dt_s, limits, hard
        m = motions[None]                                                           # (1, K, 3)
        q = implied_quantities(m, torch.zeros(1, 1, dtype=m.dtype), dt_s)
        by_type = torch.tensor([[int(AgentType.VEHICLE)], [int(AgentType.PEDESTRIAN)]])  # (2, 1): rows other, ped
        yaw_lim, yaw_hard = _yaw_limit(by_type, limits, m.dtype), _yaw_limit(by_type, hard, m.dtype)
        yaw_excess = torch.relu(q["yaw_rate"].abs() - yaw_lim) / yaw_lim           # (2, K)
        backward = torch.relu(q["backward"] - limits.max_backward_m) / 0.05
        turn = torch.zeros_like(yaw_excess)
        if np.isfinite(limits.max_curvature_per_m):
            turn_limit = limits.max_curvature_per_m * m[..., 0].abs() + limits.curvature_slack_rad
            turn = torch.relu(m[..., 2].abs() - turn_limit) / 0.05 * (by_type != int(AgentType.PEDESTRIAN))
        self.register_buffer("v1", q["v1"].contiguous())                            # (1, K)
        self.register_buffer("abs_v1", q["v1"].abs().contiguous())
        self.register_buffer("yaw_rate", q["yaw_rate"].contiguous())
        self.register_buffer("yaw_term", (yaw_excess * yaw_excess + yaw_excess).contiguous())   # (2, K)
        self.register_buffer("backward_term", (backward * backward + backward).contiguous())    # (1, K)
        self.register_buffer("turn_term", (turn * turn + turn).contiguous())                    # (2, K)
        self.register_buffer("yaw_bad", (q["yaw_rate"].abs() > yaw_hard).contiguous())          # (2, K)
        self.register_buffer("backward_bad", (q["backward"] > hard.max_backward_m).contiguous())  # (1, K)
        self.curvature = bool(np.isfinite(limits.max_curvature_per_m))

    def forward(self, speed0: torch.Tensor, agent_type: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lim, hard = self.limits, self.hard
        ped = agent_type == int(AgentType.PEDESTRIAN)                               # (S, 1)
        a_long = (self.v1 - speed0) / self.dt_s                                     # (S, K)
        fastest = torch.maximum(speed0.abs(), self.abs_v1)
        a_lat = fastest * self.yaw_rate
        long_abs, lat_abs = a_long.abs(), a_lat.abs()
        t_long = torch.relu(long_abs - lim.max_long_accel_mps2) / lim.max_long_accel_mps2
        t_lat = torch.relu(lat_abs - lim.max_lat_accel_mps2) / lim.max_lat_accel_mps2
        yaw = torch.where(fastest > lim.yaw_rate_min_speed_mps,
                          torch.where(ped, self.yaw_term[1:], self.yaw_term[:1]), 0.0)
        # Summed in the order of kinematic_cost's terms, so the result is the same to the last bit.
        cost = (t_long * t_long + t_long) + (t_lat * t_lat + t_lat) + yaw + self.backward_term
        if self.curvature:
            cost = cost + torch.where(ped, self.turn_term[1:], self.turn_term[:1])
        moving = fastest > hard.yaw_rate_min_speed_mps
        bad = ((long_abs > hard.max_long_accel_mps2) | (lat_abs > hard.max_lat_accel_mps2)
               | (moving & torch.where(ped, self.yaw_bad[1:], self.yaw_bad[:1])) | self.backward_bad)
        return cost, bad


def infeasible(motion: np.ndarray, speed0: np.ndarray, agent_type: np.ndarray, dt_s: float = 0.1,
               limits: KinematicLimits = METRIC_LIMITS) -> np.ndarray:
    """Boolean (...) whether motions (..., 3) break ``limits`` (default: the metric's) from speed0 (...)."""
    with torch.no_grad():
        cost = kinematic_cost(torch.as_tensor(np.asarray(motion), dtype=torch.float64),
                              torch.as_tensor(np.asarray(speed0), dtype=torch.float64),
                              torch.as_tensor(np.asarray(agent_type, dtype=np.int64)), dt_s, limits)
    return cost.numpy() > 1e-9


def braking_floor(speed0: np.ndarray, dt_s: float = 0.1, limits: KinematicLimits = SHAPING_LIMITS) -> np.ndarray:
    """Shortest forward step (C,) m that ``limits`` allow from speeds (C,) m/s: the hardest feasible braking
    (never more than the allowed backward creep)."""
    v0 = np.asarray(speed0, dtype=np.float64)
    return np.maximum(-limits.max_backward_m, (v0 - limits.max_long_accel_mps2 * dt_s) * dt_s)


def project_feasible(motion: np.ndarray, speed0: np.ndarray, agent_type: np.ndarray, dt_s: float = 0.1,
                     limits: KinematicLimits = SHAPING_LIMITS) -> np.ndarray:
    """Clamp motions (C, 3) into the feasible set of ``limits`` from speeds (C,) m/s; returns (C, 3).

    The forward step is clamped to the longitudinal-acceleration window (never more than the allowed
    backward creep), the side step to 30 % of it, and the heading change to the yaw-rate,
    lateral-acceleration and turning-radius limits.
    """
    motion = np.array(motion, dtype=np.float64)
    v0 = np.asarray(speed0, dtype=np.float64)
    a = limits.max_long_accel_mps2 * dt_s
    lo = braking_floor(v0, dt_s, limits)
    hi = np.maximum((v0 + a) * dt_s, lo)
    motion[:, 0] = geometry.clamp(motion[:, 0], lo, hi)
    side = 0.3 * np.abs(motion[:, 0]) + 0.02
    motion[:, 1] = geometry.clamp(motion[:, 1], -side, side)
    v1 = np.abs(motion[:, 0]) / dt_s
    ped = np.asarray(agent_type) == int(AgentType.PEDESTRIAN)
    yaw_lim = np.where(ped, limits.pedestrian_yaw_rate_rps, limits.max_yaw_rate_rps)
    vmax = np.maximum(np.abs(v0), v1)
    yaw_lim = np.where(vmax > limits.yaw_rate_min_speed_mps, yaw_lim, np.inf)
    lat_lim = limits.max_lat_accel_mps2 / np.maximum(vmax, 1e-6)
    max_dth = 0.999 * dt_s * np.minimum(yaw_lim, lat_lim)
    if np.isfinite(limits.max_curvature_per_m):
        turn = limits.max_curvature_per_m * np.abs(motion[:, 0]) + limits.curvature_slack_rad
        max_dth = np.where(ped, max_dth, np.minimum(max_dth, 0.999 * turn))
    motion[:, 2] = geometry.clamp(motion[:, 2], -max_dth, max_dth)
    return motion


def realised_infeasible(xy0: np.ndarray, yaw0: np.ndarray, speed0: np.ndarray, xy1: np.ndarray,
                        yaw1: np.ndarray, speed1: np.ndarray, dt_s: float = 0.1,
                        limits: KinematicLimits = METRIC_LIMITS) -> np.ndarray:
    """Boolean (M,) whether realised steps (state 0 -> state 1, global frame, m / rad / m/s) break the
    metric definition of DESIGN.md section 7 (a_long from the speed change, a_lat = speed1 * yaw rate,
    the yaw-rate limit when either speed exceeds the threshold, backward motion in the start frame)."""
    d = np.asarray(xy1, dtype=np.float64) - xy0
    forward = np.cos(yaw0) * d[:, 0] + np.sin(yaw0) * d[:, 1]
    yaw_rate = np.mod(np.asarray(yaw1) - yaw0 + np.pi, 2 * np.pi) - np.pi
    yaw_rate = yaw_rate / dt_s
    a_long = (np.asarray(speed1) - speed0) / dt_s
    moving = np.maximum(np.abs(speed0), np.abs(speed1)) > limits.yaw_rate_min_speed_mps
    return ((np.abs(a_long) > limits.max_long_accel_mps2) | (np.abs(speed1 * yaw_rate) > limits.max_lat_accel_mps2)
            | (moving & (np.abs(yaw_rate) > limits.max_yaw_rate_rps)) | (forward < -limits.max_backward_m))
