"""The streaming world: tiles generated on demand ahead of the ego, retired far behind.

The world owns the global lane graph, the tiles, the drivable raster and the open ports (lane ends with
no successor / starts with no predecessor). ``ensure_coverage`` places a new 64 m tile at any open out
port that comes within the look-ahead distance in front of the ego -- on the ego's route first -- and
asks the generator to fill it. Memory stays bounded: tiles farther than ``retention_m`` are dropped.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import (
    AgentSpawns,
    IdAllocator,
    Port,
    TileContent,
    TileFrame,
    TileGenerator,
    TileRequest,
    open_ports,
    tile_ports,
)
from vectorworld.scene import TILE_SIZE_M, Crosswalk, Lane, LaneGraph, LaneType, Tile
from vectorworld.world.drivable import DrivableGrid
from vectorworld.world.ports import PortBook, any_within


@dataclass(frozen=True)
class WorldConfig:
    """lookahead_m: generate when an open out port ahead of the ego is this close (m);
    retention_m: drop tiles whose centre is farther than this from the ego (m);
    max_tiles_per_update: bound on generation work in one step;
    attempts_per_port: generation attempts (each with fresh randomness) before an out port is continued by
    a straight lane of straight_fallback_m (and an in port counts as a dead end)."""

    lookahead_m: float = 90.0
    retention_m: float = 160.0
    max_tiles_per_update: int = 2
    port_margin_m: float = 3.0
    attempts_per_port: int = 3
    straight_fallback_m: float = 40.0


@dataclass(frozen=True)
class GeneratedTile:
    """A tile just added, with what the generator produced for it."""

    tile: Tile
    content: TileContent
    crosswalks: tuple[Crosswalk, ...] = ()
    """The tile's crosswalks as the world numbered them."""


