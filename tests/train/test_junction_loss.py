"""The junction loss measures how far decoded frontier lane ends lie from a joint, and pulls them onto one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.generation.conftest import one_torch_thread  # noqa: F401  (the fixture)
from tests.generation.synthetic_tiles import synthetic_tiles
from vectorworld.generation.learned.egr_dit import DiTConfig
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M
from vectorworld.generation.learned.vae import VAEConfig
from vectorworld.train.generator_training import TrainConfig, dit_loss_fn
from vectorworld.train.junction_loss import junction_distances, junction_loss

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _line(a: tuple[float, float], b: tuple[float, float]) -> torch.Tensor:
    """Control points (4, 2) of the straight lane a -> b."""
    a_, b_ = torch.tensor(a), torch.tensor(b)
    return torch.stack([a_ + (b_ - a_) * s for s in (0.0, 1 / 3, 2 / 3, 1.0)])


def _frontier(*lanes: torch.Tensor, slots: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    control = torch.zeros(1, slots, 4, 2)
    exists = torch.zeros(1, slots, dtype=torch.bool)
    for i, lane in enumerate(lanes):
        control[0, i], exists[0, i] = lane, True
    return control, exists


def test_a_junction_between_new_lanes_and_the_border_cost_nothing() -> None:
    # border (-32, 0) -> junction (0, 0) -> border (32, 5): every end is at a joint
    control, exists = _frontier(_line((-32.0, 0.0), (0.0, 0.0)), _line((0.0, 0.0), (32.0, 5.0)))
    none = torch.zeros(1, 4, dtype=torch.bool)
    d = junction_distances(control, exists, torch.zeros_like(control), none, tau_m=0.1)
    assert float(d[0, :2].abs().max()) < 0.01


def test_a_dangling_end_costs_its_distance_to_the_nearest_joint() -> None:
    # the second lane starts 5 m past the first one's end, 20 m from the border: both ends dangle by 5 m
    control, exists = _frontier(_line((-32.0, 0.0), (0.0, 0.0)), _line((5.0, 0.0), (32.0, 0.0)))
    none = torch.zeros(1, 4, dtype=torch.bool)
    d = junction_distances(control, exists, torch.zeros_like(control), none, tau_m=0.1)
    assert float(d[0, 0, 1]) == pytest.approx(5.0, abs=0.01)   # end of lane 0
    assert float(d[0, 1, 0]) == pytest.approx(5.0, abs=0.01)   # start of lane 1
    assert float(d[0, 0, 0]) < 0.01 and float(d[0, 1, 1]) < 0.01  # the border ends


def test_known_lanes_are_joints_but_a_lane_is_not_its_own() -> None:
    known_control, known = _frontier(_line((-32.0, 2.0), (-3.0, 2.0)))
    # a new lane starting where the known lane ends, ending in the interior far from anything
    control, exists = _frontier(_line((-3.0, 2.0), (10.0, 2.0)))
    d = junction_distances(control, exists, known_control, known, tau_m=0.1)
    assert float(d[0, 0, 0]) < 0.01                     # starts at the known lane's end
    # its end (10, 2) is 13 m from its own start, which does not count: the border, 22 m, is the nearest
    assert float(d[0, 0, 1]) == pytest.approx(HALF_TILE_M - 10.0, abs=0.01)


def test_the_loss_ignores_missing_slots_and_pulls_dangling_ends_together() -> None:
    lanes = torch.stack([_line((-32.0, 0.0), (0.0, 0.0)), _line((4.0, 0.0), (32.0, 0.0)),
                         _line((0.0, 0.0), (0.0, 0.0)), _line((0.0, 0.0), (0.0, 0.0))])[None]
    feat = (lanes / HALF_TILE_M).reshape(1, 4, 8).clone().requires_grad_(True)
    logit = torch.tensor([[5.0, 5.0, -5.0, -5.0]])
    batch = {"lane_feat": torch.zeros(1, 4, 8), "lane_valid": torch.tensor([[True, True, False, False]]),
             "lane_cond": torch.zeros(1, 4, dtype=torch.bool)}
    loss, parts = junction_loss(feat, logit, batch)
    assert parts["junction_m"] == pytest.approx(2.0, abs=0.05)  # two of the four ends dangle by 4 m
    loss.backward()
    grad = feat.grad.reshape(1, 4, 4, 2)
    assert float(grad[0, 0, 3, 0]) < 0.0 < float(grad[0, 1, 0, 0])  # descent moves end(0) and start(1) together
    assert float(grad[0, 2:].abs().sum()) == 0.0


def test_dit_loss_with_junction_weight_trains_the_dit_on_the_one_step_sample() -> None:
    from vectorworld.generation.learned.meanflow import MeanFlowConfig
    from vectorworld.generation.learned.outpaint import OutpaintModel

    torch.manual_seed(0)
    vae = VAEConfig(max_lanes=12, max_agents=8, hidden=32, latent=8)
    dit = DiTConfig(latent=8, max_lanes=12, max_agents=8, dim=32, depth=2, heads=2)
    model = OutpaintModel(vae, dit, 0.7)
    model.vae.eval().requires_grad_(False)
    tiles = synthetic_tiles(4, seed=3, max_lanes=12, max_agents=8)
    fn = dit_loss_fn(model, tiles, TrainConfig(batch_size=3), MeanFlowConfig(), junction_weight=0.05)
    loss, parts = fn(np.random.default_rng(0), torch.Generator().manual_seed(0))
    assert "junction_m" in parts and np.isfinite(parts["junction_m"])
    plain = dit_loss_fn(model, tiles, TrainConfig(batch_size=3), MeanFlowConfig())
    alone, alone_parts = plain(np.random.default_rng(0), torch.Generator().manual_seed(0))
    assert "junction_m" not in alone_parts and float(loss) != float(alone)   # the term is added, and only with a weight
    loss.backward()
    assert any(float(p.grad.abs().sum()) > 0.0 for p in model.dit.parameters() if p.grad is not None)


def _loss_batch(lanes: torch.Tensor, logit: torch.Tensor, valid: list[bool]
                ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    n = lanes.shape[0]
    feat = (lanes / HALF_TILE_M).reshape(1, n, 8).clone().requires_grad_(True)
    batch = {"lane_feat": torch.zeros(1, n, 8), "lane_valid": torch.tensor([valid]),
             "lane_cond": torch.zeros(1, n, dtype=torch.bool)}
    return feat, logit, batch


def test_a_lane_shrunk_onto_a_junction_is_no_way_out() -> None:
    # the degenerate optimum of the distance term alone: an extra lane of length 0 at the junction
    through = [_line((-32.0, 0.0), (0.0, 0.0)), _line((0.0, 0.0), (32.0, 0.0))]
    stub = _line((0.0, 0.0), (0.0, 0.0))
    feat, logit, batch = _loss_batch(torch.stack(through + [stub]), torch.tensor([[5.0, 5.0, 5.0]]),
                                     [True, True, False])
    loss, parts = junction_loss(feat, logit, batch)
    assert parts["junction_m"] < 0.01                  # every end is at a joint ...
    assert parts["short_m"] == pytest.approx(1.0, abs=0.01)   # ... but one of 3 lanes is 3 m too short
    assert parts["count_bias"] == pytest.approx(1.0, abs=0.03)  # and there is one lane too many
    clean, clean_parts = junction_loss(*_loss_batch(torch.stack(through + [stub]),
                                                    torch.tensor([[5.0, 5.0, -5.0]]), [True, True, False]))
    assert float(clean) < float(loss) and clean_parts["short_m"] == 0.0


def test_ends_within_the_margin_cost_nothing() -> None:
    lanes = torch.stack([_line((-32.0, 0.0), (0.0, 0.0)), _line((0.3, 0.0), (32.0, 0.0))])
    feat, logit, batch = _loss_batch(lanes, torch.tensor([[5.0, 5.0]]), [True, True])
    loss, parts = junction_loss(feat, logit, batch, tau_m=0.05)
    assert parts["junction_m"] == pytest.approx(0.15, abs=0.02)
    assert float(loss) < 0.01


def test_a_hinted_slot_that_does_not_exist_costs_its_cross_entropy() -> None:
    lanes = torch.stack([_line((-32.0, 0.0), (0.0, 0.0)), _line((0.0, 0.0), (32.0, 0.0))])
    feat, _, batch = _loss_batch(lanes, torch.zeros(1, 2), [True, True])
    hint = torch.zeros(1, 2, 6)
    hint[0, 1, 0] = 1.0                                    # slot 1 continues an out port
    batch["lane_hint"] = hint
    alive, alive_parts = junction_loss(feat, torch.tensor([[5.0, 5.0]]), batch)
    dropped, dropped_parts = junction_loss(feat, torch.tensor([[5.0, -5.0]]), batch)
    assert alive_parts["hinted_exist"] < 0.01 < 4.0 < dropped_parts["hinted_exist"]
    assert float(dropped) > float(alive)
