"""Junction loss: how far the one-step sample's new lane ends lie from the nearest place they may end.

The validity filter (generation/learned/stitching.py) keeps a new lane only if each of its ends lies at a
port, at another new lane's opposite end, or at the tile border; half of the data's frontier lane ends are
interior junctions between two new lanes. The MeanFlow loss weighs every latent dimension of every token on
its own, so it barely sees whether two tokens' lanes *meet*: the shipped model's one-step samples hold as
many lanes as the data (11.9 against 12.8 per held-out tile) but 44% of their ends lie more than 3 m from
any joint (1% for the VAE's decode of the true latents), and the filter prunes them to 3.7 lanes.

This loss decodes the one-step sample x = z_1 - u(z_1, 0, 1) with the frozen VAE and penalises, for every
end (start, end) of every decoded frontier lane, a soft minimum (temperature ``tau_m``) of its distance to
the joints it may use: the opposite ends of the other decoded frontier lanes, the opposite ends of the
tile's known lanes and the border. No slot correspondence with the data is needed (which frontier lane a
slot holds is one of many plausible ones), only the filter's own notion of a connected lane graph.

That term alone has a degenerate optimum, measured: after 750 fine-tuning steps at weight 0.05 the one-step
sample held 29 lanes, 16 of them shorter than 3 m and sitting on junctions. Hence a margin, a penalty on
lanes too short to keep and a slot-free lane-count term (see :func:`junction_loss`).
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from vectorworld.generation.learned.bezier import CONTROL_POINTS
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M

FAR_M = 1e3
"""Distance given to pairs that are no joint (a lane with itself, missing lanes)."""


def _soft_min(d: torch.Tensor, tau_m: float) -> torch.Tensor:
    """Soft minimum over the last axis: -tau log sum exp(-d / tau) (never above the hard minimum)."""
    return -tau_m * torch.logsumexp(-d / tau_m, -1)


def _distances(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(B, L, M) Euclidean distances between points a (B, L, 2) and b (B, M, 2), smooth at 0."""
    return ((a[:, :, None] - b[:, None]) ** 2).sum(-1).add(1e-6).sqrt()


def junction_distances(control: torch.Tensor, exists: torch.Tensor, known_control: torch.Tensor,
                       known: torch.Tensor, tau_m: float = 0.5) -> torch.Tensor:
    """Soft distance (B, L, 2) m from each lane's start / end to its nearest joint (see module docstring).

    control: (B, L, 4, 2) m, decoded Bézier control points (tile frame); exists: (B, L) bool, the decoded
    frontier lanes; known_control: (B, L, 4, 2) m, the known lanes; known: (B, L) bool, which slots hold one.
    Values at slots without a decoded lane are meaningless: mask them out of any mean.
    """
    starts, ends = control[:, :, 0], control[:, :, CONTROL_POINTS - 1]
    k_starts, k_ends = known_control[:, :, 0], known_control[:, :, CONTROL_POINTS - 1]
    n = control.shape[1]
    other = exists[:, None, :] & ~torch.eye(n, dtype=torch.bool, device=control.device)[None]   # (B, L_i, L_j)
    known_ok = known[:, None, :].expand(-1, n, -1)
    out = []
    for mine, theirs, known_theirs in ((starts, ends, k_ends), (ends, starts, k_starts)):
        d_new = _distances(mine, theirs).masked_fill(~other, FAR_M)
        d_known = _distances(mine, known_theirs).masked_fill(~known_ok, FAR_M)
        d_border = (HALF_TILE_M - mine.abs().amax(-1)).abs()[..., None]
        out.append(_soft_min(torch.cat([d_new, d_known, d_border], -1), tau_m))
    return torch.stack(out, -1)


