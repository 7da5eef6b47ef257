"""Tile generators: the procedural road-network generator and the learned VectorWorld model.

Generators register themselves by name when imported; ``GENERATOR_MODULES`` maps names to modules so
that choosing ``procedural`` never imports torch.
"""

from __future__ import annotations

import importlib
import importlib.util

from vectorworld.generation.base import GENERATORS, make_generator

GENERATOR_MODULES = {
    "procedural": "vectorworld.generation.procedural",
    "learned": "vectorworld.generation.learned",
}


def load_generator_module(name: str) -> bool:
    """Import the module that registers ``name``; False if it does not exist."""
    module = GENERATOR_MODULES.get(name)
    if module is None:
        return name in GENERATORS
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module:
            raise
        return False
    return name in GENERATORS


def available_generators() -> list[str]:
    """Names of generators whose modules exist (plus any registered at run time, e.g. in tests)."""
    present = {n for n, m in GENERATOR_MODULES.items() if importlib.util.find_spec(m) is not None}
    return sorted(present | set(GENERATORS))


__all__ = ["available_generators", "load_generator_module", "make_generator"]
