"""Straightness loss: a lane that bends a little is pulled straight; turns, stubs and gone lanes are not."""

from __future__ import annotations

import torch

from vectorworld.generation.learned.tile_tensors import HALF_TILE_M
from vectorworld.train.straight_loss import lane_bend, straight_loss


def _lanes(*controls: list[list[float]]) -> torch.Tensor:
    """Normalised lane features (1, L, 8) of control points in metres."""
    return (torch.tensor(controls, dtype=torch.float64) / HALF_TILE_M).reshape(1, len(controls), 8)


def _batch(cond: list[bool], valid: list[bool] | None = None) -> dict[str, torch.Tensor]:
    return {"lane_cond": torch.tensor([cond]), "lane_valid": torch.tensor([valid or [True] * len(cond)])}


STRAIGHT = [[0, 0], [10, 0], [20, 0], [30, 0]]
WIGGLE = [[0, 0], [10, 0.5], [20, -0.5], [30, 0]]       # bends one way and back, 0.5 m off its chord
TURN = [[0, 0], [8, 0], [14, -6], [14, -14]]            # a right turn of radius about 14 m


def test_the_bend_is_the_inner_points_offsets_over_the_chord_and_does_not_shrink_with_the_lane() -> None:
    control = torch.tensor([STRAIGHT, WIGGLE, TURN], dtype=torch.float64)
    bend = lane_bend(control)
    assert bend[0] == 0.0
    assert torch.isclose(bend[1], torch.tensor(1.0 / 30.0, dtype=torch.float64))
    torch.testing.assert_close(lane_bend(control * 0.5), bend)      # chords of 7.5 m and more
    assert bend[2] > 0.5


def test_only_existing_frontier_lanes_count() -> None:
    feat = _lanes(WIGGLE, WIGGLE, WIGGLE)
    batch = _batch([True, False, False])
    loss, parts = straight_loss(feat, torch.tensor([[5.0, 5.0, -5.0]]), batch, count_weight=0.0)  # known, kept, gone
    alone, _ = straight_loss(_lanes(WIGGLE), torch.tensor([[5.0]]), _batch([False]), count_weight=0.0)
    torch.testing.assert_close(loss, alone)
    assert abs(parts["bend"] - 1.0 / 30.0) < 1e-9
    none, _ = straight_loss(feat, torch.tensor([[5.0, 5.0, 5.0]]), _batch([True] * 3), count_weight=0.0)
    assert none == 0.0


def test_more_lanes_than_the_data_holds_cost_their_count() -> None:
    feat = _lanes(STRAIGHT, STRAIGHT, STRAIGHT)
    data = _batch([False] * 3, valid=[True, False, False])                          # the data holds one
    exact, parts = straight_loss(feat, torch.tensor([[9.0, -9.0, -9.0]]), data)
    extra, extra_parts = straight_loss(feat, torch.tensor([[9.0, 9.0, 9.0]]), data)
    assert abs(parts["count_bias"]) < 1e-3 and float(exact) < 1e-6                 # straight, and as many
    assert extra_parts["count_bias"] > 1.9 and float(extra) > 10.0


def test_a_gradient_step_straightens_a_slightly_bent_lane_and_barely_moves_a_turn() -> None:
    feat = _lanes(WIGGLE, TURN).requires_grad_(True)
    loss, _ = straight_loss(feat, torch.tensor([[5.0, 5.0]]), _batch([False, False]), count_weight=0.0)
    loss.backward()
    grad = feat.grad.reshape(2, 8)
    assert grad[1].norm() < 0.02 * grad[0].norm()                  # a real turn feels almost nothing
    stepped = (feat.detach() - 0.01 * feat.grad).reshape(2, 4, 2) * HALF_TILE_M
    before = lane_bend(feat.detach().reshape(2, 4, 2) * HALF_TILE_M)
    assert lane_bend(stepped)[0] < before[0]


def test_dit_loss_with_straight_weight_adds_the_term_and_trains_the_dit() -> None:
    import numpy as np

    from tests.generation.synthetic_tiles import synthetic_tiles
    from vectorworld.generation.learned.egr_dit import DiTConfig
    from vectorworld.generation.learned.meanflow import MeanFlowConfig
    from vectorworld.generation.learned.outpaint import OutpaintModel
    from vectorworld.generation.learned.vae import VAEConfig
    from vectorworld.train.generator_training import TrainConfig, dit_loss_fn

    torch.manual_seed(0)
    vae = VAEConfig(max_lanes=12, max_agents=8, hidden=32, latent=8)
    model = OutpaintModel(vae, DiTConfig(latent=8, max_lanes=12, max_agents=8, dim=32, depth=2, heads=2), 0.7)
    with torch.no_grad():
        model.vae.lane_points[-1].bias[-1] = 5.0          # every decoded lane slot exists
    model.vae.eval().requires_grad_(False)
    tiles = synthetic_tiles(4, seed=3, max_lanes=12, max_agents=8)
    runs = {w: dit_loss_fn(model, tiles, TrainConfig(batch_size=3), MeanFlowConfig(), straight_weight=w)(
        np.random.default_rng(0), torch.Generator().manual_seed(0)) for w in (0.0, 1.0)}
    (plain, plain_parts), (loss, parts) = runs[0.0], runs[1.0]
    assert "bend" not in plain_parts and parts["bend"] > 0.0
    assert float(loss) > float(plain) and parts["mse"] == plain_parts["mse"]   # the same MeanFlow term, plus it
    loss.backward()
    assert any(float(p.grad.abs().sum()) > 0.0 for p in model.dit.parameters() if p.grad is not None)


def test_lanes_are_judged_pinned_to_their_ports_as_the_generator_pins_them() -> None:
    import numpy as np

    from vectorworld.generation.learned.bezier import pin_to_ports
    from vectorworld.train.straight_loss import pinned

    rng = np.random.default_rng(0)
    control = rng.normal(size=(12, 4, 2)) * 10.0
    hints = np.zeros((12, 6))
    hints[:5, 0], hints[3:8, 1] = 1.0, 1.0                       # starts at a port, ends at one, or both
    hints[:, 2:4], hints[:, 4:6] = rng.normal(size=(12, 2)) * 0.5, rng.normal(size=(12, 2))
    np.testing.assert_allclose(pinned(torch.tensor(control)[None], torch.tensor(hints)[None])[0].numpy(),
                               pin_to_ports(control, hints), atol=1e-9)
    # a straight lane drawn beside its port's ray bends once pinned, and the loss sees it
    feat = _lanes(STRAIGHT)
    hint = torch.tensor([[[1.0, 0.0, 0.0, 1.0 / HALF_TILE_M, 1.0, 0.0]]])      # its port 1 m to the left
    batch = {**_batch([False]), "lane_hint": hint}
    assert straight_loss(feat, torch.tensor([[5.0]]), _batch([False]), count_weight=0.0)[0] == 0.0
    assert straight_loss(feat, torch.tensor([[5.0]]), batch, count_weight=0.0)[0] > 0.0
