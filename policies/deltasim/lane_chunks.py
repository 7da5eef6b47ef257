"""Lanes of a LaneGraph packed as fixed-size chunks, for batched nearest-lane queries.

Each lane is cut into chunks of at most ``chunk_length_m`` metres, each resampled to ``chunk_points``
points in the direction of travel, so long real lanes (WOMD) and short generated ones look alike to the
policy. The packed arrays are rebuilt only when the graph's lanes change (lanes are immutable values, so
identity tells whether one changed); while the graph's ``version`` stays the same not even the lanes are
compared. :class:`ChunkTables` holds what the per-step queries derive from one packing (float32 points, the
relation of every lane pair joined by an edge).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vectorworld import geometry
from vectorworld.scene import Lane, LaneGraph

EDGE_SUCCESSOR, EDGE_PREDECESSOR, EDGE_LEFT, EDGE_RIGHT = 0, 1, 2, 3
RELATION_CURRENT, RELATION_OTHER = 0, 5
"""Relation codes of a lane to an agent's current lane: the lane itself, none; an edge kind k is 1 + k."""


@dataclass(frozen=True)
class PackedLanes:
    """The chunks of every lane of a graph.

    lane_ids: (NL,) int64; speed_limit_mps, width_m: (NL,) float64.
    chunk_points: (M, P, 2) float64, m, global frame; chunk_center: (M, 2); chunk_lane: (M,) int64 index
    into ``lane_ids``.
    edge_src, edge_dst: (E,) int64 lane indices; edge_kind: (E,) int64, one of the EDGE_* constants
    (edge_dst is a successor / predecessor / left / right neighbour of edge_src).
    """

    lane_ids: np.ndarray
    speed_limit_mps: np.ndarray
    width_m: np.ndarray
    chunk_points: np.ndarray
    chunk_center: np.ndarray
    chunk_lane: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_kind: np.ndarray

    @property
    def num_lanes(self) -> int:
        return len(self.lane_ids)

    @property
    def num_chunks(self) -> int:
        return len(self.chunk_lane)

    @cached_property
    def _sorted_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """``lane_ids`` ascending (NL,) and the order (NL,) that sorts them (computed once per packing)."""
        order = np.argsort(self.lane_ids)
        return self.lane_ids[order], order

    def lane_index(self, ids: np.ndarray) -> np.ndarray:
        """Indices (...) of lane ids (...) in ``lane_ids``; -1 for ids not in the graph."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.num_lanes == 0:
            return np.full(ids.shape, -1, np.int64)
        ordered, order = self._sorted_ids
        idx = order[np.clip(np.searchsorted(ordered, ids), 0, self.num_lanes - 1)]
        return np.where(self.lane_ids[idx] == ids, idx, -1)


def chunk_lane(points: np.ndarray, chunk_length_m: float, chunk_points: int) -> np.ndarray:
    """Cut a polyline (N, 2) into chunks (K, chunk_points, 2) of at most ``chunk_length_m`` each."""
    s = geometry.polyline_lengths(points)
    count = max(1, int(np.ceil(s[-1] / chunk_length_m - 1e-9)))
    bounds = np.linspace(0.0, s[-1], count + 1)
    frac = np.linspace(0.0, 1.0, chunk_points)
    targets = bounds[:-1, None] + frac[None] * np.diff(bounds)[:, None]
    flat = geometry.interpolate_polyline(points, s, targets.reshape(-1))
    return flat.reshape(count, chunk_points, 2)


class LaneChunkCache:
    """Keeps a :class:`PackedLanes` in sync with a :class:`LaneGraph` (re-chunking only changed lanes)."""

    def __init__(self, chunk_length_m: float = 16.0, chunk_points: int = 9) -> None:
        self.chunk_length_m = chunk_length_m
        self.chunk_points = chunk_points
        self._chunks: dict[int, tuple[Lane, np.ndarray]] = {}
        self._packed: PackedLanes | None = None
        self._synced: tuple[LaneGraph, int | None] | None = None  # the graph and its version the packing reflects

    def update(self, graph: LaneGraph) -> PackedLanes:
        """The packed lanes of ``graph`` (cached while no lane changed; while the graph object and its
        ``version`` are the ones of the last call, without looking at the lanes)."""
        version = getattr(graph, "version", None)
        if self._packed is not None and self._synced is not None and self._synced[0] is graph \
                and version is not None and self._synced[1] == version:
            return self._packed
        changed = self._packed is None or len(self._chunks) != len(graph.lanes)
        for lane_id, lane in graph.lanes.items():
            entry = self._chunks.get(lane_id)
            if entry is None or entry[0] is not lane:
                pts = entry[1] if entry is not None and entry[0].points is lane.points else None
                if pts is None:
                    pts = chunk_lane(lane.points, self.chunk_length_m, self.chunk_points)
                self._chunks[lane_id] = (lane, pts)
                changed = True
        if len(self._chunks) != len(graph.lanes):
            for stale in [i for i in self._chunks if i not in graph.lanes]:
                del self._chunks[stale]
            changed = True
        packed = self._pack() if changed or self._packed is None else self._packed
        self._packed = packed
        self._synced = (graph, version)
        return packed

    def _pack(self) -> PackedLanes:
        ids = np.array(sorted(self._chunks), dtype=np.int64)
        lanes = [self._chunks[int(i)][0] for i in ids]
        chunks = [self._chunks[int(i)][1] for i in ids]
        index = {int(i): k for k, i in enumerate(ids)}
        src, dst, kind = [], [], []
        for k, lane in enumerate(lanes):
            for code, targets in ((EDGE_SUCCESSOR, lane.successors), (EDGE_PREDECESSOR, lane.predecessors),
                                  (EDGE_LEFT, lane.left_neighbors), (EDGE_RIGHT, lane.right_neighbors)):
                for t in targets:
                    if t in index:
                        src.append(k)
                        dst.append(index[t])
                        kind.append(code)
        p = self.chunk_points
        pts = np.concatenate(chunks, 0) if chunks else np.zeros((0, p, 2))
        return PackedLanes(
            lane_ids=ids,
            speed_limit_mps=np.array([lane.speed_limit_mps for lane in lanes], dtype=np.float64),
            width_m=np.array([lane.width_m for lane in lanes], dtype=np.float64),
            chunk_points=pts,
            chunk_center=pts.mean(axis=1) if len(pts) else np.zeros((0, 2)),
            chunk_lane=np.repeat(np.arange(len(ids), dtype=np.int64), [len(c) for c in chunks]),
            edge_src=np.array(src, dtype=np.int64),
            edge_dst=np.array(dst, dtype=np.int64),
            edge_kind=np.array(kind, dtype=np.int64),
        )


@dataclass(frozen=True)
class ChunkTables:
    """Lookup arrays derived from one :class:`PackedLanes`, for the per-step chunk and relation queries
    (build once per packing: :meth:`build`).

    centre_sq: (M,) squared norms of the chunk centres, m^2. x32, y32: (P, M) float32 chunk point
    coordinates, m, global frame (point-major); x64, y64: (M, P) the same in float64. pair_key: (E',) int64
    ascending, ``src * NL + dst`` of every lane pair joined by an edge; pair_code: (E',) int64 its relation
    code ``1 + EDGE_*`` (of the pair's last edge where several join it).
    """

    packed: PackedLanes
    centre_sq: np.ndarray
    x32: np.ndarray
    y32: np.ndarray
    x64: np.ndarray
    y64: np.ndarray
    pair_key: np.ndarray
    pair_code: np.ndarray

    @staticmethod
    def build(packed: PackedLanes) -> ChunkTables:
        key = packed.edge_src * packed.num_lanes + packed.edge_dst
        pair_key, last = np.unique(key[::-1], return_index=True)  # first in reverse: the pair's last edge
        pts = packed.chunk_points
        return ChunkTables(packed=packed,
                           centre_sq=(packed.chunk_center * packed.chunk_center).sum(1),
                           x32=np.ascontiguousarray(pts[..., 0].T, dtype=np.float32),
                           y32=np.ascontiguousarray(pts[..., 1].T, dtype=np.float32),
                           x64=np.ascontiguousarray(pts[..., 0]),
                           y64=np.ascontiguousarray(pts[..., 1]),
                           pair_key=pair_key.astype(np.int64),
                           pair_code=packed.edge_kind[::-1][last].astype(np.int64) + 1)

    def relation(self, current: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        """Relation codes (S, Q) int64 of the lanes ``lanes`` (S, Q) (lane indices) to each row's current lane
        ``current`` (S,) (lane index, -1: none): RELATION_CURRENT for the current lane itself, ``1 + EDGE_*``
        for the lanes an edge of the current lane points at, RELATION_OTHER for the rest."""
        current = np.asarray(current, dtype=np.int64)[:, None]
        lanes = np.asarray(lanes, dtype=np.int64)
        out = np.full(lanes.shape, RELATION_OTHER, np.int64)
        if len(self.pair_key):
            query = current * self.packed.num_lanes + lanes
            pos = np.minimum(np.searchsorted(self.pair_key, query), len(self.pair_key) - 1)
            out = np.where((self.pair_key[pos] == query) & (current >= 0), self.pair_code[pos], RELATION_OTHER)
        return np.where((lanes == current) & (current >= 0), RELATION_CURRENT, out)

