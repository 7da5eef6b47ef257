"""Interval-conditioned MeanFlow training objective and samplers, with condition tokens held exactly.

Path between data x (t = 0) and noise eps (t = 1): z_t = (1 - t) x + t eps, velocity v = eps - x.
The network u(z, r, t) predicts the average velocity over [r, t]. MeanFlow identity:

    u(z_t, r, t) = v - (t - r) * d/dt u(z_t, r, t),   d/dt u = v . d_z u + d_t u

d/dt u is a Jacobian-vector product of the network with tangent (v, 0, 1) for inputs (z, r, t) computed
with ``torch.func.jvp``. Target u_tgt = v - (t - r) * stopgrad(JVP); loss ||u - u_tgt||^2 with the
adaptive weight (loss + 1e-3)^-0.8 (stop-gradient). Condition tokens carry their clean values at every t
(tangent and target zero) and are excluded from the loss; only frontier tokens move.

Plain flow matching (the baseline) is the special case r = t, where u_tgt = v and no JVP is needed.

``target="midpoint"`` swaps the JVP for the identity's discrete form (the semigroup of the flow map): an
interval is two half-steps of the network itself, z_m = z_t - (t - m) u(z_t, m, t) with m = (r + t) / 2,
and u_tgt = (u(z_t, m, t) + u(z_m, r, m)) / 2 (no gradient). Half-steps shorter than ``midpoint_min_step``
take the instantaneous velocity u(z, s, s) (an Euler step): that grounds the recursion in flow matching
(without it u = 0 on every r < t is a fixed point). Its targets are bounded by the network's velocities;
the JVP's grow with the network's roughness along the path (``tools/meanflow_targets.py``). The adaptive
weight stays off with it: rows whose target is the network's own output have near-zero loss, the weight
blows their gradients up, and training settles on any self-consistent network (a toy overfit stops learning
even flow matching: tests).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

VelocityFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""u(z (B, N, Z), r (B,), t (B,)) -> (B, N, Z)."""


@dataclass(frozen=True)
class MeanFlowConfig:
    """Time sampling per scene, in four shares: ``interval_ratio`` logit-normal(mean, std) pairs r < t;
    ``one_step_ratio`` long intervals r = 0, t ~ U(``one_step_t_min``, 1); ``exact_one_step_ratio`` the
    one-step interval (0, 1) itself; the rest r = t (plain flow matching, which keeps training stable).

    The long intervals are what one-step sampling queries (u(z_1, 0, 1)): logit-normal pairs alone almost
    never reach them (P(t - r > 0.9) ~ 2e-6), so without these shares the one-step map is an untrained
    extrapolation of the network (the old shipped checkpoint: 100% fallback at one step).
    """

    interval_ratio: float = 0.25
    logit_mean: float = -0.4
    logit_std: float = 1.0
    adaptive_power: float = 0.8
    flow_matching_only: bool = False
    one_step_ratio: float = 0.25
    one_step_t_min: float = 0.5
    exact_one_step_ratio: float = 0.1
    target: str = "jvp"
    """How an interval r < t gets its target: "jvp" (the paper's differential identity) or "midpoint"
    (two half-steps of the network, see the module docstring; ``adaptive_power`` is then not used)."""
    midpoint_min_step: float = 1.0 / 32.0
    pairs: str = "logit_normal"
    """How the (r, t) pairs of ``interval_ratio`` (and the t of flow matching) are drawn: the max / min of
    two logit-normal(``logit_mean``, ``logit_std``) draws, or "uniform": of two U(0, 1) draws. The midpoint
    target queries the halves of its intervals, e.g. (0.5, 1) for (0, 1), which logit-normal pairs almost
    never train (P(t > 0.95) ~ 1e-3)."""

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"MeanFlowConfig.target: {self.target!r} is not one of {', '.join(TARGETS)}")
        if self.pairs not in PAIRS:
            raise ValueError(f"MeanFlowConfig.pairs: {self.pairs!r} is not one of {', '.join(PAIRS)}")
        shares = {"interval_ratio": self.interval_ratio, "one_step_ratio": self.one_step_ratio,
                  "exact_one_step_ratio": self.exact_one_step_ratio}
        if min(shares.values()) < 0.0 or sum(shares.values()) > 1.0 + 1e-9:   # 0.33 + 0.56 + 0.11 > 1 in floats
            raise ValueError(f"MeanFlowConfig: the shares {shares} must be at least 0 and sum to at most 1")


TARGETS = ("jvp", "midpoint")
PAIRS = ("logit_normal", "uniform")


