"""Outpainting as masked completion: VAE latents of the known tokens held fixed, frontier tokens sampled.

:class:`OutpaintModel` bundles the VAE, the EGR-DiT and the latent scale (latents are divided by it so
the DiT sees roughly unit variance). ``outpaint`` encodes one context tile, samples ``candidates`` tiles
in one batched network call per step, and decodes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from vectorworld.errors import CheckpointError, ConfigError
from vectorworld.generation.learned.checkpoints import load_weights, read_config, save_checkpoint
from vectorworld.generation.learned.egr_dit import DiTConfig, EGRDiT
from vectorworld.generation.learned.meanflow import sample_flow_matching, sample_meanflow
from vectorworld.generation.learned.vae import TileVAE, VAEConfig

SAMPLERS = ("meanflow", "flow_matching")


@dataclass(frozen=True)
class SamplerConfig:
    """How to sample: ``meanflow`` (1 step = one network call) or the ``flow_matching`` Euler baseline."""

    sampler: str = "meanflow"
    steps: int = 1
    candidates: int = 4

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise ConfigError(f"sampler must be one of {SAMPLERS}, got {self.sampler!r}")
        if self.steps < 1 or self.candidates < 1:
            raise ConfigError("sampler steps and candidates must be >= 1")


class OutpaintModel(nn.Module):
    """VAE + EGR-DiT + latent scale: the whole learned tile generator network."""

    def __init__(self, vae_config: VAEConfig, dit_config: DiTConfig, latent_scale: float = 1.0) -> None:
        super().__init__()
        if dit_config.latent != vae_config.latent or dit_config.max_lanes != vae_config.max_lanes:
            raise ConfigError("DiT latent size / lane capacity must match the VAE's")
        self.vae = TileVAE(vae_config)
        self.dit = EGRDiT(dit_config)
        self.register_buffer("latent_scale", torch.tensor(float(latent_scale)))

    def latents(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Scaled posterior means (B, N, Z) of a batch of tiles."""
        mu, _ = self.vae.encode(batch)
        return mu / self.latent_scale

    def cond_mask(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, N) bool: known tokens (lanes then agents)."""
        return torch.cat([batch["lane_cond"], batch["agent_cond"]], 1)

    @torch.no_grad()
    def outpaint(self, context: dict[str, torch.Tensor], sampler: SamplerConfig,
                 generator: torch.Generator | None = None) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Sample ``sampler.candidates`` completions of one context tile (batch of 1).

        Returns the decoded candidates (see TileVAE.decode, leading dimension C, without edge logits:
        decode the chosen one with ``vae.decode``) and their latents (C, N, Z), unscaled.
        Condition-token latents equal the context's exactly.
        """
        x = self.latents(context)
        c = sampler.candidates
        x = x.expand(c, -1, -1).contiguous()
        cond1 = self.cond_mask(context)
        terms = self.dit.edge_terms(cond1, context["edges"])
        cond = cond1.expand(c, -1)

        def fn(z: torch.Tensor, r: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return self.dit(z, r, t, cond, context["edges"], terms, context.get("lane_hint"))

        run = sample_meanflow if sampler.sampler == "meanflow" else sample_flow_matching
        z = run(fn, x, cond, sampler.steps, generator) * self.latent_scale
        return self.vae.decode(z, with_edges=False), z

    def save(self, folder: str | Path, metadata: dict[str, object] | None = None) -> Path:
        config = {"vae": self.vae.config.to_dict(), "dit": self.dit.config.to_dict(),
                  "latent_scale": float(self.latent_scale), "metadata": metadata or {}}
        return save_checkpoint(folder, {"vae": self.vae, "dit": self.dit}, config)

    @staticmethod
    def configs(folder: str | Path) -> tuple[VAEConfig, DiTConfig, float]:
        """The VAE and DiT configs and the latent scale of a checkpoint folder; CheckpointError when invalid."""
        meta = read_config(folder)
        try:
            return VAEConfig(**meta["vae"]), DiTConfig(**meta["dit"]), float(meta["latent_scale"])
        except (KeyError, TypeError, ValueError, ConfigError) as err:
            raise CheckpointError(f"checkpoint config in {folder} is invalid: {err}") from err

    @classmethod
    def load(cls, folder: str | Path) -> OutpaintModel:
        """Load a checkpoint folder; CheckpointError when missing, corrupt or mismatched."""
        vae_config, dit_config, scale = cls.configs(folder)
        try:
            model = cls(vae_config, dit_config, scale)
        except ConfigError as err:
            raise CheckpointError(f"checkpoint config in {folder} is invalid: {err}") from err
        load_weights(folder, {"vae": model.vae, "dit": model.dit})
        model.latent_scale.fill_(scale)
        return model.eval()
