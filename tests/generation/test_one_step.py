"""The frozen one-step graph samples exactly what the eager one-step MeanFlow outpainting samples."""

from __future__ import annotations

import pickle

import pytest
import torch

from tests.generation.test_learned import two_lane_request
from vectorworld.generation.learned.egr_dit import DiTConfig
from vectorworld.generation.learned.generator import LearnedTileGenerator
from vectorworld.generation.learned.one_step import EdgeGraph, OneStepGraph
from vectorworld.generation.learned.outpaint import OutpaintModel, SamplerConfig
from vectorworld.generation.learned.tile_context import build_context
from vectorworld.generation.learned.tile_tensors import stack_tiles
from vectorworld.generation.learned.vae import VAEConfig, batch_to_torch

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _model() -> OutpaintModel:
    torch.manual_seed(0)
    vae = VAEConfig(hidden=32, latent=8, max_lanes=12, max_agents=6)
    dit = DiTConfig(dim=32, depth=2, heads=2, latent=8, max_lanes=12, max_agents=6)
    return OutpaintModel(vae, dit, latent_scale=1.7).eval()


def _context(model: OutpaintModel, seed: int) -> dict[str, torch.Tensor]:
    cfg = model.vae.config
    ctx = build_context(two_lane_request(seed), cfg.max_lanes, cfg.max_agents)
    return batch_to_torch({**stack_tiles([ctx.tiles]).as_dict(), "lane_hint": ctx.hints[None]})


@pytest.mark.parametrize("candidates", [1, 3])
def test_the_graph_samples_what_eager_one_step_outpainting_samples(candidates: int) -> None:
    model = _model()
    graph = OneStepGraph(model, candidates)
    for seed in range(3):  # the first call records the graph, the later ones reuse it on other contexts
        context = _context(model, seed)
        eager, z_eager = model.outpaint(context, SamplerConfig("meanflow", 1, candidates),
                                        torch.Generator().manual_seed(seed))
        fast, z_fast = graph(context, torch.Generator().manual_seed(seed))
        torch.testing.assert_close(z_fast, z_eager, rtol=1e-5, atol=1e-5)
        assert fast.keys() == {"lane_feat", "lane_logit", "agent_feat", "agent_logit"}
        for name, value in fast.items():
            torch.testing.assert_close(value, eager[name], rtol=1e-5, atol=1e-5)
        cond = context["lane_cond"][0]
        assert torch.equal(z_fast[:, :len(cond)][:, cond], z_eager[:, :len(cond)][:, cond])  # known tokens exact


def test_a_generator_that_built_its_graph_pickles_and_generates_the_same() -> None:
    gen = LearnedTileGenerator(model=_model(), fallback="test-straight", start="procedural")
    gen.generate(two_lane_request(seed=1))
    copy = pickle.loads(pickle.dumps(gen))   # session snapshots pickle the world and its generator
    a, b = gen.generate(two_lane_request(seed=2)), copy.generate(two_lane_request(seed=2))
    assert a.used_fallback == b.used_fallback and len(a.lanes) == len(b.lanes)
    for x, y in zip(a.lanes, b.lanes, strict=True):
        assert (x.points == y.points).all()


@pytest.mark.parametrize("first", [1, 5])
def test_the_edge_graph_decodes_what_the_eager_edge_decoder_does_for_any_lane_count(first: int) -> None:
    model = _model()
    graph = EdgeGraph(model)
    z = torch.randn(1, 18, 8, generator=torch.Generator().manual_seed(4))
    for n in (first, 1, 3, 7):  # recorded on the first call's slot count, then reused
        slots = torch.randperm(12, generator=torch.Generator().manual_seed(n))[:n]
        with torch.inference_mode():
            eager = model.vae.decode_edges(z, slots)
        assert torch.equal(graph(z, slots), eager) and eager.shape == (n, n, 5)
