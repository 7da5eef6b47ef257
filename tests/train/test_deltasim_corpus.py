"""The Session corpus: what the recorder stores is what DeltaSim sees and the motion the teacher realised."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from policies.deltasim.kdisks import body_delta
from policies.deltasim.observation import ObservationBuilder, ObservationConfig, policy_slots
from vectorworld.errors import ConfigError, DataFormatError
from vectorworld.train.deltasim_corpus import SessionCorpusConfig, session_episode_samples
from vectorworld.train.deltasim_recipe import (
    RECIPE_FILE,
    SAMPLES_FILE,
    SEED_BASE,
    DataRecipe,
    idm_teacher,
    load_or_record,
)
from vectorworld.vehicle.dynamics import apply_deltas


def test_session_episode_records_observations_and_realised_teacher_motion() -> None:
    # (seed SEED_BASE's city start records no sample in its first 12 steps)
    config = SessionCorpusConfig(episodes=1, steps=9, warmup_steps=3, record_every=3, first_seed=SEED_BASE + 1,
                                 action_noise=(0.0, 0.0, 0.0))
    samples = session_episode_samples(0, config, idm_teacher)
    assert len(samples) > 0 and set(samples.episode.tolist()) == {0}
    assert samples.stop.shape == (len(samples), 11) and samples.stop_mask.dtype == bool
    # Replay the same Session with a plain teacher: the recorded labels are its realised clean motions.
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    seed = config.first_seed
    teacher = idm_teacher(np.random.default_rng(seed))
    session = Session(SessionConfig(seed=seed, target_km=100.0, terminate_on_collision=False,
                                    max_steps=config.warmup_steps + config.steps), npc_policy=teacher)
    session.reset()
    for _ in range(config.warmup_steps):
        session.advance()
    inp = session.policy_input(session.agents.valid & (np.arange(session.agents.capacity) != session.ego_slot))
    slots = policy_slots(inp)
    deltas = teacher.act(inp, session.npc_rng)
    a = inp.agents
    xy, yaw, _ = apply_deltas(a.xy, a.yaw, a.speed, deltas, inp.dt_s)
    motion = body_delta(np.concatenate([a.xy, a.yaw[:, None]], -1)[slots],
                        np.concatenate([xy, yaw[:, None]], -1)[slots])
    first = samples.motion[: len(slots)]
    assert np.allclose(first, motion, atol=1e-5)
    obs = ObservationBuilder()(inp, slots)
    assert np.allclose(samples.history[: len(slots)], obs.history, atol=1e-5)


def test_recipe_corpus_seeds_never_meet_the_evaluation_seeds() -> None:
    corpus = DataRecipe().corpus()
    assert corpus.first_seed == SEED_BASE and corpus.episodes < SEED_BASE
    assert DataRecipe(seed=1).corpus().first_seed == 2 * SEED_BASE


def test_a_cache_of_another_recipe_is_refused(tmp_path: Path) -> None:
    """The training record states the recipe: a cached corpus recorded otherwise must not be trained on."""
    (tmp_path / SAMPLES_FILE).write_bytes(b"not read before the recipe matches")
    with pytest.raises(ConfigError, match="no readable recipe"):
        load_or_record(tmp_path, DataRecipe(), ObservationConfig())
    (tmp_path / RECIPE_FILE).write_text(json.dumps({**json.loads(json.dumps(vars(DataRecipe()))), "episodes": 3}))
    with pytest.raises(ConfigError, match="recorded with recipe"):
        load_or_record(tmp_path, DataRecipe(), ObservationConfig())


def test_the_teachers_speed_factor_range_is_part_of_the_recipe(tmp_path: Path) -> None:
    """Drivers are drawn from the recipe's speed-factor range; a cache recorded with another range is refused,
    and one recorded before the range was a field counts as the range then fixed (0.7 to 1.15)."""
    draws = [idm_teacher(np.random.default_rng(k), (0.9, 1.1)).core.params.speed_factor for k in range(20)]
    assert all(0.9 <= f <= 1.1 for f in draws) and max(draws) - min(draws) > 0.1
    assert idm_teacher(np.random.default_rng(0), (1.0, 1.0)).core.params.speed_factor == 1.0
    (tmp_path / SAMPLES_FILE).write_bytes(b"not read before the recipe matches")
    legacy = {k: v for k, v in json.loads(json.dumps(vars(DataRecipe()))).items() if k != "speed_factor"}
    (tmp_path / RECIPE_FILE).write_text(json.dumps(legacy))
    with pytest.raises(ConfigError, match="recorded with recipe"):
        load_or_record(tmp_path, DataRecipe(speed_factor=(0.85, 1.15)), ObservationConfig())
    with pytest.raises(DataFormatError):   # the recipe matches: the (fake) samples are read
        load_or_record(tmp_path, DataRecipe(speed_factor=(0.7, 1.15)), ObservationConfig())
