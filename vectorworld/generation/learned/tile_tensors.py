"""Fixed-capacity tile tensors for the learned generator, the known/frontier partition and normalisation.

A tile is stored as padded numpy arrays in its own frame (origin at the tile centre, x along the tile's
yaw, the square spans [-32, 32]^2 m). The back half (x < 0) is the *condition* of outpainting, the front
half is generated. Lanes that cross the partition line x = 0 are split there into a known part and a new
part joined by a successor edge, which is exactly what the streaming world presents: the known world ends
at ports on the partition line.

Edge types (``edges[i, j]``, lane i to lane j): 0 none, 1 j is a predecessor of i, 2 j is a successor of
i, 3 j is the left neighbour of i, 4 j is the right neighbour of i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.learned.bezier import BEZIER_FEATURES, CONTROL_POINTS, fit_bezier

LANE_POINTS = 20
MOTION_POINTS = 6
HALF_TILE_M = 32.0
NUM_EDGE_TYPES = 5
EDGE_NONE, EDGE_PRED, EDGE_SUCC, EDGE_LEFT, EDGE_RIGHT = range(NUM_EDGE_TYPES)
NUM_AGENT_TYPES = 4
"""Agent type classes in the tensors: 0 vehicle, 1 pedestrian, 2 cyclist, 3 other (AgentType - 1)."""

LANE_FEATURES = BEZIER_FEATURES
"""Model-side lane features: the 4 cubic Bézier control points / 32 m (see bezier.py)."""
HINT_FEATURES = 6
"""Port hint of a lane slot: (starts at an out port, ends at an in port, x / 32, y / 32, cos, sin)."""
AGENT_FEATURES = 7 + NUM_AGENT_TYPES + MOTION_POINTS * 2
SPEED_SCALE_MPS = 10.0
MOTION_SCALE_M = 12.0


@dataclass(frozen=True)
class TileTensors:
    """One tile (or a batch, with a leading dimension B) as padded arrays, tile frame, SI units.

    lane_points: (L, 20, 2) float32 m; lane_valid, lane_cond: (L,) bool; edges: (L, L) int8 (see module);
    agent_state: (A, 7) float32 (x m, y m, speed m/s, cos yaw, sin yaw, length m, width m);
    agent_type: (A,) int8 in [0, 4); agent_motion: (A, 6, 2) float32 m, body frame, oldest first;
    agent_valid, agent_cond: (A,) bool. ``*_cond`` marks the known (condition) tokens.
    """

    lane_points: np.ndarray
    lane_valid: np.ndarray
    lane_cond: np.ndarray
    edges: np.ndarray
    agent_state: np.ndarray
    agent_type: np.ndarray
    agent_motion: np.ndarray
    agent_valid: np.ndarray
    agent_cond: np.ndarray

    @property
    def num_lanes(self) -> int:
        return self.lane_points.shape[-3]

    @property
    def num_agents(self) -> int:
        return self.agent_state.shape[-2]

    def as_dict(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def empty_tile(max_lanes: int, max_agents: int) -> TileTensors:
    """An all-padding tile of the given capacity."""
    return TileTensors(
        lane_points=np.zeros((max_lanes, LANE_POINTS, 2), np.float32),
        lane_valid=np.zeros(max_lanes, bool), lane_cond=np.zeros(max_lanes, bool),
        edges=np.zeros((max_lanes, max_lanes), np.int8),
        agent_state=np.zeros((max_agents, 7), np.float32), agent_type=np.zeros(max_agents, np.int8),
        agent_motion=np.zeros((max_agents, MOTION_POINTS, 2), np.float32),
        agent_valid=np.zeros(max_agents, bool), agent_cond=np.zeros(max_agents, bool))


def stack_tiles(tiles: list[TileTensors]) -> TileTensors:
    """Stack same-capacity tiles into a batch (leading dimension B)."""
    fields = TileTensors.__dataclass_fields__
    return TileTensors(**{k: np.stack([getattr(t, k) for t in tiles]) for k in fields})


def edges_from_lists(successors: list[list[int]], left: list[list[int]], right: list[list[int]],
                     capacity: int) -> np.ndarray:
    """Edge-type matrix (capacity, capacity) int8 from per-lane successor / neighbour index lists."""
    edges = np.zeros((capacity, capacity), np.int8)
    for i, succ in enumerate(successors):
        for j in succ:
            edges[i, j] = EDGE_SUCC
            edges[j, i] = EDGE_PRED
    for i, nbrs in enumerate(left):
        for j in nbrs:
            edges[i, j] = EDGE_LEFT
    for i, nbrs in enumerate(right):
        for j in nbrs:
            edges[i, j] = EDGE_RIGHT
    return edges


def _split_polyline(points: np.ndarray, x_split: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Split a polyline (N, 2) that crosses x = x_split exactly once (either way) into its first and
    second part (both at least 1 m long). None otherwise."""
    x = points[:, 0] - x_split
    side = x >= 0.0
    cross = np.flatnonzero(side[:-1] != side[1:])
    if len(cross) != 1:
        return None
    k = int(cross[0])
    f = -x[k] / (x[k + 1] - x[k])
    p = points[k] + f * (points[k + 1] - points[k])
    first = np.concatenate([points[: k + 1], p[None]])
    second = np.concatenate([p[None], points[k + 1:]])
    if geometry.polyline_lengths(first)[-1] < 1.0 or geometry.polyline_lengths(second)[-1] < 1.0:
        return None
    return first, second


