"""The resumable generator training run: k steps + resume + the rest == the whole run straight, bitwise."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.generation.conftest import one_torch_thread  # noqa: F401  (the fixture)
from tests.generation.synthetic_tiles import synthetic_tiles
from vectorworld.errors import ConfigError
from vectorworld.generation.learned.egr_dit import DiTConfig
from vectorworld.generation.learned.outpaint import OutpaintModel
from vectorworld.generation.learned.tile_tensors import TileTensors
from vectorworld.generation.learned.vae import VAEConfig
from vectorworld.train.generator_run import LATEST, STATE_FILE, RunConfig, run_training

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VAE = VAEConfig(max_lanes=12, max_agents=8, hidden=32, latent=8)
DIT = DiTConfig(latent=8, max_lanes=12, max_agents=8, dim=32, depth=2, heads=2)
CONFIG = RunConfig(vae=VAE, dit=DIT, vae_steps=4, dit_steps=6, batch_size=4, warmup_steps=2, log_every=2,
                   eval_every=3, eval_tiles=2, checkpoint_every_s=1e9)


def _data() -> tuple[dict, list[TileTensors]]:
    tiles = synthetic_tiles(8, seed=1, max_lanes=12, max_agents=8)
    held = synthetic_tiles(2, seed=9, max_lanes=12, max_agents=8)
    return tiles, [TileTensors(**{k: v[i] for k, v in held.items()}) for i in range(2)]


def _weights(run) -> dict[str, torch.Tensor]:  # noqa: ANN001
    return {**{f"vae.{k}": v for k, v in run.vae.state_dict().items()},
            **{f"dit.{k}": v for k, v in run.model.dit.state_dict().items()}}


def test_resume_equals_a_straight_run(tmp_path: Path) -> None:
    tiles, held = _data()
    straight = run_training(tiles, held, CONFIG, tmp_path / "a")
    assert straight.state.stage == "done" and straight.dit_trainer.step == 6
    run_training(tiles, held, CONFIG, tmp_path / "b", stop_after_steps=3)           # stops inside the VAE
    mid = run_training(tiles, held, CONFIG, tmp_path / "b", resume=True, stop_after_steps=7)  # inside the DiT
    assert mid.state.stage == "dit" and mid.dit_trainer.step == 3
    resumed = run_training(tiles, held, CONFIG, tmp_path / "b", resume=True)
    a, b = _weights(straight), _weights(resumed)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert [p["dit_step"] for p in resumed.state.curve] == [3.0, 6.0]
    assert [p["loss"] for p in resumed.state.curve] == [p["loss"] for p in straight.state.curve]
    assert (tmp_path / "b" / STATE_FILE).is_file() and (tmp_path / "b" / LATEST / "model.safetensors").is_file()


def test_without_resume_a_run_starts_over(tmp_path: Path) -> None:
    tiles, held = _data()
    run_training(tiles, held, CONFIG, tmp_path, stop_after_steps=5)
    again = run_training(tiles, held, CONFIG, tmp_path, stop_after_steps=2)
    assert again.vae_trainer.step == 2 and again.state.stage == "vae"


def test_a_finished_run_resumed_with_more_dit_steps_continues(tmp_path: Path) -> None:
    tiles, held = _data()
    run_training(tiles, held, CONFIG, tmp_path)
    longer = replace(CONFIG, dit_steps=9)
    extended = run_training(tiles, held, longer, tmp_path, resume=True)
    assert extended.state.stage == "done" and extended.dit_trainer.step == 9
    assert [p["dit_step"] for p in extended.state.curve] == [3.0, 6.0, 9.0]


def test_a_run_initialised_from_a_checkpoint_fine_tunes_its_dit_and_keeps_its_vae(tmp_path: Path) -> None:
    tiles, held = _data()
    run_training(tiles, held, CONFIG, tmp_path / "source")   # its model is exported to source/latest
    checkpoint = tmp_path / "source" / LATEST
    shipped = OutpaintModel.load(checkpoint)
    tune = replace(CONFIG, dit_steps=3, init_from=str(checkpoint))
    start = run_training(tiles, held, tune, tmp_path / "tune", stop_after_steps=CONFIG.vae_steps)
    assert start.state.stage == "dit" and start.dit_trainer.step == 0   # no VAE stage of its own
    assert start.state.latent_scale == pytest.approx(float(shipped.latent_scale))
    for key, value in shipped.dit.state_dict().items():
        assert torch.equal(start.model.dit.state_dict()[key], value), key
    tuned = run_training(tiles, held, tune, tmp_path / "tune2")
    assert tuned.state.stage == "done" and tuned.dit_trainer.step == 3
    for key, value in shipped.vae.state_dict().items():
        assert torch.equal(tuned.model.vae.state_dict()[key], value), key        # the VAE is never trained
    moved = [k for k, v in shipped.dit.state_dict().items() if not torch.equal(tuned.model.dit.state_dict()[k], v)]
    assert moved                                                                   # the DiT is


def test_a_run_with_the_vae_of_a_checkpoint_trains_a_new_dit_of_its_own_architecture(tmp_path: Path) -> None:
    tiles, held = _data()
    run_training(tiles, held, replace(CONFIG, vae_steps=7), tmp_path / "source")   # not the VAE this run would train
    source = OutpaintModel.load(tmp_path / "source" / LATEST)
    wider = replace(CONFIG, dit=replace(DIT, dim=48), dit_steps=3, vae_from=str(tmp_path / "source" / LATEST))
    straight = run_training(tiles, held, wider, tmp_path / "straight")
    assert straight.state.stage == "done" and straight.dit_trainer.step == 3
    assert straight.model.dit.config.dim == 48
    for key, value in source.vae.state_dict().items():
        assert torch.equal(straight.model.vae.state_dict()[key], value), key   # its VAE, never trained
    start = run_training(tiles, held, wider, tmp_path / "split", stop_after_steps=CONFIG.vae_steps + 1)
    assert start.state.stage == "dit" and start.dit_trainer.step == 1        # no VAE stage of its own
    resumed = run_training(tiles, held, wider, tmp_path / "split", resume=True)
    a, b = _weights(straight), _weights(resumed)
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize(("option", "changed", "named"), [
    ("vae_from", {"vae": replace(VAE, hidden=16)}, "vae config"),
    ("init_from", {"dit": replace(DIT, dim=16)}, "dit config"),
])
def test_a_checkpoint_of_another_architecture_names_the_config(tmp_path: Path, option: str, changed: dict,
                                                               named: str) -> None:
    tiles, held = _data()
    run_training(tiles, held, CONFIG, tmp_path / "source")
    other = replace(CONFIG, **changed, **{option: str(tmp_path / "source" / LATEST)})
    with pytest.raises(ConfigError, match=named):
        run_training(tiles, held, other, tmp_path / "new")


def test_held_out_curve_reports_where_the_lanes_of_a_tile_go() -> None:
    from vectorworld.generation.learned.generator import WEIGHTS_DIR
    from vectorworld.generation.learned.tile_context import context_from_tile
    from vectorworld.train.generator_run import validity_on_tiles

    held = synthetic_tiles(6, seed=4)
    tiles = [TileTensors(**{k: v[i] for k, v in held.items()}) for i in range(6)]
    new_lanes = [int((t.lane_valid & ~t.lane_cond).sum()) for t in tiles]
    seen, sampled, kept = [], [], []

    def count(i, tile, decoded, choice) -> None:  # noqa: ANN001 - the callback's documented arguments
        frontier = ~context_from_tile(tile).tiles.lane_cond
        exists = torch.sigmoid(decoded["lane_logit"]).numpy()[:, frontier] > 0.5
        seen.append(i)
        sampled.append(exists.sum(1).mean())
        kept.append(len(choice.check.keep))

    funnel = validity_on_tiles(OutpaintModel.load(WEIGHTS_DIR), tiles, candidates=2, on_tile=count)
    assert seen == list(range(6))
    assert funnel["data_lanes_per_tile"] == pytest.approx(sum(new_lanes) / 6) and min(new_lanes) >= 1
    # The shipped VAE decodes every lane of these plain roads from their own latents.
    assert funnel["vae_lanes_per_tile"] == pytest.approx(funnel["data_lanes_per_tile"])
    # The sampled and kept counts are the candidates' and the choices' own, averaged over the tiles.
    assert funnel["decoded_lanes_per_tile"] == pytest.approx(sum(sampled) / 6) and sum(sampled) > 0
    assert funnel["lanes_per_tile"] == pytest.approx(sum(kept) / 6) and sum(kept) > 0


def test_held_out_funnel_counts_every_dropped_lane_of_city_tiles_once() -> None:
    """On city tiles the shipped model's chosen candidates lose lanes; each is counted under one reason."""
    from vectorworld.generation.learned.generator import WEIGHTS_DIR
    from vectorworld.train.generator_run import validity_on_tiles
    from vectorworld.train.tile_corpus import CorpusConfig, build_corpus

    data = build_corpus(CorpusConfig(worlds=1, seed=50000))
    tiles = [TileTensors(**{k: v[i] for k, v in data.items()}) for i in range(4)]
    dropped: list[int] = []

    def count(i, tile, decoded, choice) -> None:  # noqa: ANN001 - the callback's documented arguments
        dropped.append(len(choice.slots) - len(choice.check.keep))

    funnel = validity_on_tiles(OutpaintModel.load(WEIGHTS_DIR), tiles, candidates=2, on_tile=count)
    reasons = {k: v for k, v in funnel.items() if k.startswith("pruned_")}
    assert set(reasons) == {f"pruned_{r}_per_tile" for r in ("duplicate", "looped", "kinked", "crossing",
                                                                   "pinched", "isolated", "bent", "spur")}
    assert sum(dropped) > 0
    assert sum(reasons.values()) * len(tiles) == pytest.approx(sum(dropped))


