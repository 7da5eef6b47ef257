"""Edge-gated relational DiT (EGR-DiT): predicts the MeanFlow average velocity u(z_t, r, t) of tile latents.

Tokens: L lane latents then A agent latents, (B, N, Z). Each token is embedded with its kind (lane/agent)
and whether it is a known (condition) token. Attention between tokens i, j is modulated by a pairwise edge
feature e_ij built from (pair kind, condition pair, known lane-graph edge type):

    a_ij = softmax_j(q_i . k_j / sqrt(d) + b(e_ij)) * g(e_ij),   g = 2 * sigmoid(w . e_ij)  (1 at init)

With ``edge_gating=False`` bias and gate are switched off (plain attention), the ablation of §8.
Time conditioning (t and the interval t - r) drives adaLN-Zero modulation in every block (DiT style).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from vectorworld.generation.learned.tile_tensors import HINT_FEATURES, NUM_EDGE_TYPES

_UNKNOWN_EDGE = NUM_EDGE_TYPES


@dataclass(frozen=True)
class DiTConfig:
    """Sizes of the EGR-DiT; ``max_lanes`` fixes which tokens are lanes (the first L)."""

    latent: int = 16
    max_lanes: int = 40
    max_agents: int = 24
    dim: int = 96
    depth: int = 4
    heads: int = 4
    mlp_ratio: float = 2.0
    edge_dim: int = 16
    edge_gating: bool = True
    port_hints: bool = True
    """Add a port hint (where a frontier lane must start / end, see tile_tensors.port_hints) to lane tokens."""
    border_hints: bool = False
    """Hint the road plan too: frontier lanes that enter or leave the front half at a side border get a hint
    at that border (tile_tensors.border_hints). The plan then comes with the context (ground truth in
    training, a plan prior at inference) instead of being left to the noise. Such a model's samples are
    junction-completed before the filter (junction_completion); older checkpoints are filtered as before
    (with completion, the shipped one ended a learned rollout on an infeasible planner trajectory)."""
    slot_ranks: bool = False
    """Add a learned embedding of each free token's rank among the free tokens of its kind. The data orders
    free lanes by distance from the partition (agents: by |x|); without it the free tokens are exchangeable
    and only the noise tells them apart."""
    time_max_freq: float = 10.0
    """Top angular frequency of the (r, t) embedding. MeanFlow's target differentiates through it: with 100,
    long-interval training from scratch diverged; about 10 trains stably (issue 15)."""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def timestep_embedding(t: torch.Tensor, dim: int, max_freq: float = 10.0) -> torch.Tensor:
    """Sinusoidal embedding (B, dim) of scalars t (B,) in [0, 1], angular frequencies 1 .. ``max_freq``.

    The top frequency is kept moderate (DiT uses 1000) because MeanFlow differentiates through it.
    """
    half = dim // 2
    freqs = torch.exp(math.log(max_freq) * torch.arange(half, dtype=t.dtype, device=t.device) / (half - 1))
    args = t[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], -1)


class TimeEmbedder(nn.Module):
    """c = MLP(emb(t)) + MLP(emb(t - r)): (B,), (B,) -> (B, D)."""

    def __init__(self, dim: int, freq_dim: int = 64, max_freq: float = 10.0) -> None:
        super().__init__()
        self.freq_dim, self.max_freq = freq_dim, max_freq
        self.t_mlp = nn.Sequential(nn.Linear(freq_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.h_mlp = nn.Sequential(nn.Linear(freq_dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, r: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return (self.t_mlp(timestep_embedding(t, self.freq_dim, self.max_freq))
                + self.h_mlp(timestep_embedding(t - r, self.freq_dim, self.max_freq)))


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1.0 + scale[:, None]) + shift[:, None]


class EdgeGatedAttention(nn.Module):
    """Multi-head self-attention with a per-head additive bias and multiplicative gate from e_ij."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None, gate: torch.Tensor | None) -> torch.Tensor:
        """x: (B, N, D); bias, gate: (B or 1, H, N, N) or None (plain attention). Returns (B, N, D)."""
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        logits = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)         # (B, H, N, N)
        if bias is not None and gate is not None:
            attn = torch.softmax(logits + bias, -1) * gate
        else:
            attn = torch.softmax(logits, -1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, d))


