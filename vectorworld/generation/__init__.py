"""Tile generators: the procedural road-network generator and the learned VectorWorld model.

Generators register themselves by name when imported; ``GENERATOR_MODULES`` maps names to modules so
that choosing ``procedural`` never imports torch.
"""

from __future__ import annotations

from vectorworld.generation.base import GENERATORS, make_generator
from vectorworld.plugins import available_plugins, load_plugin

GENERATOR_MODULES = {
    "procedural": "vectorworld.generation.procedural.generator",
    "learned": "vectorworld.generation.learned.generator",
}


def load_generator_module(name: str) -> bool:
    """Import the module that registers ``name``; False if it does not exist."""
    return load_plugin(name, GENERATOR_MODULES, GENERATORS)


def available_generators() -> list[str]:
    """Names of generators whose modules exist (plus any registered at run time, e.g. in tests)."""
    return available_plugins(GENERATOR_MODULES, GENERATORS)


__all__ = ["available_generators", "load_generator_module", "make_generator"]
