"""DeltaSim: the learned NPC policy with hybrid discrete + continuous actions and kinematic logit shaping.

Per step, for all controlled agents at once:

1. observe each agent in its own frame (:mod:`policies.deltasim.observation`); history comes from
   ``inp.agents.history`` -- real logged history when a rollout starts from a log, pseudo-history from the
   generator's motion code for spawned agents (warm start);
2. the network gives logits over the k-disks vocabulary and a residual per primitive;
3. kinematic shaping: ``logits - shaping_weight * cost`` with the differentiable feasibility cost of
   every primitive from the agent's speed and type (:mod:`policies.deltasim.feasibility`), plus a hard floor
   for primitives outside the metric's limits;
4. collision avoidance: candidate primitives whose braking path overlaps a neighbour's constant-velocity
   prediction (or the junction stop wall, see :mod:`policies.deltasim.junctions`) are pushed down
   (:mod:`policies.deltasim.collision_shaping`), and so are candidates that leave the route
   (:mod:`policies.deltasim.route_shaping`);
5. sample a primitive (Gumbel-max with the caller's rng, temperature ``temperature``; 0 = greedy), add
   its residual (which may not add speed to a primitive the collision check penalised); with shaping on,
   the final motion is clamped inside the shaping limits, and an agent whose
   network wants to brake harder than feasible (its raw first choice lies below the braking limit) brakes
   as hard as feasible instead of sampling among the few feasible primitives.

Steps 3 and 4 (each penalty) are switchable for ablations. Steps 2-4 run as one graph (:mod:`policies.deltasim.scoring`,
around the folded network of :mod:`policies.deltasim.infer`), traced with TorchScript on the first step;
everything runs with at most ``DeltaSimConfig.threads`` torch threads. Agents standing off every route
(parked cars, standing pedestrians) are held still without running the network (``hold_parked``; see
:func:`policies.deltasim.observation.policy_slots`). The time of each stage of the last step is kept in
``DeltaSimPolicy.last_timing`` (ms, see STAGES).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from policies.base import Policy, PolicyInput, register_policy
from policies.deltasim.checkpoint import DEFAULT_CHECKPOINT, DeltaSimCheckpoint, load_checkpoint
from policies.deltasim.collision_shaping import CollisionShapingConfig, primitive_paths, primitive_positions
from policies.deltasim.feasibility import braking_floor, project_feasible
from policies.deltasim.infer import DeltaSimInference
from policies.deltasim.net import observation_tensors
from policies.deltasim.observation import Observation, ObservationBuilder, policy_slots
from policies.deltasim.route_shaping import RouteShapingConfig
from policies.deltasim.scoring import SCORER_INPUTS, DeltaSimScorer, trace_scorer
from policies.deltasim.start_shaping import StartShapingConfig, free_to_start, start_penalty
from vectorworld.errors import ConfigError
from vectorworld.frozen_graphs import static_runtime
from vectorworld.math_threads import math_threads

_Scorer = DeltaSimScorer | torch.jit.ScriptModule | torch._C.StaticModule
"""The eager scorer, its frozen trace, or the trace under Static Runtime (same call signature)."""


@dataclass(frozen=True)
class DeltaSimConfig:
    """Inference options. ``checkpoint``: checkpoint folder (model.safetensors + config.json; default: shipped).
    ``threads``: most torch intra-op threads used while acting (the caller's setting is restored; at most 2).
    One is the default: the ops are small, and on a shared machine a second OpenMP thread that is
    descheduled stalls every parallel op (measured 5.5 ms vs 450 ms per step for 32 agents at load 6 on 2
    cores).
    ``trace``: run the scoring graph (network, shaping, candidates, collision penalty) as a frozen
    TorchScript trace (the same ops, less Python overhead).
    ``static_runtime``: run that trace under PyTorch's Static Runtime (the same graph and outputs, less
    per-op overhead; :func:`vectorworld.frozen_graphs.static_runtime`).
    ``hold_parked``: agents standing off every route are held still (see
    :func:`policies.deltasim.observation.policy_slots`).
    ``route_keeping``: push down candidates that leave the route (:mod:`policies.deltasim.route_shaping`)."""

    checkpoint: str | None = None
    kinematic_shaping: bool = True
    collision_avoidance: bool = True
    shaping_weight: float = 1000.0
    temperature: float = 0.5
    candidates: int = 24
    use_residual: bool = True
    collision: CollisionShapingConfig = CollisionShapingConfig()
    route_keeping: bool = True
    route: RouteShapingConfig = RouteShapingConfig()
    threads: int = 1
    trace: bool = True
    static_runtime: bool = True
    hold_parked: bool = True
    start: StartShapingConfig | None = StartShapingConfig()
    """Push a standing agent with a free way ahead to set off (:mod:`policies.deltasim.start_shaping`); None
    switches it off."""

    def __post_init__(self) -> None:
        if self.temperature < 0 or self.candidates < 1 or self.shaping_weight < 0:
            raise ConfigError("deltasim: temperature and shaping_weight must be >= 0, candidates >= 1")
        if not 1 <= self.threads <= 2:
            raise ConfigError(f"deltasim: threads must be 1 or 2, got {self.threads}")


@dataclass(frozen=True)
class DeltaSimStep:
    """Diagnostics of the last step: slots (S,), chosen primitive (S,), motion (S, 3), and the kinematic
    cost (shaping limits) of the chosen primitive (S,)."""

    slots: np.ndarray
    tokens: np.ndarray
    motion: np.ndarray
    chosen_cost: np.ndarray


STAGES = ("observation", "scoring", "sampling")
"""Stages timed in :attr:`DeltaSimPolicy.last_timing` (ms): observation building (numpy, junction stops
included); scoring (tensor conversion, network, kinematic cost and shaping, top-k candidates, collision
penalty; one traced graph); sampling + detokenising (residual of the picked primitive, projection)."""


def _weights_version(params: list[torch.Tensor]) -> int:
    """Sum of the in-place version counters of ``params``: changes whenever a weight is modified."""
    return sum(p._version for p in params)


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
        self._scoring: tuple[DeltaSimInference, _Scorer] | None = None
        self._scoring_version = -1
        self._params: list[torch.Tensor] | None = None
        self.last_step: DeltaSimStep | None = None
        self.last_timing: dict[str, float] = {}

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the scorer: it is derived from the weights and rebuilt on first use (a Static
        Runtime module has no pickle support, and a reloaded frozen trace does not keep its output dtypes)."""
        return {**vars(self), "_scoring": None, "_scoring_version": -1, "_params": None}

    @property
    def checkpoint(self) -> DeltaSimCheckpoint:
        if self._ckpt is None:
            folder = Path(self.config.checkpoint) if self.config.checkpoint else DEFAULT_CHECKPOINT
            self._ckpt = load_checkpoint(folder)
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

    def _scorer(self, inputs: dict[str, torch.Tensor]) -> tuple[DeltaSimInference, _Scorer]:
        """The folded network and the scorer around it (rebuilt whenever the checkpoint's weights changed;
        with ``config.trace`` the scorer is a frozen TorchScript trace recorded on ``inputs``, run under Static
        Runtime with ``config.static_runtime``)."""
        net = self.checkpoint.net
        if self._params is None:
            self._params = list(net.parameters())
        version = _weights_version(self._params)
        if self._scoring is None or version != self._scoring_version:
            _, prims, paths = self._setup()
            cfg = self.config
            fast = DeltaSimInference(net)
            dt_s = self.checkpoint.vocabulary.dt_s
            route, points = None, None
            if cfg.route_keeping:
                route = cfg.route
                points = torch.from_numpy(primitive_positions(
                    self.checkpoint.vocabulary.primitives, route.times_s, cfg.collision.brake_decel_mps2,
                    dt_s).astype(np.float32))
            scorer = DeltaSimScorer(fast, prims, dt_s, cfg.kinematic_shaping, cfg.shaping_weight, cfg.candidates,
                                    paths, cfg.collision if cfg.collision_avoidance else None, route, points)
            if cfg.trace:
                scorer = trace_scorer(scorer, inputs)
                scorer = static_runtime(scorer) if cfg.static_runtime else scorer
            self._scoring = (fast, scorer)
            self._scoring_version = version
        return self._scoring

    def reset(self) -> None:
        self.last_step = None
        if self._builder is not None:
            self._builder.reset()

    def act(self, inp: PolicyInput, rng: np.random.Generator) -> np.ndarray:
        t0 = time.perf_counter()
        builder, _, _ = self._setup()
        out = np.zeros((inp.agents.capacity, 3))
        obs = builder(inp, policy_slots(inp, self.config.hold_parked))
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
        with math_threads(self.config.threads), torch.inference_mode():
            return self._decide(obs, inp, rng)

    def _decide(self, obs: Observation, inp: PolicyInput, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
        cfg, ckpt = self.config, self.checkpoint
        timing = self.last_timing
        t = time.perf_counter()
        speed_np = inp.agents.speed[obs.slots]
        type_np = inp.agents.agent_type[obs.slots]
        inputs = observation_tensors(obs)
        inputs["speed"] = torch.from_numpy(speed_np.astype(np.float32))
        inputs["agent_type"] = torch.from_numpy(type_np.astype(np.int64))
        net, scorer = self._scorer(inputs)
        h, cand, cand_logits, cost, wanted, conflict = scorer(*(inputs[name] for name in SCORER_INPUTS))
        t = _lap(timing, "scoring", t)
        scores = cand_logits.double().numpy()
        prims = ckpt.vocabulary.primitives
        if cfg.start is not None:
            free = free_to_start(inputs["neighbors"].numpy(), inputs["neighbor_mask"].numpy(),
                                 obs.route_ahead, obs.static, speed_np, cfg.start)
            scores = scores - start_penalty(prims[cand.numpy(), :2], free, cfg.start)
        if cfg.temperature > 0:
            scores = scores / cfg.temperature + rng.gumbel(size=scores.shape)
        rows = np.arange(len(scores))
        pick = np.argmax(scores, axis=1)
        tokens = cand.numpy()[rows, pick]
        motion = prims[tokens].copy()
        if cfg.use_residual:
            residual = net.residual(h, torch.from_numpy(tokens)).numpy().astype(np.float64)
            # The collision check judged the primitive: in a conflict the residual may not add speed to it.
            in_conflict = conflict.numpy()[rows, pick] > 0.0
            residual[in_conflict, 0] = np.minimum(residual[in_conflict, 0], 0.0)
            motion += residual
        if cfg.kinematic_shaping:
            # The network wants to brake harder than feasible: brake as hard as feasible, rather than sample
            # among the few feasible primitives whose logits it never learned to rank in such a state.
            wanted_np = wanted.numpy()
            harder = prims[wanted_np, 0] < braking_floor(speed_np, ckpt.vocabulary.dt_s)
            if harder.any():
                want = prims[wanted_np[harder]].copy()
                if cfg.use_residual:
                    want += net.residual(h[torch.from_numpy(np.nonzero(harder)[0])],
                                         torch.from_numpy(wanted_np[harder])).numpy().astype(np.float64)
                motion[harder] = want
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
