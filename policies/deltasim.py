"""DeltaSim: the learned NPC policy with hybrid discrete + continuous actions and kinematic logit shaping.

Per step, for all controlled agents at once:

1. observe each agent in its own frame (:mod:`policies.npc_observation`); history comes from
   ``inp.agents.history`` -- real logged history when a rollout starts from a log, pseudo-history from the
   generator's motion code for spawned agents (warm start);
2. the network gives logits over the k-disks vocabulary and a residual per primitive;
3. kinematic shaping: ``logits - shaping_weight * cost`` with the differentiable feasibility cost of
   every primitive from the agent's speed and type (:mod:`policies.feasibility`), plus a hard floor
   for primitives outside the metric's limits;
4. collision avoidance: candidate primitives whose braking path overlaps a neighbour's constant-velocity
   prediction are pushed down (:mod:`policies.collision_shaping`);
5. sample a primitive (Gumbel-max with the caller's rng, temperature ``temperature``; 0 = greedy), add
   its residual; with shaping on, the final motion is clamped inside the shaping limits.

Steps 3 and 4 are switchable for ablations. The network runs through its folded inference copy
(:mod:`policies.deltasim_infer`), with at most ``DeltaSimConfig.threads`` torch threads; the time of each
stage of the last step is kept in ``DeltaSimPolicy.last_timing`` (ms).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from policies.base import Policy, PolicyInput, register_policy
from policies.collision_shaping import CollisionShapingConfig, collision_penalty, primitive_paths
from policies.deltasim_checkpoint import DEFAULT_CHECKPOINT, DeltaSimCheckpoint, load_checkpoint
from policies.deltasim_infer import DeltaSimInference
from policies.deltasim_net import DeltaSimNet, observation_tensors
from policies.feasibility import METRIC_LIMITS, kinematic_cost, project_feasible
from policies.npc_observation import Observation, ObservationBuilder
from vectorworld.errors import ConfigError

HARD_PENALTY = 1.0e4
"""Logit penalty of primitives that break the metric's limits (on top of the soft shaping cost)."""


@dataclass(frozen=True)
class DeltaSimConfig:
    """Inference options. ``checkpoint``: stem of the .safetensors/.json pair (default: shipped).
    ``threads``: most torch intra-op threads used while acting (the caller's setting is restored)."""

    checkpoint: str | None = None
    kinematic_shaping: bool = True
    collision_avoidance: bool = True
    shaping_weight: float = 1000.0
    temperature: float = 1.0
    candidates: int = 48
    use_residual: bool = True
    collision: CollisionShapingConfig = CollisionShapingConfig()
    threads: int = 2

    def __post_init__(self) -> None:
        if self.temperature < 0 or self.candidates < 1 or self.shaping_weight < 0 or self.threads < 1:
            raise ConfigError("deltasim: temperature and shaping_weight must be >= 0, candidates and threads >= 1")


@dataclass(frozen=True)
class DeltaSimStep:
    """Diagnostics of the last step: slots (S,), chosen primitive (S,), motion (S, 3), and the kinematic
    cost (metric limits) of the chosen primitive (S,)."""

    slots: np.ndarray
    tokens: np.ndarray
    motion: np.ndarray
    chosen_cost: np.ndarray


STAGES = ("observation", "network", "kinematic", "candidates", "collision", "sampling")
"""Stages timed in :attr:`DeltaSimPolicy.last_timing`: observation building (numpy), tensor conversion and
the network forward, kinematic cost and logit shaping, top-k candidates, the collision penalty, and
sampling + detokenising (residual of the picked primitive, projection)."""


@contextmanager
def torch_threads(limit: int) -> Iterator[None]:
    """Run the block with at most ``limit`` torch intra-op threads, then restore the caller's setting."""
    before = torch.get_num_threads()
    if before <= limit:
        yield
        return
    torch.set_num_threads(limit)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _weights_version(net: DeltaSimNet) -> int:
    """Sum of the in-place version counters of the parameters: changes whenever a weight is modified."""
    return sum(p._version for p in net.parameters())


