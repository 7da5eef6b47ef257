"""Built-in ego planners and the plug-in loader (``--planner idm`` or ``--planner module:Class``).

A planner sees the privileged :class:`PolicyInput` (every agent, the lane graph, the routes) and returns
an ego command. The default IDM route follower returns a 3 s trajectory that the simulator tracks.
"""

from __future__ import annotations

import abc
import importlib

import numpy as np

from policies.base import PolicyInput
from policies.idm import IdmCore, IdmParams
from vectorworld import geometry
from vectorworld.errors import ConfigError
from vectorworld.vehicle.commands import ControlCommand, EgoCommand, TrajectoryCommand

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
    """Follows the ego route with IDM speed control, stopping where the step's right of way holds it (the
    Session's decision in ``inp.right_of_way``); outputs a trajectory."""

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


class ConstantVelocityPlanner(EgoPlanner):
    """Keeps the ego's speed and heading (no steering, no braking): the floor of the planner leaderboard."""

    name = "constant-velocity"

    def plan(self, inp: PolicyInput) -> EgoCommand:
        return ControlCommand(0.0, 0.0)


BUILTIN_PLANNERS = ("idm", "pdm", "constant-velocity")


def load_planner(spec: str) -> EgoPlanner:
    """A built-in planner (:data:`BUILTIN_PLANNERS`) or ``package.module:ClassName``: a class with a
    no-argument constructor and a ``plan(inp)`` method; ``reset()`` (called at the start of every episode) is
    optional."""
    if spec == "idm":
        return IdmRoutePlanner()
    if spec == "pdm":
        from policies.pdm import PdmPlanner

        return PdmPlanner()
    if spec == "constant-velocity":
        return ConstantVelocityPlanner()
    if ":" not in spec:
        raise ConfigError(f"unknown planner {spec!r}; use one of {list(BUILTIN_PLANNERS)} or 'module:Class'")
    module_name, _, class_name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"planner {spec!r}: cannot import module {module_name!r} ({err})") from err
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ConfigError(f"planner {spec!r}: module {module_name!r} has no attribute {class_name!r}")
    if not callable(getattr(cls, "plan", None)):
        raise ConfigError(f"planner {spec!r}: {class_name} has no plan(inp) method (a planner needs one; "
                          f"reset() is optional)")
    try:
        return cls()
    except TypeError as err:
        raise ConfigError(f"planner {spec!r}: {class_name}() needs a constructor without arguments ({err})") from err


def reset_planner(planner: object) -> None:
    """Call the planner's ``reset()`` if it has one (plug-in planners need not)."""
    reset = getattr(planner, "reset", None)
    if callable(reset):
        reset()
