"""The batched policy interface shared by NPC policies and built-in ego planners.

A policy moves the agents it controls by one 0.1 s step. Its action is a body-frame pose delta per agent
(dx, dy, dyaw), the action space of DeltaSim; the engine clips it to kinematically feasible bounds.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from vectorworld.errors import ConfigError
from vectorworld.scene import Agents, LaneGraph
from vectorworld.signals import SignalView

if TYPE_CHECKING:
    from policies.right_of_way import RightOfWayDecision


@dataclass(frozen=True)
class PolicyInput:
    """What a policy sees at one step.

    agents: every agent in the world (the ego included, at slot ``ego_slot``).
    controlled: (C,) bool, the slots this policy must move.
    routes: agent id -> lane ids the agent intends to follow, starting with its current lane.
    motion_codes: agent id -> (6, 2) body-frame recent path from the generator (warm start), if any.
    signals: the state of every traffic light of the known world at this step.
    right_of_way: this step's right-of-way decision (the Session's :class:`policies.right_of_way.RightOfWay`
    takes it once per step for everyone); None outside a Session (a policy then decides by itself).
    crossing_blocked: connectors closed to vehicles this step because a pedestrian is on a crosswalk across
    them (:mod:`vectorworld.sim.crossings`).
    """

    agents: Agents
    controlled: np.ndarray
    graph: LaneGraph
    routes: Mapping[int, Sequence[int]]
    ego_slot: int
    step: int
    dt_s: float = 0.1
    motion_codes: Mapping[int, np.ndarray] = field(default_factory=dict)
    signals: SignalView = field(default_factory=SignalView.empty)
    right_of_way: RightOfWayDecision | None = None
    crossing_blocked: frozenset[int] = frozenset()


class Policy(abc.ABC):
    """Moves many agents at once. Subclasses implement :meth:`act`; state (if any) is reset by ``reset``."""

    name: str = "base"

    def reset(self) -> None:
        """Forget per-episode state."""

    @abc.abstractmethod
    def act(self, inp: PolicyInput, rng: np.random.Generator) -> np.ndarray:
        """Return (C, 3) body-frame deltas (dx m, dy m, dyaw rad) for one step; rows of slots not in
        ``inp.controlled`` are ignored."""


POLICIES: dict[str, Callable[[], Policy]] = {}


def register_policy(name: str) -> Callable[[Callable[[], Policy]], Callable[[], Policy]]:
    def wrap(factory: Callable[[], Policy]) -> Callable[[], Policy]:
        POLICIES[name] = factory
        return factory
    return wrap


def make_policy(name: str) -> Policy:
    """Build a registered NPC policy by name; raises ConfigError naming the choices otherwise."""
    from policies import available_policies, load_policy_module

    if not load_policy_module(name):
        raise ConfigError(f"unknown NPC policy {name!r}; choose one of {available_policies()}")
    return POLICIES[name]()