def sample_times(batch: int, config: MeanFlowConfig, generator: torch.Generator | None = None,
                 device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """(r, t), each (B,), with 0 <= r <= t <= 1, in the shares of :class:`MeanFlowConfig`. With
    ``flow_matching_only`` every pair has r = t."""
    if config.pairs == "uniform":
        a, b = torch.rand(batch, generator=generator), torch.rand(batch, generator=generator)
    else:
        a = torch.sigmoid(config.logit_mean + config.logit_std * torch.randn(batch, generator=generator))
        b = torch.sigmoid(config.logit_mean + config.logit_std * torch.randn(batch, generator=generator))
    t, r = torch.maximum(a, b), torch.minimum(a, b)
    ratio = 0.0 if config.flow_matching_only else config.interval_ratio
    one_step = 0.0 if config.flow_matching_only else config.one_step_ratio
    exact = 0.0 if config.flow_matching_only else config.exact_one_step_ratio
    u = torch.rand(batch, generator=generator)
    r = torch.where(u >= ratio, t, r)
    if one_step > 0.0 or exact > 0.0:  # drawn only when used, so configs without it keep their random streams
        long_t = 1.0 - (1.0 - config.one_step_t_min) * torch.rand(batch, generator=generator)
        long = (u >= ratio) & (u < ratio + one_step)
        at_one = (u >= ratio + one_step) & (u < ratio + one_step + exact)
        t = torch.where(long, long_t, torch.where(at_one, torch.ones_like(t), t))
        r = torch.where(long | at_one, torch.zeros_like(r), r)
    return r.to(device, dtype), t.to(device, dtype)


def noisy_latents(x: torch.Tensor, eps: torch.Tensor, t: torch.Tensor, cond: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """z_t (B, N, Z) with condition tokens (B, N) clean, and the velocity v (zero on condition tokens)."""
    keep = cond[..., None]
    z = torch.where(keep, x, (1.0 - t[:, None, None]) * x + t[:, None, None] * eps)
    v = torch.where(keep, torch.zeros_like(x), eps - x)
    return z, v


def meanflow_loss(fn: VelocityFn, x: torch.Tensor, cond: torch.Tensor, config: MeanFlowConfig,
                  generator: torch.Generator | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """MeanFlow loss of velocity function ``fn`` on clean latents x (B, N, Z) with condition mask (B, N)."""
    b = x.shape[0]
    r, t = sample_times(b, config, generator, x.device, x.dtype)
    eps = torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)
    z, v = noisy_latents(x, eps, t, cond)
    if config.flow_matching_only:
        u = fn(z, r, t)
        target = v
    elif config.target == "midpoint":
        u = fn(z, r, t)
        target = torch.where((r < t)[:, None, None],
                             midpoint_target(fn, z, r, t, cond, config.midpoint_min_step), v)
    else:
        u, dudt = torch.func.jvp(fn, (z, r, t), (v, torch.zeros_like(r), torch.ones_like(t)))
        target = v - (t - r)[:, None, None] * dudt.detach()
    free = (~cond)[..., None].to(x.dtype)
    per_sample = (((u - target) ** 2) * free).sum((1, 2)) / (free.sum((1, 2)) * x.shape[-1]).clamp(min=1.0)
    power = config.adaptive_power if config.target == "jvp" else 0.0
    weight = (per_sample.detach() + 1e-3) ** (-power)
    loss = (weight * per_sample).mean()
    return loss, {"mse": float(per_sample.detach().mean())}


@torch.no_grad()
def midpoint_target(fn: VelocityFn, z: torch.Tensor, r: torch.Tensor, t: torch.Tensor, cond: torch.Tensor,
                    min_step: float = 0.0) -> torch.Tensor:
    """Average velocity over [r, t] as the mean of two half-steps of ``fn`` from z (B, N, Z) at t, each
    with the instantaneous velocity where it is shorter than ``min_step``; condition tokens stay as they are."""
    m = 0.5 * (r + t)
    euler = (t - m) < min_step
    late = fn(z, torch.where(euler, t, m), t)
    z_m = torch.where(cond[..., None], z, z - (t - m)[:, None, None] * late)
    return 0.5 * (late + fn(z_m, torch.where(euler, m, r), m))


def sample_meanflow(fn: VelocityFn, x_cond: torch.Tensor, cond: torch.Tensor, steps: int,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    """Walk t from 1 to 0 in ``steps`` intervals: z_r = z_t - (t - r) u(z_t, r, t). steps = 1 is the
    one-step sampler x = z_1 - u(z_1, 0, 1). Condition tokens of x_cond (B, N, Z) stay exact."""
    return _integrate(fn, x_cond, cond, steps, generator, average=True)


def sample_flow_matching(fn: VelocityFn, x_cond: torch.Tensor, cond: torch.Tensor, steps: int,
                         generator: torch.Generator | None = None) -> torch.Tensor:
    """Baseline Euler sampler with the instantaneous velocity v(z, t) = u(z, t, t)."""
    return _integrate(fn, x_cond, cond, steps, generator, average=False)


@torch.no_grad()
def _integrate(fn: VelocityFn, x_cond: torch.Tensor, cond: torch.Tensor, steps: int,
               generator: torch.Generator | None, average: bool) -> torch.Tensor:
    """From noise at t = 1 to t = 0 in ``steps`` equal intervals [r, t], each stepped with the average
    velocity u(z, r, t) (MeanFlow) or the instantaneous one u(z, t, t) (flow matching, Euler)."""
    eps = torch.randn(x_cond.shape, generator=generator, dtype=x_cond.dtype).to(x_cond.device)
    keep = cond[..., None]
    z = torch.where(keep, x_cond, eps)
    times = torch.linspace(1.0, 0.0, steps + 1, device=x_cond.device)
    b = x_cond.shape[0]
    for i in range(steps):
        t = times[i].expand(b)
        r = times[i + 1].expand(b)
        z = z - (t - r)[:, None, None] * fn(z, r if average else t, t)
        z = torch.where(keep, x_cond, z)
    return z