def test_a_run_with_a_weight_average_resumes_exactly_and_exports_the_average(tmp_path: Path) -> None:
    tiles, held = _data()
    averaged = replace(CONFIG, dit_ema=0.9)
    straight = run_training(tiles, held, averaged, tmp_path / "a")
    run_training(tiles, held, averaged, tmp_path / "b", stop_after_steps=CONFIG.vae_steps + 2)
    resumed = run_training(tiles, held, averaged, tmp_path / "b", resume=True)
    for mine, theirs in zip(straight.dit_trainer.ema, resumed.dit_trainer.ema, strict=True):
        assert torch.equal(mine, theirs)
    raw = {k: v.clone() for k, v in straight.model.dit.state_dict().items()}
    exported = OutpaintModel.load(tmp_path / "a" / LATEST).dit.state_dict()
    with straight.dit_trainer.averaged():
        inside = {k: v.clone() for k, v in straight.model.dit.state_dict().items()}
    assert all(torch.equal(exported[k], inside[k]) for k in raw)          # the checkpoint holds the average
    assert any(not torch.equal(inside[k], raw[k]) for k in raw)           # which is not the raw weights
    assert all(torch.equal(straight.model.dit.state_dict()[k], raw[k]) for k in raw)  # restored after the block


def test_the_weight_average_is_the_ramped_exponential_average_of_the_steps() -> None:
    from vectorworld.train.generator_training import TrainConfig, Trainer

    weight = torch.nn.Parameter(torch.zeros(3))
    target = torch.tensor([1.0, -2.0, 3.0])

    def loss_fn(rng, gen):  # noqa: ANN001, ANN202 - the trainer's loss signature
        return ((weight - target) ** 2).sum(), {}

    trainer = Trainer([weight], loss_fn, TrainConfig(steps=5, lr=0.1, warmup_steps=1, ema_decay=0.5))
    expected = weight.detach().clone()
    for step in range(5):
        trainer.train_step()
        decay = min(0.5, (1.0 + step) / (10.0 + step))
        expected = decay * expected + (1.0 - decay) * weight.detach()
    assert torch.allclose(trainer.ema[0], expected)
    plain = Trainer([torch.nn.Parameter(torch.zeros(3))], loss_fn, TrainConfig(steps=1))
    assert plain.ema is None


