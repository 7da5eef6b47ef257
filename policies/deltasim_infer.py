"""A frozen, folded copy of :class:`~policies.deltasim_net.DeltaSimNet` for fast batched inference.

Computes the same function as the training network up to float32 rounding, with less work per step:

* the fixed input scales are folded into the first layer of each token embedder, and the token-kind
  embeddings into the embedders' last bias;
* each LayerNorm's affine part is folded into the linear layer that reads it (``W (n * g + b) + c =
  (W g) n + (W b + c)``), and the attention scale 1/sqrt(d_head) into the query rows;
* attention is computed by hand with an additive -inf bias for masked keys (two small batched matmuls;
  faster than ``scaled_dot_product_attention`` at these sizes on a CPU);
* the last block computes queries, attention and MLP for the agent token only (keys and values for all);
* the residual head is evaluated only for the primitive each agent picked (:meth:`residual`), not for the
  whole vocabulary.

Padded (masked) neighbour and lane tokens are computed like valid ones: masked keys get zero attention
weight, and only the agent token's output is read, so they never change the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from policies.deltasim_net import _LANE_POINT_SCALE, Block, DeltaSimNet


def _fold_norm(norm: nn.LayerNorm, linear: nn.Linear) -> tuple[torch.Tensor, torch.Tensor]:
    """Weight (out, in) and bias (out,) of ``linear(norm_affine(n))`` as one linear map of the plain
    normalised input ``n``."""
    w = linear.weight.detach().double()
    g, b = norm.weight.detach().double(), norm.bias.detach().double()
    return (w * g).float().contiguous(), (w @ b + linear.bias.detach().double()).float().contiguous()


@dataclass(frozen=True)
class _FoldedBlock:
    """One transformer block with folded weights. ``qkv_w`` (3d, d) with the query rows pre-scaled."""

    qkv_w: torch.Tensor
    qkv_b: torch.Tensor
    proj_w: torch.Tensor
    proj_b: torch.Tensor
    fc1_w: torch.Tensor
    fc1_b: torch.Tensor
    fc2_w: torch.Tensor
    fc2_b: torch.Tensor
    eps1: float
    eps2: float

    @classmethod
    def of(cls, block: Block) -> _FoldedBlock:
        d = block.proj.weight.shape[0]
        qkv_w, qkv_b = _fold_norm(block.norm1, block.qkv)
        scale = 1.0 / math.sqrt(d // block.heads)
        qkv_w[:d] *= scale
        qkv_b[:d] *= scale
        fc1_w, fc1_b = _fold_norm(block.norm2, block.mlp[0])
        return cls(qkv_w, qkv_b, block.proj.weight.detach().contiguous(), block.proj.bias.detach().contiguous(),
                   fc1_w, fc1_b, block.mlp[2].weight.detach().contiguous(), block.mlp[2].bias.detach().contiguous(),
                   block.norm1.eps, block.norm2.eps)


def _embedder(mlp: nn.Sequential, in_scale: torch.Tensor, kind: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Weights of ``mlp(x * in_scale) + kind`` (w1, b1, w2, b2), with ``in_scale`` (in,) folded into w1."""
    w1 = (mlp[0].weight.detach().double() * in_scale.double()).float().contiguous()
    b2 = (mlp[2].bias.detach().double() + kind.detach().double()).float().contiguous()
    return w1, mlp[0].bias.detach().contiguous(), mlp[2].weight.detach().contiguous(), b2


