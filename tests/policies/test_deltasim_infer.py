"""The folded inference network, the traced scorer and the collision pre-filter compute what the training
network and the plain collision penalty compute."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.deltasim.checkpoint import DeltaSimCheckpoint
from policies.deltasim.collision_shaping import (
    CollisionShapingConfig,
    box_clearance,
    collision_penalty,
    follow_route,
    predicted_neighbor_xy,
    primitive_arcs,
    primitive_paths,
    primitive_positions,
)
from policies.deltasim.infer import DeltaSimInference
from policies.deltasim.kdisks import build_kdisks, straight_motions
from policies.deltasim.net import DeltaSimNet, DeltaSimNetConfig, observation_tensors
from policies.deltasim.observation import ObservationBuilder, ObservationConfig
from policies.deltasim.policy import DeltaSimConfig, DeltaSimPolicy
from policies.deltasim.route_shaping import RouteShapingConfig, route_penalty
from policies.deltasim.scenes import synthetic_input
from policies.deltasim.scoring import (
    SCORER_INPUTS,
    DeltaSimScorer,
    reachable_neighbors,
    trace_scorer,
)
from vectorworld.errors import ConfigError
from vectorworld.frozen_graphs import static_runtime
from vectorworld.math_threads import math_threads


def _random_net(num_layers: int, seed: int = 0, vocab_size: int = 96, context_layers: int = 0) -> DeltaSimNet:
    """A network whose every parameter (LayerNorm affine included) is random, so folding is exercised."""
    torch.manual_seed(seed)
    net = DeltaSimNet(DeltaSimNetConfig(vocab_size=vocab_size, d_model=32, num_layers=num_layers,
                                        context_layers=context_layers))
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0.0, 0.3)
    return net.eval()


def _inputs(n: int, seed: int) -> dict[str, torch.Tensor]:
    inp = synthetic_input(n, np.random.default_rng(seed), num_lanes=3, segments=4)
    obs = ObservationBuilder()(inp)
    out = observation_tensors(obs)
    out["speed"] = torch.from_numpy(inp.agents.speed[obs.slots].astype(np.float32))
    out["agent_type"] = torch.from_numpy(inp.agents.agent_type[obs.slots].astype(np.int64))
    return out


@pytest.mark.parametrize(("num_layers", "context_layers"), [(1, 0), (2, 0), (2, 1), (3, 0), (3, 2)])
def test_folded_network_matches_training_network(num_layers: int, context_layers: int) -> None:
    net = _random_net(num_layers, context_layers=context_layers)
    fast = DeltaSimInference(net)
    for n, seed in ((1, 0), (9, 1), (30, 2)):
        inputs = _inputs(n, seed)
        obs = {k: v for k, v in inputs.items() if k not in ("speed", "agent_type")}
        g = torch.Generator().manual_seed(seed)
        obs["neighbor_mask"] = obs["neighbor_mask"] & (torch.rand(obs["neighbor_mask"].shape, generator=g) < 0.7)
        obs["lane_mask"] = obs["lane_mask"] & (torch.rand(obs["lane_mask"].shape, generator=g) < 0.7)
        with torch.no_grad():
            logits, residual = net(**obs)
            h, fast_logits = fast(**obs)
            table = fast.residual_table(h)
        assert torch.allclose(fast_logits, logits, rtol=1e-4, atol=1e-4 * float(logits.abs().max()))
        assert torch.allclose(table, residual, atol=1e-6)
        tokens = torch.randint(0, residual.shape[1], (len(h),), generator=torch.Generator().manual_seed(seed))
        picked = residual[torch.arange(len(h)), tokens]
        assert torch.allclose(fast.residual(h, tokens), picked, atol=1e-6)


def _scorer(collision: bool, route: bool = False) -> DeltaSimScorer:
    rng = np.random.default_rng(0)
    vocab = build_kdisks(np.concatenate([np.stack([rng.uniform(0, 2, 500), rng.normal(0, 0.03, 500),
                                                   rng.normal(0, 0.05, 500)], -1), straight_motions(20, 0.05)]),
                         rng, eps=0.05, max_size=96)
    cfg = CollisionShapingConfig()
    prims = torch.from_numpy(vocab.primitives.astype(np.float32))
    paths = torch.from_numpy(primitive_paths(vocab.primitives, cfg).astype(np.float32))
    route_cfg = RouteShapingConfig() if route else None
    points = (torch.from_numpy(primitive_positions(vocab.primitives, route_cfg.times_s, cfg.brake_decel_mps2)
                               .astype(np.float32)) if route else None)
    return DeltaSimScorer(DeltaSimInference(_random_net(2, vocab_size=vocab.size)), prims, 0.1, True, 1000.0, 24,
                          paths, cfg if collision else None, route_cfg, points)


@pytest.mark.parametrize(("collision", "route"), [(True, True), (False, False)])
def test_traced_scorer_equals_eager_for_other_batch_sizes(collision: bool, route: bool) -> None:
    scorer = _scorer(collision, route)
    traced = trace_scorer(scorer, _inputs(1, 3))  # recorded on a single agent (no neighbour in reach)
    for n, seed in ((5, 4), (17, 5), (40, 6)):
        inputs = _inputs(n, seed)
        args = [inputs[name] for name in SCORER_INPUTS]
        with torch.no_grad():
            eager_out, traced_out = scorer(*args), traced(*args)
        assert traced_out[1].shape == (n, 25)
        for a, b in zip(eager_out, traced_out, strict=True):
            assert torch.allclose(a, b, rtol=1e-6, atol=1e-5) if a.is_floating_point() else torch.equal(a, b)


def test_static_runtime_scorer_returns_the_trace_outputs_bit_for_bit() -> None:
    traced = trace_scorer(_scorer(True, True), _inputs(1, 3))
    fast = static_runtime(traced)
    assert isinstance(fast, torch._C.StaticModule)  # this torch has Static Runtime: the test checks it, not the trace
    for n, seed in ((1, 10), (6, 11), (23, 12)):
        args = [_inputs(n, seed)[name] for name in SCORER_INPUTS]
        with torch.inference_mode():
            for a, b in zip(traced(*args), fast(*args), strict=True):
                assert a.dtype == b.dtype and torch.equal(a, b)


def test_scorer_collision_penalty_equals_the_plain_penalty_on_its_candidates() -> None:
    """The in-graph penalty (pre-filtered neighbours) is the plain penalty over all neighbours."""
    with_collision, without = _scorer(True), _scorer(False)
    traced = trace_scorer(with_collision, _inputs(3, 7))
    cfg = CollisionShapingConfig()
    penalised = 0
    for n, seed in ((12, 8), (30, 9)):
        inputs = _inputs(n, seed)
        args = [inputs[name] for name in SCORER_INPUTS]
        with torch.no_grad():
            _, cand, logits, _, _, _ = traced(*args)
            _, cand_plain, logits_plain, _, _, _ = without(*args)
            static = inputs["static"]
            prims = without.primitives[0]
            arcs = torch.from_numpy(primitive_arcs(prims.double().numpy(), cfg.times_s, cfg.brake_decel_mps2)).float()
            paths = follow_route(without.paths[cand_plain], prims[cand_plain], arcs[cand_plain],
                                 inputs["route_ahead"], with_collision.route_distances)
            penalty = collision_penalty(paths, static[:, 0], static[:, 1], inputs["neighbors"],
                                        inputs["neighbor_mask"], cfg)
        assert torch.equal(cand, cand_plain)
        assert torch.allclose(logits, logits_plain - penalty, atol=1e-4)
        penalised += int((penalty > 0).sum())
    assert penalised > 0  # the scenes do put neighbours in reach


def _neighbour_scene(seed: int, agents: int = 6, neighbours: int = 8, candidates: int = 12
                     ) -> tuple[torch.Tensor, ...]:
    """Random candidate paths and neighbours around agents (agent frames), some near, most far."""
    g = torch.Generator().manual_seed(seed)
    cfg = CollisionShapingConfig()
    prims = np.stack([np.linspace(0.0, 2.0, 40), np.zeros(40), np.linspace(-0.05, 0.05, 40)], -1)
    paths = torch.from_numpy(primitive_paths(prims, cfg).astype(np.float32))
    cand = torch.randint(0, 40, (agents, candidates), generator=g)
    nb = torch.zeros(agents, neighbours, 11)
    nb[..., 0] = torch.rand(agents, neighbours, generator=g) * 50.0 - 5.0
    nb[..., 1] = torch.randn(agents, neighbours, generator=g) * 4.0
    yaw = torch.randn(agents, neighbours, generator=g) * 0.3
    nb[..., 2], nb[..., 3] = torch.cos(yaw), torch.sin(yaw)
    nb[..., 4] = torch.rand(agents, neighbours, generator=g) * 10.0 - 3.0
    nb[..., 5] = torch.randn(agents, neighbours, generator=g)
    nb[..., 6] = 3.5 + torch.rand(agents, neighbours, generator=g) * 2.0
    nb[..., 7] = 1.6 + torch.rand(agents, neighbours, generator=g) * 0.6
    mask = torch.rand(agents, neighbours, generator=g) < 0.9
    length = 4.0 + torch.rand(agents, generator=g)
    width = 1.8 + torch.rand(agents, generator=g) * 0.3
    return paths[cand], length, width, nb, mask


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_reachable_prefilter_never_changes_the_collision_penalty(seed: int) -> None:
    cfg = CollisionShapingConfig()
    cand_paths, length, width, nb, mask = _neighbour_scene(seed)
    margin = max(cfg.margins_m)
    reach = reachable_neighbors(cand_paths, length, width, nb, mask, torch.tensor(cfg.times_s), margin)
    assert not bool((reach & ~mask).any())
    # Reference: every neighbour whose centre comes within the two circumradii (plus the margin) of a
    # candidate's centre at a check time is kept.
    times = torch.tensor(cfg.times_s)
    nb_xy = predicted_neighbor_xy(nb, times, cfg.lead_brake_mps2)                      # (S, N, T, 2)
    dist = (cand_paths[:, None, :, :, :2] - nb_xy[:, :, None]).norm(dim=-1)           # (S, N, C, T)
    swept = length[:, None, None] + cand_paths[..., 3]                                 # (S, C, T)
    nb_radius = torch.hypot(nb[..., 6], nb[..., 7])[..., None, None]                  # (S, N, 1, 1)
    radii = (torch.hypot(swept, width[:, None, None])[:, None] + nb_radius) / 2
    touching = (dist < radii + margin).flatten(2).any(-1) & mask
    assert not bool((touching & ~reach).any())
    full = collision_penalty(cand_paths, length, width, nb, mask, cfg)
    assert torch.equal(collision_penalty(cand_paths, length, width, nb, reach, cfg), full)


def test_reachable_prefilter_drops_far_neighbours_and_keeps_blocking_ones() -> None:
    cfg = CollisionShapingConfig()
    prims = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    paths = torch.from_numpy(primitive_paths(prims, cfg).astype(np.float32))[None]   # (1, 2, T, 4)
    nb = torch.zeros(1, 2, 11)
    nb[0, 0, :8] = torch.tensor([8.0, 0.0, 1.0, 0.0, 0.0, 0.0, 4.5, 2.0])    # stopped car 8 m ahead
    nb[0, 1, :8] = torch.tensor([35.0, 0.0, 1.0, 0.0, 10.0, 0.0, 4.5, 2.0])  # far ahead, driving away
    reach = reachable_neighbors(paths, torch.tensor([4.5]), torch.tensor([2.0]), nb, torch.ones(1, 2, dtype=torch.bool),
                                torch.tensor(cfg.times_s), max(cfg.margins_m))
    assert reach.tolist() == [[True, False]]


def test_a_collision_penalty_traced_with_one_check_in_reach_runs_with_none() -> None:
    """A rollout crashed ("shape '[]' is invalid for input of size 0") when the scorer, traced on a step
    where one (pair, candidate, time) check came within reach, met a step with a pair but no check: the
    trace had recorded the penalty's index_put for a one-element selection."""
    cfg = CollisionShapingConfig()
    prims = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    paths = torch.from_numpy(primitive_paths(prims, cfg).astype(np.float32))[None]   # (1, 2, T, 4)
    size = (torch.tensor([4.5]), torch.tensor([2.0]))
    mask = torch.ones(1, 1, dtype=torch.bool)

    def standing_car(ahead_m: float) -> torch.Tensor:
        nb = torch.zeros(1, 1, 11)
        nb[0, 0, :8] = torch.tensor([ahead_m, 0.0, 1.0, 0.0, 0.0, 0.0, 4.5, 2.0])
        return nb

    def penalty(paths: torch.Tensor, length: torch.Tensor, width: torch.Tensor, nb: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        return collision_penalty(paths, length, width, nb, mask, cfg)

    one_check = standing_car(18.0)              # only the moving candidate's last check reaches it
    traced = torch.jit.trace(penalty, (paths, *size, one_check, mask))
    for ahead_m in (18.0, 30.0, 8.0):           # one check, none (the pair is still within range), several
        args = (paths, *size, standing_car(ahead_m), mask)
        assert torch.equal(traced(*args), penalty(*args))
    assert float(penalty(paths, *size, standing_car(8.0), mask)[0, 1]) > 0.0


def _policy(config: DeltaSimConfig) -> DeltaSimPolicy:
    rng = np.random.default_rng(1)
    data = np.stack([rng.uniform(0, 2.0, 2000), rng.normal(0, 0.03, 2000), rng.normal(0, 0.05, 2000)], -1)
    vocab = build_kdisks(np.concatenate([data, straight_motions(20, 0.035)]), rng, eps=0.05, max_size=128)
    net = _random_net(2, seed=1, vocab_size=vocab.size)
    return DeltaSimPolicy(config, DeltaSimCheckpoint(net, vocab, ObservationConfig(), {}))


def test_traced_and_eager_policies_act_alike_and_see_weight_updates() -> None:
    traced, eager = _policy(DeltaSimConfig()), _policy(DeltaSimConfig(trace=False))
    for seed in range(3):
        inp = synthetic_input(12 + 7 * seed, np.random.default_rng(seed))
        a = traced.act(inp, np.random.default_rng(seed))
        b = eager.act(inp, np.random.default_rng(seed))
        assert np.allclose(a, b, atol=1e-6)
        assert np.array_equal(traced.last_step.tokens, eager.last_step.tokens)
    assert set(traced.last_timing) == {"observation", "scoring", "sampling"}
    # Changing the weights after the first step is picked up (the folded copy is rebuilt): forbid every
    # primitive picked so far and none is picked again.
    inp = synthetic_input(12, np.random.default_rng(0))
    traced.act(inp, np.random.default_rng(0))
    before = traced.last_step.tokens
    with torch.no_grad():
        traced.checkpoint.net.logits_head.bias[torch.from_numpy(before)] = -1e6
    traced.act(inp, np.random.default_rng(0))
    assert not np.isin(traced.last_step.tokens, before).any()


def test_thread_limit_is_applied_and_restored() -> None:
    before = torch.get_num_threads()
    seen = []
    try:
        torch.set_num_threads(2)
        with math_threads(1):
            seen.append(torch.get_num_threads())
        seen.append(torch.get_num_threads())
        with math_threads(4):  # never raises the caller's setting
            seen.append(torch.get_num_threads())
    finally:
        torch.set_num_threads(before)
    assert seen == [1, 2, 2]
    with pytest.raises(ConfigError):
        DeltaSimConfig(threads=3)


@settings(max_examples=200, deadline=None)
@given(st.floats(-12, 12), st.floats(-12, 12), st.floats(-3.2, 3.2), st.floats(-3.2, 3.2),
       st.floats(0.5, 6.0), st.floats(0.5, 2.5), st.floats(0.5, 6.0), st.floats(0.5, 2.5))
def test_box_clearance_detects_overlap_and_bounds_the_distance(x: float, y: float, yaw1: float, yaw2: float,
                                                               l1: float, w1: float, l2: float, w2: float) -> None:
    from shapely.geometry import Polygon

    from vectorworld import geometry

    boxes = geometry.box_corners(np.array([[0.0, 0.0], [x, y]]), np.array([yaw1, yaw2]), np.array([l1, l2]),
                                 np.array([w1, w2]))
    a, b = Polygon(boxes[0]), Polygon(boxes[1])
    t = lambda v: torch.tensor([v], dtype=torch.float64)  # noqa: E731
    clearance = float(box_clearance(torch.tensor([[-x, -y]], dtype=torch.float64), t(np.cos(yaw2 - yaw1)),
                                    t(np.sin(yaw2 - yaw1)), t(yaw1), t(l1 / 2), t(w1 / 2), t(l2 / 2), t(w2 / 2))[0])
    distance = a.distance(b)
    if a.intersection(b).area > 1e-6:
        assert clearance < 1e-6
    elif distance > 1e-6:
        assert 0.0 < clearance <= distance + 1e-6
    aligned = abs(np.sin(yaw2 - yaw1)) < 1e-9 and abs(np.sin(yaw1)) < 1e-9 and abs(y) < 1e-9
    if aligned and abs(x) > (l1 + l2) / 2:  # one behind the other: the clearance is the bumper gap
        assert abs(clearance - (abs(x) - (l1 + l2) / 2)) < 1e-6


def test_route_penalty_prefers_candidates_that_follow_a_turning_route() -> None:
    cfg = RouteShapingConfig()
    # The route turns left: a quarter circle of radius 10 m from the agent's position.
    arc = np.array([0.0, 3.0, 6.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0]) / 10.0
    route = np.stack([10.0 * np.sin(arc), 10.0 * (1.0 - np.cos(arc)), np.ones_like(arc), np.full_like(arc, 4.0)], -1)
    route[arc > np.pi / 2, 2] = 0.0                       # the known road ends after the turn
    prims = np.array([[0.5, 0.0, 0.05], [0.5, 0.0, 0.0], [0.5, 0.0, -0.05], [1.5, 0.0, 0.0]])
    centres = torch.from_numpy(primitive_positions(prims, cfg.times_s, 4.0))[None]   # (1, 4, T, 2)
    pen = route_penalty(centres, torch.from_numpy(route)[None], cfg)[0]
    assert pen[0] <= pen[1] < pen[2]        # turning with the route beats going straight beats turning away
    assert pen[1] < pen[3]                  # and going straight fast leaves the route further
    # No valid route: no penalty.
    route[:, 2] = 0.0
    assert torch.all(route_penalty(centres, torch.from_numpy(route)[None], cfg) == 0.0)
