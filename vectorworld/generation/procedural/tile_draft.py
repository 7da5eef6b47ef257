"""The lanes and edges of a tile while it is being generated, and their conversion to :class:`Lane` values.

New lanes get *provisional* ids (negative, from a per-call counter) while roads are grown, so a road that
is abandoned leaves no gap in the world's lane ids. ``finalize`` hands out real ids from the request's
:class:`IdAllocator` in creation order, puts edges among new lanes into the Lane tuples and returns the
edges to existing lanes as links.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from vectorworld.generation.base import IdAllocator
from vectorworld.scene import Lane, LaneType

PROVISIONAL_BASE = -(1 << 50)
"""Provisional lane ids count up from here; real lane ids are never this negative."""


@dataclass(frozen=True)
class NewLane:
    """A generated lane before it has a real id. points: (N, 2) m global, in the direction of travel."""

    pid: int
    points: np.ndarray
    width_m: float
    speed_limit_mps: float
    lane_type: LaneType
    road_key: int


@dataclass
class TileDraft:
    """Lanes, successor edges (from, to) and neighbour pairs (right lane, left lane) of one tile call.

    A child draft (``child``) collects one road's work; ``commit`` moves it into its parent.
    """

    counter: itertools.count = field(default_factory=lambda: itertools.count(PROVISIONAL_BASE))
    lanes: list[NewLane] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    neighbours: list[tuple[int, int]] = field(default_factory=list)

    def new_pid(self) -> int:
        return next(self.counter)

    def child(self) -> TileDraft:
        return TileDraft(counter=self.counter)

    def commit(self, child: TileDraft) -> None:
        self.lanes.extend(child.lanes)
        self.edges.extend(child.edges)
        self.neighbours.extend(child.neighbours)

    def finalize(self, lane_ids: IdAllocator) -> tuple[tuple[Lane, ...], tuple[tuple[int, int], ...]]:
        """Lanes with real ids and edges among themselves, and links (from, to) to existing lanes."""
        real = {lane.pid: lane_ids() for lane in self.lanes}
        succ: dict[int, list[int]] = {i: [] for i in real.values()}
        pred: dict[int, list[int]] = {i: [] for i in real.values()}
        left: dict[int, list[int]] = {i: [] for i in real.values()}
        right: dict[int, list[int]] = {i: [] for i in real.values()}
        links: list[tuple[int, int]] = []
        for a, b in dict.fromkeys(self.edges):
            new_a, new_b = a in real, b in real
            if new_a and new_b:
                succ[real[a]].append(real[b])
                pred[real[b]].append(real[a])
            elif new_a or new_b:
                if (new_a or a > PROVISIONAL_BASE // 2) and (new_b or b > PROVISIONAL_BASE // 2):
                    links.append((real.get(a, a), real.get(b, b)))
        for r, lft in dict.fromkeys(self.neighbours):
            if r in real and lft in real:
                left[real[r]].append(real[lft])
                right[real[lft]].append(real[r])
        lanes = []
        for lane in self.lanes:
            i = real[lane.pid]
            lanes.append(Lane(i, lane.points, width_m=lane.width_m, speed_limit_mps=lane.speed_limit_mps,
                              lane_type=lane.lane_type, successors=tuple(succ[i]), predecessors=tuple(pred[i]),
                              left_neighbors=tuple(left[i]), right_neighbors=tuple(right[i])))
        return tuple(lanes), tuple(links)
