"""Chaining a generator's tiles into one lane graph without the streaming world.

A small stand-in for the world, used to build procedural corpora, by the generator tests and by
``tools/procedural_stats.py``: start with a first tile, then repeatedly follow a random route along the
lane graph to its open end (an out port), place a tile centred at that port (tile yaw = port yaw), pass
every open port inside the tile square (+ margin), generate, and add the new lanes and links. Sometimes a
side port near the route is extended instead, as the world does for open ports ahead of the ego.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from vectorworld.generation.base import IdAllocator, Port, TileContent, TileFrame, TileGenerator, TileRequest
from vectorworld.generation.procedural.road_state import GrowthReport
from vectorworld.scene import TILE_SIZE_M, LaneGraph


@dataclass(frozen=True)
class ChainedTile:
    """One generated tile: where it went, the ports it was given, what came back, its wall and CPU time
    (ms; CPU time is robust to other processes competing for the cores)."""

    frame: TileFrame
    ports: tuple[Port, ...]
    content: TileContent
    report: GrowthReport | None
    latency_ms: float
    cpu_ms: float
    on_route: bool


@dataclass
class ChainResult:
    """The chained world: lane graph, tiles in generation order, agents of all tiles (static, as spawned)
    and how many route ports could not be continued."""

    graph: LaneGraph
    tiles: list[ChainedTile] = field(default_factory=list)
    blocked_ports: int = 0


def collect_ports(graph: LaneGraph, frame: TileFrame, margin_m: float = 3.0) -> tuple[Port, ...]:
    """Open ports (ends without successors, starts without predecessors) inside the tile square + margin."""
    radius = frame.size_m / np.sqrt(2.0) + margin_m
    ports = []
    for lane_id in graph.near(frame.center_xy, radius):
        lane = graph[lane_id]
        if not lane.successors:
            xy, yaw = lane.end_pose
            if frame.contains(xy, margin_m):
                ports.append(Port(lane_id, xy, yaw, lane.width_m, lane.speed_limit_mps, True))
        if not lane.predecessors:
            xy, yaw = lane.start_pose
            if frame.contains(xy, margin_m):
                ports.append(Port(lane_id, xy, yaw, lane.width_m, lane.speed_limit_mps, False))
    return tuple(ports)


def _route_end(graph: LaneGraph, lane_id: int, rng: np.random.Generator, max_lanes: int = 200) -> int:
    """Follow random successors from ``lane_id`` to a lane without successors (or give up at a cycle)."""
    for _ in range(max_lanes):
        succ = [i for i in graph[lane_id].successors if i in graph]
        if not succ:
            return lane_id
        lane_id = succ[int(rng.integers(len(succ)))]
    return lane_id


def chain_tiles(generator: TileGenerator, num_tiles: int, seed: int, spawn_agents: bool = True,
                side_prob: float = 0.25, retain_m: float | None = 200.0, margin_m: float = 3.0) -> ChainResult:
    """Generate ``num_tiles`` tiles (the first included) and return the chained world.

    side_prob: chance that a tile extends the nearest other open out port within 90 m of the route end
    instead of the route; retain_m: lanes of tiles farther than this from the newest tile are dropped
    (None keeps everything, which makes conflicts with old roads likelier).
    """
    rng = np.random.default_rng(seed)
    route_rng = np.random.default_rng([seed, 1])
    graph, lane_ids = LaneGraph(), IdAllocator()
    result = ChainResult(graph)
    tried: set[int] = set()
    tile_lanes: list[tuple[np.ndarray, tuple[int, ...]]] = []
    agents_xy = np.zeros((0, 2))
    frame = TileFrame(np.zeros(2), 0.0, TILE_SIZE_M)
    route_lane: int | None = None
    for k in range(num_tiles):
        on_route = True
        if k == 0:
            ports: tuple[Port, ...] = ()
        else:
            port = _pick_port(graph, route_lane, tried, route_rng, side_prob)
            if port is None:
                break
            on_route = port[1]
            lane = graph[port[0]]
            xy, yaw = lane.end_pose
            frame = TileFrame(xy.copy(), yaw, TILE_SIZE_M)
            ports = collect_ports(graph, frame, margin_m)
            tried.add(port[0])
        near = agents_xy[np.linalg.norm(agents_xy - frame.center_xy, axis=-1) < 80.0]
        request = TileRequest(frame=frame, ports=ports, graph=graph, lane_ids=lane_ids, rng=rng,
                              existing_agents_xy=near, spawn_agents=spawn_agents)
        t0, c0 = time.perf_counter(), time.process_time()
        if hasattr(generator, "generate_with_report"):
            content, report = generator.generate_with_report(request)
        else:
            content, report = generator.generate(request), None
        latency, cpu = (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3
        graph.add(content.lanes)
        for a, b in content.links:
            if a in graph and b in graph:
                graph.connect(a, b)
        agents_xy = np.concatenate([agents_xy, content.agents.xy])
        result.tiles.append(ChainedTile(frame, ports, content, report, latency, cpu, on_route))
        tile_lanes.append((frame.center_xy, tuple(lane.id for lane in content.lanes)))
        if k == 0:
            route_lane, _ = graph.nearest(frame.center_xy, frame.yaw, radius_m=10.0)
        else:
            if on_route and not graph[port[0]].successors:
                result.blocked_ports += 1
            if on_route or port[2]:
                route_lane = port[0]
        if retain_m is not None:
            _retire(graph, tile_lanes, frame.center_xy, retain_m)
            if route_lane is not None and route_lane not in graph:
                route_lane = None
    return result


def _pick_port(graph: LaneGraph, route_lane: int | None, tried: set[int], rng: np.random.Generator,
               side_prob: float) -> tuple[int, bool, bool] | None:
    """(lane id of the out port to extend, whether it is the route's, whether the route moves there
    because its own end could not be continued)."""
    end = _route_end(graph, route_lane, rng) if route_lane is not None and route_lane in graph else None
    anchor = graph[end].end_pose[0] if end is not None else None
    stuck = end is None or end in tried
    if not stuck and rng.random() >= side_prob:
        return end, True, False
    open_outs = sorted(i for i, lane in graph.lanes.items() if not lane.successors and i not in tried)
    if not open_outs:
        return None
    if anchor is None:
        return open_outs[int(rng.integers(len(open_outs)))], True, True
    dist = [float(np.linalg.norm(graph[i].end_pose[0] - anchor)) for i in open_outs]
    best = int(np.argmin(dist))
    if not stuck and dist[best] > 90.0:
        return end, True, False
    return open_outs[best], open_outs[best] == end, stuck


def _retire(graph: LaneGraph, tile_lanes: list[tuple[np.ndarray, tuple[int, ...]]], xy: np.ndarray,
            retain_m: float) -> None:
    keep = []
    for center, ids in tile_lanes:
        if np.linalg.norm(center - xy) > retain_m:
            graph.remove(ids)
        else:
            keep.append((center, ids))
    tile_lanes[:] = keep
