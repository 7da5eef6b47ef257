"""Plug-in registries by name (generators, policies): each name maps to the module that registers it, so
choosing one plug-in never imports another's heavy dependencies (e.g. torch)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping


def load_plugin(name: str, modules: Mapping[str, str], registry: Mapping[str, object]) -> bool:
    """Import the module that registers ``name``; False if the name is unknown or its module is missing."""
    module = modules.get(name)
    if module is None:
        return name in registry
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module:
            raise
        return False
    return name in registry


def available_plugins(modules: Mapping[str, str], registry: Mapping[str, object]) -> list[str]:
    """Names whose modules exist, plus any registered at run time (e.g. by tests)."""
    present = {n for n, m in modules.items() if importlib.util.find_spec(m) is not None}
    return sorted(present | set(registry))