def _mlp(x: torch.Tensor, w: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    return F.linear(F.gelu(F.linear(x, w[0], w[1])), w[2], w[3])


class DeltaSimInference:
    """Inference-only DeltaSim network built from a trained :class:`DeltaSimNet` (weights are copied, so
    later changes to ``net`` are not seen). Call under ``torch.inference_mode()`` or ``torch.no_grad()``."""

    def __init__(self, net: DeltaSimNet) -> None:
        c = net.config
        self.heads = c.num_heads
        self.d = c.d_model
        hist_scale = (1.0 / net.history_scale).repeat(c.history_steps)
        route_steps = net.ego_embed[0].weight.shape[1] - hist_scale.numel() - net.static_scale.numel()
        route_scale = net.route_scale.repeat(route_steps // net.route_scale.numel())
        ego_scale = torch.cat([hist_scale, 1.0 / net.static_scale, route_scale])
        self.ego = _embedder(net.ego_embed, ego_scale, net.kind_embed[0])
        self.neighbor = _embedder(net.neighbor_embed, 1.0 / net.neighbor_scale, net.kind_embed[1])
        lane_in = net.lane_embed[0].weight.shape[1]
        lane_scale = torch.ones(lane_in)
        lane_scale[: 2 * c.chunk_points] = 1.0 / _LANE_POINT_SCALE
        self.lane = _embedder(net.lane_embed, lane_scale, net.kind_embed[2])
        self.blocks = [_FoldedBlock.of(b) for b in net.blocks]
        self.final_eps = net.norm.eps
        self.logits_w, self.logits_b = _fold_norm(net.norm, net.logits_head)
        res_w, res_b = _fold_norm(net.norm, net.residual_head)
        self.residual_w = res_w.view(c.vocab_size, 3, self.d).contiguous()       # (K, 3, d)
        self.residual_b = res_b.view(c.vocab_size, 3).contiguous()                 # (K, 3)
        self.residual_scale = net.residual_scale.detach().clone()

    def encode(self, history: torch.Tensor, static: torch.Tensor, neighbors: torch.Tensor,
               neighbor_mask: torch.Tensor, lane_points: torch.Tensor, lane_features: torch.Tensor,
               lane_mask: torch.Tensor, route_ahead: torch.Tensor) -> torch.Tensor:
        """Normalised (affine-free) final features (S, d) of the agent token; inputs as
        :meth:`DeltaSimNet.forward`."""
        s = history.shape[0]
        ego_in = torch.cat([history.reshape(s, -1), static, route_ahead.reshape(s, -1)], -1)
        ego = _mlp(ego_in, self.ego)[:, None]                                      # (S, 1, d)
        nbr = _mlp(neighbors, self.neighbor)                                       # (S, N, d)
        lane = _mlp(torch.cat([lane_points.reshape(s, lane_points.shape[1], -1), lane_features], -1),
                    self.lane)                                                     # (S, L, d)
        x = torch.cat([ego, nbr, lane], 1)                                         # (S, T, d)
        valid = torch.cat([torch.ones(s, 1, dtype=torch.bool), neighbor_mask, lane_mask], 1)
        bias = torch.zeros(valid.shape).masked_fill_(~valid, float("-inf"))[:, None, None, :]  # (S, 1, 1, T)
        for block in self.blocks[:-1]:
            x = self._block(x, bias, block)
        h = self._last_block(x, bias, self.blocks[-1])                             # (S, d)
        return F.layer_norm(h, (self.d,), eps=self.final_eps)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Logits (S, K) over the vocabulary from :meth:`encode` features (S, d)."""
        return F.linear(h, self.logits_w, self.logits_b)

    def residual(self, h: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Residual (S, 3) (dx m, dy m, dtheta rad) of primitive ``tokens`` (S,) int64 for each agent."""
        raw = torch.einsum("scd,sd->sc", self.residual_w[tokens], h) + self.residual_b[tokens]
        return torch.tanh(raw) * self.residual_scale

    def __call__(self, **obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits (S, K), residual (S, K, 3)) like :meth:`DeltaSimNet.forward` (the full residual table;
        use :meth:`encode` + :meth:`residual` when only the picked primitive's residual is needed)."""
        h = self.encode(**obs)
        raw = torch.einsum("kcd,sd->skc", self.residual_w, h) + self.residual_b
        return self.logits(h), torch.tanh(raw) * self.residual_scale

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """(S, T, d) -> (S, H, T, d_head)."""
        s, t, _ = x.shape
        return x.view(s, t, self.heads, -1).transpose(1, 2)

    def _block(self, x: torch.Tensor, bias: torch.Tensor, b: _FoldedBlock) -> torch.Tensor:
        s, t, d = x.shape
        n = F.layer_norm(x, (d,), eps=b.eps1)
        q, k, v = F.linear(n, b.qkv_w, b.qkv_b).split(d, -1)
        att = torch.softmax(torch.matmul(self._heads(q), self._heads(k).transpose(-1, -2)) + bias, -1)
        out = torch.matmul(att, self._heads(v)).transpose(1, 2).reshape(s, t, d)
        x = x + F.linear(out, b.proj_w, b.proj_b)
        return x + _mlp(F.layer_norm(x, (d,), eps=b.eps2), (b.fc1_w, b.fc1_b, b.fc2_w, b.fc2_b))

    def _last_block(self, x: torch.Tensor, bias: torch.Tensor, b: _FoldedBlock) -> torch.Tensor:
        """The block for the agent token only: (S, T, d) -> (S, d)."""
        s, t, d = x.shape
        n = F.layer_norm(x, (d,), eps=b.eps1)
        q = F.linear(n[:, 0], b.qkv_w[:d], b.qkv_b[:d]).view(s, self.heads, 1, -1)       # (S, H, 1, dh)
        k, v = F.linear(n, b.qkv_w[d:], b.qkv_b[d:]).split(d, -1)
        att = torch.softmax(torch.matmul(q, self._heads(k).transpose(-1, -2)) + bias, -1)   # (S, H, 1, T)
        out = torch.matmul(att, self._heads(v)).reshape(s, d)
        h = x[:, 0] + F.linear(out, b.proj_w, b.proj_b)
        return h + _mlp(F.layer_norm(h, (d,), eps=b.eps2), (b.fc1_w, b.fc1_b, b.fc2_w, b.fc2_b))
