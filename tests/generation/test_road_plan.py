"""The road-plan prior: keys, nearest-neighbour draws, storage, and the plan reaching the DiT's hints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.generation.test_learned import two_lane_request
from tests.generation.test_tile_tensors import _crossing_tile
from vectorworld.errors import CheckpointError
from vectorworld.generation.learned.filter_config import FrontierPort
from vectorworld.generation.learned.road_plan import NEIGHBOURS, RoadPlans, context_key, plan_key
from vectorworld.generation.learned.tile_context import context_from_tile, tile_plan

ROW = np.array([1, 0, 0.3, 1, 0, -1], np.float32)


def _port(y: float, is_out: bool, required: bool = True) -> FrontierPort:
    return FrontierPort(index=0, xy=np.array([0.0, y]), yaw=0.0 if is_out else np.pi, is_out=is_out,
                        required=required, lane_id=0)


def test_the_key_counts_required_ports_by_direction_and_averages_their_y() -> None:
    key = plan_key([_port(0.0, True), _port(3.5, False), _port(7.0, False), _port(20.0, True, False)], True)
    np.testing.assert_allclose(key, [1, 2, 3.5 / 32, 1], atol=1e-6)    # mean of 0, 3.5, 7


def test_a_plan_is_drawn_only_from_the_nearest_tiles() -> None:
    far = [(np.array([3, 3, 0, 0], np.float32), ROW[None]) for _ in range(40)]
    near = [(np.array([1, 1, 0.05, 0], np.float32), np.zeros((0, 6), np.float32)) for _ in range(NEIGHBOURS)]
    plans = RoadPlans.from_entries(far + near)
    rng = np.random.default_rng(0)
    draws = [plans.draw(np.array([1, 1, 0, 0], np.float32), rng) for _ in range(50)]
    assert all(len(d) == 0 for d in draws)
    far_draw = plans.draw(np.array([3, 3, 0, 0], np.float32), rng)
    np.testing.assert_array_equal(far_draw, ROW[None])


def test_odds_make_a_plan_with_a_side_road_that_much_likelier() -> None:
    key = np.array([1, 1, 0, 0], np.float32)
    with_road = [(key, ROW[None]) for _ in range(4)]
    without = [(key, np.zeros((0, 6), np.float32)) for _ in range(NEIGHBOURS - 4)]
    plans = RoadPlans.from_entries(with_road + without)
    rng = np.random.default_rng(0)
    for odds, share in ((1.0, 4 / NEIGHBOURS), (6.0, 24 / (24 + NEIGHBOURS - 4))):
        drawn = np.mean([len(plans.draw(key, rng, odds)) > 0 for _ in range(4000)])
        assert abs(drawn - share) < 0.03, (odds, drawn, share)


def test_the_plans_of_a_tile_round_trip_through_a_checkpoint_folder(tmp_path: Path) -> None:
    tile = _crossing_tile()
    plans = RoadPlans.from_tiles([tile, tile])
    np.testing.assert_array_equal(plans.rows[0, :plans.counts[0]], tile_plan(tile))
    np.testing.assert_array_equal(plans.keys[0], context_key(context_from_tile(tile)))
    plans.save(tmp_path)
    again = RoadPlans.load(tmp_path)
    for field in ("keys", "rows", "counts"):
        np.testing.assert_array_equal(getattr(again, field), getattr(plans, field))


def test_a_checkpoint_without_plans_names_the_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="road_plans.npz"):
        RoadPlans.load(tmp_path)


def test_malformed_plans_are_refused() -> None:
    with pytest.raises(ValueError, match="same 2 plans"):
        RoadPlans(np.zeros((2, 4)), np.zeros((3, 1, 6)), np.zeros(2))


def tiny_plan_model(border_hints: bool = True) -> object:
    """An untrained tiny OutpaintModel (with border hints by default)."""
    from vectorworld.generation.learned.egr_dit import DiTConfig
    from vectorworld.generation.learned.outpaint import OutpaintModel
    from vectorworld.generation.learned.vae import VAEConfig

    return OutpaintModel(VAEConfig(max_lanes=12, max_agents=8, hidden=16, latent=4),
                         DiTConfig(latent=4, max_lanes=12, max_agents=8, dim=16, depth=1, heads=2, edge_dim=4,
                                   border_hints=border_hints)).eval()


def spy_on_hints(model: object) -> list[np.ndarray]:
    """The lane hints (L, 6) of every later ``model.outpaint`` call, appended to the returned list."""
    seen: list[np.ndarray] = []
    outpaint = model.outpaint

    def spy(batch, sampler, generator):  # noqa: ANN001, ANN202
        seen.append(batch["lane_hint"][0].numpy().copy())
        return outpaint(batch, sampler, generator)

    model.outpaint = spy
    return seen


@pytest.mark.usefixtures("one_torch_thread")
def test_a_model_trained_with_plans_gets_a_drawn_plan_after_its_port_hints() -> None:
    from vectorworld.generation.learned.generator import LearnedTileGenerator

    model = tiny_plan_model()
    seen = spy_on_hints(model)
    plans = RoadPlans.from_entries([(np.array([2, 0, 1.75 / 32, 0], np.float32), ROW[None])])
    gen = LearnedTileGenerator(model=model, fallback="test-straight", frozen_graph=False, road_plans=plans)
    gen.generate(two_lane_request())
    hints = seen[0]
    assert hints[2:4, 0].tolist() == [1.0, 1.0]          # the two known lanes' out ports
    np.testing.assert_array_equal(hints[4], ROW)         # then the plan
    assert not hints[5:].any()
