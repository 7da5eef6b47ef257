"""Test builder: a streaming world grown at random open ends by a procedural generator that logs its tiles.

The generator tests check what the generator made tile by tile (``GrownWorld.tiles``: frame, ports given,
content, counters) and the network it made (``generated``: its lanes with the types it chose -- the world
marks lanes that cross others as junction connectors, which would hide a generator's crossing) next to the
world's own graph (``graph``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld.generation.procedural.generator import ProceduralConfig
from vectorworld.generation.procedural.tile_log import LoggedProcedural, LoggedTile
from vectorworld.scene import LaneGraph
from vectorworld.world.streaming import StreamingWorld, WorldConfig


@dataclass(frozen=True)
class GrownWorld:
    """The world (never retired), the generator's log (the first tile first) and its network as generated."""

    world: StreamingWorld
    tiles: list[LoggedTile]
    generated: LaneGraph

    @property
    def graph(self) -> LaneGraph:
        return self.world.graph


def grow(seed: int, tiles: int, explore_seed: int | None = None, config: ProceduralConfig | None = None) -> GrownWorld:
    """Grow a world of up to ``tiles`` generated tiles (the first included).

    ``seed`` seeds the world (the generator's randomness, hence the city plan); ``explore_seed`` (default
    ``seed``) picks the open ends to grow at, so two explore seeds explore one plan along different routes.
    """
    generator = LoggedProcedural(config)
    world = StreamingWorld(generator, np.random.default_rng([seed, 1]),
                           WorldConfig(retention_m=1e9, max_tiles_per_update=1))
    world.start()
    explore = np.random.default_rng(seed if explore_seed is None else explore_seed)
    for _ in range(4 * tiles):
        if len(generator.log) >= tiles or world.grow_at_random_end(explore) is None:
            break
    made = [t for t in world.tiles.values() if not t.fallback]
    assert len(made) == len(generator.log), "every generate call is a tile of the world"
    return GrownWorld(world, generator.log, generator.generated_graph())
