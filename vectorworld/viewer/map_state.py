"""The world map as the debugger sees it: lanes and tiles rebuilt from per-frame deltas.

A :class:`MapState` is the set of lanes and tiles alive after some frame. It is rebuilt by applying each
frame's ``new_tiles``/``new_lanes``/``removed_lane_ids`` in order. Drawing geometry that depends only on a
lane (its drivable corridor, direction chevrons) is computed once per lane and shared by every state
through a :class:`LaneGeometryCache`. No pygame here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.scene import Lane, Tile
from vectorworld.sim.observation import Frame

CHEVRON_SPACING_M = 12.0
"""Distance between direction chevrons along a lane centreline (m)."""


@dataclass(frozen=True)
class LaneGeometry:
    """Drawing geometry of one lane, global frame, m.

    corridor: (2N, 2) polygon of the lane's drivable corridor (left edge forward, right edge back);
    chevrons: (K, 2) points along the centreline where a direction mark is drawn; chevron_yaw: (K,) rad;
    bbox: (4,) min x, min y, max x, max y of the corridor.
    """

    corridor: np.ndarray
    chevrons: np.ndarray
    chevron_yaw: np.ndarray
    bbox: np.ndarray


def lane_geometry(lane: Lane) -> LaneGeometry:
    """Corridor polygon of half-width ``lane.width_m / 2`` and chevrons every CHEVRON_SPACING_M."""
    pts = lane.points
    yaw = geometry.polyline_headings(pts)
    normal = np.stack([-np.sin(yaw), np.cos(yaw)], -1) * (lane.width_m / 2.0)
    corridor = np.concatenate([pts + normal, (pts - normal)[::-1]], 0)
    length = lane.length_m
    count = max(1, int(length // CHEVRON_SPACING_M))
    s = (np.arange(count) + 0.5) * length / count
    marks = geometry.interpolate_polyline(pts, lane.arc_length, s)
    ahead = geometry.interpolate_polyline(pts, lane.arc_length, np.minimum(s + 0.5, length))
    behind = geometry.interpolate_polyline(pts, lane.arc_length, np.maximum(s - 0.5, 0.0))
    d = ahead - behind
    bbox = np.concatenate([corridor.min(0), corridor.max(0)])
    return LaneGeometry(corridor, marks, np.arctan2(d[:, 1], d[:, 0]), bbox)


class LaneGeometryCache:
    """Lane id -> LaneGeometry, recomputed only when a lane's points or width change."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[np.ndarray, float, LaneGeometry]] = {}

    def get(self, lane: Lane) -> LaneGeometry:
        hit = self._cache.get(lane.id)
        if hit is not None and hit[0] is lane.points and hit[1] == lane.width_m:
            return hit[2]
        geo = lane_geometry(lane)
        self._cache[lane.id] = (lane.points, lane.width_m, geo)
        return geo

    def forget(self, keep_ids: set[int]) -> None:
        """Drop cached lanes that no longer exist anywhere (bounds memory on long recordings)."""
        for lane_id in [i for i in self._cache if i not in keep_ids]:
            del self._cache[lane_id]


@dataclass
class MapState:
    """Lanes and tiles alive after a frame. ``version`` changes whenever the content changes."""

    lanes: dict[int, Lane] = field(default_factory=dict)
    tiles: dict[int, Tile] = field(default_factory=dict)
    version: int = 0

    def copy(self) -> MapState:
        """A snapshot (lanes and tiles are immutable values, so a shallow copy is enough)."""
        return MapState(dict(self.lanes), dict(self.tiles), self.version)

    def apply(self, frame: Frame) -> None:
        """Apply one frame's map delta: add new tiles and lanes, then drop removed lanes.

        A tile disappears once none of the lanes it generated is alive any more.
        """
        if not (frame.new_tiles or frame.new_lanes or frame.removed_lane_ids):
            return
        for tile in frame.new_tiles:
            self.tiles[tile.id] = tile
        for lane in frame.new_lanes:
            self.lanes[lane.id] = lane
        if frame.removed_lane_ids:
            for lane_id in frame.removed_lane_ids:
                self.lanes.pop(int(lane_id), None)
            dead = [t.id for t in self.tiles.values()
                    if t.lane_ids and not any(i in self.lanes for i in t.lane_ids)]
            for tile_id in dead:
                del self.tiles[tile_id]
        self.version += 1

    def successor_edges(self) -> np.ndarray:
        """(E, 2, 2) segments from a lane's end to each successor's start (predecessor links included)."""
        pairs: set[tuple[int, int]] = set()
        for lane in self.lanes.values():
            pairs.update((lane.id, j) for j in lane.successors if j in self.lanes)
            pairs.update((i, lane.id) for i in lane.predecessors if i in self.lanes)
        if not pairs:
            return np.zeros((0, 2, 2))
        return np.array([[self.lanes[a].points[-1], self.lanes[b].points[0]] for a, b in sorted(pairs)])

    def neighbor_edges(self) -> np.ndarray:
        """(E, 2, 2) segments between the midpoints of left/right neighbour lanes (each pair once)."""
        pairs: set[tuple[int, int]] = set()
        for lane in self.lanes.values():
            for j in lane.left_neighbors + lane.right_neighbors:
                if j in self.lanes:
                    pairs.add((min(lane.id, j), max(lane.id, j)))
        if not pairs:
            return np.zeros((0, 2, 2))
        mid = {i: _midpoint(self.lanes[i]) for pair in pairs for i in pair}
        return np.array([[mid[a], mid[b]] for a, b in sorted(pairs)])

    def frontier_edges(self) -> np.ndarray:
        """(F, 2, 2) front edges (x = +size/2 in the tile frame) of tiles that no other tile covers."""
        out = []
        tiles = list(self.tiles.values())
        for tile in tiles:
            half = tile.size_m / 2.0
            front = geometry.to_global(np.array([[half, -half], [half, half]]), tile.center_xy, tile.yaw)
            probe = geometry.to_global(np.array([[half + 2.0, 0.0]]), tile.center_xy, tile.yaw)[0]
            if not any(bool(other.contains(probe)) for other in tiles if other.id != tile.id):
                out.append(front)
        return np.array(out).reshape(-1, 2, 2)


def _midpoint(lane: Lane) -> np.ndarray:
    return geometry.interpolate_polyline(lane.points, lane.arc_length, np.array([lane.length_m / 2.0]))[0]
