"""Who moves the NPCs of a Session: the batched NPC policy, or the log being replayed.

The Session asks its driver, on one path, for the NPCs' next states, whether the log has run out and
whether the engine's traffic upkeep applies (jam removal, leaving at the world's edge): a replayed log
decides by itself where its agents are, so the engine leaves them alone.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from policies.base import Policy, PolicyInput
from vectorworld import DT_S
from vectorworld.data.scenario import Scenario
from vectorworld.scene import Agents
from vectorworld.vehicle.dynamics import apply_deltas

NextStates = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""xy (C, 2), yaw (C,), speed (C,), valid (C,) of every slot after the step (the ego's entry is overwritten)."""


class PolicyDriver:
    """NPCs moved by one batched policy call per step; the engine keeps the traffic flowing."""

    controller = 1
    """``Frame.policy_of`` code of the agents it moves."""
    manages_traffic = True

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def move(self, before: Agents, inp: PolicyInput, ego_slot: int, step_index: int,
             rng: np.random.Generator) -> NextStates:
        controlled = before.valid.copy()
        controlled[ego_slot] = False
        deltas = self.policy.act(dataclasses.replace(inp, controlled=controlled), rng)
        xy, yaw, speed = apply_deltas(before.xy, before.yaw, before.speed, deltas, DT_S)
        return xy, yaw, speed, before.valid

    def log_ended(self, step_index: int) -> bool:
        return False


class LogReplayDriver:
    """Every logged track moves to its logged state of the next step (hidden where the log has no state)."""

    controller = 2
    manages_traffic = False

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario

    def move(self, before: Agents, inp: PolicyInput, ego_slot: int, step_index: int,
             rng: np.random.Generator) -> NextStates:
        sc = self.scenario
        t = sc.current_index + step_index + 1
        xy, yaw, speed = before.xy.copy(), before.yaw.copy(), before.speed.copy()
        valid = before.valid.copy()
        if t >= sc.num_steps:
            return xy, yaw, speed, valid
        slots = np.nonzero(np.isin(before.id, sc.tracks.ids) & (np.arange(before.capacity) != ego_slot))[0]
        order = np.argsort(sc.tracks.ids)
        rows = order[np.searchsorted(sc.tracks.ids, before.id[slots], sorter=order)]
        xy[slots] = sc.tracks.xy[rows, t]
        yaw[slots] = sc.tracks.yaw[rows, t]
        speed[slots] = sc.tracks.speed[rows, t]
        valid[slots] = sc.tracks.valid[rows, t]
        return xy, yaw, speed, valid

    def log_ended(self, step_index: int) -> bool:
        """Whether the step after ``step_index`` is past the log's end."""
        return self.scenario.current_index + step_index + 1 >= self.scenario.num_steps
