"""Behaviour-cloning data for DeltaSim: closed-loop procedural traffic recorded as (observation, motion).

A teacher policy (IDM with randomised parameters by default) drives every agent of a synthetic road scene
(:mod:`policies.deltasim.scenes`); at each step we record each agent's observation and the body-frame
motion it then actually made (after the engine's clipping), i.e. exactly what DeltaSim must predict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from policies.base import Policy, PolicyInput
from policies.deltasim.kdisks import body_delta
from policies.deltasim.observation import (
    FEATURE_FIELDS,
    Observation,
    ObservationBuilder,
    ObservationConfig,
    ObservationFeatures,
)
from policies.deltasim.scenes import drive, synthetic_input
from vectorworld.errors import DataFormatError
from vectorworld.vehicle.dynamics import apply_deltas

SAMPLE_FIELDS = (*FEATURE_FIELDS, "motion", "speed", "agent_type", "episode")


@dataclass(frozen=True)
class Samples(ObservationFeatures):
    """M behaviour-cloning samples: the feature arrays of the observation (:class:`ObservationFeatures`,
    leading dim M) plus motion (M, 3) body-frame (dx, dy, dyaw) over the next step, speed (M,) m/s,
    agent_type (M,) int8, episode (M,) int64."""

    motion: np.ndarray
    speed: np.ndarray
    agent_type: np.ndarray
    episode: np.ndarray

    def __len__(self) -> int:
        return len(self.motion)

    def subset(self, index: np.ndarray) -> Samples:
        return Samples(**{f: getattr(self, f)[index] for f in SAMPLE_FIELDS})

    @staticmethod
    def concat(parts: list[Samples]) -> Samples:
        return Samples(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in SAMPLE_FIELDS})

    def save(self, path: Path) -> None:
        np.savez(path, **{f: getattr(self, f) for f in SAMPLE_FIELDS})

    @staticmethod
    def load(path: Path) -> Samples:
        try:
            with np.load(path, allow_pickle=False) as data:
                return Samples(**{f: data[f] for f in SAMPLE_FIELDS})
        except (OSError, KeyError, ValueError) as err:
            raise DataFormatError(f"{path}: not a DeltaSim sample file ({err})") from err


def samples_from(obs: Observation, inp: PolicyInput, motion: np.ndarray, episode: int) -> Samples:
    """Samples for the observed slots of one step; ``motion`` (S, 3) is the realised next-step motion."""
    a = inp.agents
    return Samples(**{f: getattr(obs, f) for f in FEATURE_FIELDS}, motion=motion.astype(np.float32),
                   speed=a.speed[obs.slots].astype(np.float32), agent_type=a.agent_type[obs.slots].astype(np.int8),
                   episode=np.full(obs.size, episode, np.int64))


def rollout_samples(inp: PolicyInput, teacher: Policy, rng: np.random.Generator, steps: int, episode: int,
                    builder: ObservationBuilder, route_rng: np.random.Generator | None = None,
                    skip_steps: int = 3, action_noise: tuple[float, float, float] = (0.0, 0.0, 0.0)
                    ) -> tuple[Samples, np.ndarray]:
    """Drive every valid agent of ``inp`` with ``teacher`` for ``steps`` steps; record samples from step
    ``skip_steps`` on (the first steps snap agents onto the teacher's lane centreline).

    ``action_noise`` (m, m, rad; std per step) perturbs the executed motion of moving agents (DART-style)
    so the data visits slightly off-centre states; the label stays the teacher's clean motion.

    Returns the samples and the trajectory (steps + 1, C, 3) of (x, y, yaw) for inspection.
    """
    parts, poses = [], [np.concatenate([inp.agents.xy, inp.agents.yaw[:, None]], -1)]
    for step, (cur, deltas, nxt) in enumerate(drive(inp, teacher, rng, steps, action_noise, route_rng)):
        agents = cur.agents
        clean_xy, clean_yaw, _ = apply_deltas(agents.xy, agents.yaw, agents.speed, deltas, cur.dt_s)
        obs = builder(cur)
        before = np.concatenate([agents.xy, agents.yaw[:, None]], -1)[obs.slots]
        after = np.concatenate([clean_xy, clean_yaw[:, None]], -1)[obs.slots]
        if step >= skip_steps:
            parts.append(samples_from(obs, cur, body_delta(before, after), episode))
        poses.append(np.concatenate([nxt.xy, nxt.yaw[:, None]], -1))
    return Samples.concat(parts), np.stack(poses)


def _record_episode(args: tuple) -> Samples:
    episode, child, steps, make_teacher, config, action_noise = args
    rng = np.random.default_rng(child)
    lanes = int(rng.integers(1, 5))
    agents = int(rng.integers(6, 12 * lanes + 1))
    inp = synthetic_input(agents, rng, num_lanes=lanes, segments=10, curvature=float(rng.uniform(-0.012, 0.012)),
                          speed_limit_mps=float(rng.uniform(8.0, 20.0)))
    samples, _ = rollout_samples(inp, make_teacher(rng), rng, steps, episode, ObservationBuilder(config),
                                 action_noise=action_noise)
    return samples


def procedural_traffic(episodes: int, steps: int, seed: int, make_teacher: Callable[[np.random.Generator],
                       Policy], config: ObservationConfig = ObservationConfig(),
                       action_noise: tuple[float, float, float] = (0.0, 0.0, 0.0), workers: int = 1) -> Samples:
    """Record ``episodes`` randomised synthetic-road episodes of ``steps`` steps each (episode ids 0..).

    Each episode has its own seed (spawned from ``seed``), so ``workers`` > 1 processes give identical
    samples; ``make_teacher`` must then be a module-level function."""
    jobs = [(episode, child, steps, make_teacher, config, action_noise)
            for episode, child in enumerate(np.random.SeedSequence(seed).spawn(episodes))]
    if workers <= 1:
        return Samples.concat([_record_episode(job) for job in jobs])
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return Samples.concat(list(pool.map(_record_episode, jobs)))
