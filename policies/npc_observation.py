"""Batched observations of DeltaSim for every controlled agent at once, each in its own frame.

The agent frame has its origin at the agent's box centre, x along its heading. For each observed agent:

* own history: the last H steps (x, y, cos dyaw, sin dyaw, speed, valid) in the current agent frame, plus
  static features (length, width, type one-hot);
* the N nearest other agents (the ego included): relative pose, velocity in the agent frame, size, type;
* the L nearest lane chunks (see :mod:`policies.lane_chunks`): points in the agent frame and the chunk's
  relation to the agent's current lane (current / successor / predecessor / left / right / other), whether
  it lies on the agent's route and where along the route, speed limit and width;
* route targets: for each distance d in ROUTE_AHEAD_M, the point of the observed route chunks whose
  forward coordinate is closest to d (x, y, valid) -- a direct lane-keeping cue.

Fixed capacities with masks; no Python loop over agents in the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.base import PolicyInput
from policies.lane_chunks import LaneChunkCache, PackedLanes
from vectorworld import geometry
from vectorworld.scene import AgentType

HISTORY_FEATURES = 6
STATIC_FEATURES = 5
NEIGHBOR_FEATURES = 11
LANE_FEATURES = 10
ROUTE_AHEAD_M = (0.0, 5.0, 10.0, 20.0, 30.0)
ROUTE_FEATURES = 3
NUM_RELATIONS = 6  # current, successor, predecessor, left, right, other


@dataclass(frozen=True)
class ObservationConfig:
    """Capacities and ranges of the observation."""

    history_steps: int = 11
    max_neighbors: int = 8
    neighbor_radius_m: float = 40.0
    max_lane_chunks: int = 16
    lane_radius_m: float = 40.0
    chunk_length_m: float = 16.0
    chunk_points: int = 9


@dataclass(frozen=True)
class Observation:
    """Observations of S agents (float32 unless stated; all in each agent's own frame).

    slots: (S,) int64, the agent slots observed.
    history: (S, H, 6) x m, y m, cos dyaw, sin dyaw, speed m/s, valid.
    static: (S, 5) length m, width m, is_vehicle, is_pedestrian, is_cyclist.
    neighbors: (S, N, 11) x, y, cos dyaw, sin dyaw, vx, vy (m/s), length, width, type one-hot (3).
    neighbor_mask: (S, N) bool. neighbor_slots: (S, N) int64 (-1 where masked).
    lane_points: (S, L, P, 2) m. lane_features: (S, L, 10): relation one-hot (6), on_route, route position
    in [0, 1], speed limit / 30 m/s, width / 4 m. lane_mask: (S, L) bool.
    """

    slots: np.ndarray
    history: np.ndarray
    static: np.ndarray
    neighbors: np.ndarray
    neighbor_mask: np.ndarray
    neighbor_slots: np.ndarray
    lane_points: np.ndarray
    lane_features: np.ndarray
    lane_mask: np.ndarray
    route_ahead: np.ndarray

    @property
    def size(self) -> int:
        return len(self.slots)


def type_one_hot(agent_type: np.ndarray) -> np.ndarray:
    """(..., 3) float one-hot of vehicle / pedestrian / cyclist (other types: zeros)."""
    t = np.asarray(agent_type)
    return np.stack([t == AgentType.VEHICLE, t == AgentType.PEDESTRIAN, t == AgentType.CYCLIST], -1).astype(
        np.float64)


def _rotate(vec: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Rotate vectors (S, ..., 2) by -yaw (S,) into the agent frames."""
    c = np.cos(yaw).reshape((-1,) + (1,) * (vec.ndim - 2))
    s = np.sin(yaw).reshape((-1,) + (1,) * (vec.ndim - 2))
    return np.stack([c * vec[..., 0] + s * vec[..., 1], -s * vec[..., 0] + c * vec[..., 1]], -1)


def route_ahead(lane_points: np.ndarray, lane_features: np.ndarray, lane_mask: np.ndarray,
                distances: tuple[float, ...] = ROUTE_AHEAD_M, tolerance_m: float = 1.5) -> np.ndarray:
    """Route targets (S, R, 3): per distance d, the on-route chunk point (agent frame) whose x is closest
    to d, and whether one lies within ``tolerance_m`` of it. Inputs as in :class:`Observation`."""
    s = lane_points.shape[0]
    on_route = lane_mask & (lane_features[..., 6] > 0.5)                        # (S, L)
    pts = lane_points.reshape(s, -1, 2)
    mask = np.repeat(on_route, lane_points.shape[2], axis=1)                  # (S, L*P)
    out = np.zeros((s, len(distances), ROUTE_FEATURES))
    if s == 0 or pts.shape[1] == 0:
        return out
    rows = np.arange(s)
    for k, d in enumerate(distances):
        cost = np.where(mask, np.abs(pts[..., 0] - d), np.inf)
        best = cost.argmin(1)
        ok = cost[rows, best] <= tolerance_m
        out[:, k, :2] = pts[rows, best] * ok[:, None]
        out[:, k, 2] = ok
    return out


class ObservationBuilder:
    """Builds :class:`Observation` batches; keeps the lane-chunk cache between steps."""

    def __init__(self, config: ObservationConfig = ObservationConfig()) -> None:
        self.config = config
        self.lanes = LaneChunkCache(config.chunk_length_m, config.chunk_points)

    def __call__(self, inp: PolicyInput, slots: np.ndarray | None = None) -> Observation:
        """Observe ``slots`` (default: valid controlled slots, ascending)."""
        agents = inp.agents
        if slots is None:
            slots = np.nonzero(np.asarray(inp.controlled, bool) & agents.valid)[0]
        slots = np.asarray(slots, dtype=np.int64)
        packed = self.lanes.update(inp.graph)
        history, static = self._own(inp, slots)
        neighbors, nmask, nslots = self._neighbors(inp, slots)
        lane_pts, lane_feat, lmask = self._lanes(inp, slots, packed)
        route = route_ahead(lane_pts, lane_feat, lmask)
        f32 = np.float32
        return Observation(slots, history.astype(f32), static.astype(f32), neighbors.astype(f32), nmask,
                           nslots, lane_pts.astype(f32), lane_feat.astype(f32), lmask, route.astype(f32))

    def _own(self, inp: PolicyInput, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = inp.agents
        h = self.config.history_steps
        hist = a.history[slots, -h:]
        hvalid = a.history_valid[slots, -h:]
        origin, yaw = a.xy[slots], a.yaw[slots]
        local = _rotate(hist[..., :2] - origin[:, None], yaw)
        dyaw = hist[..., 2] - yaw[:, None]
        out = np.concatenate([local, np.cos(dyaw)[..., None], np.sin(dyaw)[..., None], hist[..., 3:4],
                              np.ones_like(dyaw)[..., None]], -1) * hvalid[..., None]
        static = np.concatenate([a.length[slots, None], a.width[slots, None], type_one_hot(a.agent_type[slots])],
                                -1)
        return out, static

    def _neighbors(self, inp: PolicyInput, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = inp.agents
        cfg = self.config
        n = cfg.max_neighbors
        others = np.nonzero(a.valid)[0]
        s = len(slots)
        feats = np.zeros((s, n, NEIGHBOR_FEATURES))
        mask = np.zeros((s, n), bool)
        nslots = np.full((s, n), -1, np.int64)
        if s == 0 or len(others) == 0:
            return feats, mask, nslots
        dist = np.linalg.norm(a.xy[others][None] - a.xy[slots][:, None], axis=-1)
        dist[others[None] == slots[:, None]] = np.inf
        dist[dist > cfg.neighbor_radius_m] = np.inf
        k = min(n, len(others))
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
        d_sel = np.take_along_axis(dist, order, 1)
        ok = np.isfinite(d_sel)
        sel = others[order]
        yaw = a.yaw[slots]
        rel = _rotate(a.xy[sel] - a.xy[slots][:, None], yaw)
        dyaw = a.yaw[sel] - yaw[:, None]
        vel = _rotate(a.velocity[sel], yaw)
        f = np.concatenate([rel, np.cos(dyaw)[..., None], np.sin(dyaw)[..., None], vel, a.length[sel][..., None],
                            a.width[sel][..., None], type_one_hot(a.agent_type[sel])], -1)
        feats[:, :k] = f * ok[..., None]
        mask[:, :k] = ok
        nslots[:, :k] = np.where(ok, sel, -1)
        return feats, mask, nslots

    def _lanes(self, inp: PolicyInput, slots: np.ndarray, packed: PackedLanes
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cfg = self.config
        s, lcap, p = len(slots), cfg.max_lane_chunks, cfg.chunk_points
        pts_out = np.zeros((s, lcap, p, 2))
        feat_out = np.zeros((s, lcap, LANE_FEATURES))
        mask_out = np.zeros((s, lcap), bool)
        m = packed.num_chunks
        if s == 0 or m == 0:
            return pts_out, feat_out, mask_out
        a = inp.agents
        xy, yaw = a.xy[slots], a.yaw[slots]
        # Pre-select by chunk centre, then rank the candidates by their closest point.
        centre_d = np.linalg.norm(packed.chunk_center[None] - xy[:, None], axis=-1)
        k = min(3 * lcap, m)
        cand = np.argpartition(centre_d, k - 1, axis=1)[:, :k] if k < m else np.tile(np.arange(m), (s, 1))
        cand_pts = packed.chunk_points[cand]
        rel = cand_pts - xy[:, None, None]
        point_d = np.sqrt(np.einsum("...i,...i->...", rel, rel).min(-1))  # min of squares, one sqrt
        point_d = np.where(point_d <= cfg.lane_radius_m, point_d, np.inf)
        order = np.lexsort((cand, point_d), axis=1)[:, : min(lcap, k)]
        chosen = np.take_along_axis(cand, order, 1)
        d_sel = np.take_along_axis(point_d, order, 1)
        ok = np.isfinite(d_sel)
        relation, route_pos = self._relations(inp, slots, packed, cand, xy, yaw)
        lane_of = packed.chunk_lane[chosen]
        rows = np.arange(s)[:, None]
        rel = relation[rows, lane_of]
        rpos = route_pos[rows, lane_of]
        feat = np.concatenate([
            np.eye(NUM_RELATIONS)[rel], (rpos >= 0)[..., None], np.maximum(rpos, 0.0)[..., None],
            packed.speed_limit_mps[lane_of][..., None] / 30.0, packed.width_m[lane_of][..., None] / 4.0], -1)
        local = _rotate(packed.chunk_points[chosen] - xy[:, None, None], yaw)
        q = chosen.shape[1]
        pts_out[:, :q] = local * ok[..., None, None]
        feat_out[:, :q] = feat * ok[..., None]
        mask_out[:, :q] = ok
        return pts_out, feat_out, mask_out

    def _relations(self, inp: PolicyInput, slots: np.ndarray, packed: PackedLanes, cand: np.ndarray,
                   xy: np.ndarray, yaw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per agent and lane: relation code (S, NL) int64 and route position (S, NL) in [0, 1] or -1."""
        s, nl = len(slots), packed.num_lanes
        ids = inp.agents.id[slots]
        routes = [tuple(inp.routes.get(int(i), ())) for i in ids]
        lengths = np.array([len(r) for r in routes], dtype=np.int64)
        flat = np.array([lane for r in routes for lane in r], dtype=np.int64)
        flat_idx = packed.lane_index(flat)
        owner = np.repeat(np.arange(s), lengths)
        starts = np.cumsum(lengths) - lengths
        position = np.arange(len(flat)) - np.repeat(starts, lengths)
        route_pos = np.full((s, nl), -1.0)
        keep = flat_idx >= 0
        denom = np.maximum(lengths - 1, 1)[owner]
        # Later entries must not overwrite earlier ones for routes that revisit a lane: write in reverse.
        rev = np.nonzero(keep)[0][::-1]
        route_pos[owner[rev], flat_idx[rev]] = position[rev] / denom[rev]
        current = np.full(s, -1, np.int64)
        has_route = lengths > 0
        if len(flat):
            current = np.where(has_route, flat_idx[np.minimum(starts, len(flat) - 1)], -1)
        missing = current < 0
        if np.any(missing):
            current[missing] = self._nearest_lane(packed, cand[missing], xy[missing], yaw[missing])
        relation = np.full((s, nl), NUM_RELATIONS - 1, np.int64)
        if len(packed.edge_src):
            hit_s, hit_e = np.nonzero(current[:, None] == packed.edge_src[None])
            # Relation codes 1..4 follow the EDGE_* constants shifted by one (0 is "current").
            relation[hit_s, packed.edge_dst[hit_e]] = packed.edge_kind[hit_e] + 1
        ok = current >= 0
        relation[np.nonzero(ok)[0], current[ok]] = 0
        return relation, route_pos

    @staticmethod
    def _nearest_lane(packed: PackedLanes, cand: np.ndarray, xy: np.ndarray, yaw: np.ndarray) -> np.ndarray:
        """Lane index (S,) of the candidate chunk point (cand: (S, k) chunk indices) closest to each pose,
        with a heading penalty of 4 m per rad."""
        pts = packed.chunk_points[cand]
        seg = np.diff(pts, axis=2)
        heading = np.arctan2(seg[..., 1], seg[..., 0])
        heading = np.concatenate([heading, heading[..., -1:]], -1)
        d = np.linalg.norm(pts - xy[:, None, None], axis=-1)
        cost = d + 4.0 * np.abs(geometry.wrap_angle(heading - yaw[:, None, None]))
        best = cost.reshape(len(xy), -1).argmin(1) // pts.shape[2]
        return packed.chunk_lane[cand[np.arange(len(xy)), best]]
