"""k-disks vocabulary: greedy construction and tokenise/detokenise round trips."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.deltasim.kdisks import (
    MotionVocabulary,
    apply_body_delta,
    body_delta,
    build_kdisks,
    straight_motions,
)
from vectorworld.errors import ConfigError


def _motions(rng: np.random.Generator, n: int = 4000) -> np.ndarray:
    speed = rng.uniform(0.0, 15.0, n)
    yaw_rate = rng.normal(0.0, 0.15, n)
    return np.stack([speed * 0.1, rng.normal(0.0, 0.01, n), yaw_rate * 0.1], -1)


def test_kdisks_covers_data_within_eps_and_starts_with_standstill() -> None:
    rng = np.random.default_rng(0)
    data = _motions(rng)
    vocab = build_kdisks(data, np.random.default_rng(1), eps=0.05, theta_weight=10.0, max_size=1000)
    assert np.allclose(vocab.primitives[0], 0.0)
    assert 10 < vocab.size < 1000
    scale = vocab.metric_scale
    d = np.linalg.norm((data[:, None] - vocab.primitives[None]) * scale, axis=-1).min(1)
    assert d.max() <= 0.05 + 1e-9
    # Greedy disks: primitives are pairwise farther apart than eps.
    pd = np.linalg.norm((vocab.primitives[:, None] - vocab.primitives[None]) * scale, axis=-1)
    np.fill_diagonal(pd, np.inf)
    assert pd.min() > 0.05


def test_kdisks_respects_max_size_and_is_seeded() -> None:
    data = _motions(np.random.default_rng(0))
    a = build_kdisks(data, np.random.default_rng(5), eps=0.01, max_size=50)
    b = build_kdisks(data, np.random.default_rng(5), eps=0.01, max_size=50)
    assert a.size == 50
    assert np.array_equal(a.primitives, b.primitives)
    with pytest.raises(ConfigError):
        build_kdisks(data, np.random.default_rng(0), eps=0.0)


def _trajectory(rng: np.random.Generator, n: int, t: int) -> np.ndarray:
    speed = rng.uniform(0.0, 14.0, (n, 1)) + np.cumsum(rng.normal(0, 0.1, (n, t)), 1)
    yaw_rate = rng.normal(0, 0.1, (n, 1)) + np.cumsum(rng.normal(0, 0.02, (n, t)), 1)
    deltas = np.stack([np.maximum(speed, 0) * 0.1, np.zeros((n, t)), yaw_rate * 0.1], -1)
    poses = [np.concatenate([rng.uniform(-50, 50, (n, 2)), rng.uniform(-3, 3, (n, 1))], -1)]
    for k in range(t - 1):
        poses.append(apply_body_delta(poses[-1], deltas[:, k]))
    return np.stack(poses, 1)


def test_closed_loop_round_trip_stays_within_tolerance_over_8_s() -> None:
    rng = np.random.default_rng(3)
    poses = _trajectory(rng, 20, 81)
    data = np.concatenate([body_delta(poses[:, :-1], poses[:, 1:]).reshape(-1, 3), straight_motions(20, 0.03)])
    vocab = build_kdisks(data, np.random.default_rng(0), eps=0.035, theta_weight=10.0, max_size=384)
    tokens, residuals = vocab.tokenize_trajectory(poses)
    recon = vocab.detokenize(poses[:, 0], tokens)
    # Quantisation error does not accumulate: position error bounded by ~one disk over 8 s.
    assert np.abs(recon[..., :2] - poses[..., :2]).max() < 0.2
    exact = vocab.detokenize(poses[:, 0], tokens, residuals)
    assert np.allclose(exact[..., :2], poses[..., :2], atol=1e-6)
    assert np.allclose(np.cos(exact[..., 2] - poses[..., 2]), 1.0, atol=1e-9)


def test_invalid_steps_are_marked_and_restart_from_the_log() -> None:
    rng = np.random.default_rng(4)
    poses = _trajectory(rng, 3, 12)
    valid = np.ones((3, 12), bool)
    valid[1, 5] = False
    vocab = build_kdisks(body_delta(poses[:, :-1], poses[:, 1:]).reshape(-1, 3), rng, eps=0.02)
    tokens, _ = vocab.tokenize_trajectory(poses, valid)
    assert tokens[1, 4] == -1 and tokens[1, 5] == -1
    assert (tokens[0] >= 0).all()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=6, max_size=6))
def test_body_delta_inverts_apply(values: list[float]) -> None:
    pose = np.array([values[0] * 10, values[1] * 10, values[2] / 2])
    delta = np.array([values[3] / 2, values[4] / 5, values[5] / 20])
    out = apply_body_delta(pose, delta)
    assert np.allclose(body_delta(pose, out), delta, atol=1e-9)


def test_vocabulary_rejects_bad_shapes() -> None:
    with pytest.raises(ConfigError):
        MotionVocabulary(np.zeros((4, 2)), eps=0.1, theta_weight=1.0)
