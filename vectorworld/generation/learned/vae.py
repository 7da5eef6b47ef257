"""Motion-aware gated VAE: encodes a tile (lanes + agents + lane-graph edges) into per-node latents.

Tokens are ordered lanes first (L), then agents (A); N = L + A. Each token gets a latent of size ``latent``.

* Lanes: an MLP over the lane's normalised cubic Bézier control points (bezier.py), then relational
  message passing along the typed lane-graph edges (one weight per edge type).
* Agents: a static embedding (x, y, speed, cos, sin, length, width, type) and a motion embedding (the
  6-point body-frame motion code) mixed by a learned gate g = sigmoid(W [h_static, h_motion]):
  h = h_static + g * h_motion (parked cars learn g -> 0).
* Padding slots are encoded too (their ``valid`` flag is an input) so the decoder can say "no token here".
* Decoder: per-token MLPs (lane control points + existence, agent state + type + motion + existence) and a
  pairwise edge classifier over lane pairs fed with the decoded curves (end(i) - start(j), relative pose).
  Decoded lanes are Bézier curves, smooth by construction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from vectorworld.generation.learned.bezier import CONTROL_POINTS, bezier_basis
from vectorworld.generation.learned.tile_tensors import (
    AGENT_FEATURES,
    HALF_TILE_M,
    LANE_FEATURES,
    LANE_POINTS,
    MOTION_POINTS,
    NUM_AGENT_TYPES,
    NUM_EDGE_TYPES,
)


@dataclass(frozen=True)
class VAEConfig:
    """Sizes of the VAE. ``max_lanes``/``max_agents`` fix the token capacity (L, A)."""

    max_lanes: int = 40
    max_agents: int = 24
    hidden: int = 96
    latent: int = 16
    message_layers: int = 2
    kl_weight: float = 1e-3

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.SiLU(), nn.Linear(d_hidden, d_out))


class RelationalLayer(nn.Module):
    """h_i <- h_i + MLP([h_i, sum_k mean_{j: e_ij = k} W_k h_j]) over the typed lane edges (k = 1..4)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.msg = nn.Linear(hidden, hidden * (NUM_EDGE_TYPES - 1))
        self.update = mlp(2 * hidden, hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, h: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        """h: (B, L, H); edges: (B, L, L) long edge types. Returns (B, L, H)."""
        b, n, d = h.shape
        msgs = self.msg(h).view(b, n, NUM_EDGE_TYPES - 1, d)                    # (B, L_j, K, H)
        onehot = F.one_hot(edges, NUM_EDGE_TYPES)[..., 1:].to(h.dtype)          # (B, L_i, L_j, K)
        count = onehot.sum(2).clamp(min=1.0)                                    # (B, L_i, K)
        agg = torch.einsum("bijk,bjkd->bikd", onehot, msgs) / count[..., None]  # (B, L_i, K, H)
        return h + self.update(torch.cat([self.norm(h), agg.sum(2)], -1))


class GatedAgentEmbed(nn.Module):
    """Static + gated motion embedding of agents: (B, A, 23 + 1 valid) -> (B, A, H) and the gate (B, A, 1)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.static = mlp(7 + NUM_AGENT_TYPES + 1, hidden, hidden)
        self.motion = mlp(MOTION_POINTS * 2, hidden, hidden)
        self.gate = nn.Linear(2 * hidden, 1)

    def forward(self, feats: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        static_in = torch.cat([feats[..., : 7 + NUM_AGENT_TYPES], valid[..., None]], -1)
        h_s = self.static(static_in)
        h_m = self.motion(feats[..., 7 + NUM_AGENT_TYPES:])
        g = torch.sigmoid(self.gate(torch.cat([h_s, h_m], -1)))
        return h_s + g * h_m, g


class EdgeDecoder(nn.Module):
    """Edge-type logits (B, L, L, 5) from lane hiddens (B, L, H) and decoded points (B, L, 20, 2)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.src = nn.Linear(hidden, hidden)
        self.dst = nn.Linear(hidden, hidden)
        self.geo = nn.Linear(7, hidden)
        self.out = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, NUM_EDGE_TYPES))

    def forward(self, h: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
        start, end = points[:, :, 0], points[:, :, -1]                          # (B, L, 2)
        mid = points[:, :, LANE_POINTS // 2]
        d = points[:, :, -1] - points[:, :, 0]
        heading = d / d.norm(dim=-1, keepdim=True).clamp(min=1e-4)              # (B, L, 2)
        gap = end[:, :, None] - start[:, None]                                  # (B, L_i, L_j, 2)
        back = start[:, :, None] - end[:, None]
        rel = mid[:, None] - mid[:, :, None]                                    # mid_j - mid_i
        c, s = heading[:, :, None, 0], heading[:, :, None, 1]
        rel_local = torch.stack([c * rel[..., 0] + s * rel[..., 1], -s * rel[..., 0] + c * rel[..., 1]], -1)
        cos_diff = (heading[:, :, None] * heading[:, None]).sum(-1, keepdim=True)
        geo = torch.cat([gap, back.norm(dim=-1, keepdim=True), rel_local, cos_diff,
                         gap.norm(dim=-1, keepdim=True)], -1) * 4.0
        return self.out(self.src(h)[:, :, None] + self.dst(h)[:, None] + self.geo(geo))


class TileVAE(nn.Module):
    """The motion-aware gated VAE over tile tokens (see module docstring)."""

    def __init__(self, config: VAEConfig) -> None:
        super().__init__()
        self.config = config
        h, z = config.hidden, config.latent
        self.lane_in = mlp(LANE_FEATURES + 1, h, h)
        self.relational = nn.ModuleList(RelationalLayer(h) for _ in range(config.message_layers))
        self.agent_in = GatedAgentEmbed(h)
        self.lane_head = nn.Linear(h, 2 * z)
        self.agent_head = nn.Linear(h, 2 * z)
        self.lane_dec = mlp(z, h, h)
        self.lane_points = nn.Sequential(nn.SiLU(), nn.Linear(h, h), nn.SiLU(),
                                         nn.Linear(h, LANE_FEATURES + 1))
        self.edge_dec = EdgeDecoder(h)
        self.agent_dec = nn.Sequential(mlp(z, h, h), nn.SiLU(), nn.Linear(h, AGENT_FEATURES + 1))

    def encode(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and log-variance (B, N, Z) of a batch of tiles (see :func:`batch_to_torch`)."""
        lane_valid = batch["lane_valid"].float()
        h_l = self.lane_in(torch.cat([batch["lane_feat"] * lane_valid[..., None], lane_valid[..., None]], -1))
        for layer in self.relational:
            h_l = layer(h_l, batch["edges"])
        agent_valid = batch["agent_valid"].float()
        h_a, _ = self.agent_in(batch["agent_feat"] * agent_valid[..., None], agent_valid)
        stats = torch.cat([self.lane_head(h_l), self.agent_head(h_a)], 1)
        mu, logvar = stats.chunk(2, -1)
        return mu, logvar.clamp(-12.0, 6.0)

    def decode(self, z: torch.Tensor, with_edges: bool = True) -> dict[str, torch.Tensor]:
        """Decode latents (B, N, Z) into normalised tile features.

        Returns lane_feat (B, L, 8) (Bézier control points / 32 m), lane_logit (B, L), edge_logits
        (B, L, L, 5) (if ``with_edges``), agent_feat (B, A, 23) (type part as logits) and agent_logit (B, A).
        """
        n_l = self.config.max_lanes
        h_l = self.lane_dec(z[:, :n_l])
        lane_out = self.lane_points(h_l)
        agent_out = self.agent_dec(z[:, n_l:])
        out = {"lane_feat": lane_out[..., :-1], "lane_logit": lane_out[..., -1],
               "agent_feat": agent_out[..., :-1], "agent_logit": agent_out[..., -1]}
        if with_edges:
            out["edge_logits"] = self.edge_dec(h_l, curve_points(out["lane_feat"]))
        return out

    def decode_edges(self, z: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """Edge-type logits (n, n, 5) among the lane slots ``slots`` (n,) of one tile's latents (1, N, Z):
        the edge decoder on those lanes only (what the generator needs for the chosen candidate)."""
        h_l = self.lane_dec(z[:, slots])
        feat = self.lane_points(h_l)[..., :-1]
        return self.edge_dec(h_l, curve_points(feat))[0]

    def loss(self, batch: dict[str, torch.Tensor], generator: torch.Generator | None = None
             ) -> tuple[torch.Tensor, dict[str, float]]:
        """Reconstruction + beta-KL loss of a batch; returns the loss and its parts (floats)."""
        mu, logvar = self.encode(batch)
        eps = torch.randn(mu.shape, generator=generator, dtype=mu.dtype).to(mu.device)
        z = mu + eps * torch.exp(0.5 * logvar)
        out = self.decode(z)
        return reconstruction_loss(out, batch, mu, logvar, self.config.kl_weight)


_BASIS: dict[tuple[int, str], torch.Tensor] = {}


def curve_points(lane_feat: torch.Tensor, points: int = LANE_POINTS) -> torch.Tensor:
    """Bézier lane features (..., L, 8) -> curve points (..., L, points, 2), same (normalised) units."""
    key = (points, str(lane_feat.device))
    if key not in _BASIS:
        with torch.inference_mode(False):  # a cached tensor made under inference mode could not train later
            _BASIS[key] = torch.as_tensor(bezier_basis(points), device=lane_feat.device)
    control = lane_feat.reshape(*lane_feat.shape[:-1], CONTROL_POINTS, 2)
    return torch.einsum("pk,...kd->...pd", _BASIS[key].to(lane_feat.dtype), control)


def reconstruction_loss(out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor], mu: torch.Tensor,
                        logvar: torch.Tensor, kl_weight: float) -> tuple[torch.Tensor, dict[str, float]]:
    """Weighted reconstruction terms; lane curves are compared in metres at 20 parameters (smooth L1, beta
    0.2 m), which weighs the control points by how much they move the curve."""
    lv, av = batch["lane_valid"].float(), batch["agent_valid"].float()
    pts_err = F.smooth_l1_loss(curve_points(out["lane_feat"]) * HALF_TILE_M,
                               curve_points(batch["lane_feat"]) * HALF_TILE_M,
                               beta=0.2, reduction="none").mean((-1, -2))
    lane_pts = (pts_err * lv).sum() / lv.sum().clamp(min=1.0)
    lane_exist = F.binary_cross_entropy_with_logits(out["lane_logit"], lv)
    edge_mask = lv[:, :, None] * lv[:, None]
    edge_target = batch["edges"]
    weight = torch.ones(NUM_EDGE_TYPES, device=mu.device)
    weight[1:] = 5.0
    edge_ce = F.cross_entropy(out["edge_logits"].flatten(0, 2), edge_target.flatten(), weight=weight,
                              reduction="none").view_as(edge_mask)
    edges = (edge_ce * edge_mask).sum() / edge_mask.sum().clamp(min=1.0)
    target, pred = batch["agent_feat"], out["agent_feat"]
    n_state = 7
    state = ((pred[..., :n_state] - target[..., :n_state]) ** 2).sum(-1)
    state = state + 0.5 * ((pred[..., n_state + NUM_AGENT_TYPES:] - target[..., n_state + NUM_AGENT_TYPES:])
                           ** 2).sum(-1)
    type_ce = F.cross_entropy(pred[..., n_state:n_state + NUM_AGENT_TYPES].flatten(0, 1),
                              target[..., n_state:n_state + NUM_AGENT_TYPES].argmax(-1).flatten(),
                              reduction="none").view_as(av)
    agents = ((state * 20.0 + type_ce) * av).sum() / av.sum().clamp(min=1.0)
    agent_exist = F.binary_cross_entropy_with_logits(out["agent_logit"], av)
    kl = 0.5 * (mu**2 + logvar.exp() - 1.0 - logvar).sum(-1).mean()
    total = lane_pts + lane_exist + edges + agents + agent_exist + kl_weight * kl
    parts = {k: float(v.detach()) for k, v in (("lane_pts_m", lane_pts), ("lane_exist", lane_exist),
             ("edges", edges), ("agents", agents), ("agent_exist", agent_exist), ("kl", kl))}
    return total, parts


def _lane_features(points: np.ndarray) -> np.ndarray:
    """``lane_features`` of lane points (..., L, P, 2), fitted only where a slot holds points (an all-zero
    slot's features are zeros: the same result for a fraction of the work, most slots of a context are free)."""
    from vectorworld.generation.learned.tile_tensors import LANE_FEATURES, lane_features

    used = np.any(points != 0.0, axis=(-1, -2))
    out = np.zeros(points.shape[:-2] + (LANE_FEATURES,), np.float32)
    out[used] = lane_features(points[used])
    return out


def batch_to_torch(tiles: dict[str, object], device: str | torch.device = "cpu",
                   plan: bool = False) -> dict[str, torch.Tensor]:
    """Convert batched :class:`TileTensors` fields (numpy, leading B) to the model's torch inputs.

    Returns lane_hint (B, L, 6) (given as ``lane_hint`` or derived from the edges, see
    tile_tensors.port_hints, with the road plan of tile_tensors.border_hints when ``plan``), lane_feat
    (B, L, 8) (Bézier control points / 32 m), lane_valid / lane_cond (B, L) bool, edges (B, L, L) long,
    agent_feat (B, A, 23), agent_valid / agent_cond (B, A) bool
    (all normalised, tile frame).
    """
    from vectorworld.generation.learned.tile_tensors import agent_features, border_hints, port_hints

    def t(x: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
        return torch.as_tensor(np.ascontiguousarray(x)).to(device=device, dtype=dtype)

    hints = tiles.get("lane_hint")
    if hints is None:
        hints = port_hints(np.asarray(tiles["lane_points"]), np.asarray(tiles["lane_valid"]),
                           np.asarray(tiles["lane_cond"]), np.asarray(tiles["edges"]))
        if plan:
            hints = border_hints(np.asarray(tiles["lane_points"]), np.asarray(tiles["lane_valid"]),
                                 np.asarray(tiles["lane_cond"]), hints)
    return {
        "lane_hint": t(hints, torch.float32),
        "lane_feat": t(_lane_features(np.asarray(tiles["lane_points"])), torch.float32),
        "lane_valid": t(tiles["lane_valid"], torch.bool), "lane_cond": t(tiles["lane_cond"], torch.bool),
        "edges": t(tiles["edges"], torch.long),
        "agent_feat": t(agent_features(np.asarray(tiles["agent_state"]), np.asarray(tiles["agent_type"]),
                                       np.asarray(tiles["agent_motion"])), torch.float32),
        "agent_valid": t(tiles["agent_valid"], torch.bool), "agent_cond": t(tiles["agent_cond"], torch.bool),
    }
