"""A frozen, folded copy of :class:`~policies.deltasim.net.DeltaSimNet` for fast batched inference.

Computes the same function as the training network up to float32 rounding, with less work per step:

* the fixed input scales are folded into the first layer of each token embedder, and the token-kind
  embeddings into the embedders' last bias;
* each LayerNorm's affine part is folded into the linear layer that reads it (``W (n * g + b) + c =
  (W g) n + (W b + c)``), and the attention scale 1/sqrt(d_head) into the query rows;
* attention is computed by hand with an additive -inf bias for masked keys (two small batched matmuls;
  faster than ``scaled_dot_product_attention`` at these sizes on a CPU);
* the blocks after the last context block (:attr:`DeltaSimNetConfig.full_layers`) compute the agent token
  only, without projecting keys and values of the other tokens (:meth:`_FoldedBlock.forward_first`); the
  context tokens they attend to are normalised once;
* the residual head is evaluated only for the primitive each agent picked (:meth:`residual`), not for the
  whole vocabulary.

The policy runs it inside :class:`policies.deltasim.scoring.DeltaSimScorer`, traced with TorchScript.

Padded (masked) neighbour and lane tokens are computed like valid ones: masked keys get zero attention
weight, and only the agent token's output is read, so they never change the result.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from policies.deltasim.net import LANE_POINT_SCALE, Block, DeltaSimNet

INPUTS = ("history", "static", "neighbors", "neighbor_mask", "lane_points", "lane_features", "lane_mask",
          "route_ahead")
"""Names of the network inputs, in the order of :meth:`DeltaSimInference.forward` (see
:func:`policies.deltasim.net.observation_tensors`)."""


def _fold_norm(norm: nn.LayerNorm, linear: nn.Linear) -> tuple[torch.Tensor, torch.Tensor]:
    """Weight (out, in) and bias (out,) of ``linear(norm_affine(n))`` as one linear map of the plain
    normalised input ``n`` (folded in float64, stored in float32)."""
    w = linear.weight.detach().double()
    g, b = norm.weight.detach().double(), norm.bias.detach().double()
    return (w * g).float(), (w @ b + linear.bias.detach().double()).float()


class _FoldedMLP(nn.Module):
    """``mlp(x * in_scale) + out_shift`` of a Linear-GELU-Linear ``mlp``, with ``in_scale`` (in,) folded
    into the first weight and ``out_shift`` (out,) into the last bias."""

    def __init__(self, mlp: nn.Sequential, in_scale: torch.Tensor | None = None,
                 out_shift: torch.Tensor | None = None) -> None:
        super().__init__()
        w1 = mlp[0].weight.detach().double()
        b2 = mlp[2].bias.detach().double()
        if in_scale is not None:
            w1 = w1 * in_scale.detach().double()
        if out_shift is not None:
            b2 = b2 + out_shift.detach().double()
        self.register_buffer("w1", w1.float().contiguous())
        self.register_buffer("b1", mlp[0].bias.detach().clone())
        self.register_buffer("w2", mlp[2].weight.detach().clone())
        self.register_buffer("b2", b2.float().contiguous())

    @classmethod
    def after_norm(cls, norm: nn.LayerNorm, mlp: nn.Sequential) -> _FoldedMLP:
        """The MLP reading a LayerNorm's output, with the norm's affine part folded in."""
        out = cls(mlp)
        w1, b1 = _fold_norm(norm, mlp[0])
        out.w1.copy_(w1)
        out.b1.copy_(b1)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(F.gelu(F.linear(x, self.w1, self.b1)), self.w2, self.b2)


class _FoldedBlock(nn.Module):
    """One pre-norm transformer block (:class:`~policies.deltasim.net.Block`) with folded weights: the
    first LayerNorm and 1/sqrt(d_head) in ``qkv_w`` (3d, d), the second LayerNorm in the MLP."""

    def __init__(self, block: Block) -> None:
        super().__init__()
        self.heads = block.heads
        self.d = block.proj.weight.shape[0]
        qkv_w, qkv_b = _fold_norm(block.norm1, block.qkv)
        scale = 1.0 / math.sqrt(self.d // self.heads)
        qkv_w[: self.d] *= scale
        qkv_b[: self.d] *= scale
        self.register_buffer("qkv_w", qkv_w.contiguous())
        self.register_buffer("qkv_b", qkv_b.contiguous())
        dh = self.d // self.heads
        value_heads = qkv_w[2 * self.d:].view(self.heads, dh, self.d)               # (H, dh, d)
        self.register_buffer("value_heads_t", value_heads.transpose(1, 2).contiguous())  # (H, d, dh)
        self.register_buffer("proj_w", block.proj.weight.detach().clone())
        self.register_buffer("proj_b", block.proj.bias.detach().clone())
        self.mlp = _FoldedMLP.after_norm(block.norm2, block.mlp)
        self.eps1, self.eps2 = block.norm1.eps, block.norm2.eps

    def forward(self, x: torch.Tensor, key_bias: torch.Tensor) -> torch.Tensor:
        """x: (S, T, d); key_bias: (S*H, 1, T), 0 for valid keys and -inf for masked ones."""
        s, t, d = x.shape
        qkv = F.linear(F.layer_norm(x, (d,), eps=self.eps1), self.qkv_w, self.qkv_b)
        # One copy into (3, S*H, T, d_head); the key transpose is read in place by the batched matmul.
        q, k, v = qkv.view(s, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4).reshape(3, s * self.heads, t, -1)
        att = torch.softmax(torch.baddbmm(key_bias, q, k.transpose(1, 2)), -1)    # (S*H, T, T)
        out = torch.bmm(att, v).view(s, self.heads, t, -1).transpose(1, 2).reshape(s, t, d)
        x = x + F.linear(out, self.proj_w, self.proj_b)
        return x + self.mlp(F.layer_norm(x, (d,), eps=self.eps2))

    def forward_first(self, x0: torch.Tensor, n0: torch.Tensor, context: torch.Tensor, key_bias: torch.Tensor
                      ) -> torch.Tensor:
        """The block for token 0 only: x0 (S, d) the agent token, n0 (S, d) it after the plain (affine-free)
        first LayerNorm, context (S, T-1, d) the other tokens after that LayerNorm; key_bias (S, 1, T).
        Returns the new agent token (S, d).

        Keys and values are never projected for all T tokens. With q_h the (scaled) query of head h and n_j
        the normalised tokens, ``q_h . (Wk_h n_j + bk_h) = (Wk_h^T q_h) . n_j + const`` (the constant drops
        out of the softmax) and ``sum_j a_hj (Wv_h n_j + bv_h) = Wv_h (sum_j a_hj n_j) + bv_h`` (the
        weights sum to one): two small per-agent products replace a (S*T, d) x (d, 2d) projection. The agent
        token's own score is computed apart, so the context is never copied.
        """
        s, d = n0.shape
        q = F.linear(n0, self.qkv_w[:d], self.qkv_b[:d]).view(s, self.heads, -1).transpose(0, 1)
        qk = torch.bmm(q, self.qkv_w[d:2 * d].view(self.heads, -1, d)).transpose(0, 1)  # (S, H, d)
        own = (qk * n0[:, None]).sum(-1, keepdim=True) + key_bias[..., :1]          # (S, H, 1)
        others = torch.baddbmm(key_bias[..., 1:], qk, context.transpose(1, 2))     # (S, H, T-1)
        att = torch.softmax(torch.cat([own, others], -1), -1)                      # (S, H, T)
        z = att[..., :1] * n0[:, None] + torch.bmm(att[..., 1:], context)          # (S, H, d)
        v = torch.bmm(z.transpose(0, 1), self.value_heads_t).transpose(0, 1).reshape(s, d) + self.qkv_b[2 * d:]
        h = x0 + F.linear(v, self.proj_w, self.proj_b)
        return h + self.mlp(F.layer_norm(h, (d,), eps=self.eps2))


class DeltaSimInference(nn.Module):
    """Inference-only DeltaSim network built from a trained :class:`DeltaSimNet` (weights are copied, so
    later changes to ``net`` are not seen). Use under ``torch.inference_mode()`` or ``torch.no_grad()``.

    ``forward`` gives the normalised agent features ``h`` (S, d) and the logits (S, K);
    :meth:`residual` the residual of chosen primitives from ``h``.
    """

    def __init__(self, net: DeltaSimNet) -> None:
        super().__init__()
        c = net.config
        self.d = c.d_model
        with torch.no_grad():
            hist_scale = (1.0 / net.history_scale).repeat(c.history_steps)
            route_in = net.ego_embed[0].weight.shape[1] - hist_scale.numel() - net.static_scale.numel()
            route_scale = net.route_scale.reshape(-1).repeat(route_in // net.route_scale.numel())
            self.ego = _FoldedMLP(net.ego_embed, torch.cat([hist_scale, 1.0 / net.static_scale, route_scale]),
                                  net.kind_embed[0])
            self.static_features = net.static_scale.numel()
            self.neighbor = _FoldedMLP(net.neighbor_embed, 1.0 / net.neighbor_scale, net.kind_embed[1])
            lane_scale = torch.ones(net.lane_embed[0].weight.shape[1])
            lane_scale[: 2 * c.chunk_points] = 1.0 / LANE_POINT_SCALE
            self.lane = _FoldedMLP(net.lane_embed, lane_scale, net.kind_embed[2])
            self.blocks = nn.ModuleList(_FoldedBlock(b) for b in net.blocks)
            self.full_layers = c.full_layers
            self.query_eps = self.blocks[self.full_layers].eps1
            if any(b.eps1 != self.query_eps for b in self.blocks[self.full_layers:]):
                raise ValueError("query-only blocks must share their first LayerNorm's eps")
            self.final_eps = net.norm.eps
            logits_w, logits_b = _fold_norm(net.norm, net.logits_head)
            res_w, res_b = _fold_norm(net.norm, net.residual_head)
        self.register_buffer("logits_w", logits_w.contiguous())
        self.register_buffer("logits_b", logits_b.contiguous())
        self.register_buffer("residual_w", res_w.view(c.vocab_size, 3, self.d).contiguous())  # (K, 3, d)
        self.register_buffer("residual_b", res_b.view(c.vocab_size, 3).contiguous())           # (K, 3)
        self.register_buffer("residual_scale", net.residual_scale.detach().clone())
        self.eval()

    def forward(self, history: torch.Tensor, static: torch.Tensor, neighbors: torch.Tensor,
                neighbor_mask: torch.Tensor, lane_points: torch.Tensor, lane_features: torch.Tensor,
                lane_mask: torch.Tensor, route_ahead: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs as :meth:`DeltaSimNet.forward`; returns (h (S, d), logits (S, K))."""
        s = history.shape[0]
        ego_in = torch.cat([history.reshape(s, -1), static[:, : self.static_features], route_ahead.reshape(s, -1)],
                           -1)
        lane_in = torch.cat([lane_points.flatten(2), lane_features], -1)
        x = torch.cat([self.ego(ego_in)[:, None], self.neighbor(neighbors), self.lane(lane_in)], 1)  # (S, T, d)
        valid = torch.cat([torch.ones_like(neighbor_mask[:, :1]), neighbor_mask, lane_mask], 1)   # (S, T)
        key_bias = torch.zeros_like(x[:, :, 0]).masked_fill(~valid, float("-inf"))[:, None]  # (S, 1, T)
        if self.full_layers > 0:
            heads = self.blocks[0].heads
            head_bias = key_bias[:, None].expand(-1, heads, 1, -1).reshape(-1, 1, key_bias.shape[2])  # (S*H, 1, T)
            for block in self.blocks[:self.full_layers]:
                x = block(x, head_bias)
        # Query-only blocks: the context tokens no longer change, so they are normalised once.
        h = x[:, 0]
        context = F.layer_norm(x[:, 1:], (self.d,), eps=self.query_eps)
        for block in self.blocks[self.full_layers:]:
            h = block.forward_first(h, F.layer_norm(h, (self.d,), eps=self.query_eps), context, key_bias)
        h = F.layer_norm(h, (self.d,), eps=self.final_eps)
        return h, F.linear(h, self.logits_w, self.logits_b)

    def residual(self, h: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Residual (S, 3) (dx m, dy m, dtheta rad) of primitive ``tokens`` (S,) int64 for each agent."""
        raw = torch.einsum("scd,sd->sc", self.residual_w[tokens], h) + self.residual_b[tokens]
        return torch.tanh(raw) * self.residual_scale

    def residual_table(self, h: torch.Tensor) -> torch.Tensor:
        """Residuals (S, K, 3) of every primitive (as :meth:`DeltaSimNet.forward` returns them)."""
        raw = torch.einsum("kcd,sd->skc", self.residual_w, h) + self.residual_b
        return torch.tanh(raw) * self.residual_scale

