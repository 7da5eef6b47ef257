"""NPC policies and built-in ego planners behind one batched interface (see policies.base)."""

from __future__ import annotations

import importlib

from policies.base import POLICIES, Policy, PolicyInput, make_policy, register_policy

_PLUGINS = ("policies.idm", "policies.constant_velocity", "policies.log_replay", "policies.deltasim")


def available_policies() -> list[str]:
    """Import the policy plug-ins that exist (registering them) and list their names."""
    for module in _PLUGINS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
    return sorted(POLICIES)


__all__ = ["Policy", "PolicyInput", "available_policies", "make_policy", "register_policy"]
