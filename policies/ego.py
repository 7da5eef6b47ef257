"""Built-in ego planners and the plug-in loader (``--planner idm`` or ``--planner module:Class``).

A planner sees the privileged :class:`PolicyInput` (every agent, the lane graph, the routes) and returns
an ego command. The default IDM route follower returns a 3 s trajectory that the simulator tracks.
"""

from __future__ import annotations

import abc
import importlib

import numpy as np

from policies.base import Policy, PolicyInput
from policies.idm import IdmCore, IdmParams, IdmPolicy, SharesIdmCore
from vectorworld import geometry
from vectorworld.errors import ConfigError
from vectorworld.vehicle.commands import EgoCommand, TrajectoryCommand

HORIZON_STEPS = 30


class EgoPlanner(abc.ABC):
    """Drives the ego. ``plan`` is called once per step before the world moves."""

    name: str = "planner"

    def reset(self) -> None:
        """Forget per-episode state."""

    @abc.abstractmethod
    def plan(self, inp: PolicyInput) -> EgoCommand:
        """Return this step's command for the ego (slot ``inp.ego_slot``)."""


class IdmRoutePlanner(EgoPlanner):
    """Follows the ego route with IDM speed control and junction yielding; outputs a trajectory."""

    name = "idm"

    def __init__(self, params: IdmParams = IdmParams()) -> None:
        self.core = IdmCore(params)

    def reset(self) -> None:
        self.core.reset()

    def plan(self, inp: PolicyInput) -> EgoCommand:
        a, slot = inp.agents, inp.ego_slot
        plan = self.core.plan(inp, np.array([slot]))
        row = plan.row(slot)
        path, s, accel = plan.paths[row], float(plan.s[row]), float(plan.accel[row])
        speed = float(a.speed[slot])
        if path is None:
            return TrajectoryCommand(np.tile([*a.xy[slot], a.yaw[slot]], (HORIZON_STEPS, 1)))
        # Hold IDM's acceleration for 1 s, then cruise (IDM re-plans every step anyway).
        accel_k = np.where(np.arange(HORIZON_STEPS) < 10, accel, 0.0)
        speeds = np.maximum(speed + np.cumsum(accel_k) * inp.dt_s, 0.0)
        s_k = np.minimum(s + np.cumsum(speeds) * inp.dt_s, path.length_m)
        xy = geometry.interpolate_polyline(path.points, path.s, s_k)
        ahead = geometry.interpolate_polyline(path.points, path.s, s_k + 0.5)
        behind = geometry.interpolate_polyline(path.points, path.s, np.maximum(s_k - 0.5, 0.0))
        d = ahead - behind
        yaw = np.arctan2(d[:, 1], d[:, 0])
        poses = np.concatenate([xy, yaw[:, None]], -1)
        return TrajectoryCommand(poses)


def share_idm_core(planner: EgoPlanner, policy: Policy | None) -> None:
    """Let an IDM ego planner and the NPC policy share one core. With IDM NPCs of the same parameters every
    agent is then planned once per step (the same decisions as two cores, about half the work); a policy
    that decides the junction right of way itself (:class:`policies.idm.SharesIdmCore`, ΔSim) adopts the
    planner's core, and the planner reads that decision instead of taking it again."""
    if not isinstance(planner, IdmRoutePlanner):
        return
    if isinstance(policy, IdmPolicy) and planner.core.params == policy.core.params:
        planner.core = policy.core = IdmCore(policy.core.params, plans_everyone=True)
    elif isinstance(policy, SharesIdmCore):
        policy.adopt_idm_core(planner.core)


def load_planner(spec: str) -> EgoPlanner:
    """``idm`` or ``package.module:ClassName`` (a class with a no-argument constructor)."""
    if spec == "idm":
        return IdmRoutePlanner()
    if ":" not in spec:
        raise ConfigError(f"unknown planner {spec!r}; use 'idm' or 'module:Class'")
    module_name, _, class_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"planner {spec!r}: cannot import module {module_name!r} ({err})") from err
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ConfigError(f"planner {spec!r}: module {module_name!r} has no attribute {class_name!r}")
    planner = cls()
    if not hasattr(planner, "plan"):
        raise ConfigError(f"planner {spec!r} has no plan(inp) method")
    return planner
