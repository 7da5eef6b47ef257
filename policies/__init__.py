"""NPC policies and built-in ego planners behind one batched interface (see policies.base).

Plug-ins register themselves by name when their module is imported; ``POLICY_MODULES`` says which
module provides which name, so choosing ``idm`` never imports torch.
"""

from __future__ import annotations

import importlib
import importlib.util

from policies.base import POLICIES, Policy, PolicyInput, make_policy, register_policy

POLICY_MODULES = {
    "idm": "policies.idm",
    "constant-velocity": "policies.constant_velocity",
    "log-replay": "policies.log_replay",
    "deltasim": "policies.deltasim",
    "deltasim-unshaped": "policies.deltasim",
}


def load_policy_module(name: str) -> bool:
    """Import the module that registers ``name``; False if it does not exist (yet)."""
    module = POLICY_MODULES.get(name)
    if module is None:
        return name in POLICIES
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module:
            raise
        return False
    return name in POLICIES


def available_policies() -> list[str]:
    """Names of the policies whose modules exist."""
    return sorted(n for n in POLICY_MODULES if n in POLICIES or _module_exists(POLICY_MODULES[n]))


def _module_exists(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


__all__ = ["Policy", "PolicyInput", "available_policies", "load_policy_module", "make_policy",
           "register_policy"]
