"""NPC policies and built-in ego planners behind one batched interface (see policies.base).

Plug-ins register themselves by name when their module is imported; ``POLICY_MODULES`` says which
module provides which name, so choosing ``idm`` never imports torch.
"""

from __future__ import annotations

from policies.base import POLICIES, Policy, PolicyInput, make_policy, register_policy
from vectorworld.plugins import available_plugins, load_plugin

DEFAULT_NPC_POLICY = "deltasim"
"""The NPC policy of rollouts and sessions unless one is named: the learned ΔSim (``idm`` is rule-based)."""

POLICY_MODULES = {
    "idm": "policies.idm",
    "constant-velocity": "policies.constant_velocity",
    "deltasim": "policies.deltasim.policy",
    "deltasim-unshaped": "policies.deltasim.policy",
}


def load_policy_module(name: str) -> bool:
    """Import the module that registers ``name``; False if it does not exist."""
    return load_plugin(name, POLICY_MODULES, POLICIES)


def available_policies() -> list[str]:
    """Names of the policies whose modules exist (``log-replay`` is built into the Session)."""
    return available_plugins(POLICY_MODULES, POLICIES)


__all__ = ["DEFAULT_NPC_POLICY", "Policy", "PolicyInput", "available_policies", "load_policy_module", "make_policy",
           "register_policy"]