class DiTBlock(nn.Module):
    """adaLN-Zero transformer block: x += g1 * Attn(mod(LN x)); x += g2 * MLP(mod(LN x))."""

    def __init__(self, config: DiTConfig) -> None:
        super().__init__()
        d = config.dim
        self.norm1 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.attn = EdgeGatedAttention(d, config.heads)
        self.norm2 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        hidden = int(d * config.mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, d))
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d))

    def forward(self, x: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None,
                gate: torch.Tensor | None) -> torch.Tensor:
        s1, sc1, g1, s2, sc2, g2 = self.ada(c).chunk(6, -1)
        x = x + g1[:, None] * self.attn(modulate(self.norm1(x), s1, sc1), bias, gate)
        return x + g2[:, None] * self.mlp(modulate(self.norm2(x), s2, sc2))


class EGRDiT(nn.Module):
    """u_theta(z, r, t | condition tokens, known edges): (B, N, Z) -> (B, N, Z)."""

    def __init__(self, config: DiTConfig) -> None:
        super().__init__()
        self.config = config
        d = config.dim
        self.token_in = nn.Linear(config.latent, d)
        self.kind = nn.Embedding(2, d)
        self.cond = nn.Embedding(2, d)
        self.hint_in = nn.Linear(HINT_FEATURES, d) if config.port_hints else None
        self.rank = nn.Embedding(max(config.max_lanes, config.max_agents), d) if config.slot_ranks else None
        self.time = TimeEmbedder(d, max_freq=config.time_max_freq)
        self.edge_kind = nn.Embedding(4, config.edge_dim)
        self.edge_cond = nn.Embedding(4, config.edge_dim)
        self.edge_type = nn.Embedding(NUM_EDGE_TYPES + 1, config.edge_dim)
        self.edge_proj = nn.Linear(config.edge_dim, 2 * config.heads * config.depth)
        self.blocks = nn.ModuleList(DiTBlock(config) for _ in range(config.depth))
        self.norm_out = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.ada_out = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        self.out = nn.Linear(d, config.latent)
        self._init_weights()

    def _init_weights(self) -> None:
        """Xavier for linears; adaLN modulations and the output layer start at zero (identity blocks,
        zero velocity), the DiT recipe; edge bias/gate start at 0 / 1 (see EdgeGatedAttention)."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        for block in self.blocks:
            nn.init.zeros_(block.ada[-1].weight)
            nn.init.zeros_(block.ada[-1].bias)
        nn.init.zeros_(self.edge_proj.weight)
        nn.init.zeros_(self.edge_proj.bias)
        zero_init = [self.ada_out[-1], self.out] + ([self.hint_in] if self.hint_in is not None else [])
        for layer in zero_init:
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def edge_index(self, cond: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        """Pair category (B, N, N) long of every token pair from the condition mask (B, N) bool and the known
        lane edges (B, L, L) long: (kind of the pair, which ends are conditioned, known edge type) as one
        index into the ``4 x 4 x (NUM_EDGE_TYPES + 1)`` categories of :meth:`edge_table`."""
        b, n = cond.shape
        n_l = self.config.max_lanes
        is_agent = torch.arange(n, device=cond.device) >= n_l
        kind = is_agent[:, None].long() * 2 + is_agent[None].long()             # (N, N)
        cpair = (~cond[:, :, None]).long() * 2 + (~cond[:, None]).long()         # (B, N, N)
        etype = torch.full((b, n, n), _UNKNOWN_EDGE, dtype=torch.long, device=cond.device)
        both = cond[:, :n_l, None] & cond[:, None, :n_l]
        etype[:, :n_l, :n_l] = torch.where(both, edges, torch.full_like(edges, _UNKNOWN_EDGE))
        return (kind[None] * 4 + cpair) * (NUM_EDGE_TYPES + 1) + etype

    def edge_table(self) -> torch.Tensor:
        """The projected edge feature e_ij = kind + condition pair + edge type embeddings of every pair
        category (:meth:`edge_index`), (2 * depth * heads, categories): bias rows, then gate rows (already
        ``2 sigmoid``). The projection is linear, so each embedding is projected once and the pair's terms
        are one lookup, not an (N x N)-token MLP."""
        w, bias = self.edge_proj.weight, self.edge_proj.bias                    # (2 D H, E), (2 D H,)
        kind, cpair, etype = self.edge_kind.weight @ w.T, self.edge_cond.weight @ w.T, self.edge_type.weight @ w.T
        table = (kind[:, None, None] + cpair[None, :, None] + etype[None, None] + bias).flatten(0, 2)  # (K, 2DH)
        cfg = self.config
        table = table.view(-1, cfg.depth, 2, cfg.heads).permute(2, 1, 3, 0)          # (2, D, H, K)
        return torch.cat([table[0], 2.0 * torch.sigmoid(table[1])]).flatten(0, 1)  # (2 D H, K)

    def edge_terms(self, cond: torch.Tensor, edges: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Per-layer attention bias and gate (B, depth, H, N, N) each, or None without edge gating.

        They depend only on the condition mask and the known edges, not on z, r, t: compute them once per
        context and broadcast them over candidates and sampling steps.
        """
        if not self.config.edge_gating:
            return None
        index = self.edge_index(cond, edges)                                     # (B, N, N)
        b, n = cond.shape
        cfg = self.config
        terms = self.edge_table().index_select(1, index.flatten())               # (2 D H, B N N)
        terms = terms.view(2, cfg.depth, cfg.heads, b, n, n).permute(0, 3, 1, 2, 4, 5)
        return terms[0].contiguous(), terms[1].contiguous()

    def forward(self, z: torch.Tensor, r: torch.Tensor, t: torch.Tensor, cond: torch.Tensor,
                edges: torch.Tensor, terms: tuple[torch.Tensor, torch.Tensor] | None = None,
                hints: torch.Tensor | None = None) -> torch.Tensor:
        """Average velocity (B, N, Z) over [r, t] (B,) each. ``terms`` may be precomputed by edge_terms
        (batch 1 broadcasts over B); ``hints`` (B or 1, L, 6) are the lane slots' port hints."""
        n_l = self.config.max_lanes
        kind = (torch.arange(z.shape[1], device=z.device) >= n_l).long()
        x = self.token_in(z) + self.kind(kind)[None] + self.cond(cond.long())
        if self.rank is not None:
            x = x + self.rank(free_ranks(cond, n_l)) * (~cond)[..., None]
        if self.hint_in is not None and hints is not None:
            x = torch.cat([x[:, :n_l] + self.hint_in(hints), x[:, n_l:]], 1)
        c = self.time(r, t)
        if terms is None:
            terms = self.edge_terms(cond, edges)
        for i, block in enumerate(self.blocks):
            bias, gate = (terms[0][:, i], terms[1][:, i]) if terms is not None else (None, None)
            x = block(x, c, bias, gate)
        shift, scale = self.ada_out(c).chunk(2, -1)
        return self.out(modulate(self.norm_out(x), shift, scale))


def free_ranks(cond: torch.Tensor, max_lanes: int) -> torch.Tensor:
    """Rank (B, N) long of every free (not conditioned) token among the free tokens of its kind, in slot
    order: the k-th free lane slot has rank k, and so has the k-th free agent slot. Conditioned tokens: 0."""
    free = (~cond).long()
    ranks = torch.cat([free[:, :max_lanes].cumsum(1), free[:, max_lanes:].cumsum(1)], 1) - 1
    return ranks.clamp(min=0) * free


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())

