"""Checkpoint round trip and typed errors for missing, corrupt or mismatched checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.generation.synthetic_tiles import synthetic_tiles
from vectorworld.errors import CheckpointError
from vectorworld.generation.learned.egr_dit import DiTConfig
from vectorworld.generation.learned.outpaint import OutpaintModel, SamplerConfig
from vectorworld.generation.learned.vae import VAEConfig, batch_to_torch

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VAE = VAEConfig(max_lanes=12, max_agents=8, hidden=32, latent=8)
DIT = DiTConfig(latent=8, max_lanes=12, max_agents=8, dim=32, depth=2, heads=2, edge_dim=8)


def _model() -> OutpaintModel:
    model = OutpaintModel(VAE, DIT, latent_scale=0.7)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=gen))
    return model.eval()


def test_round_trip_reproduces_samples(tmp_path: Path) -> None:
    model = _model()
    model.save(tmp_path / "ckpt", metadata={"note": "test"})
    loaded = OutpaintModel.load(tmp_path / "ckpt")
    assert float(loaded.latent_scale) == pytest.approx(0.7)
    context = batch_to_torch({k: v[:1] for k, v in synthetic_tiles(1, max_lanes=12, max_agents=8).items()})
    a, za = model.outpaint(context, SamplerConfig(candidates=3), torch.Generator().manual_seed(1))
    b, zb = loaded.outpaint(context, SamplerConfig(candidates=3), torch.Generator().manual_seed(1))
    assert torch.equal(za, zb)
    assert torch.equal(a["lane_feat"], b["lane_feat"])
    meta = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert meta["metadata"] == {"note": "test"} and meta["dit"]["edge_gating"] is True


def test_missing_checkpoint_raises(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not found"):
        OutpaintModel.load(tmp_path / "nothing")


def test_corrupt_weights_raise(tmp_path: Path) -> None:
    folder = _model().save(tmp_path / "ckpt")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="corrupt"):
        OutpaintModel.load(folder)


def test_corrupt_config_raises(tmp_path: Path) -> None:
    folder = _model().save(tmp_path / "ckpt")
    (folder / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError):
        OutpaintModel.load(folder)


def test_mismatched_config_raises(tmp_path: Path) -> None:
    folder = _model().save(tmp_path / "ckpt")
    meta = json.loads((folder / "config.json").read_text())
    meta["dit"]["dim"] = 48
    (folder / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="shape|match"):
        OutpaintModel.load(folder)
    meta["dit"]["dim"] = 32
    meta["vae"]["no_such_option"] = 1
    (folder / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="invalid"):
        OutpaintModel.load(folder)