def count_loss(lane_logit: torch.Tensor, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Huber (1 lane) of the batch-mean difference between the expected number of decoded frontier lanes (sum
    of the existence probabilities of ``lane_logit`` (B, L)) and the tiles', and that difference: a data-space
    term on existing lanes must not change how many there are."""
    free = ~batch["lane_cond"]
    expected = (torch.sigmoid(lane_logit) * free).sum(1)
    target = (batch["lane_valid"] & free).sum(1).to(lane_logit.dtype)
    bias = (expected - target).mean()
    return F.huber_loss(bias, torch.zeros_like(bias), delta=1.0), bias


def junction_loss(lane_feat: torch.Tensor, lane_logit: torch.Tensor, batch: dict[str, torch.Tensor],
                  tau_m: float = 0.5, margin_m: float = 0.5, huber_m: float = 1.0, min_chord_m: float = 3.0,
                  count_weight: float = 10.0, hint_weight: float = 1.0) -> tuple[torch.Tensor, dict[str, float]]:
    """Junction loss of a decoded one-step sample; returns the loss and its parts (floats).

    lane_feat (B, L, 8), lane_logit (B, L): the VAE's decode of the one-step sample (normalised Bézier
    features, existence logits); batch: the model inputs (lane_feat / lane_valid / lane_cond). Three terms,
    each slot-free (no frontier slot is matched to a data slot):

    * ``junction_m``: Huber (``huber_m``) of how far the :func:`junction_distances` of the decoded frontier
      lanes' ends exceed ``margin_m`` (the data's own ends lie within about 0.5 m of the VAE's decode);
    * ``short_m``: how much their chord |P3 - P0| falls short of ``min_chord_m`` (the filter drops shorter
      lanes: without this, a lane shrunk onto a junction would be a free way out of the first term);
    * ``count``: ``count_weight`` times the Huber (1 lane) of the batch-mean difference between the expected
      number of decoded frontier lanes (sum of the existence probabilities) and the tiles' (the first two
      terms see only existing lanes and must not change how many there are: measured, without this term
      the one-step count drifted by 14 lanes in 600 steps). A batch mean, not per tile: it keeps the count
      unbiased without pulling every tile to one count.
    * ``hinted``: ``hint_weight`` times the existence cross-entropy of the slots with a port hint (when the
      batch has ``lane_hint``): a hinted slot always holds the lane that continues its port, so this is
      the one place where a slot may be judged on its own. Without it, measured, the first three terms
      were lowered after ~1800 steps at weight 0.1 by dropping half of the hinted lanes (their ports then
      stay unmatched: held-out one-step validity fell from 1.0 to 0.0).
    """
    b, n = lane_logit.shape
    control = lane_feat.reshape(b, n, CONTROL_POINTS, 2) * HALF_TILE_M
    known_control = batch["lane_feat"].reshape(b, n, CONTROL_POINTS, 2) * HALF_TILE_M
    known = batch["lane_valid"] & batch["lane_cond"]
    free = ~batch["lane_cond"]
    exists = (lane_logit.detach() > 0.0) & free
    d = junction_distances(control, exists, known_control, known, tau_m)           # (B, L, 2)
    ends = exists[..., None].expand_as(d).to(d.dtype)
    count = ends.sum().clamp(min=1.0)
    over = F.relu(d - margin_m)
    junction = (F.huber_loss(over, torch.zeros_like(over), delta=huber_m, reduction="none") * ends).sum() / count
    chord = (control[:, :, CONTROL_POINTS - 1] - control[:, :, 0]).norm(dim=-1)
    lanes = exists.to(d.dtype)
    short = (F.relu(min_chord_m - chord) * lanes).sum() / lanes.sum().clamp(min=1.0)
    count_err, bias = count_loss(lane_logit, batch)
    total = junction + short + count_weight * count_err
    parts = {"junction_m": float((d.detach() * ends).sum() / count), "short_m": float(short.detach()),
             "count_bias": float(bias.detach())}
    if "lane_hint" in batch and hint_weight > 0.0:
        hinted = (batch["lane_hint"][..., :2].sum(-1) > 0.5) & free
        if bool(hinted.any()):
            kept = F.binary_cross_entropy_with_logits(lane_logit[hinted], torch.ones_like(lane_logit[hinted]))
            total = total + hint_weight * kept
            parts["hinted_exist"] = float(kept.detach())
    return total, parts
