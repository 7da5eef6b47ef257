"""The DeltaSim training corpus from Session rollouts: the streaming procedural world with IDM traffic.

Each episode is one :class:`~vectorworld.sim.session.Session` (its own seed: world, spawns, routes) whose
NPCs are driven by an IDM teacher with randomised driver parameters, and whose ego is the default IDM
planner. The teacher is wrapped in :class:`RecordingTeacher`, which sees exactly what DeltaSim sees at
inference -- the :class:`~policies.base.PolicyInput` of the Session, routes and junction right of way
included -- and records, every ``record_every`` steps, the observation of the agents DeltaSim would move
(:func:`policies.deltasim.observation.policy_slots`) with the body-frame motion the teacher's command realises
through the engine (:func:`vectorworld.vehicle.dynamics.apply_deltas`). That is the traffic DeltaSim must
reproduce: junctions with yielding, parked cars at the curb, pedestrians, turns, queues.

The recorder keeps the routes and the right-of-way state of every step, which a track log does not carry
and the observation needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from policies.base import Policy, PolicyInput
from policies.deltasim.kdisks import body_delta
from policies.deltasim.observation import ObservationBuilder, ObservationConfig, policy_slots
from vectorworld.errors import DataFormatError
from vectorworld.train.deltasim_data import Samples, samples_from
from vectorworld.vehicle.dynamics import apply_deltas


@dataclass(frozen=True)
class SessionCorpusConfig:
    """``episodes`` Sessions (seeds ``first_seed`` + i), each ``warmup_steps`` unrecorded steps then
    ``steps`` steps of which every ``record_every``-th is recorded. ``action_noise``: DART-style noise
    (m, m, rad; std per step) on the executed motion of moving NPCs (the label stays the clean motion).
    No defaults: the shipped recipe is :class:`vectorworld.train.deltasim_recipe.DataRecipe`."""

    episodes: int
    steps: int
    warmup_steps: int
    record_every: int
    first_seed: int
    action_noise: tuple[float, float, float]


class RecordingTeacher(Policy):
    """Drives the Session's NPCs with ``teacher`` and records (observation, realised clean motion) samples.

    ``record`` says whether a step is recorded; the observation builder still advances its per-step state
    (junction clocks) on the other steps. Samples accumulate in :attr:`parts`.
    """

    def __init__(self, teacher: Policy, builder: ObservationBuilder, episode: int,
                 record: Callable[[int], bool], noise_rng: np.random.Generator,
                 action_noise: tuple[float, float, float]) -> None:
        self.teacher = teacher
        self.name = teacher.name
        self.builder = builder
        self.episode = episode
        self.record = record
        self.noise_rng = noise_rng
        self.action_noise = np.asarray(action_noise, dtype=np.float64)
        self.parts: list[Samples] = []
        self._calls = 0

    def reset(self) -> None:
        self.teacher.reset()
        self.builder.reset()

    def act(self, inp: PolicyInput, rng: np.random.Generator) -> np.ndarray:
        deltas = self.teacher.act(inp, rng)
        a = inp.agents
        if self.record(self._calls):
            obs = self.builder(inp, policy_slots(inp))
            if obs.size:
                xy, yaw, _ = apply_deltas(a.xy, a.yaw, a.speed, deltas, inp.dt_s)
                before = np.concatenate([a.xy, a.yaw[:, None]], -1)[obs.slots]
                after = np.concatenate([xy, yaw[:, None]], -1)[obs.slots]
                self.parts.append(samples_from(obs, inp, body_delta(before, after), self.episode))
        else:
            self.builder.skip(inp)
        self._calls += 1
        moving = (inp.controlled & a.valid & (a.speed > 0.5))[:, None]
        return deltas + moving * self.noise_rng.normal(0.0, 1.0, deltas.shape) * self.action_noise


def session_episode_samples(episode: int, config: SessionCorpusConfig,
                            make_teacher: Callable[[np.random.Generator], Policy],
                            observation: ObservationConfig = ObservationConfig()) -> Samples:
    """Record one Session episode (seed ``config.first_seed + episode``) as samples with that episode id."""
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    seed = config.first_seed + episode
    rng = np.random.default_rng(seed)
    warmup, every = config.warmup_steps, config.record_every
    recorder = RecordingTeacher(make_teacher(rng), ObservationBuilder(observation), episode,
                                lambda k: k >= warmup and (k - warmup) % every == 0, rng, config.action_noise)
    session = Session(SessionConfig(seed=seed, target_km=100.0, terminate_on_collision=False,
                                    max_steps=warmup + config.steps), npc_policy=recorder)
    session.reset()
    while not session.done:
        session.advance()
    session.close()
    if not recorder.parts:
        raise DataFormatError(f"session corpus episode {episode} (seed {seed}) recorded no samples")
    return Samples.concat(recorder.parts)


def _record(job: tuple) -> Samples:
    episode, config, make_teacher, observation = job
    return session_episode_samples(episode, config, make_teacher, observation)


def session_corpus(config: SessionCorpusConfig, make_teacher: Callable[[np.random.Generator], Policy],
                   observation: ObservationConfig = ObservationConfig(),
                   log: Callable[[dict], None] | None = None, workers: int = 1) -> Samples:
    """All episodes of ``config`` (episode ids 0..episodes-1). Each episode depends on its seed only, so
    ``workers`` > 1 processes give identical samples (``make_teacher`` must then be a module-level
    function)."""
    jobs = [(episode, config, make_teacher, observation) for episode in range(config.episodes)]
    if workers <= 1:
        parts = []
        for job in jobs:
            parts.append(_record(job))
            if log is not None:
                log({"recorded_episode": job[0], "samples": len(parts[-1])})
        return Samples.concat(parts)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return Samples.concat(list(pool.map(_record, jobs)))