def test_a_fine_tune_averages_from_the_checkpoint_it_starts_from(tmp_path: Path) -> None:
    tiles, held = _data()
    run_training(tiles, held, CONFIG, tmp_path / "source")
    shipped = OutpaintModel.load(tmp_path / "source" / LATEST)
    tune = replace(CONFIG, dit_steps=3, dit_ema=0.99, init_from=str(tmp_path / "source" / LATEST))
    start = run_training(tiles, held, tune, tmp_path / "tune", stop_after_steps=CONFIG.vae_steps)
    with start.dit_trainer.averaged():
        for key, value in shipped.dit.state_dict().items():
            assert torch.equal(start.model.dit.state_dict()[key], value), key


def test_a_state_saved_without_an_average_starts_the_average_from_its_weights() -> None:
    from vectorworld.train.generator_training import TrainConfig, Trainer

    weight = torch.nn.Parameter(torch.zeros(2))

    def loss_fn(rng, gen):  # noqa: ANN001, ANN202 - the trainer's loss signature
        return ((weight - 1.0) ** 2).sum(), {}

    plain = Trainer([weight], loss_fn, TrainConfig(steps=3, lr=0.1, warmup_steps=1))
    plain.train_step()
    state = plain.state_dict()                        # "ema": None, as an older run without the average saved
    averaged = Trainer([weight], loss_fn, TrainConfig(steps=3, lr=0.1, warmup_steps=1, ema_decay=0.9))
    averaged.ema = [torch.full((2,), 7.0)]
    averaged.load_state_dict(state)
    assert torch.equal(averaged.ema[0], weight.detach())


