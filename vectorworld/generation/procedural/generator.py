"""The procedural road-network generator: a non-learned :class:`TileGenerator` for dense urban tiles.

Layout "city" (the default): a first tile (a request without ports) anchors a seeded city plan
(:mod:`city_plan`: blocks, arterials with turn pockets, residential streets, right-angle junctions) and
every tile is cut out of it (:mod:`city_tiles`); traffic comes from :data:`CITY_SPAWN`. The plan is the
one piece of state the generator keeps between calls (per world: the next first tile replaces it); it is a
pure function of the seed drawn from the first request's rng, so the same requests still give
byte-identical tiles. A request with a port that is not on the plan (no plan yet, e.g. a real log's map)
is grown organically, as below.

Layout "organic": for each tile it groups the open ports into road ends (:mod:`port_groups`), grows every road
that starts inside the tile until it leaves the tile (:mod:`road_growth`: straight and curved pieces, 3- and 4-way
junctions with turn connectors, lane splits and merges, never over an existing lane; roads that run into
other roads cross, join or bridge them, :mod:`road_meetings`; a boxed-in two-way road turns around,
:mod:`turnarounds`), then places traffic on the new lanes (:mod:`spawning`). With no ports (a first tile)
it lays a road through the tile origin along the tile's +x axis, straight through the origin.

Ports whose lanes already end on the tile border (within ``growth.exit_tolerance_m``) heading out of the
tile are left open: they belong to the tile that will be centred on them.

The organic layout keeps no state between calls besides its configuration: everything is derived from the
request, and all randomness comes from ``request.rng``, so the same request (same rng state) gives
byte-identical lanes and agents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vectorworld.generation.base import AgentSpawns, TileContent, TileGenerator, TileRequest, register_generator
from vectorworld.generation.procedural.city_plan import CityConfig, CityPlan
from vectorworld.generation.procedural.city_signals import CitySignals, SignalConfig
from vectorworld.generation.procedural.city_tiles import CityAnchor, CityRegion, cut_tile
from vectorworld.generation.procedural.occupancy import Occupancy
from vectorworld.generation.procedural.port_groups import GroupingConfig, group_ports
from vectorworld.generation.procedural.road_growth import RoadGrower
from vectorworld.generation.procedural.road_starts import first_road, road_from_ports
from vectorworld.generation.procedural.road_state import GrowthConfig, GrowthReport
from vectorworld.generation.procedural.spawning import SpawnConfig, spawn_agents
from vectorworld.generation.procedural.tile_draft import TileDraft


@dataclass(frozen=True)
class ProceduralConfig:
    """layout: "city" (a seeded block grid, :mod:`city_plan`) or "organic" (roads grown piece by piece);
    growth: organic road shapes; grouping: how ports form roads; spawn: organic traffic; city / city_spawn:
    the city plan and its traffic; signals: the city's traffic lights (None: no junction has lights);
    obstacle_reach_m: known lanes up to this far (m) outside the tile are kept
    clear of by organic roads (new lanes may stick out of the tile)."""

    layout: str = "city"
    growth: GrowthConfig = field(default_factory=GrowthConfig)
    grouping: GroupingConfig = field(default_factory=GroupingConfig)
    spawn: SpawnConfig = field(default_factory=SpawnConfig)
    city: CityConfig = field(default_factory=CityConfig)
    city_spawn: SpawnConfig = field(default_factory=lambda: CITY_SPAWN)
    signals: SignalConfig | None = field(default_factory=SignalConfig)
    obstacle_reach_m: float = 30.0


CITY_SPAWN = SpawnConfig(min_gap_m=6.0, mean_extra_gap_m=14.0, stopped_prob=0.0, parked_prob=0.7, parked_row=(2, 6),
                         cyclist_prob=0.8, pedestrian_prob=1.0, pedestrians=(4, 8), pedestrian_pair_prob=0.2,
                         queue_prob=0.5, queue_cars=(1, 4), max_agents=48, car_length_m=(4.85, 0.35),
                         car_width_m=(2.08, 0.1), sidewalk_offset_m=(3.0, 4.2), pedestrian_clearance_m=2.3)
"""Traffic of the city layout: denser, parked rows, queues at junctions, pedestrians on the sidewalks."""


@register_generator("procedural")
class ProceduralGenerator(TileGenerator):
    """Rule-based road network and traffic, tile by tile (see the module docstring)."""

    name = "procedural"

    def __init__(self, config: ProceduralConfig | None = None) -> None:
        self.config = config if config is not None else ProceduralConfig()
        self._city: tuple[CityPlan, CityAnchor] | None = None
        self._signals: CitySignals | None = None

    @property
    def city(self) -> tuple[CityPlan, CityAnchor] | None:
        """The city plan of the world this generator started last and where it lies (None: none started, or
        not the city layout)."""
        return self._city

    def _city_tile(self, request: TileRequest) -> tuple[TileContent, GrowthReport] | None:
        """The tile cut from this world's city plan; None when a port is not on the plan (a known map, a
        straight fallback, another generator's lanes): those are grown organically."""
        frame = request.frame
        if not request.ports:  # a first tile: a new world, a new plan anchored here
            seed = int(request.rng.integers(1 << 62))
            self._city = (CityPlan(seed, self.config.city), CityAnchor(frame.center_xy.copy(), float(frame.yaw)))
            self._signals = (None if self.config.signals is None
                             else CitySignals(self._city[0], self.config.signals))
        if self._city is None:
            return None
        region = CityRegion(*self._city, frame)
        if not all(region.on_plan(p.xy, p.is_out) for p in request.ports):
            return None
        cut = cut_tile(region, frame, request.graph, request.lane_ids, self._signals)
        report = GrowthReport(roads=len(cut.lanes), junctions=cut.junctions, tapers=cut.pockets)
        if request.spawn_agents and cut.lanes:
            agents = spawn_agents(cut.lanes, request, first_tile=not request.ports, config=self.config.city_spawn)
        else:
            agents = AgentSpawns.none()
        return TileContent(cut.lanes, cut.links, agents, crosswalks=cut.crosswalks), report

    def generate(self, request: TileRequest) -> TileContent:
        return self.generate_with_report(request)[0]

    def generate_with_report(self, request: TileRequest) -> tuple[TileContent, GrowthReport]:
        """:meth:`generate` plus counters (roads grown / stopped, junctions, tapers) for statistics."""
        cfg, frame = self.config, request.frame
        if cfg.layout == "city":
            city = self._city_tile(request)
            if city is not None:
                return city
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
