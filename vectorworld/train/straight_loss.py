"""Straightness loss: how much the one-step sample's new lanes bend off their chords, where the data's do not.

83% of the held-out tiles' new lanes lie within 0.1 m of their chord (a city's roads run straight between
junctions); 29% of `mid_req`'s one-step lanes do, after the filter and stitching, and 32% as decoded
(2026-12-07). The VAE decodes the true latents 66% straight, and latents moved by noise of a tenth of their
scale 30% straight: the decoder maps the one-step map's small latent errors to wiggles, and a decoder
fine-tuned on noisy latents did not take them out (31%). The MeanFlow loss weighs every latent dimension
alike and cannot see that a small error in one direction bends a road.

This loss decodes a one-jump sample (as the junction loss does) and penalises the bend of every decoded
frontier lane: its inner control points' offsets from the chord over the chord's length, saturating
(``scale`` (1 - exp(-bend / scale))), so a lane that bends a little is pulled straight while a real turn (bend
about 0.7 for a right angle) feels almost nothing. Offsets are relative to the chord, so shrinking a lane
does not lower the loss, and existence is not in its gradient. A mean over the lanes can still be lowered by
more straight lanes: measured, after 1000 fine-tuning steps at weight 1 without a count term the one-step
sample decoded 31 lanes per held-out tile against the data's 12 (24 pruned as duplicates). So the junction
loss's lane-count term (``count_loss``) comes with it. Fine-tuned 4000 steps with it, `mid_req` draws
straighter roads (0.39 of the crops' lanes straight) but fewer lanes, and a larger lane Fréchet
(docs/generator_runs/world_plan/README.md).
"""

from __future__ import annotations

import torch

from vectorworld.generation.learned.bezier import CONTROL_POINTS, MIN_HANDLE_M
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M
from vectorworld.train.junction_loss import count_loss

MIN_CHORD_M = 3.0
"""Chords shorter than this count as this long (a stub's direction is noise)."""


def lane_bend(control: torch.Tensor) -> torch.Tensor:
    """(..., L) sum of the two inner control points' distances from the chord line over the chord length, of
    Bézier control points (..., L, 4, 2) m; 0 for a straight lane."""
    p0, p3 = control[..., 0, :], control[..., CONTROL_POINTS - 1, :]
    chord = p3 - p0
    length = chord.norm(dim=-1, keepdim=True)
    normal = torch.stack([-chord[..., 1], chord[..., 0]], -1) / length.clamp(min=1e-6)
    offsets = ((control[..., 1:3, :] - p0[..., None, :]) * normal[..., None, :]).sum(-1).abs()   # (..., L, 2)
    return offsets.sum(-1) / length[..., 0].clamp(min=MIN_CHORD_M)


def pinned(control: torch.Tensor, hints: torch.Tensor) -> torch.Tensor:
    """Control points (B, L, 4, 2) m pinned to their port hints (B, L, 6) as the generator pins decoded lanes
    (:func:`~vectorworld.generation.learned.bezier.pin_to_ports`, in torch): a lane whose end is straight
    but not along its port's heading bends once pinned, so the loss judges the pinned lane."""
    xy = hints[..., 2:4] * HALF_TILE_M
    heading = hints[..., 4:6] / hints[..., 4:6].norm(dim=-1, keepdim=True).clamp(min=1e-9)
    out = list(control.unbind(-2))
    for flag, end, inner, sign in ((0, 0, 1, 1.0), (1, 3, 2, -1.0)):
        on = hints[..., flag:flag + 1] > 0.5
        handle = (control[..., inner, :] - control[..., end, :]).norm(dim=-1, keepdim=True).clamp(min=MIN_HANDLE_M)
        out[end] = torch.where(on, xy, out[end])
        out[inner] = torch.where(on, xy + sign * handle * heading, out[inner])
    return torch.stack(out, -2)


def straight_loss(lane_feat: torch.Tensor, lane_logit: torch.Tensor, batch: dict[str, torch.Tensor],
                  scale: float = 0.1, count_weight: float = 10.0) -> tuple[torch.Tensor, dict[str, float]]:
    """Mean saturating bend of the decoded frontier lanes of a one-step sample (lane_feat (B, L, 8)
    normalised Bézier features, lane_logit (B, L)), pinned to the batch's port hints when it has them (see
    :func:`pinned`), plus ``count_weight`` times :func:`count_loss`; returns the loss and its parts (floats)."""
    b, n = lane_logit.shape
    control = lane_feat.reshape(b, n, CONTROL_POINTS, 2) * HALF_TILE_M
    if "lane_hint" in batch:
        control = pinned(control, batch["lane_hint"])
    exists = ((lane_logit.detach() > 0.0) & ~batch["lane_cond"]).to(control.dtype)
    bend = lane_bend(control)
    penalty = scale * (1.0 - torch.exp(-bend / scale))
    count = exists.sum().clamp(min=1.0)
    count_err, bias = count_loss(lane_logit, batch)
    loss = (penalty * exists).sum() / count + count_weight * count_err
    return loss, {"bend": float((bend.detach() * exists).sum() / count), "count_bias": float(bias.detach())}