class StreamingWorld:
    """A world that grows tile by tile around wherever the ego goes."""

    def __init__(self, generator: TileGenerator, rng: np.random.Generator,
                 config: WorldConfig = WorldConfig()) -> None:
        self.generator = generator
        self.rng = rng
        self.config = config
        self.graph = LaneGraph()
        self.drivable = DrivableGrid()
        self.tiles: dict[int, Tile] = {}
        self.lane_ids = IdAllocator()
        self.tile_ids = IdAllocator()
        self.fallback_tiles = 0
        self.ports = PortBook()
        self.crosswalks: dict[int, Crosswalk] = {}
        self.crosswalk_ids = IdAllocator()
        self._centres: np.ndarray | None = None  # of self.tiles, in order (None: to rebuild)

    # ----------------------------------------------------------------- building
    def start(self, center_xy: np.ndarray | None = None, yaw: float = 0.0) -> GeneratedTile:
        """Generate the first tile: a road through ``center_xy`` along ``yaw``."""
        frame = TileFrame(np.zeros(2) if center_xy is None else np.asarray(center_xy, float), yaw)
        t0 = time.perf_counter()
        content = self.generator.first_tile(frame, self.lane_ids, self.rng)
        first = self._commit(frame, content, (time.perf_counter() - t0) * 1e3)
        assert isinstance(first, GeneratedTile)  # nothing moves yet: nothing to surprise
        return first

    def add_known_map(self, lanes: Sequence[Lane], spacing_m: float = 1.0) -> None:
        """Add lanes from a real map (a log) as already-known world, outside any tile.

        Centrelines are resampled to about ``spacing_m`` (end points kept exactly) to bound per-step cost.
        """
        lanes = [dataclasses.replace(lane, points=geometry.resample_by_spacing(lane.points, spacing_m))
                 if lane.length_m > 2 * spacing_m and len(lane.points) > lane.length_m / spacing_m + 2 else lane
                 for lane in lanes]
        self.graph.add(lanes)
        for lane in lanes:
            self.drivable.add(lane)
        self._mark_crossings([lane.id for lane in lanes])
        top = max((lane.id for lane in lanes), default=-1)
        self.lane_ids = IdAllocator(max(top + 1, 10_000_000))

    def ensure_coverage(self, ego_xy: np.ndarray, ego_yaw: float, route_end_lane: int | None,
                        agents_xy: np.ndarray, moving_xy: np.ndarray | None = None) -> list[GeneratedTile]:
        """Generate tiles at open out ports within the look-ahead in front of the ego.

        The port at the end of the ego's route (``route_end_lane``) goes first. At most
        ``max_tiles_per_update`` tiles are made per call; call again next step for more. agents_xy (M, 2):
        every agent (new agents are not spawned onto them); moving_xy (K, 2): the agents in motion -- a tile
        whose road would cut across another road near one of them is deferred (see ``_commit``).
        """
        self.ports.tick()
        if self.ports.still_quiet(self.graph.version, route_end_lane, ego_xy, REQUERY_M):
            return []  # nothing new within reach since the last look, and no deferral is over
        new: list[GeneratedTile] = []
        for _ in range(self.config.max_tiles_per_update):
            port = self._next_port(ego_xy, ego_yaw, route_end_lane, moving_xy)
            if port is None:
                self.ports.remember_quiet(self.graph.version, route_end_lane, ego_xy)
                break
            new.extend(self._generate_at(port, agents_xy, moving_xy))
        return new

    def grow_at_random_end(self, rng: np.random.Generator, agents_xy: np.ndarray | None = None
                           ) -> list[GeneratedTile] | None:
        """Generate at a random open lane end, as if an agent drove 10 m before it (corpora and
        evaluation grow whole worlds this way), with the world's agents at ``agents_xy`` (M, 2) (none by
        default). Straight fallback lanes are not tiles of the generator and are left out. None when the
        world has no open end left."""
        open_ends = sorted(i for i, lane in self.graph.lanes.items() if not lane.successors)
        if not open_ends:
            return None
        lane = self.graph[open_ends[int(rng.integers(len(open_ends)))]]
        xy, yaw = lane.end_pose
        agents_xy = np.zeros((0, 2)) if agents_xy is None else agents_xy
        made = self.ensure_coverage(xy - 10.0 * np.array([np.cos(yaw), np.sin(yaw)]), yaw, lane.id, agents_xy)
        return [g for g in made if not g.tile.fallback]

    def retire(self, ego_xy: np.ndarray) -> list[int]:
        """Drop tiles (and their lanes) farther than ``retention_m``; return the removed lane ids."""
        tiles = list(self.tiles.values())
        if not tiles:
            return []
        if self._centres is None or len(self._centres) != len(tiles):
            self._centres = np.array([t.center_xy for t in tiles])
        distance = np.linalg.norm(self._centres - ego_xy, axis=-1)
        far = [t for t, d in zip(tiles, distance, strict=True) if d > self.config.retention_m]
        removed: list[int] = []
        if far:
            self._centres = None
        for tile in far:
            del self.tiles[tile.id]
            for walk_id in [k for k, walk in self.crosswalks.items() if walk.tile_id == tile.id]:
                del self.crosswalks[walk_id]
            gone = [i for i in tile.lane_ids if i in self.graph]
            # Lanes that lose their continuation become open ports again, with fresh attempts: a port whose
            # earlier attempts were used up (the straight extension among them) would otherwise be written
            # off as a dead end at its next failure, and an ego coming back this way would find no road.
            reopened = {j for i in gone for j in (*self.graph[i].successors, *self.graph[i].predecessors)}
            for lane_id in gone:
                self.drivable.remove(lane_id)
            self.graph.remove(gone)
            removed.extend(gone)
            self.ports.reopen(reopened.union(gone))
        return removed

    # ----------------------------------------------------------------- ports
    def open_ports(self, near_xy: np.ndarray, radius_m: float) -> list[Port]:
        """Open lane ends (out and in ports) within ``radius_m`` of ``near_xy``."""
        return open_ports(self.graph, near_xy, radius_m)

    def _next_port(self, ego_xy: np.ndarray, ego_yaw: float, route_end_lane: int | None,
                   moving_xy: np.ndarray | None = None) -> Port | None:
        lookahead = self.config.lookahead_m
        candidates = [p for p in self.open_ports(ego_xy, lookahead) if p.is_out and p.lane_id not in
                      self.ports.dead_ends
                      and not self.ports.waits(p.lane_id, moving_xy, SURPRISE_RADIUS_M, DEFER_CALLS)]
        if not candidates:
            return None
        for port in candidates:
            if port.lane_id == route_end_lane:
                return port
        heading = np.array([np.cos(ego_yaw), np.sin(ego_yaw)])
        ahead = [p for p in candidates if float(np.dot(p.xy - ego_xy, heading)) > 0.0]
        if not ahead:
            return None
        return min(ahead, key=lambda p: (float(np.linalg.norm(p.xy - ego_xy)), p.lane_id))

    def _generate_at(self, port: Port, agents_xy: np.ndarray, moving_xy: np.ndarray | None) -> list[GeneratedTile]:
        """The generated tile, followed by any straight continuation of a port it failed again; nothing
        (and the port deferred) if the tile would surprise traffic."""
        frame = TileFrame(port.xy.copy(), port.yaw)
        radius = TILE_SIZE_M / np.sqrt(2.0) + self.config.port_margin_m
        ports = tuple(p for p in tile_ports(self.graph, frame, self.config.port_margin_m)
                      if p.lane_id not in self.ports.dead_ends)
        near_agents = agents_xy[np.linalg.norm(agents_xy - port.xy, axis=-1) < radius + 20.0] \
            if len(agents_xy) else np.zeros((0, 2))
        request = TileRequest(frame=frame, ports=ports, graph=self.graph, lane_ids=self.lane_ids,
                              rng=self.rng, existing_agents_xy=near_agents)
        t0 = time.perf_counter()
        content = self.generator.generate(request)
        latency_ms = (time.perf_counter() - t0) * 1e3
        tile = self._commit(frame, content, latency_ms, moving_xy=moving_xy)
        if isinstance(tile, Refused):
            self.ports.defer(port.lane_id, tile.surprise_at, DEFER_CALLS)
            return []
        generated = [tile]
        # A port the generator could not continue would be asked for again forever: remember it. Ports
        # on the tile border that head outward are left open on purpose (the next tile continues them).
        for p in ports:
            lane = self.graph[p.lane_id] if p.lane_id in self.graph else None
            still_open = lane is not None and ((p.is_out and not lane.successors)
                                               or (not p.is_out and not lane.predecessors))
            inside = bool(frame.contains(p.xy, -1.0))
            if not (still_open and (p.lane_id == port.lane_id or inside)):
                continue
            attempts = self.ports.count_attempt(p.lane_id)
            if attempts == self.config.attempts_per_port and p.is_out:
                straight = self._extend_straight(p, moving_xy)
                if isinstance(straight, GeneratedTile):
                    generated.append(straight)
                else:  # it would surprise traffic: try again later
                    self.ports.undo_attempt(p.lane_id)
                    self.ports.defer(p.lane_id, straight.surprise_at, DEFER_CALLS)
            elif attempts > self.config.attempts_per_port:
                self.ports.dead_ends.add(p.lane_id)
        return generated

    def _extend_straight(self, port: Port, moving_xy: np.ndarray | None) -> GeneratedTile | Refused:
        """Last resort for an out port the generator could not continue: a straight lane of
        ``straight_fallback_m`` along the port heading, so the world rarely runs out of road; generation
        resumes from its end. Refused if even that would cut across another tile's road next to traffic."""
        length = self.config.straight_fallback_m
        steps = np.linspace(0.0, length, int(length // 2.0) + 1)
        points = port.xy + steps[:, None] * np.array([np.cos(port.yaw), np.sin(port.yaw)])
        lane = Lane(self.lane_ids(), points, width_m=port.width_m, speed_limit_mps=port.speed_limit_mps)
        content = TileContent(lanes=(lane,), links=((port.lane_id, lane.id),), agents=AgentSpawns.none(),
                              used_fallback=True)
        return self._commit(TileFrame((port.xy + points[-1]) / 2.0, port.yaw), content, 0.0, STRAIGHT_FALLBACK,
                            moving_xy, straight=True)

    def _commit(self, frame: TileFrame, content: TileContent, latency_ms: float,
                generator_name: str | None = None, moving_xy: np.ndarray | None = None,
                straight: bool = False) -> GeneratedTile | Refused:
        """Add a tile's lanes and links to the world; Refused (and nothing added) if a new lane would cut across
        another tile's road within ``SURPRISE_RADIUS_M`` of a moving agent (``moving_xy`` (K, 2)): a junction
        appearing under traffic already committed to its lanes is a crash nobody could avoid, so the port is
        deferred instead. Farther away (or with nobody moving near), the crossing becomes a junction."""
        tile_id = self.tile_ids.peek()
        lanes = [dataclasses.replace(lane, tile_id=tile_id) for lane in content.lanes]
        self.graph.add(lanes)
        for a, b in content.links:
            if a in self.graph and b in self.graph:
                self.graph.connect(a, b)
        new_ids = [lane.id for lane in lanes]
        crossings = self._unconnected_crossings(new_ids)
        if moving_xy is not None:
            surprise_at = self._surprises(crossings, moving_xy)
            if len(surprise_at):
                self.graph.remove(new_ids)
                return Refused(surprise_at)
        self.tile_ids()
        for lane in lanes:
            self.drivable.add(lane)
        self._mark_crossings(new_ids, crossings)
        name = generator_name or (self.generator.name if not content.used_fallback else "procedural-fallback")
        tile = Tile(id=tile_id, center_xy=frame.center_xy, yaw=float(frame.yaw), order=tile_id, generator=name,
                    lane_ids=tuple(new_ids), latency_ms=latency_ms, fallback=straight)
        self.fallback_tiles += int(content.used_fallback)
        self.tiles[tile_id] = tile
        self._centres = None
        walks = tuple(dataclasses.replace(walk, id=self.crosswalk_ids(), tile_id=tile_id)
                      for walk in content.crosswalks)
        self.crosswalks.update((walk.id, walk) for walk in walks)
        return GeneratedTile(tile, content, walks)

    def _unconnected_crossings(self, new_ids: Sequence[int]) -> list[tuple[Lane, Lane]]:
        """Pairs of unrelated lanes (at least one of them new) whose centrelines cross, or pass closer than
        ``CLOSE_PASS_M`` at an angle (a turn sweeping past a through-lane)."""
        import shapely

        if not new_ids:
            return []
        new_set = set(new_ids)
        centre = np.mean([self.graph[i].points.mean(0) for i in new_ids], axis=0)
        reach = max(np.linalg.norm(self.graph[i].points - centre, axis=-1).max() for i in new_ids)
        ids = sorted(set(self.graph.near(centre, reach + 10.0)) | new_set)
        lines = [shapely.LineString(self.graph[i].points) for i in ids]
        tree = shapely.STRtree(lines)
        crossing = set(zip(*tree.query(lines, predicate="crosses"), strict=True))
        close = set(zip(*tree.query(lines, predicate="dwithin", distance=CLOSE_PASS_M), strict=True)) - crossing
        pairs = []
        for a, b in sorted(crossing | close):
            la, lb = self.graph[ids[a]], self.graph[ids[b]]
            if a == b or not ({la.id, lb.id} & new_set) or _related(la, lb):
                continue
            if (a, b) in close and not _at_an_angle(la, lb, lines[a], lines[b]):
                continue
            pairs.append((la, lb))
        return pairs

    def _surprises(self, crossings: list[tuple[Lane, Lane]], agents_xy: np.ndarray) -> np.ndarray:
        """Where ``crossings`` join two tiles' roads (or a tile's and the known map's), (P, 2): all the meeting
        points if one of them is near one of the agents, else none (0, 2)."""
        import shapely

        meets = [np.asarray(shapely.shortest_line(shapely.LineString(la.points),
                                                  shapely.LineString(lb.points)).coords).mean(0)
                 for la, lb in crossings if la.tile_id != lb.tile_id] if len(agents_xy) else []
        points = np.array(meets).reshape(-1, 2)
        return points if any_within(points, agents_xy, SURPRISE_RADIUS_M) else np.zeros((0, 2))

    def _mark_crossings(self, new_ids: Sequence[int], crossings: list[tuple[Lane, Lane]] | None = None,
                        max_length_m: float = 120.0) -> None:
        """Mark as CONNECTOR every lane (new, or existing near the new ones) that crosses a lane it is not
        connected to, or that merges with another lane into one. Real maps do not label junction lanes, and
        a generated connector can cut through a through-lane: either way, junction right of way must apply
        to both."""
        for la, lb in self._unconnected_crossings(new_ids) if crossings is None else crossings:
            for lane in (la, lb):
                if self.graph[lane.id].lane_type != LaneType.CONNECTOR and lane.length_m <= max_length_m:
                    self.graph.set_type(lane.id, LaneType.CONNECTOR)
        # Lanes that merge into one lane take turns too (junction right of way: shared successor).
        for lane_id in new_ids:
            for target in (lane_id, *self.graph[lane_id].successors):  # a new lane merged into, or merging
                if target in self.graph and len(self.graph[target].predecessors) > 1:
                    for merging in self.graph[target].predecessors:
                        other = self.graph.lanes.get(merging)
                        if (other is not None and other.lane_type != LaneType.CONNECTOR
                                and other.length_m <= max_length_m):
                            self.graph.set_type(merging, LaneType.CONNECTOR)

    # ----------------------------------------------------------------- queries
    @property
    def dead_ends(self) -> set[int]:
        """Lanes ending in an open end the generator could not continue."""
        return self.ports.dead_ends



@dataclass(frozen=True)
class Refused:
    """A tile the world did not add: one of its lanes would cut across another tile's road next to moving
    traffic. ``surprise_at`` (P, 2) m: where its lanes met the other roads (the port waits until no one
    moving is near them)."""

    surprise_at: np.ndarray


DEFER_CALLS = 20
"""A port whose tile would surprise traffic is tried again after this many coverage calls (steps)."""
SURPRISE_RADIUS_M = 40.0
"""A new lane may not cut across an existing road this close to an agent (m): it could not yield in time."""
REQUERY_M = 5.0
"""An unchanged world is searched for open ports again once the ego has moved this far (m)."""
STRAIGHT_FALLBACK = "straight-fallback"
"""Generator name of the straight lanes that continue a port no generator could continue."""
CLOSE_PASS_M = 2.5
"""Centrelines closer than this (less than a lane width) that are not connected pass through one junction."""
PASSING_CLEAR_M = 2.0
"""Opposed lanes this far apart or more are a road, not a junction: two 2 m-wide cars pass (the learned
generator's filter drops a lane that runs closer to an opposed one, ``StitchConfig.opposed_m``). A learned
start tile's two-way road narrowing to 2.2 m at its border held the ego for its oncoming traffic as at a
junction, over both 32 m lanes."""


def _related(la: Lane, lb: Lane) -> bool:
    """Connected, neighbours, or splitting from / merging into one lane."""
    direct = set(la.successors + la.predecessors + la.left_neighbors + la.right_neighbors)
    return (lb.id in direct or bool(set(la.successors) & set(lb.successors))
            or bool(set(la.predecessors) & set(lb.predecessors)))


def _at_an_angle(la: Lane, lb: Lane, line_a, line_b, min_rad: float = 0.5) -> bool:  # noqa: ANN001 - shapely
    """Whether the lanes' headings differ by more than ``min_rad`` where they come closest, unless they head
    the opposite ways (within ``min_rad``) at least ``PASSING_CLEAR_M`` apart: a two-way road narrowing,
    where oncoming cars still pass each other."""
    import shapely

    pa, pb = np.asarray(shapely.shortest_line(line_a, line_b).coords)
    _, _, yaw_a = geometry.project_to_polyline(pa[None], la.points)
    _, _, yaw_b = geometry.project_to_polyline(pb[None], lb.points)
    turn = abs(float(geometry.wrap_angle(yaw_a[0] - yaw_b[0])))
    if turn > np.pi - min_rad and float(np.linalg.norm(pa - pb)) >= PASSING_CLEAR_M:
        return False
    return turn > min_rad
