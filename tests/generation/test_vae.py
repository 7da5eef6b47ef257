"""Gated VAE: shapes, the motion gate, a tiny overfit whose loss drops."""

from __future__ import annotations

import pytest
import torch

from tests.generation.synthetic_tiles import synthetic_tiles
from vectorworld.generation.learned.vae import TileVAE, VAEConfig, batch_to_torch
from vectorworld.train.generator_training import TrainConfig, train_vae

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONFIG = VAEConfig(max_lanes=12, max_agents=8, hidden=32, latent=8)


def test_encode_decode_shapes() -> None:
    vae = TileVAE(CONFIG)
    batch = batch_to_torch(synthetic_tiles(3, max_lanes=12, max_agents=8))
    mu, logvar = vae.encode(batch)
    assert mu.shape == logvar.shape == (3, 20, 8)
    out = vae.decode(mu)
    assert out["lane_feat"].shape == (3, 12, 8) and out["lane_logit"].shape == (3, 12)
    assert out["edge_logits"].shape == (3, 12, 12, 5)
    assert out["agent_feat"].shape == (3, 8, 23) and out["agent_logit"].shape == (3, 8)
    assert "edge_logits" not in vae.decode(mu, with_edges=False)


def test_motion_gate_mixes_motion_embedding() -> None:
    vae = TileVAE(CONFIG)
    feats = torch.zeros(1, 2, 23)
    feats[0, 1, 11:] = 0.5                        # second agent moves
    h, gate = vae.agent_in(feats, torch.ones(1, 2))
    assert gate.shape == (1, 2, 1) and ((gate > 0) & (gate < 1)).all()
    assert not torch.allclose(h[0, 0], h[0, 1])


def test_tiny_overfit_loss_drops() -> None:
    tiles = synthetic_tiles(16, seed=2, max_lanes=12, max_agents=8)
    _, result = train_vae(tiles, CONFIG, TrainConfig(steps=60, batch_size=8, lr=3e-3, warmup_steps=5,
                                                     log_every=20))
    first, last = result.history[0][1], result.history[-1][1]
    assert last["loss"] < 0.5 * first["loss"]
    assert last["lane_pts_m"] < first["lane_pts_m"]


def test_a_curve_basis_first_cached_under_inference_mode_still_trains() -> None:
    from vectorworld.generation.learned import vae as vae_module

    vae_module._BASIS.clear()
    model = TileVAE(CONFIG)
    batch = batch_to_torch(synthetic_tiles(2, max_lanes=12, max_agents=8))
    with torch.inference_mode():
        model.decode(model.encode(batch)[0])                 # the generator's path caches the basis
    mu, _ = model.encode(batch)
    loss = vae_module.curve_points(model.decode(mu)["lane_feat"]).square().mean()
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
