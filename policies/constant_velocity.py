"""Constant velocity: every agent keeps its speed and heading (a baseline, and a sanity check)."""

from __future__ import annotations

import numpy as np

from policies.base import Policy, PolicyInput, register_policy


@register_policy("constant-velocity")
class ConstantVelocityPolicy(Policy):
    name = "constant-velocity"

    def act(self, inp: PolicyInput, rng: np.random.Generator) -> np.ndarray:
        actions = np.zeros((inp.agents.capacity, 3))
        actions[:, 0] = np.maximum(inp.agents.speed, 0.0) * inp.dt_s
        return actions