class DeltaSimPolicy(Policy):
    """The learned NPC policy; the checkpoint is loaded on first use."""

    name = "deltasim"

    def __init__(self, config: DeltaSimConfig = DeltaSimConfig(),
                 checkpoint: DeltaSimCheckpoint | None = None) -> None:
        self.config = config
        self._ckpt = checkpoint
        self._builder: ObservationBuilder | None = None
        self._paths: torch.Tensor | None = None
        self._prims: torch.Tensor | None = None
        self._fast: DeltaSimInference | None = None
        self._fast_version = -1
        self.last_step: DeltaSimStep | None = None
        self.last_timing: dict[str, float] = {}

    @property
    def checkpoint(self) -> DeltaSimCheckpoint:
        if self._ckpt is None:
            stem = Path(self.config.checkpoint) if self.config.checkpoint else DEFAULT_CHECKPOINT
            self._ckpt = load_checkpoint(stem)
        return self._ckpt

    def _setup(self) -> tuple[ObservationBuilder, torch.Tensor, torch.Tensor]:
        ckpt = self.checkpoint
        if self._builder is None or self._paths is None or self._prims is None:
            self._builder = ObservationBuilder(ckpt.observation)
            prims = ckpt.vocabulary.primitives
            self._prims = torch.from_numpy(prims.astype(np.float32))
            self._paths = torch.from_numpy(
                primitive_paths(prims, self.config.collision, ckpt.vocabulary.dt_s).astype(np.float32))
        return self._builder, self._prims, self._paths

    @property
    def inference_net(self) -> DeltaSimInference:
        """The folded copy of the checkpoint's network (rebuilt if the network's weights changed)."""
        net = self.checkpoint.net
        version = _weights_version(net)
        if self._fast is None or version != self._fast_version:
            with torch.no_grad():
                self._fast = DeltaSimInference(net)
            self._fast_version = version
        return self._fast

    def reset(self) -> None:
        self.last_step = None

    def act(self, inp: PolicyInput, rng: np.random.Generator) -> np.ndarray:
        t0 = time.perf_counter()
        builder, _, _ = self._setup()
        out = np.zeros((inp.agents.capacity, 3))
        obs = builder(inp)
        self.last_timing = {"observation": (time.perf_counter() - t0) * 1e3}
        if obs.size == 0:
            self.last_step = DeltaSimStep(obs.slots, np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0))
            return out
        _, motion = self.decide(obs, inp, rng)
        out[obs.slots] = motion
        return out

    def decide(self, obs: Observation, inp: PolicyInput, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
        """Chosen primitive (S,) and motion (S, 3) for the observed agents."""
        with torch_threads(self.config.threads), torch.inference_mode():
            return self._decide(obs, inp, rng)

    def _decide(self, obs: Observation, inp: PolicyInput, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
        _, prims, paths = self._setup()
        cfg, ckpt, net = self.config, self.checkpoint, self.inference_net
        timing = self.last_timing
        t = time.perf_counter()
        h = net.encode(**observation_tensors(obs))
        logits = net.logits(h)
        t = _lap(timing, "network", t)
        speed_np = inp.agents.speed[obs.slots]
        type_np = inp.agents.agent_type[obs.slots]
        speed = torch.from_numpy(speed_np.astype(np.float32))[:, None]
        agent_type = torch.from_numpy(type_np.astype(np.int64))[:, None]
        cost = kinematic_cost(prims[None], speed, agent_type, ckpt.vocabulary.dt_s)
        shaped = logits
        if cfg.kinematic_shaping:
            # Soft, differentiable push-down inside the margins, plus a hard floor for anything the metric
            # would call infeasible (so no logit scale can sample one while a feasible primitive exists).
            hard = kinematic_cost(prims[None], speed, agent_type, ckpt.vocabulary.dt_s, METRIC_LIMITS) > 0
            shaped = logits - cfg.shaping_weight * cost - HARD_PENALTY * hard
        t = _lap(timing, "kinematic", t)
        k = min(cfg.candidates, prims.shape[0])
        cand = torch.topk(shaped, k, dim=1).indices
        # Always offer the hardest feasible braking step as a candidate (the escape option).
        brake = torch.argmin(cost * 100.0 + prims[None, :, 0], dim=1, keepdim=True)
        cand = torch.cat([cand, brake], 1)
        cand_logits = torch.gather(shaped, 1, cand)
        t = _lap(timing, "candidates", t)
        if cfg.collision_avoidance:
            static = torch.from_numpy(obs.static)
            cand_logits = cand_logits - collision_penalty(
                paths[cand], static[:, 0], static[:, 1], torch.from_numpy(obs.neighbors),
                torch.from_numpy(obs.neighbor_mask), cfg.collision)
        t = _lap(timing, "collision", t)
        scores = cand_logits.double().numpy()
        if cfg.temperature > 0:
            scores = scores / cfg.temperature + rng.gumbel(size=scores.shape)
        rows = np.arange(len(scores))
        pick = np.argmax(scores, axis=1)
        tokens = cand.numpy()[rows, pick]
        motion = ckpt.vocabulary.primitives[tokens].copy()
        if cfg.use_residual:
            motion += net.residual(h, torch.from_numpy(tokens)).numpy().astype(np.float64)
        if cfg.kinematic_shaping:
            motion = project_feasible(motion, speed_np, type_np, ckpt.vocabulary.dt_s)
        chosen_cost = cost.numpy()[rows, tokens]
        self.last_step = DeltaSimStep(obs.slots, tokens, motion, chosen_cost)
        _lap(timing, "sampling", t)
        return tokens, motion


def _lap(timing: dict[str, float], stage: str, start: float) -> float:
    """Record ms since ``start`` under ``stage``; returns now."""
    now = time.perf_counter()
    timing[stage] = (now - start) * 1e3
    return now


@register_policy("deltasim")
def make_deltasim() -> DeltaSimPolicy:
    """The default DeltaSim policy (shipped checkpoint, shaping and collision avoidance on)."""
    return DeltaSimPolicy()


@register_policy("deltasim-unshaped")
def make_deltasim_unshaped() -> DeltaSimPolicy:
    """Ablation: no kinematic logit shaping (collision avoidance still on)."""
    return DeltaSimPolicy(DeltaSimConfig(kinematic_shaping=False))
