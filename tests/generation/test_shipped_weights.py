"""The shipped checkpoint loads, fits the size budget and generates deterministically per seed."""

from __future__ import annotations

import numpy as np
import pytest

from tests.generation.test_learned import two_lane_request
from vectorworld.generation import make_generator
from vectorworld.generation.learned.egr_dit import count_parameters
from vectorworld.generation.learned.generator import WEIGHTS_DIR, LearnedTileGenerator
from vectorworld.generation.learned.outpaint import OutpaintModel, SamplerConfig
from vectorworld.generation.learned.tile_context import build_context
from vectorworld.generation.learned.tile_tensors import stack_tiles
from vectorworld.generation.learned.vae import batch_to_torch

pytestmark = [pytest.mark.skipif(not (WEIGHTS_DIR / "model.safetensors").is_file(),
                                 reason="no shipped generator weights"),
              pytest.mark.usefixtures("one_torch_thread")]


def test_shipped_checkpoint_is_small_and_loads() -> None:
    total = sum(f.stat().st_size for f in WEIGHTS_DIR.rglob("*") if f.is_file())
    assert total <= 20 * 1024 * 1024
    model = OutpaintModel.load(WEIGHTS_DIR)
    assert 0.5e6 <= count_parameters(model) <= 5e6


def test_registered_learned_generator_is_deterministic_per_seed() -> None:
    import tests.straight_world  # noqa: F401

    gen = make_generator("learned", fallback="test-straight")
    assert isinstance(gen, LearnedTileGenerator)
    a = gen.generate(two_lane_request(seed=3))
    b = LearnedTileGenerator(fallback="test-straight").generate(two_lane_request(seed=3))
    assert a.used_fallback == b.used_fallback and a.links == b.links
    assert len(a.lanes) == len(b.lanes) and len(a.lanes) > 0
    for x, y in zip(a.lanes, b.lanes, strict=True):
        np.testing.assert_array_equal(x.points, y.points)
    np.testing.assert_array_equal(a.agents.xy, b.agents.xy)
    ports = {p.lane_id: p.xy for p in two_lane_request().ports}
    by_id = {lane.id: lane for lane in a.lanes}
    for known, new in a.links:                              # every link continues its port exactly
        if known in ports and new in by_id:
            assert np.linalg.norm(by_id[new].points[0] - ports[known]) <= 0.01


def test_a_generator_spec_names_its_checkpoint(tmp_path) -> None:  # noqa: ANN001
    from vectorworld.errors import ConfigError

    gen = make_generator(f"learned:{WEIGHTS_DIR}")
    assert isinstance(gen, LearnedTileGenerator) and gen.checkpoint == WEIGHTS_DIR
    for spec, words in ((f"learned:{tmp_path / 'none'}", "does not exist"), ("procedural:x", "takes no checkpoint"),
                        ("nope:x", "unknown name 'nope'")):
        with pytest.raises(ConfigError, match=words) as info:
            make_generator(spec)
        assert info.value.field == "generator"


def test_one_step_sampling_generates_frontier_lanes() -> None:
    """The one-step map u(z_1, 0, 1) is trained (the old checkpoint decoded almost no frontier lane there)."""
    import torch

    model = OutpaintModel.load(WEIGHTS_DIR)
    for seed in range(2):
        ctx = build_context(two_lane_request(seed), model.vae.config.max_lanes, model.vae.config.max_agents)
        batch = batch_to_torch({**stack_tiles([ctx.tiles]).as_dict(), "lane_hint": ctx.hints[None]})
        decoded, _ = model.outpaint(batch, SamplerConfig("meanflow", 1, 4), torch.Generator().manual_seed(seed))
        frontier = (torch.sigmoid(decoded["lane_logit"]) > 0.5) & ~batch["lane_cond"]
        assert (frontier.sum(1) >= 2).all()       # both ports need a continuing lane in every candidate
