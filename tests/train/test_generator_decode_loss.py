"""The one-step decode loss judges exactly what the one-step sampler produces, on frontier slots only."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from tests.generation.conftest import one_torch_thread  # noqa: F401  (the fixture)
from tests.generation.synthetic_tiles import synthetic_tiles
from vectorworld.generation.learned.egr_dit import DiTConfig
from vectorworld.generation.learned.meanflow import sample_meanflow
from vectorworld.generation.learned.outpaint import OutpaintModel
from vectorworld.generation.learned.vae import VAEConfig, batch_to_torch
from vectorworld.train.generator_training import one_step_decode_loss

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VAE = VAEConfig(max_lanes=12, max_agents=8, hidden=32, latent=8)
DIT = DiTConfig(latent=8, max_lanes=12, max_agents=8, dim=32, depth=2, heads=2)


def _setup() -> tuple[OutpaintModel, dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = OutpaintModel(VAE, DIT, 0.7).eval()
    batch = batch_to_torch(synthetic_tiles(3, seed=4, max_lanes=12, max_agents=8))
    with torch.no_grad():
        x = model.latents(batch)
    return model, batch, x, model.cond_mask(batch)


def _fn(model: OutpaintModel, batch: dict[str, torch.Tensor], cond: torch.Tensor):  # noqa: ANN202
    return lambda z, r, t: model.dit(z, r, t, cond, batch["edges"], hints=batch["lane_hint"])


def test_decode_loss_is_the_cross_entropy_of_the_one_step_sample() -> None:
    model, batch, x, cond = _setup()
    fn = _fn(model, batch, cond)
    _, parts = one_step_decode_loss(model, fn, x, cond, batch, torch.Generator().manual_seed(5))
    sample = sample_meanflow(fn, x, cond, 1, torch.Generator().manual_seed(5))
    out = model.vae.decode(sample * model.latent_scale, with_edges=False)
    free = ~batch["lane_cond"]
    expected = F.binary_cross_entropy_with_logits(out["lane_logit"][free], batch["lane_valid"][free].float())
    assert parts["dec_lane_exist"] == pytest.approx(float(expected.detach()), rel=1e-5)


def test_decode_loss_ignores_known_slots_and_trains_the_dit() -> None:
    model, batch, x, cond = _setup()
    fn = _fn(model, batch, cond)
    loss, _ = one_step_decode_loss(model, fn, x, cond, batch, torch.Generator().manual_seed(5))
    relabelled = dict(batch, lane_valid=batch["lane_valid"] ^ batch["lane_cond"])  # flip only known slots
    again, _ = one_step_decode_loss(model, fn, x, cond, relabelled, torch.Generator().manual_seed(5))
    assert float(again.detach()) == pytest.approx(float(loss.detach()), rel=1e-6)
    loss.backward()
    grads = [p.grad for p in model.dit.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0.0 for g in grads)
