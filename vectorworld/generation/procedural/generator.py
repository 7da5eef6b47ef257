"""The procedural road-network generator: a non-learned :class:`TileGenerator` for dense urban tiles.

For each tile it groups the open ports into road ends (:mod:`port_groups`), grows every road that starts
inside the tile until it leaves the tile (:mod:`road_growth`: straight and curved pieces, 3- and 4-way
junctions with turn connectors, lane splits and merges, never over an existing lane; roads that run into
other roads cross, join or bridge them, :mod:`road_meetings`; a boxed-in two-way road turns around,
:mod:`turnarounds`), then places traffic on the new lanes (:mod:`spawning`). With no ports (a first tile)
it lays a road through the tile origin along the tile's +x axis, straight through the origin.

Ports whose lanes already end on the tile border (within ``growth.exit_tolerance_m``) heading out of the
tile are left open: they belong to the tile that will be centred on them.

The generator keeps no state between calls besides its configuration: everything is derived from the
request, and all randomness comes from ``request.rng``, so the same request (same rng state) gives
byte-identical lanes and agents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vectorworld.generation.base import AgentSpawns, TileContent, TileGenerator, TileRequest, register_generator
from vectorworld.generation.procedural.occupancy import Occupancy
from vectorworld.generation.procedural.port_groups import GroupingConfig, group_ports
from vectorworld.generation.procedural.road_growth import RoadGrower
from vectorworld.generation.procedural.road_starts import first_road, road_from_ports
from vectorworld.generation.procedural.road_state import GrowthConfig, GrowthReport
from vectorworld.generation.procedural.spawning import SpawnConfig, spawn_agents
from vectorworld.generation.procedural.tile_draft import TileDraft


@dataclass(frozen=True)
class ProceduralConfig:
    """growth: road shapes; grouping: how ports form roads; spawn: traffic; obstacle_reach_m: known lanes
    up to this far (m) outside the tile are kept clear of (new lanes may stick out of the tile)."""

    growth: GrowthConfig = field(default_factory=GrowthConfig)
    grouping: GroupingConfig = field(default_factory=GroupingConfig)
    spawn: SpawnConfig = field(default_factory=SpawnConfig)
    obstacle_reach_m: float = 30.0


@register_generator("procedural")
class ProceduralGenerator(TileGenerator):
    """Rule-based road network and traffic, tile by tile (see the module docstring)."""

    name = "procedural"

    def __init__(self, config: ProceduralConfig | None = None) -> None:
        self.config = config if config is not None else ProceduralConfig()

    def generate(self, request: TileRequest) -> TileContent:
        return self.generate_with_report(request)[0]

    def generate_with_report(self, request: TileRequest) -> tuple[TileContent, GrowthReport]:
        """:meth:`generate` plus counters (roads grown / stopped, junctions, tapers) for statistics."""
        cfg, frame = self.config, request.frame
        occupancy = Occupancy()
        radius = (frame.size_m / 2.0 + cfg.obstacle_reach_m) * np.sqrt(2.0)
        occupancy.add_known_lanes(request.graph, request.graph.near(frame.center_xy, radius), frame.center_xy,
                                  frame.yaw, frame.size_m / 2.0 + cfg.obstacle_reach_m)
        draft, report = TileDraft(), GrowthReport()
        grower = RoadGrower(cfg.growth, frame, occupancy, request.rng, draft, report, request.graph)
        if request.ports:
            groups = group_ports(request.ports, frame.center_xy, cfg.grouping)
            roads = [road_from_ports(g, grower.new_key(), request.graph, cfg.growth) for g in groups]
        else:
            roads = [first_road(frame, grower.new_key(), request.rng, cfg.growth)]
        grower.grow_all(roads)
        lanes, links = draft.finalize(request.lane_ids)
        if request.spawn_agents and lanes:
            agents = spawn_agents(lanes, request, first_tile=not request.ports, config=cfg.spawn)
        else:
            agents = AgentSpawns.none()
        return TileContent(lanes, links, agents), report
