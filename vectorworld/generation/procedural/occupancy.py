"""Ground occupied by lanes: "would this candidate road piece overlap a lane that is already there?".

The occupancy holds the centreline segments of the known lanes near a tile and of the roads already grown
for it, each with its half width and an integer *owner*: a known lane's id, or a (negative) key of a new
road. A candidate is blocked when one of its points comes closer to a segment than the two half widths
plus a gap, i.e. when the two lanes' drivable strips would overlap. Owners can be ignored (a road never
blocks itself), and a *home zone* ignores everything behind a road's start line near its start: the
lanes it continues and the junction it comes out of. All coordinates are global (m).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.scene import LaneGraph


@dataclass(frozen=True)
class HomeZone:
    """Where a road starts: segments within ``radius_m`` of ``xy`` (2,) m that lie entirely behind the
    line through ``xy`` across heading ``yaw`` (rad) are ignored (they are where the road comes from)."""

    xy: np.ndarray
    yaw: float
    radius_m: float


class Occupancy:
    """Lane segments with half widths and owners; answers overlap queries for candidate points."""

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._arrays: tuple[np.ndarray, ...] | None = None
        self.max_half_m = 0.0

    def add(self, points: np.ndarray, half_width_m: float, owner: int) -> None:
        """Add a polyline (N, 2) m (N >= 2) with half width (m) under ``owner``."""
        a, b = points[:-1], points[1:]
        k = len(a)
        self._parts.append((a, b, np.full(k, half_width_m), np.full(k, owner, np.int64)))
        self.max_half_m = max(self.max_half_m, half_width_m)
        self._arrays = None

    def mark(self) -> int:
        """A marker of the current content for :meth:`rollback`."""
        return len(self._parts)

    def rollback(self, mark: int) -> None:
        """Forget everything added since ``mark`` (no :meth:`remove_owner` may have happened since)."""
        if len(self._parts) != mark:
            del self._parts[mark:]
            self._arrays = None

    def remove_owner(self, owner: int) -> None:
        """Forget every segment of ``owner``."""
        self._parts = [p for p in self._parts if p[3][0] != owner]
        self._arrays = None

    def add_known_lanes(self, graph: LaneGraph, lane_ids: Iterable[int], center_xy: np.ndarray, yaw: float,
                        half_extent_m: float) -> None:
        """Add the segments of known lanes (owned by their lane ids) whose midpoints lie in the square of
        half size ``half_extent_m`` centred at ``center_xy`` (2,) with heading ``yaw``."""
        lanes = [graph[i] for i in lane_ids]
        if not lanes:
            return
        a = np.concatenate([lane.points[:-1] for lane in lanes])
        b = np.concatenate([lane.points[1:] for lane in lanes])
        counts = [len(lane.points) - 1 for lane in lanes]
        half = np.repeat([lane.width_m / 2.0 for lane in lanes], counts)
        owner = np.repeat(np.array([lane.id for lane in lanes], np.int64), counts)
        local = geometry.to_local(0.5 * (a + b), center_xy, yaw)
        keep = np.abs(local).max(-1) <= half_extent_m
        if keep.any():
            self._parts.append((a[keep], b[keep], half[keep], owner[keep]))
            self.max_half_m = max(self.max_half_m, float(half[keep].max()))
            self._arrays = None

    def _concat(self) -> tuple[np.ndarray, ...]:
        if self._arrays is None:
            if not self._parts:
                empty = np.zeros((0, 2))
                self._arrays = (empty, empty, empty, empty, np.zeros(0), np.zeros(0, np.int64))
            else:
                a = np.concatenate([p[0] for p in self._parts])
                b = np.concatenate([p[1] for p in self._parts])
                half = np.concatenate([p[2] for p in self._parts])
                owner = np.concatenate([p[3] for p in self._parts])
                self._arrays = (a, b, np.minimum(a, b), np.maximum(a, b), half, owner)
        return self._arrays

    def blocked(self, points: np.ndarray, half_width_m: float, gap_m: float,
                ignore: tuple[int, ...] = (), home: HomeZone | tuple[HomeZone, ...] | None = None) -> bool:
        """Whether any of ``points`` (M, 2) with half width (m) overlaps a segment (closer than the sum
        of half widths plus ``gap_m``), ignoring the owners in ``ignore`` and the home zone(s)."""
        a, b, lo, hi, half, owner = self._concat()
        if len(a) == 0 or len(points) == 0:
            return False
        reach = half_width_m + self.max_half_m + gap_m
        q_lo, q_hi = points.min(0) - reach, points.max(0) + reach
        sel = np.all(hi >= q_lo, 1) & np.all(lo <= q_hi, 1)
        for key in ignore:
            sel &= owner != key
        idx = np.flatnonzero(sel)
        for zone in (home,) if isinstance(home, HomeZone) else home or ():
            if len(idx) == 0:
                break
            u = np.array([np.cos(zone.yaw), np.sin(zone.yaw)])
            sa, sb = a[idx], b[idx]
            behind = np.maximum((sa - zone.xy) @ u, (sb - zone.xy) @ u) <= 0.05
            near = np.linalg.norm(0.5 * (sa + sb) - zone.xy, axis=-1) < zone.radius_m
            idx = idx[~(behind & near)]
        if len(idx) == 0:
            return False
        limit = (half[idx] + half_width_m + gap_m)[None]
        # Every third point first: any lane crossing the candidate comes within ~3 m of one of them, so
        # most blocked candidates are found at a third of the cost; a free candidate needs all points.
        if len(points) > 6 and np.any(geometry.point_segment_distance(points[::3], a[idx], b[idx]) < limit):
            return True
        return bool(np.any(geometry.point_segment_distance(points, a[idx], b[idx]) < limit))
