"""The learned start tile outpainted in two halves from a seed road (vectorworld.generation.learned.start_tile)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import tests.straight_world  # noqa: F401  (registers the "test-straight" fallback generator)
from vectorworld.generation.base import IdAllocator, TileFrame
from vectorworld.generation.learned.bezier import fit_bezier
from vectorworld.generation.learned.egr_dit import DiTConfig
from vectorworld.generation.learned.generator import LearnedTileGenerator
from vectorworld.generation.learned.start_tile import SEED_LANE_IDS, draw_cross_section, seed_road, turned
from vectorworld.generation.learned.tile_tensors import HALF_TILE_M, LANE_POINTS
from vectorworld.generation.learned.vae import VAEConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class _PortFollower:
    """Stands in for OutpaintModel: every hinted slot becomes a straight lane along its port's heading, from
    an out port to the border or from the border to an in port; no other slot, no agent."""

    def __init__(self, keep: bool = True) -> None:
        self.cfg = VAEConfig(max_lanes=12, max_agents=8)
        self.vae = SimpleNamespace(config=self.cfg, decode_edges=lambda z, slots: torch.zeros(len(slots),
                                                                                                len(slots), 5))
        self.dit = SimpleNamespace(config=DiTConfig(max_lanes=12, max_agents=8))
        self.keep, self.contexts = keep, []

    def outpaint(self, context, sampler, generator):
        c, n_l, n_a = sampler.candidates, self.cfg.max_lanes, self.cfg.max_agents
        hints = context["lane_hint"][0].numpy().astype(np.float64)
        self.contexts.append(hints)
        lanes = np.zeros((c, n_l, LANE_POINTS, 2))
        logits = np.full((c, n_l), -10.0)
        for slot, (is_out, is_in, x, y, cos, sin) in enumerate(hints):
            if is_out + is_in < 0.5:
                continue
            port, heading = np.array([x, y]) * HALF_TILE_M, np.array([cos, sin])
            reach = np.linspace(0.0, HALF_TILE_M - 0.2, LANE_POINTS)[:, None] * heading
            lanes[:, slot] = port + reach if is_out else port - reach[::-1]
            logits[:, slot] = 10.0 if self.keep else -10.0
        decoded = {"lane_feat": torch.as_tensor(fit_bezier(lanes).reshape(c, n_l, -1) / HALF_TILE_M,
                                                dtype=torch.float32),
                   "lane_logit": torch.as_tensor(logits, dtype=torch.float32),
                   "agent_feat": torch.zeros(c, n_a, 23), "agent_logit": torch.full((c, n_a), -10.0)}
        return decoded, torch.zeros(c, n_l + n_a, 16)


def test_the_start_tile_is_outpainted_in_two_halves_from_a_seed_road() -> None:
    frame = TileFrame(np.array([5.0, -7.0]), 0.3)
    model = _PortFollower()
    gen = LearnedTileGenerator(model=model, fallback="test-straight", frozen_graph=False)
    content = gen.first_tile(frame, IdAllocator(), np.random.default_rng(0))
    assert not content.used_fallback and content.links == ()
    assert len(model.contexts) == 2                              # the front half, then the back half
    assert len(content.lanes) == 4 and all(lane.id < 4 for lane in content.lanes)   # no seed lane is left
    by_id = {lane.id: lane for lane in content.lanes}
    local = {i: frame.to_local(lane.points) for i, lane in by_id.items()}
    front = [i for i, p in local.items() if p[:, 0].min() > -1e-6]
    back = [i for i, p in local.items() if p[:, 0].max() < 1e-6]
    assert len(front) == 2 and len(back) == 2                     # two halves, split at the centre line
    for i, lane in by_id.items():                                  # every joint at the centre line is an edge
        for j in lane.successors:
            assert np.linalg.norm(lane.points[-1] - by_id[j].points[0]) < 1e-6 and i in by_id[j].predecessors
    along = [i for i in back if local[i][-1, 0] > local[i][0, 0]]
    assert len(along) == 1                                        # the +x road through the centre, border to border
    ahead = by_id[by_id[along[0]].successors[0]]
    assert abs(local[along[0]][0, 0] + HALF_TILE_M) < 0.5 and abs(frame.to_local(ahead.points)[-1, 0]
                                                                  - HALF_TILE_M) < 0.5
    np.testing.assert_allclose(local[along[0]][:, 1], 0.0, atol=1e-6)
    against = [i for i in front if local[i][-1, 0] < local[i][0, 0]]
    assert len(against) == 1 and by_id[against[0]].successors    # the -x road continues into the back half


def test_a_start_half_that_falls_back_falls_back_to_the_procedural_start() -> None:
    frame = TileFrame(np.zeros(2), 0.0)
    gen = LearnedTileGenerator(model=_PortFollower(keep=False), fallback="test-straight", frozen_graph=False)
    content = gen.first_tile(frame, IdAllocator(), np.random.default_rng(0))
    assert content.used_fallback and gen.last_diagnostics.used_fallback


def test_seed_road_and_cross_sections() -> None:
    frame = TileFrame(np.array([10.0, 0.0]), np.pi / 2)
    graph = seed_road(frame, 2, 1, IdAllocator(SEED_LANE_IDS))
    local = [frame.to_local(lane.points) for lane in graph.lanes.values()]
    assert [round(p[0, 1], 3) for p in local] == [0.0, -3.5, 3.5]
    assert [round(p[-1, 0], 3) for p in local[:2]] == [0.0, 0.0] and round(local[2][0, 0], 3) == 0.0
    assert min(lane.id for lane in graph.lanes.values()) >= SEED_LANE_IDS
    back = turned(frame)
    np.testing.assert_allclose(back.to_local(frame.to_global(np.array([[5.0, 1.0]]))), [[-5.0, -1.0]], atol=1e-9)
    keys = np.array([[2, 1, 0.0, 0], [5, 5, 0.0, 0], [1, 1, 0.0, 1], [0, 2, 0.0, 0]], np.float32)
    rng = np.random.default_rng(0)
    assert {draw_cross_section(keys, rng) for _ in range(20)} == {(2, 1)}   # no cross road, 1-3 lanes along +x
    assert draw_cross_section(None, rng) == (1, 1)
