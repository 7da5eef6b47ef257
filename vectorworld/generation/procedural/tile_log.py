"""A procedural generator that keeps a log of every tile it made, for statistics and tests.

Give a :class:`LoggedProcedural` to a :class:`~vectorworld.world.streaming.StreamingWorld` (or to
``eval.generator_metrics.grow_worlds``) instead of a plain :class:`ProceduralGenerator`: it answers every
request exactly as the plain generator would (same lanes, agents and rng use) and appends, per call, what
it was asked (frame, ports), what it answered (the content as generated: the world may later mark lanes
as junction connectors, which the content does not show), its growth counters and its wall and CPU time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from vectorworld.generation.base import Port, TileContent, TileFrame, TileRequest
from vectorworld.generation.procedural.generator import ProceduralConfig, ProceduralGenerator
from vectorworld.generation.procedural.road_state import GrowthReport
from vectorworld.scene import LaneGraph


@dataclass(frozen=True)
class LoggedTile:
    """One ``generate`` call: the request's frame and ports, the answer, its counters, and its wall and CPU
    time (ms; CPU time is robust to other processes competing for the cores)."""

    frame: TileFrame
    ports: tuple[Port, ...]
    content: TileContent
    report: GrowthReport
    wall_ms: float
    cpu_ms: float


class LoggedProcedural(ProceduralGenerator):
    """:class:`ProceduralGenerator` appending a :class:`LoggedTile` to ``log`` per tile (the first included)."""

    def __init__(self, config: ProceduralConfig | None = None) -> None:
        super().__init__(config)
        self.log: list[LoggedTile] = []

    def generate(self, request: TileRequest) -> TileContent:
        t0, c0 = time.perf_counter(), time.process_time()
        content, report = self.generate_with_report(request)
        wall_ms, cpu_ms = (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3
        self.log.append(LoggedTile(request.frame, request.ports, content, report, wall_ms, cpu_ms))
        return content

    def generated_graph(self) -> LaneGraph:
        """The logged tiles' lanes and links, as generated (the lane types the generator chose; no lanes
        of other origin, e.g. a world's straight fallbacks; links to those are left out)."""
        graph = LaneGraph()
        for tile in self.log:
            graph.add(tile.content.lanes)
            for a, b in tile.content.links:
                if a in graph and b in graph:
                    graph.connect(a, b)
        return graph
