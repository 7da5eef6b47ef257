"""How corpora and evaluations grow a world tile by tile: at random open lane ends, or ahead of a virtual ego
that drives it (:class:`~vectorworld.world.virtual_drive.VirtualDrive`), as an episode does."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vectorworld.errors import ConfigError
from vectorworld.world.streaming import GeneratedTile, StreamingWorld
from vectorworld.world.virtual_drive import VirtualDrive

GROWTHS = ("ends", "drive")
CALLS_PER_TILE = {"ends": 4, "drive": 12}
"""Growth calls a world may take per tile it is to grow (a drive's calls often find the road ahead covered)."""

Grow = Callable[[np.ndarray | None], list[GeneratedTile] | None]
"""One growth call, given the agents new tiles must not spawn onto ((M, 2) or None): the generator's tiles it
made (straight fallback lanes left out; maybe none), or None when the world can grow no further."""


def check_growth(growth: str) -> None:
    """ConfigError naming ``growth`` unless it is one of :data:`GROWTHS`."""
    if growth not in GROWTHS:
        raise ConfigError(f"growth must be one of {', '.join(GROWTHS)}, got {growth!r}", field="growth")


def grower(world: StreamingWorld, first: GeneratedTile, rng: np.random.Generator, growth: str) -> Grow:
    """The growth calls of a started world (``first``: its first tile), drawing from ``rng``."""
    check_growth(growth)
    if growth == "ends":
        return lambda agents_xy: world.grow_at_random_end(rng, agents_xy)
    drive = VirtualDrive(world, first, rng)

    def drive_on(agents_xy: np.ndarray | None) -> list[GeneratedTile] | None:
        made = drive.step(agents_xy)
        return None if made is None else [g for g in made if not g.tile.fallback]

    return drive_on
