"""Free-slot rank embedding of the EGR-DiT (DiTConfig.slot_ranks)."""

from __future__ import annotations

from dataclasses import replace

import torch

from vectorworld.generation.learned.egr_dit import DiTConfig, EGRDiT, free_ranks

CONFIG = DiTConfig(latent=4, max_lanes=5, max_agents=3, dim=32, depth=2, heads=2, edge_dim=8)


def test_free_ranks_count_free_slots_per_kind() -> None:
    cond = torch.tensor([[True, True, False, False, False, True, False, False],
                         [False, False, True, False, True, False, True, False]])
    assert free_ranks(cond, 5).tolist() == [[0, 0, 0, 1, 2, 0, 0, 1], [0, 1, 0, 2, 0, 0, 0, 1]]


def _output_of_swapped_free_lanes(slot_ranks: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs of a randomly weighted DiT for z, and for z with free lane slots 2 and 4 swapped (swapped
    back), so that an exchangeable model gives the same tensor twice."""
    torch.manual_seed(0)
    model = EGRDiT(replace(CONFIG, slot_ranks=slot_ranks))
    with torch.no_grad():
        for p in model.parameters():  # the output layer starts at zero: give every weight a value
            p.normal_(0.0, 0.3)
    z = torch.randn(1, 8, 4)
    cond = torch.tensor([[True, True, False, False, False, True, False, False]])
    edges = torch.zeros(1, 5, 5, dtype=torch.long)
    r, t = torch.zeros(1), torch.ones(1)
    perm = torch.tensor([0, 1, 4, 3, 2, 5, 6, 7])
    with torch.no_grad():
        plain = model(z, r, t, cond, edges)
        swapped = model(z[:, perm], r, t, cond, edges)[:, perm]
    return plain, swapped


def test_without_ranks_free_slots_are_exchangeable() -> None:
    plain, swapped = _output_of_swapped_free_lanes(slot_ranks=False)
    assert torch.allclose(plain, swapped, atol=1e-5)


def test_ranks_tell_free_slots_apart() -> None:
    plain, swapped = _output_of_swapped_free_lanes(slot_ranks=True)
    assert (plain - swapped).abs().max() > 1e-2


def test_a_saved_rank_model_loads_with_its_ranks(tmp_path) -> None:
    from vectorworld.generation.learned.outpaint import OutpaintModel
    from vectorworld.generation.learned.vae import VAEConfig

    dit = replace(CONFIG, slot_ranks=True)
    vae = VAEConfig(max_lanes=dit.max_lanes, max_agents=dit.max_agents, hidden=16, latent=dit.latent)
    model = OutpaintModel(vae, dit)
    with torch.no_grad():
        model.dit.rank.weight.add_(1.0)
    loaded = OutpaintModel.load(model.save(tmp_path / "ckpt"))
    assert loaded.dit.config.slot_ranks
    assert torch.equal(loaded.dit.rank.weight, model.dit.rank.weight)
