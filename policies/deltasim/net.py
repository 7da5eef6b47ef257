"""The DeltaSim network: a small attention encoder over the agent's own history, its neighbours (plus the
junction stop token) and nearby lane chunks, with a hybrid action head (logits over the k-disks vocabulary
+ a continuous residual per primitive).

Built bottom-up: token embedders -> pre-norm transformer blocks -> heads. All inputs are in the agent's
own frame (see :mod:`policies.deltasim.observation`); fixed scales bring them to order one.

The first ``context_layers`` blocks update every token (full self-attention); the others update the agent
token only (it attends to the embedded context tokens, which stay as they are: a query-centric decoder).
Only the agent token's output is read, so a block after the last context block never needs the context
outputs; with ``context_layers = 0`` no block computes keys, values or MLPs for the ~25 context tokens,
which makes inference about 3x cheaper on a CPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from policies.deltasim.observation import (
    BASE_STATIC_FEATURES,
    HISTORY_FEATURES,
    LANE_FEATURES,
    NEIGHBOR_FEATURES,
    ROUTE_FEATURES,
    SIGNAL_FEATURES,
    STATIC_FEATURES,
    Observation,
    with_stop_token,
)
from policies.deltasim.routes import ROUTE_AHEAD_M
from vectorworld.errors import ConfigError


@dataclass(frozen=True)
class DeltaSimNetConfig:
    """Sizes of the network. ``residual_scale`` bounds the residual (dx m, dy m, dtheta rad) via tanh."""

    vocab_size: int = 384
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 3
    mlp_ratio: int = 2
    history_steps: int = 11
    max_neighbors: int = 8
    max_lane_chunks: int = 16
    chunk_points: int = 9
    residual_scale: tuple[float, float, float] = (0.05, 0.05, 0.005)
    context_layers: int = 0
    signal_features: bool = True
    """Read the agent's light ahead and its right-of-way grant (the last ``SIGNAL_FEATURES`` of ``static``);
    checkpoints saved before they existed read only the first ``BASE_STATIC_FEATURES``."""

    def __post_init__(self) -> None:
        if self.num_layers < 1 or self.context_layers < 0 or self.d_model % self.num_heads:
            raise ConfigError("deltasim net: num_layers >= 1, context_layers >= 0 and d_model divisible by "
                              f"num_heads required, got {self.num_layers}, {self.context_layers}, "
                              f"{self.d_model}/{self.num_heads}")

    @property
    def full_layers(self) -> int:
        """Blocks that update every token: the first ``context_layers``, never the last block."""
        return min(self.context_layers, self.num_layers - 1)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> DeltaSimNetConfig:
        data = dict(data)
        data["residual_scale"] = tuple(data["residual_scale"])
        data.setdefault("signal_features", False)  # saved before the signal features existed
        return cls(**data)

    @property
    def static_features(self) -> int:
        """How many of the ``static`` features the network reads."""
        return STATIC_FEATURES if self.signal_features else BASE_STATIC_FEATURES


# Fixed input scales (features are divided by these).
_HISTORY_SCALE = (10.0, 10.0, 1.0, 1.0, 10.0, 1.0)
_STATIC_SCALE = (5.0, 2.0, 1.0, 1.0, 1.0) + (1.0,) * SIGNAL_FEATURES
_NEIGHBOR_SCALE = (20.0, 20.0, 1.0, 1.0, 10.0, 10.0, 5.0, 2.0, 1.0, 1.0, 1.0)
LANE_POINT_SCALE = 20.0
# Route targets (R, 4): x / 20 m; y finer for near targets (the current lateral offset matters to the decimetre);
# valid as is; speed cap / 20 m/s.
_ROUTE_SCALE = tuple((0.05, 1.0 / max(0.5, d / 6.0), 1.0, 0.05) for d in ROUTE_AHEAD_M)


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_out))


class Block(nn.Module):
    """Pre-norm transformer block with a key-padding mask."""

    def __init__(self, d: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = _mlp(d, mlp_ratio * d, d)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor, first_only: bool = False) -> torch.Tensor:
        """x: (S, T, d); key_mask: (S, T) bool, True where a token may be attended to. With
        ``first_only`` only token 0 is updated and returned, (S, 1, d) (the last block needs no more)."""
        s, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(s, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if first_only:
            q, x, t = q[:, :, :1], x[:, :1], 1
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask[:, None, None, :])
        x = x + self.proj(att.transpose(1, 2).reshape(s, t, d))
        return x + self.mlp(self.norm2(x))


class DeltaSimNet(nn.Module):
    """obs -> (logits (S, K), residual (S, K, 3)); the ego token (index 0) is always valid."""

    def __init__(self, config: DeltaSimNetConfig = DeltaSimNetConfig()) -> None:
        super().__init__()
        self.config = config
        c, d = config, config.d_model
        self.ego_embed = _mlp(c.history_steps * HISTORY_FEATURES + c.static_features
                              + len(ROUTE_AHEAD_M) * ROUTE_FEATURES, 2 * d, d)
        self.neighbor_embed = _mlp(NEIGHBOR_FEATURES, d, d)
        self.lane_embed = _mlp(c.chunk_points * 2 + LANE_FEATURES, d, d)
        self.kind_embed = nn.Parameter(torch.zeros(3, d))
        self.blocks = nn.ModuleList(Block(d, c.num_heads, c.mlp_ratio) for _ in range(c.num_layers))
        self.norm = nn.LayerNorm(d)
        self.logits_head = nn.Linear(d, c.vocab_size)
        self.residual_head = nn.Linear(d, 3 * c.vocab_size)
        self.register_buffer("history_scale", torch.tensor(_HISTORY_SCALE), persistent=False)
        self.register_buffer("static_scale", torch.tensor(_STATIC_SCALE[: c.static_features]), persistent=False)
        self.register_buffer("neighbor_scale", torch.tensor(_NEIGHBOR_SCALE), persistent=False)
        self.register_buffer("residual_scale", torch.tensor(c.residual_scale), persistent=False)
        self.register_buffer("route_scale", torch.tensor(_ROUTE_SCALE), persistent=False)
        self._init_weights()

    def _init_weights(self) -> None:
        """Small normal init for linear layers; zero residual head so training starts at the primitives;
        zero logits head so the initial policy is uniform over the vocabulary."""
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)
        nn.init.normal_(self.kind_embed, std=0.02)
        nn.init.zeros_(self.logits_head.weight)
        nn.init.zeros_(self.residual_head.weight)

    def forward(self, history: torch.Tensor, static: torch.Tensor, neighbors: torch.Tensor,
                neighbor_mask: torch.Tensor, lane_points: torch.Tensor, lane_features: torch.Tensor,
                lane_mask: torch.Tensor, route_ahead: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Shapes as in :class:`Observation` (float32 tensors, bool masks)."""
        s = history.shape[0]
        route = route_ahead * self.route_scale
        own = static[:, : self.static_scale.numel()] / self.static_scale
        ego_in = torch.cat([(history / self.history_scale).reshape(s, -1), own, route.reshape(s, -1)], -1)
        ego = self.ego_embed(ego_in)[:, None] + self.kind_embed[0]                  # (S, 1, d)
        nbr = self.neighbor_embed(neighbors / self.neighbor_scale) + self.kind_embed[1]  # (S, N, d)
        lane_in = torch.cat([lane_points.reshape(s, lane_points.shape[1], -1) / LANE_POINT_SCALE,
                             lane_features], -1)
        lane = self.lane_embed(lane_in) + self.kind_embed[2]                       # (S, L, d)
        x = torch.cat([ego, nbr, lane], 1)
        mask = torch.cat([torch.ones(s, 1, dtype=torch.bool), neighbor_mask, lane_mask], 1)
        for i, block in enumerate(self.blocks):
            if i < self.config.full_layers:
                x = block(x, mask)
            else:  # the agent token attends to the context; the context tokens stay as they are
                x = torch.cat([block(x, mask, first_only=True), x[:, 1:]], 1)
        h = self.norm(x[:, 0])
        logits = self.logits_head(h)
        residual = torch.tanh(self.residual_head(h).view(s, -1, 3)) * self.residual_scale
        return logits, residual


def observation_tensors(obs: Observation) -> dict[str, torch.Tensor]:
    """The network's keyword inputs from an :class:`Observation` (no copies for float32 arrays); the junction
    stop token is the last neighbour token (see :func:`policies.deltasim.observation.with_stop_token`)."""
    neighbors, neighbor_mask = with_stop_token(obs.neighbors, obs.neighbor_mask, obs.stop, obs.stop_mask)
    return {
        "history": torch.from_numpy(np.ascontiguousarray(obs.history)),
        "static": torch.from_numpy(np.ascontiguousarray(obs.static)),
        "neighbors": torch.from_numpy(neighbors),
        "neighbor_mask": torch.from_numpy(neighbor_mask),
        "lane_points": torch.from_numpy(np.ascontiguousarray(obs.lane_points)),
        "lane_features": torch.from_numpy(np.ascontiguousarray(obs.lane_features)),
        "lane_mask": torch.from_numpy(np.ascontiguousarray(obs.lane_mask)),
        "route_ahead": torch.from_numpy(np.ascontiguousarray(obs.route_ahead)),
    }