def test_held_out_tiles_can_be_judged_with_the_flow_matching_sampler() -> None:
    """The curve of a flow-matching-only run samples K Euler steps: the candidates are that sampler's."""
    from vectorworld.generation.learned.generator import WEIGHTS_DIR
    from vectorworld.generation.learned.outpaint import SamplerConfig
    from vectorworld.generation.learned.tile_context import context_from_tile
    from vectorworld.generation.learned.tile_tensors import stack_tiles
    from vectorworld.generation.learned.vae import batch_to_torch
    from vectorworld.train.generator_run import validity_on_tiles

    held = synthetic_tiles(2, seed=4)
    tiles = [TileTensors(**{k: v[i] for k, v in held.items()}) for i in range(2)]
    model = OutpaintModel.load(WEIGHTS_DIR)
    seen: dict[str, list[torch.Tensor]] = {"meanflow": [], "flow_matching": []}
    for sampler in seen:
        validity_on_tiles(model, tiles, candidates=2, steps=3, seed=7, sampler=sampler,
                          on_tile=lambda i, tile, decoded, choice, s=sampler: seen[s].append(decoded["lane_feat"]))
    ctx = context_from_tile(tiles[1])
    batch = batch_to_torch({**stack_tiles([ctx.tiles]).as_dict(), "lane_hint": ctx.hints[None]}, "cpu")
    with torch.no_grad():
        direct, _ = model.outpaint(batch, SamplerConfig("flow_matching", 3, 2), torch.Generator().manual_seed(8))
    torch.testing.assert_close(seen["flow_matching"][1], direct["lane_feat"])
    assert not torch.allclose(seen["meanflow"][1], direct["lane_feat"])


def test_a_lane_crosses_the_tile_when_its_chord_runs_mostly_across() -> None:
    from vectorworld.generation.learned.road_plan import crosses

    assert crosses(np.array([[10.0, 32.0], [10.0, 0.0], [12.0, -32.0]]))
    assert not crosses(np.array([[0.0, 0.0], [30.0, 4.0]]))            # along the road
    assert not crosses(np.array([[0.0, 0.0], [3.0, 9.0]]))             # a short turn: 9 < 2 * 3 + 5


def test_a_run_with_road_plans_exports_the_corpus_plans_beside_its_weights(tmp_path: Path) -> None:
    from vectorworld.generation.learned.road_plan import RoadPlans

    tiles, held = _data()
    config = replace(CONFIG, dit=replace(DIT, border_hints=True))
    run = run_training(tiles, held, config, tmp_path)
    plans = RoadPlans.load(tmp_path / LATEST)
    assert len(plans.keys) == len(tiles["lane_valid"])
    assert OutpaintModel.load(tmp_path / LATEST).dit.config.border_hints
    assert "crossing_share" in run.state.curve[-1]
    plain = run_training(tiles, held, CONFIG, tmp_path / "plain")
    assert plain.state.stage == "done" and not (tmp_path / "plain" / LATEST / "road_plans.npz").exists()
