"""Tile generators: the procedural road-network generator and the learned VectorWorld model."""

from __future__ import annotations

import importlib

from vectorworld.generation.base import GENERATORS, make_generator

_PLUGINS = ("vectorworld.generation.procedural", "vectorworld.generation.learned")


def available_generators() -> list[str]:
    """Import the generator plug-ins that exist (registering them) and list their names."""
    for module in _PLUGINS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
    return sorted(GENERATORS)


__all__ = ["available_generators", "make_generator"]