def partition_tile(points: list[np.ndarray], successors: list[list[int]], left: list[list[int]],
                   right: list[list[int]], agent_state: np.ndarray, agent_type: np.ndarray,
                   agent_motion: np.ndarray, max_lanes: int, max_agents: int,
                   known: np.ndarray | None = None) -> TileTensors:
    """Build padded tensors from ragged lanes in the tile frame, splitting lanes at the partition x = 0.

    points: per lane (N_i, 2) m tile frame; successors/left/right: per lane index lists;
    agent_state (M, 7), agent_type (M,) in [0, 4), agent_motion (M, 6, 2). Known tokens are placed first:
    at most ``max_lanes // 2`` known lanes (nearest to the partition; the same cap as at inference), then
    frontier lanes nearest to the partition until the capacity is full. ``known`` (N,) bool: which lanes
    were known when the tile was made (the streaming request's setting: a neighbour's road may lie in the
    front half); lanes are then not split, and known ones are the condition. None: the back half is known.
    """
    pts = [np.asarray(p, np.float64) for p in points]
    succ = [list(s) for s in successors]
    lft, rgt = [list(s) for s in left], [list(s) for s in right]
    n = len(pts)
    second_of: dict[int, int] = {}
    for i in range(n if known is None else 0):
        halves = _split_polyline(pts[i], 0.0)
        if halves is None:
            continue
        second_of[i] = len(pts)
        pts[i] = halves[0]
        pts.append(halves[1])
        succ.append(succ[i])
        succ[i] = [second_of[i]]
    for i in range(n):  # neighbours of split lanes: first parts keep theirs, second parts pair up
        if i in second_of:
            lft.append([second_of[j] for j in lft[i] if j in second_of])
            rgt.append([second_of[j] for j in rgt[i] if j in second_of])
    cond = np.array([float(np.mean(p[:, 0])) < 0.0 for p in pts], bool) if known is None \
        else np.asarray(known, bool).reshape(len(pts))
    dist = np.array([float(np.min(np.abs(p[:, 0]))) for p in pts])
    known = sorted(np.flatnonzero(cond), key=lambda i: (dist[i], i))[:max_lanes // 2]
    frontier = sorted(np.flatnonzero(~cond), key=lambda i: (dist[i], i))
    order = [int(i) for i in known + frontier][:max_lanes]
    index = {old: new for new, old in enumerate(order)}
    out = empty_tile(max_lanes, max_agents)
    for new, old in enumerate(order):
        out.lane_points[new] = geometry.resample_polyline(pts[old], LANE_POINTS)
        out.lane_valid[new] = True
        out.lane_cond[new] = cond[old]
    kept = [[[index[j] for j in lists[old] if j in index] for old in order] for lists in (succ, lft, rgt)]
    out.edges[:] = edges_from_lists(kept[0], kept[1], kept[2], max_lanes)
    m = len(agent_state)
    if m:
        a_cond = agent_state[:, 0] < 0.0
        a_order = sorted(range(m), key=lambda i: (not a_cond[i], abs(float(agent_state[i, 0]))))[:max_agents]
        k = len(a_order)
        out.agent_state[:k] = agent_state[a_order]
        out.agent_type[:k] = agent_type[a_order]
        out.agent_motion[:k] = agent_motion[a_order]
        out.agent_valid[:k] = True
        out.agent_cond[:k] = a_cond[a_order]
    return out


def lane_features(lane_points: np.ndarray) -> np.ndarray:
    """Normalised lane features (..., L, 8): fitted Bézier control points / 32 m, flattened."""
    control = fit_bezier(lane_points) / HALF_TILE_M
    return control.reshape(*lane_points.shape[:-2], LANE_FEATURES).astype(np.float32)


def lane_control_points(features: np.ndarray) -> np.ndarray:
    """Inverse of :func:`lane_features`: (..., L, 8) -> control points (..., L, 4, 2) in m."""
    return features.reshape(*features.shape[:-1], CONTROL_POINTS, 2).astype(np.float64) * HALF_TILE_M


def agent_features(state: np.ndarray, agent_type: np.ndarray, motion: np.ndarray) -> np.ndarray:
    """Normalised agent features (..., A, 23): state (7), type one-hot (4), motion code / 12 m (12)."""
    s = state.astype(np.float32)
    norm = np.stack([s[..., 0] / HALF_TILE_M, s[..., 1] / HALF_TILE_M, s[..., 2] / SPEED_SCALE_MPS,
                     s[..., 3], s[..., 4], (s[..., 5] - 4.5) / 2.0, (s[..., 6] - 2.0) / 1.0], -1)
    onehot = np.eye(NUM_AGENT_TYPES, dtype=np.float32)[np.clip(agent_type, 0, NUM_AGENT_TYPES - 1)]
    mot = (motion / MOTION_SCALE_M).reshape(*motion.shape[:-2], MOTION_POINTS * 2).astype(np.float32)
    return np.concatenate([norm, onehot, mot], -1)


def decode_agent_state(norm: np.ndarray) -> np.ndarray:
    """Inverse of the state part of :func:`agent_features`: (..., 7) normalised -> (..., 7) SI units."""
    yaw = np.arctan2(norm[..., 4], norm[..., 3])
    return np.stack([norm[..., 0] * HALF_TILE_M, norm[..., 1] * HALF_TILE_M,
                     np.maximum(norm[..., 2] * SPEED_SCALE_MPS, 0.0), np.cos(yaw), np.sin(yaw),
                     np.maximum(norm[..., 5] * 2.0 + 4.5, 0.3), np.maximum(norm[..., 6] + 2.0, 0.3)], -1)


def port_hints(lane_points: np.ndarray, lane_valid: np.ndarray, lane_cond: np.ndarray,
               edges: np.ndarray) -> np.ndarray:
    """Port hints (..., L, 6) of frontier lanes from a tile's ground truth (training).

    A frontier lane that succeeds a known lane starts at that lane's end (an out port): hint
    (1, 0, x, y, cos, sin) of the known lane's end pose. One that precedes a known lane ends at that lane's
    start (an in port): (0, 1, ...) of its start pose. Every other slot: zeros. Batched over leading dims.
    """
    hints = np.zeros(lane_points.shape[:-2] + (HINT_FEATURES,), np.float32)
    known = lane_valid & lane_cond
    frontier = lane_valid & ~lane_cond
    succ_of_known = (edges == EDGE_SUCC) & known[..., :, None] & frontier[..., None, :]   # known i -> new j
    pred_of_known = (edges == EDGE_PRED) & known[..., :, None] & frontier[..., None, :]   # new j -> known i
    for mask, flag, end in ((pred_of_known, 1, 0), (succ_of_known, 0, -1)):
        idx = np.nonzero(mask)
        if len(idx[0]) == 0:
            continue
        *lead, i, j = idx
        pts = lane_points[(*lead, i)]
        xy = pts[:, end]
        d = pts[:, -1] - pts[:, -3] if end == -1 else pts[:, 2] - pts[:, 0]
        yaw = np.arctan2(d[:, 1], d[:, 0])
        row = np.zeros((len(i), HINT_FEATURES), np.float32)
        row[:, flag] = 1.0
        row[:, 2:4] = xy / HALF_TILE_M
        row[:, 4], row[:, 5] = np.cos(yaw), np.sin(yaw)
        hints[(*lead, j)] = row
    return hints


BORDER_MARGIN_M = 1.0
"""A lane end this close to a side border (|y| = 32 m) of the front half enters or leaves the tile there."""


def side_border_rows(lane_points: np.ndarray) -> np.ndarray:
    """Plan rows (..., L, 6) of lanes (..., L, P, 2): a lane that starts on a side border of the front half (a
    road entering the tile) gets (1, 0, start pose), one that ends there (a road leaving it) gets (0, 1, end
    pose), the start winning; every other lane a row of zeros. Batched."""
    rows = np.zeros(lane_points.shape[:-2] + (HINT_FEATURES,), np.float32)
    for flag, end, inner in ((1, -1, -3), (0, 0, 2)):   # the start wins: it is written last
        xy = lane_points[..., end, :]
        on_border = (np.abs(xy[..., 1]) >= HALF_TILE_M - BORDER_MARGIN_M) & (xy[..., 0] > 0.0)
        if not on_border.any():
            continue
        d = lane_points[..., inner, :] - xy if end == 0 else xy - lane_points[..., inner, :]   # travel direction
        yaw = np.arctan2(d[..., 1], d[..., 0])
        row = np.zeros(xy.shape[:-1] + (HINT_FEATURES,), np.float32)
        row[..., flag] = 1.0
        row[..., 2:4] = xy / HALF_TILE_M
        row[..., 4], row[..., 5] = np.cos(yaw), np.sin(yaw)
        rows[on_border] = row[on_border]
    return rows


def border_hints(lane_points: np.ndarray, lane_valid: np.ndarray, lane_cond: np.ndarray,
                 hints: np.ndarray) -> np.ndarray:
    """``hints`` (..., L, 6) plus the road plan: every frontier lane without a hint gets its
    :func:`side_border_rows` row -- the ports of the roads the known half cannot predict. Tiles without a
    known lane (first tiles) get no plan. Batched."""
    out = np.array(hints, np.float32, copy=True)
    outpainted = (lane_valid & lane_cond).any(-1, keepdims=True)
    free = lane_valid & ~lane_cond & (hints[..., :2].sum(-1) < 0.5) & outpainted
    rows = side_border_rows(lane_points)
    planned = free & (rows[..., :2].sum(-1) > 0.5)
    out[planned] = rows[planned]
    return out
