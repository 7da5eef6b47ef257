"""Kinematic feasibility cost, projection, and shaped sampling."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.deltasim.checkpoint import DeltaSimCheckpoint
from policies.deltasim.feasibility import (
    METRIC_LIMITS,
    SHAPING_LIMITS,
    infeasible,
    kinematic_cost,
    project_feasible,
)
from policies.deltasim.kdisks import build_kdisks, straight_motions
from policies.deltasim.net import DeltaSimNet, DeltaSimNetConfig
from policies.deltasim.observation import ObservationConfig
from policies.deltasim.policy import DeltaSimConfig, DeltaSimPolicy
from policies.deltasim.scenes import synthetic_input
from vectorworld.scene import AgentType

VEH = int(AgentType.VEHICLE)


def _cost(motion: list[float], speed: float, agent_type: int = VEH) -> float:
    return float(kinematic_cost(torch.tensor(motion, dtype=torch.float64), torch.tensor(speed, dtype=torch.float64),
                                torch.tensor(agent_type)))


def test_cost_is_zero_for_feasible_motions() -> None:
    assert _cost([1.0, 0.0, 0.0], 10.0) == 0.0              # cruising
    assert _cost([0.0, 0.0, 0.0], 0.0) == 0.0               # parked
    assert _cost([0.96, 0.0, 0.0], 10.0) == 0.0             # braking at 4 m/s^2
    assert _cost([0.5, 0.02, 0.05], 5.0) == 0.0             # turning at 0.5 rad/s, a_lat 2.5
    assert _cost([-0.01, 0.0, 0.0], 0.0) == 0.0             # creeping back 1 cm


def test_cost_is_positive_for_each_infeasible_kind() -> None:
    assert _cost([1.7, 0.0, 0.0], 10.0) > 0                 # a_long +7 m/s^2
    assert _cost([0.3, 0.0, 0.0], 10.0) > 0                 # a_long -70 m/s^2
    assert _cost([0.5, 0.0, 0.2], 5.0) > 0                  # yaw rate 2 rad/s at 5 m/s
    assert _cost([1.5, 0.0, 0.09], 15.0) > 0                # a_lat 13.5 m/s^2 (yaw rate 0.9)
    assert _cost([-0.1, 0.0, 0.0], 0.0) > 0                 # reversing 10 cm in a step
    # Pedestrians may turn on the spot; vehicles may not at speed.
    assert _cost([0.1, 0.0, 0.3], 1.0, int(AgentType.PEDESTRIAN)) < _cost([0.1, 0.0, 0.3], 1.0)


def test_cost_is_differentiable() -> None:
    motion = torch.tensor([1.7, 0.0, 0.0], requires_grad=True)
    kinematic_cost(motion, torch.tensor(10.0), torch.tensor(VEH)).backward()
    assert motion.grad is not None and motion.grad[0] > 0


@settings(max_examples=200, deadline=None)
@given(st.floats(-2, 3), st.floats(-0.5, 0.5), st.floats(-0.6, 0.6), st.floats(-1, 25),
       st.sampled_from([1, 2, 3]))
def test_metric_infeasible_implies_positive_shaping_cost_and_projection_fixes_it(
        dx: float, dy: float, dth: float, speed: float, agent_type: int) -> None:
    motion = np.array([[dx, dy, dth]])
    if infeasible(motion, np.array([speed]), np.array([agent_type]), limits=METRIC_LIMITS)[0]:
        assert _cost([dx, dy, dth], speed, agent_type) > 0.0
    fixed = project_feasible(motion, np.array([speed]), np.array([agent_type]))
    if speed >= 0:
        assert not infeasible(fixed, np.array([speed]), np.array([agent_type]), limits=SHAPING_LIMITS)[0]


def _random_policy(config: DeltaSimConfig, seed: int = 0) -> DeltaSimPolicy:
    rng = np.random.default_rng(seed)
    n = 3000
    data = np.stack([rng.uniform(0, 2.5, n), rng.normal(0, 0.05, n), rng.normal(0, 0.08, n)], -1)
    vocab = build_kdisks(np.concatenate([data, straight_motions(25, 0.035)]), rng, eps=0.05, max_size=256)
    torch.manual_seed(seed)
    net = DeltaSimNet(DeltaSimNetConfig(vocab_size=vocab.size))
    torch.nn.init.normal_(net.logits_head.weight, std=0.5)  # random preferences (logits spread ~ +-10)
    net.eval()
    return DeltaSimPolicy(config, DeltaSimCheckpoint(net, vocab, ObservationConfig(), {}))


def test_shaped_sampling_never_picks_an_infeasible_primitive() -> None:
    shaped = _random_policy(DeltaSimConfig(collision_avoidance=False, use_residual=False))
    unshaped = _random_policy(DeltaSimConfig(kinematic_shaping=False, collision_avoidance=False,
                                             use_residual=False))
    bad_unshaped = 0
    for seed in range(6):
        inp = synthetic_input(24, np.random.default_rng(seed))
        rng = np.random.default_rng(seed)
        for policy in (shaped, unshaped):
            policy.act(inp, rng)
            step = policy.last_step
            assert step is not None
            prims = policy.checkpoint.vocabulary.primitives[step.tokens]
            a = inp.agents
            bad = infeasible(prims, a.speed[step.slots], a.agent_type[step.slots], limits=METRIC_LIMITS)
            if policy is shaped:
                assert not bad.any()
                # Whenever a zero-cost primitive exists, the chosen one is (nearly) free too.
                all_cost = kinematic_cost(torch.from_numpy(policy.checkpoint.vocabulary.primitives)[None],
                                          torch.from_numpy(a.speed[step.slots])[:, None],
                                          torch.from_numpy(a.agent_type[step.slots].astype(np.int64))[:, None])
                has_free = (all_cost == 0).any(1).numpy()
                assert has_free.mean() > 0.8
                assert np.all(step.chosen_cost[has_free] < 1e-2)
            else:
                bad_unshaped += int(bad.sum())
    assert bad_unshaped > 0  # the test scenes do exercise the shaping


def test_shaped_policy_motion_is_feasible_after_residual() -> None:
    policy = _random_policy(DeltaSimConfig())
    torch.nn.init.normal_(policy.checkpoint.net.residual_head.weight, std=1.0)
    inp = synthetic_input(30, np.random.default_rng(7))
    out = policy.act(inp, np.random.default_rng(0))
    slots = np.nonzero(inp.controlled)[0]
    a = inp.agents
    assert not infeasible(out[slots], a.speed[slots], a.agent_type[slots]).any()
    # Rows of uncontrolled slots are zero.
    assert np.all(out[0] == 0.0)


def test_stopped_agents_are_not_pushed_backwards() -> None:
    policy = _random_policy(DeltaSimConfig())
    inp = synthetic_input(20, np.random.default_rng(3))
    agents = dataclasses.replace(inp.agents, speed=np.zeros_like(inp.agents.speed))
    out = policy.act(dataclasses.replace(inp, agents=agents), np.random.default_rng(1))
    assert out[:, 0].min() >= -SHAPING_LIMITS.max_backward_m - 1e-9


def test_cost_and_violation_agree_with_two_cost_calls() -> None:
    from policies.deltasim.feasibility import cost_and_violation

    rng = np.random.default_rng(0)
    motion = torch.from_numpy(np.stack([rng.uniform(-0.2, 3.0, 4000), rng.normal(0, 0.05, 4000),
                                        rng.normal(0, 0.12, 4000)], -1))
    speed = torch.from_numpy(rng.uniform(0.0, 25.0, 4000))
    kind = torch.from_numpy(rng.integers(1, 4, 4000))
    cost, bad = cost_and_violation(motion, speed, kind)
    assert torch.equal(cost, kinematic_cost(motion, speed, kind))
    assert torch.equal(bad, kinematic_cost(motion, speed, kind, limits=METRIC_LIMITS) > 0)
    assert 0 < int(bad.sum()) < len(bad)


def test_vocabulary_feasibility_equals_the_per_call_cost_bit_for_bit() -> None:
    from policies.deltasim.checkpoint import DEFAULT_CHECKPOINT, load_checkpoint
    from policies.deltasim.feasibility import VocabularyFeasibility, cost_and_violation

    prims = torch.from_numpy(load_checkpoint(DEFAULT_CHECKPOINT).vocabulary.primitives.astype(np.float32))
    rng = np.random.default_rng(0)
    # Random speeds plus the thresholds themselves (yaw-rate gates at 0.9 and 1.0 m/s), zero and reversing.
    speed = np.concatenate([rng.uniform(-1.0, 25.0, 200), [0.0, 0.9, 1.0, -0.5, 30.0]]).astype(np.float32)
    kind = rng.integers(0, 5, len(speed))
    speed_t, kind_t = torch.from_numpy(speed)[:, None], torch.from_numpy(kind)[:, None]
    cost, bad = VocabularyFeasibility(prims)(speed_t, kind_t)
    ref_cost, ref_bad = cost_and_violation(prims[None], speed_t, kind_t)
    assert torch.equal(cost, ref_cost) and torch.equal(bad, ref_bad)
    assert bad.any() and (cost > 0).any() and (cost == 0).any()  # the comparison covers every case
