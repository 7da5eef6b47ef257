"""DeltaSim policy: determinism, collision shaping, warm start, checkpoints, tiny overfit."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from policies.base import make_policy
from policies.deltasim.checkpoint import DEFAULT_CHECKPOINT, DeltaSimCheckpoint, load_checkpoint, save_checkpoint
from policies.deltasim.collision_shaping import (
    CollisionShapingConfig,
    collision_penalty,
    predicted_neighbor_xy,
    primitive_paths,
)
from policies.deltasim.kdisks import build_kdisks, straight_motions
from policies.deltasim.net import DeltaSimNet, DeltaSimNetConfig
from policies.deltasim.observation import ObservationBuilder, ObservationConfig
from policies.deltasim.policy import DeltaSimConfig, DeltaSimPolicy
from policies.deltasim.scenes import synthetic_input
from vectorworld.checkpoints import CONFIG_FILE, WEIGHTS_FILE
from vectorworld.errors import CheckpointError
from vectorworld.train.deltasim_data import procedural_traffic
from vectorworld.train.deltasim_recipe import idm_teacher
from vectorworld.train.deltasim_training import TrainConfig, evaluate_bc, train_deltasim


def _checkpoint(seed: int = 0, logit_std: float = 1.0) -> DeltaSimCheckpoint:
    rng = np.random.default_rng(seed)
    data = np.stack([rng.uniform(0, 2.0, 2000), rng.normal(0, 0.03, 2000), rng.normal(0, 0.05, 2000)], -1)
    vocab = build_kdisks(np.concatenate([data, straight_motions(20, 0.035)]), rng, eps=0.05, max_size=128)
    torch.manual_seed(seed)
    net = DeltaSimNet(DeltaSimNetConfig(vocab_size=vocab.size, d_model=32, num_layers=1))
    torch.nn.init.normal_(net.logits_head.weight, std=logit_std)
    return DeltaSimCheckpoint(net.eval(), vocab, ObservationConfig(), {})


def test_same_seed_same_actions_different_seed_differs() -> None:
    ckpt = _checkpoint(logit_std=0.2)
    inp = synthetic_input(20, np.random.default_rng(0))
    # Temperature 1 and small logits (std 0.2 head): flat enough that the seed shows.
    config = DeltaSimConfig(temperature=1.0)
    a = DeltaSimPolicy(config, checkpoint=ckpt).act(inp, np.random.default_rng(42))
    b = DeltaSimPolicy(config, checkpoint=ckpt).act(inp, np.random.default_rng(42))
    c = DeltaSimPolicy(config, checkpoint=ckpt).act(inp, np.random.default_rng(43))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    greedy = DeltaSimPolicy(DeltaSimConfig(temperature=0.0), checkpoint=ckpt)
    assert np.array_equal(greedy.act(inp, np.random.default_rng(1)), greedy.act(inp, np.random.default_rng(2)))


def test_a_pickled_policy_continues_exactly_as_the_original() -> None:
    """A session snapshot pickles the policy after it has built its (Static Runtime) scorer."""
    policy = DeltaSimPolicy(DeltaSimConfig(temperature=1.0), checkpoint=_checkpoint(logit_std=0.2))
    first, later = (synthetic_input(n, np.random.default_rng(n)) for n in (12, 20))
    policy.act(first, np.random.default_rng(0))
    restored = pickle.loads(pickle.dumps(policy))
    expected = policy.act(later, np.random.default_rng(5))
    assert np.array_equal(restored.act(later, np.random.default_rng(5)), expected)


def test_collision_penalty_pushes_down_primitives_into_a_stopped_leader() -> None:
    cfg = CollisionShapingConfig()
    prims = np.array([[0.0, 0, 0], [0.5, 0, 0], [1.0, 0, 0], [1.2, 0, 0]])
    paths = torch.from_numpy(primitive_paths(prims, cfg).astype(np.float32))[None]
    # A stopped car 7 m ahead (centre to centre) in the same lane, one far to the side, one behind.
    nbr = torch.zeros(1, 3, 11)
    nbr[0, 0, :8] = torch.tensor([7.0, 0, 1, 0, 0, 0, 4.5, 2.0])
    nbr[0, 1, :8] = torch.tensor([7.0, 8.0, 1, 0, 0, 0, 4.5, 2.0])
    nbr[0, 2, :8] = torch.tensor([-6.0, 0, 1, 0, 12.0, 0, 4.5, 2.0])
    mask = torch.tensor([[True, True, True]])
    pen = collision_penalty(paths, torch.tensor([4.5]), torch.tensor([2.0]), nbr, mask, cfg)[0]
    assert pen[0] == 0.0
    assert pen[1] <= pen[2] < pen[3]
    assert pen[3] > 0
    only_far = collision_penalty(paths, torch.tensor([4.5]), torch.tensor([2.0]), nbr,
                                 torch.tensor([[False, True, True]]), cfg)[0]
    assert torch.all(only_far == 0.0)


def test_collision_penalty_counts_a_car_standing_alongside() -> None:
    """A turning agent sweeps its flank over a car standing beside it (centre behind the agent's centre, ahead
    of its rear): turning into it is penalised, driving straight on is not; a follower behind stays ignored."""
    cfg = CollisionShapingConfig()
    prims = np.array([[0.5, 0.0, 0.0], [0.5, -0.02, -0.08]])                 # straight, turning right
    paths = torch.from_numpy(primitive_paths(prims, cfg).astype(np.float32))[None]
    nbr = torch.zeros(1, 2, 11)
    nbr[0, 0, :8] = torch.tensor([-1.0, -2.3, 1, 0, 0, 0, 4.5, 2.0])         # alongside, to the right
    nbr[0, 1, :8] = torch.tensor([-6.0, 0.0, 1, 0, 0, 0, 4.5, 2.0])          # behind
    length, width = torch.tensor([4.5]), torch.tensor([2.0])
    pen = collision_penalty(paths, length, width, nbr, torch.tensor([[True, False]]), cfg)[0]
    assert pen[0] < pen[1]
    assert pen[1] > 0
    behind = collision_penalty(paths, length, width, nbr, torch.tensor([[False, True]]), cfg)[0]
    assert torch.all(behind == 0.0)


def test_a_car_parked_beside_the_path_is_passed_a_moving_one_there_is_not() -> None:
    """A car 2.5 m to the right of the path, 6 m ahead (0.5 m of clearance): parked, it does not push down
    driving on past it (IDM traffic passes it so); driving at 8 m/s the same way, it still does."""
    cfg = CollisionShapingConfig()
    prims = np.array([[0.8, 0.0, 0.0]])                                        # 8 m/s straight on
    paths = torch.from_numpy(primitive_paths(prims, cfg).astype(np.float32))[None]
    length, width = torch.tensor([4.5]), torch.tensor([2.0])
    parked = torch.zeros(1, 1, 11)
    parked[0, 0, :8] = torch.tensor([6.0, -2.5, 1, 0, 0, 0, 4.5, 2.0])
    moving = parked.clone()
    moving[0, 0, 4] = 8.0
    mask = torch.tensor([[True]])
    assert collision_penalty(paths, length, width, parked, mask, cfg)[0, 0] == 0.0
    assert collision_penalty(paths, length, width, moving, mask, cfg)[0, 0] > 0.0
    strict = CollisionShapingConfig(standing_margin_m=1.0)                     # the margins before: stops behind it
    assert collision_penalty(paths, length, width, parked, mask, strict)[0, 0] > 0.0


def test_warm_start_history_changes_the_decision() -> None:
    ckpt = _checkpoint()
    inp = synthetic_input(10, np.random.default_rng(5))
    builder = ObservationBuilder()
    cold = dataclasses.replace(inp.agents, history_valid=np.zeros_like(inp.agents.history_valid))
    cold.history_valid[:, -1] = True
    warm_obs = builder(inp)
    cold_obs = builder(dataclasses.replace(inp, agents=cold))
    assert warm_obs.history[:, :-1, 5].all() and not cold_obs.history[:, :-1, 5].any()
    with torch.no_grad():
        from policies.deltasim.net import observation_tensors

        lw, _ = ckpt.net(**observation_tensors(warm_obs))
        lc, _ = ckpt.net(**observation_tensors(cold_obs))
    assert not torch.allclose(lw, lc)


def test_checkpoint_round_trip_and_errors(tmp_path: Path) -> None:
    ckpt = _checkpoint()
    folder = save_checkpoint(tmp_path / "m", ckpt.net, ckpt.vocabulary, ckpt.observation, {"x": 1})
    weights, sidecar = folder / WEIGHTS_FILE, folder / CONFIG_FILE
    assert sorted(p.name for p in folder.iterdir()) == [CONFIG_FILE, WEIGHTS_FILE]
    loaded = load_checkpoint(tmp_path / "m")
    assert load_checkpoint(weights).meta == {"x": 1}  # a file of the folder names the folder
    assert loaded.meta == {"x": 1}
    assert np.allclose(loaded.vocabulary.primitives, ckpt.vocabulary.primitives)
    inp = synthetic_input(8, np.random.default_rng(0))
    assert np.array_equal(DeltaSimPolicy(checkpoint=ckpt).act(inp, np.random.default_rng(0)),
                          DeltaSimPolicy(checkpoint=loaded).act(inp, np.random.default_rng(0)))
    with pytest.raises(CheckpointError, match="not found"):
        load_checkpoint(tmp_path / "missing")
    # Corrupt weights.
    good = weights.read_bytes()
    weights.write_bytes(good[:100] + b"garbage")
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path / "m")
    weights.write_bytes(good)
    # Sidecar that does not match the weights.
    meta = json.loads(sidecar.read_text())
    meta["net"]["d_model"] = 48
    sidecar.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="do not match"):
        load_checkpoint(tmp_path / "m")
    meta["net"]["d_model"] = 32
    meta["format"] = "pickle"
    sidecar.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="format"):
        load_checkpoint(tmp_path / "m")
    meta["format"], meta["version"] = "vectorworld-deltasim", 1  # an older version
    sidecar.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="v2"):
        load_checkpoint(tmp_path / "m")
    # The earlier layout (STEM.safetensors + STEM.json): the error names the migration tool.
    (tmp_path / "old.safetensors").write_bytes(good)
    (tmp_path / "old.json").write_text("{}")
    with pytest.raises(CheckpointError, match="migrate_deltasim_checkpoint"):
        load_checkpoint(tmp_path / "old")
    sidecar.write_text("{not json")
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path / "m")
    # A policy pointed at a broken checkpoint fails on first use with CheckpointError.
    with pytest.raises(CheckpointError):
        DeltaSimPolicy(DeltaSimConfig(checkpoint=str(tmp_path / "missing"))).act(inp, np.random.default_rng(0))


def test_tiny_overfit() -> None:
    samples = procedural_traffic(1, 40, 0, idm_teacher)
    small = samples.subset(np.arange(0, len(samples), len(samples) // 64)[:64])
    # Bounded by epochs, not wall time, so the result does not depend on how busy the machine is.
    config = TrainConfig(epochs=300, batch_size=64, lr=5e-3, vocab_max_size=128, threads=1, max_seconds=3600)
    net, vocab, record = train_deltasim(small, config, DeltaSimNetConfig(d_model=32, num_layers=1))
    metrics = evaluate_bc(net, vocab, small)
    assert metrics["top1"] > 0.9
    assert metrics["step_error_m"] < 0.01
    assert record["epochs"][-1]["ce"] < record["epochs"][0]["ce"] / 5


@pytest.mark.skipif(not (DEFAULT_CHECKPOINT / WEIGHTS_FILE).is_file(), reason="no shipped weights")
def test_shipped_checkpoint_is_registered_small_and_runs() -> None:
    policy = make_policy("deltasim")
    assert isinstance(policy, DeltaSimPolicy)
    size = (DEFAULT_CHECKPOINT / WEIGHTS_FILE).stat().st_size
    assert size < 10 * 2**20
    inp = synthetic_input(16, np.random.default_rng(0))
    out = policy.act(inp, np.random.default_rng(0))
    assert out.shape == (inp.agents.capacity, 3) and np.isfinite(out).all()
    # Deterministic per seed with the shipped defaults (a fresh policy, the same seed), and seeded.
    assert np.array_equal(make_policy("deltasim").act(inp, np.random.default_rng(0)), out)
    assert not np.array_equal(make_policy("deltasim").act(inp, np.random.default_rng(1)), out)
    # Moving cars keep moving forward.
    moving = inp.controlled & (inp.agents.speed > 3.0)
    assert (out[moving, 0] > 0.1).mean() > 0.9


def test_leaders_are_predicted_braking_and_crossers_at_constant_velocity() -> None:
    times = torch.tensor([0.5, 1.0, 2.0, 4.0])
    nbr = torch.zeros(2, 11)
    nbr[0, :8] = torch.tensor([6.0, 0.0, 1.0, 0.0, 6.0, 0.0, 4.5, 2.0])    # leader at 6 m/s
    nbr[1, :8] = torch.tensor([10.0, -8.0, 0.0, 1.0, 0.0, 6.0, 4.5, 2.0])  # crossing from the right
    xy = predicted_neighbor_xy(nbr, times, lead_brake_mps2=6.0)
    # the leader stops after 1 s, 3 m on; the crosser keeps its 6 m/s
    assert torch.allclose(xy[0, :, 0], torch.tensor([6.0 + 2.25, 9.0, 9.0, 9.0]))
    assert torch.allclose(xy[1, :, 1], -8.0 + 6.0 * times)


def test_a_follower_at_a_tailgating_gap_is_pushed_to_brake() -> None:
    """0.5 m behind a leader at 6.5 m/s (the gap ΔSim kept before leaders were predicted braking): holding
    the speed costs more than braking, and more than it did at constant-velocity prediction."""
    prims = np.array([[0.65, 0, 0], [0.55, 0, 0], [0.45, 0, 0]])            # 6.5, 5.5, 4.5 m/s
    nbr = torch.zeros(1, 1, 11)
    nbr[0, 0, :8] = torch.tensor([5.0, 0, 1, 0, 6.5, 0, 4.5, 2.0])          # 0.5 m gap, same speed
    mask = torch.tensor([[True]])

    def penalty(cfg: CollisionShapingConfig) -> torch.Tensor:
        paths = torch.from_numpy(primitive_paths(prims, cfg).astype(np.float32))[None]
        return collision_penalty(paths, torch.tensor([4.5]), torch.tensor([2.0]), nbr, mask, cfg)[0]

    braking, constant = penalty(CollisionShapingConfig()), penalty(CollisionShapingConfig(lead_brake_mps2=1e-9))
    assert braking[0] > braking[1] > braking[2]
    assert braking[0] > constant[0] + 10.0


def test_fine_tuning_starts_from_the_given_network_and_keeps_its_vocabulary() -> None:
    samples = procedural_traffic(1, 40, 0, idm_teacher)
    small = samples.subset(np.arange(0, len(samples), len(samples) // 64)[:64])
    config = TrainConfig(epochs=2, batch_size=64, lr=5e-3, vocab_max_size=128, threads=1, max_seconds=3600)
    start, vocab, _ = train_deltasim(small, config, DeltaSimNetConfig(d_model=32, num_layers=1))
    frozen = dataclasses.replace(config, lr=1e-12, weight_decay=0.0)        # training that cannot move the weights
    tuned, tuned_vocab, _ = train_deltasim(small, frozen, init=(start, vocab))
    assert tuned_vocab is vocab and tuned is not start
    for name, value in start.state_dict().items():
        assert torch.allclose(tuned.state_dict()[name], value, atol=1e-6), name
    fresh, _, _ = train_deltasim(small, frozen, DeltaSimNetConfig(d_model=32, num_layers=1), vocab=vocab)
    assert not torch.allclose(fresh.state_dict()["logits_head.weight"], start.state_dict()["logits_head.weight"])


def test_fine_tuning_refuses_a_checkpoint_that_observes_differently(tmp_path: Path) -> None:
    from vectorworld.errors import ConfigError
    from vectorworld.train.deltasim_recipe import _fine_tune_start

    ckpt = _checkpoint()
    save_checkpoint(tmp_path / "m", ckpt.net, ckpt.vocabulary, ckpt.observation)
    assert _fine_tune_start(tmp_path / "m", ckpt.observation).vocabulary.size == ckpt.vocabulary.size
    other = dataclasses.replace(ckpt.observation, max_neighbors=ckpt.observation.max_neighbors + 1)
    with pytest.raises(ConfigError, match="max_neighbors"):
        _fine_tune_start(tmp_path / "m", other)
