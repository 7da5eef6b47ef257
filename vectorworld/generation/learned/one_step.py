"""The one-step sampler of one context as a single frozen graph: what the learned generator runs per tile
(and, for the chosen candidate, the edge decoder as a second one: :class:`EdgeGraph`).

One-step MeanFlow outpainting is a fixed chain of small tensor ops at fixed shapes (one context tile, C
candidates, ``max_lanes + max_agents`` tokens): VAE encode of the context, the DiT's edge terms, one DiT
call x = z_1 - u(z_1, 0, 1), the condition tokens put back, and the decode without edges. On one CPU
thread that chain is bound by per-op dispatch, not arithmetic, so :class:`OneStepGraph` records it once,
frozen, and runs it under PyTorch's Static Runtime (:mod:`vectorworld.frozen_graphs`). The noise is drawn
outside the graph with the caller's generator, so a seed gives the same tile as the eager
:meth:`OutpaintModel.outpaint` (``tests/generation/test_one_step.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from vectorworld.frozen_graphs import freeze_trace, static_runtime
from vectorworld.generation.learned.outpaint import OutpaintModel

INPUTS = ("lane_feat", "lane_valid", "lane_cond", "edges", "agent_feat", "agent_valid", "agent_cond", "lane_hint")
"""The context batch fields the graph takes, in this order (see ``vae.batch_to_torch``), then the noise."""
OUTPUTS = ("lane_feat", "lane_logit", "agent_feat", "agent_logit")
"""The decoded fields the graph returns, in this order, then the latents."""


class _OneStep(nn.Module):
    """Eager one-step outpainting of one context (batch of 1) for noise ``eps`` (C, N, Z)."""

    def __init__(self, model: OutpaintModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, lane_feat: torch.Tensor, lane_valid: torch.Tensor, lane_cond: torch.Tensor,
                edges: torch.Tensor, agent_feat: torch.Tensor, agent_valid: torch.Tensor, agent_cond: torch.Tensor,
                lane_hint: torch.Tensor, eps: torch.Tensor) -> tuple[torch.Tensor, ...]:
        model = self.model
        batch = {"lane_feat": lane_feat, "lane_valid": lane_valid, "lane_cond": lane_cond, "edges": edges,
                 "agent_feat": agent_feat, "agent_valid": agent_valid, "agent_cond": agent_cond}
        candidates = eps.shape[0]
        x = model.latents(batch).expand(candidates, -1, -1)
        cond1 = model.cond_mask(batch)
        terms = model.dit.edge_terms(cond1, edges)
        cond = cond1.expand(candidates, -1)
        keep = cond[..., None]
        z1 = torch.where(keep, x, eps)
        r, t = torch.zeros(candidates), torch.ones(candidates)
        z = torch.where(keep, x, z1 - model.dit(z1, r, t, cond, edges, terms, lane_hint)) * model.latent_scale
        out = model.vae.decode(z, with_edges=False)
        return (*(out[name] for name in OUTPUTS), z)


class _FrozenOnFirstUse:
    """A frozen graph recorded on the first call's inputs and run under Static Runtime; pickled without it
    (a Static Runtime module has no pickle support): rebuilt on first use."""

    _graph: torch.jit.ScriptModule | torch._C.StaticModule | None = None

    def _run(self, module: Callable[[], nn.Module], args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        if self._graph is None:
            self._graph = static_runtime(freeze_trace(module(), args))
        return self._graph(*args)

    def __getstate__(self) -> dict[str, object]:
        return {**vars(self), "_graph": None}


class OneStepGraph(_FrozenOnFirstUse):
    """One-step outpainting of one context, traced and frozen on first use for its candidate count."""

    def __init__(self, model: OutpaintModel, candidates: int) -> None:
        self.model, self.candidates = model, candidates

    @torch.inference_mode()
    def __call__(self, context: dict[str, torch.Tensor], generator: torch.Generator
                 ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Decoded candidates and their latents, as :meth:`OutpaintModel.outpaint` with the one-step MeanFlow
        sampler returns them (the noise drawn the same way from ``generator``)."""
        tokens = context["lane_valid"].shape[1] + context["agent_valid"].shape[1]
        eps = torch.randn((self.candidates, tokens, self.model.vae.config.latent), generator=generator)
        *decoded, z = self._run(lambda: _OneStep(self.model), (*(context[name] for name in INPUTS), eps))
        return dict(zip(OUTPUTS, decoded, strict=True)), z


class _Edges(nn.Module):
    """The VAE's edge decoder on a subset of lane slots (see ``TileVAE.decode_edges``)."""

    def __init__(self, model: OutpaintModel) -> None:
        super().__init__()
        self.vae = model.vae

    def forward(self, z: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        return self.vae.decode_edges(z, slots)


class EdgeGraph(_FrozenOnFirstUse):
    """``vae.decode_edges`` (edge logits among the chosen candidate's kept lane slots) as a frozen graph,
    recorded on first use; it serves any number of slots and returns what the eager decoder returns."""

    def __init__(self, model: OutpaintModel) -> None:
        self.model = model

    @torch.inference_mode()
    def __call__(self, z: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """Edge-type logits (n, n, 5) among ``slots`` (n,) of one candidate's latents ``z`` (1, N, Z)."""
        return self._run(lambda: _Edges(self.model), (z, slots))
