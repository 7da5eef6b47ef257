"""Batched observations of DeltaSim for every controlled agent at once, each in its own frame.

The agent frame has its origin at the agent's box centre, x along its heading. For each observed agent:

* own history: the last H steps (x, y, cos dyaw, sin dyaw, speed, valid) in the current agent frame, plus
  static features (length, width, type one-hot);
* N other agents (the ego included): first those ahead in its route corridor (up to 60 m along the route:
  the queue it follows, even beyond the neighbour radius), then the nearest others; relative pose, velocity
  in the agent frame, size, type;
* the L nearest lane chunks (see :mod:`policies.lane_chunks`): points in the agent frame and the chunk's
  relation to the agent's current lane (current / successor / predecessor / left / right / other), whether
  it lies on the agent's route and where along the route, speed limit and width;
* route targets: for each distance d in ROUTE_AHEAD_M, the point d metres further along the agent's route
  path than its projection onto it and the lowest speed cap (limit, curve speed) on the way there (x, y,
  valid, cap; :mod:`policies.deltasim_routes`) -- direct lane-keeping, turning and speed cues;
* the junction stop token: where the right-of-way rule holds the agent before a junction this step, a
  standing wall across the connector's entry in the neighbour format (type one-hot all zero; see
  :mod:`policies.deltasim_junctions`). The network reads it as one more neighbour token
  (:func:`with_stop_token`).

Fixed capacities with masks; no Python loop over agents in the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.base import PolicyInput
from policies.deltasim_junctions import STOP_DEPTH_M, HeldAgents, JunctionStops
from policies.deltasim_routes import RouteTargets
from policies.idm import IdmCore
from policies.lane_chunks import LaneChunkCache, PackedLanes
from vectorworld import geometry
from vectorworld.scene import AgentType

HISTORY_FEATURES = 6
STATIC_FEATURES = 5
NEIGHBOR_FEATURES = 11
LANE_FEATURES = 10
ROUTE_FEATURES = 4
NUM_RELATIONS = 6  # current, successor, predecessor, left, right, other
STANDING_MPS = 0.1
"""Below this speed an agent off every route counts as parked (:func:`policy_slots`)."""
_RELATION_ONE_HOT = np.eye(NUM_RELATIONS)
CORRIDOR_CANDIDATES = 32
"""Nearest agents checked for the route corridor (the leader of a queue is among them)."""
CORRIDOR_MARGIN_M = 0.5
"""An agent is in the corridor when its centre is within the two half widths plus this of the route."""
CORRIDOR_PRIORITY_M = 1.0e4
"""Corridor agents rank before every other neighbour."""


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
    junction_stops: bool = True
    corridor_range_m: float = 60.0


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
    route_ahead: (S, R, 4) route targets (x m, y m, valid, speed cap m/s up to the target).
    stop: (S, 11) the junction stop token in the neighbour format (zeros where none); stop_mask: (S,) bool.
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
    stop: np.ndarray
    stop_mask: np.ndarray

    @property
    def size(self) -> int:
        return len(self.slots)


def with_stop_token(neighbors: np.ndarray, neighbor_mask: np.ndarray, stop: np.ndarray, stop_mask: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The network's neighbour tokens: neighbours (M, N, 11) with the stop token (M, 11) appended as token N;
    returns float32 (M, N + 1, 11) and the mask (M, N + 1)."""
    tokens = np.concatenate([neighbors, stop[:, None]], 1).astype(np.float32, copy=False)
    return tokens, np.concatenate([neighbor_mask, stop_mask[:, None]], 1)


def policy_slots(inp: PolicyInput, hold_parked: bool = True) -> np.ndarray:
    """Slots (S,) ascending that a DeltaSim policy moves: valid controlled agents, without (``hold_parked``)
    the ones standing off every route -- parked cars and standing pedestrians, which lane-following traffic
    (and the Session) treats as static: they are held where they are."""
    agents = inp.agents
    slots = np.nonzero(np.asarray(inp.controlled, bool) & agents.valid)[0]
    if hold_parked and len(slots):
        routed = np.array([bool(inp.routes.get(int(i))) for i in agents.id[slots]], bool)
        slots = slots[routed | (agents.speed[slots] >= STANDING_MPS)]
    return slots


_ONE_HOT_TYPES = (AgentType.VEHICLE, AgentType.PEDESTRIAN, AgentType.CYCLIST)
_ONE_HOT_TABLE = np.zeros((max(AgentType) + 2, 3))
for _column, _kind in enumerate(_ONE_HOT_TYPES):
    _ONE_HOT_TABLE[_kind, _column] = 1.0


def type_one_hot(agent_type: np.ndarray) -> np.ndarray:
    """(..., 3) float one-hot of vehicle / pedestrian / cyclist (other types: zeros); one table lookup (types
    outside the enum read the all-zero last row)."""
    t = np.asarray(agent_type, dtype=np.int64)
    last = len(_ONE_HOT_TABLE) - 1
    return _ONE_HOT_TABLE[np.where((t >= 0) & (t < last), t, last)]


def _rotate(vec: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Rotate vectors (S, ..., 2) by -yaw (S,) into the agent frames."""
    c = np.cos(yaw).reshape((-1,) + (1,) * (vec.ndim - 2))
    s = np.sin(yaw).reshape((-1,) + (1,) * (vec.ndim - 2))
    return np.stack([c * vec[..., 0] + s * vec[..., 1], -s * vec[..., 0] + c * vec[..., 1]], -1)


def _polyline_distance(points: np.ndarray, polyline: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Distance (S, c) of points (S, c, 2) to each row's polyline (S, R, 2) through its valid vertices
    (S, R) (segments between two valid consecutive vertices; inf where a row has none)."""
    seg_ok = valid[:, :-1] & valid[:, 1:]                                          # (S, K)
    pa = polyline[:, :-1]
    ab = polyline[:, 1:] - pa
    inv_len2 = np.where(seg_ok, 1.0 / np.maximum(np.einsum("skx,skx->sk", ab, ab), 1e-12), 0.0)
    apx = points[:, :, None, 0] - pa[:, None, :, 0]                                # (S, c, K)
    apy = points[:, :, None, 1] - pa[:, None, :, 1]
    abx, aby = ab[:, None, :, 0], ab[:, None, :, 1]
    t = np.clip((apx * abx + apy * aby) * inv_len2[:, None], 0.0, 1.0)
    dx, dy = apx - t * abx, apy - t * aby
    d2 = dx * dx + dy * dy
    d2[~np.broadcast_to(seg_ok[:, None], d2.shape)] = np.inf
    return np.sqrt(d2.min(-1))


def stop_tokens(held: HeldAgents, ids: np.ndarray, xy: np.ndarray, yaw: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Stop tokens (S, 11) and mask (S,) of agents ``ids`` (S,) at ``xy`` (S, 2), ``yaw`` (S,): the wall of
    :class:`~policies.deltasim_junctions.HeldAgents` in each held agent's frame (standing, length
    STOP_DEPTH_M, width of the connector, type one-hot zero)."""
    row = held.lookup(ids)
    mask = row >= 0
    out = np.zeros((len(ids), NEIGHBOR_FEATURES))
    if mask.any():
        r = row[mask]
        rel = _rotate((held.xy[r] - xy[mask])[:, None], yaw[mask])[:, 0]
        dyaw = held.yaw[r] - yaw[mask]
        out[mask, :2] = rel
        out[mask, 2], out[mask, 3] = np.cos(dyaw), np.sin(dyaw)
        out[mask, 6], out[mask, 7] = STOP_DEPTH_M, held.width_m[r]
    return out, mask


class ObservationBuilder:
    """Builds :class:`Observation` batches; keeps the lane-chunk cache between steps."""

    def __init__(self, config: ObservationConfig = ObservationConfig()) -> None:
        self.config = config
        self.lanes = LaneChunkCache(config.chunk_length_m, config.chunk_points)
        self.routes = IdmCore()  # route paths (cached per route), shared by the route targets and junction stops
        self.targets = RouteTargets(self.routes)
        self.junctions = JunctionStops(self.routes)
        self._packed32: tuple[PackedLanes, np.ndarray] | None = None
        self._edge_groups: tuple[PackedLanes, np.ndarray, np.ndarray] | None = None

    def reset(self) -> None:
        """Forget per-episode state (junction waiting times, cached route paths); the lane cache follows
        the graph anyway."""
        self.routes.reset()
        self.targets.reset()

    def _points32(self, packed: PackedLanes) -> np.ndarray:
        """float32 copy of ``packed.chunk_points`` (M, P, 2), kept while the packed lanes stay the same."""
        if self._packed32 is None or self._packed32[0] is not packed:
            self._packed32 = (packed, packed.chunk_points.astype(np.float32))
        return self._packed32[1]

    def skip(self, inp: PolicyInput) -> None:
        """Advance the per-step state (junction waiting clocks) for a step that is not observed."""
        if self.config.junction_stops:
            everyone = self._routed(inp, np.zeros(0, np.int64))
            self.junctions.update(inp, everyone, self.targets(inp, everyone))

    @staticmethod
    def _routed(inp: PolicyInput, slots: np.ndarray) -> np.ndarray:
        """``slots`` plus every other valid agent with a route, ascending."""
        a = inp.agents
        others = np.nonzero(a.valid)[0]
        others = others[~np.isin(others, slots)]
        routed = [slot for slot in others.tolist() if inp.routes.get(int(a.id[slot]))]
        return np.union1d(slots, np.asarray(routed, np.int64)).astype(np.int64)

    def __call__(self, inp: PolicyInput, slots: np.ndarray | None = None) -> Observation:
        """Observe ``slots`` (default: valid controlled slots, ascending).

        With ``config.junction_stops`` each call advances the right-of-way rule by one step (its waiting
        clocks): call it once per simulation step.
        """
        agents = inp.agents
        if slots is None:
            slots = np.nonzero(np.asarray(inp.controlled, bool) & agents.valid)[0]
        slots = np.asarray(slots, dtype=np.int64)
        packed = self.lanes.update(inp.graph)
        history, static = self._own(inp, slots)
        lane_pts, lane_feat, lmask = self._lanes(inp, slots, packed)
        held = HeldAgents.none()
        if self.config.junction_stops:
            # Every valid agent on a route competes at junctions (the ego too), not only the observed ones.
            everyone = self._routed(inp, slots)
            fix = self.targets(inp, everyone)
            held = self.junctions.update(inp, everyone, fix)
            rows = np.searchsorted(everyone, slots)
            targets, target_ok, cap = fix.targets[rows], fix.valid[rows], fix.cap_mps[rows]
        else:
            fix = self.targets(inp, slots)
            targets, target_ok, cap = fix.targets, fix.valid, fix.cap_mps
        route = np.concatenate([targets, target_ok[..., None], cap[..., None]], -1)
        neighbors, nmask, nslots = self._neighbors(inp, slots, route)
        stop, stop_mask = stop_tokens(held, agents.id[slots], agents.xy[slots], agents.yaw[slots])
        f32 = np.float32
        return Observation(slots, history.astype(f32), static.astype(f32), neighbors.astype(f32), nmask,
                           nslots, lane_pts.astype(f32), lane_feat.astype(f32), lmask, route.astype(f32),
                           stop.astype(f32), stop_mask)

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

    def _neighbors(self, inp: PolicyInput, slots: np.ndarray, route: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The N neighbours of each agent: first the agents ahead in its route corridor (within
        ``corridor_range_m`` along the route polyline of ``route`` (S, R, 4), nearest first), then the
        others within ``neighbor_radius_m``, nearest first."""
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
        xy, yaw = a.xy[slots], a.yaw[slots]
        dist = np.linalg.norm(a.xy[others][None] - xy[:, None], axis=-1)
        dist[others[None] == slots[:, None]] = np.inf
        key = np.where(dist <= cfg.neighbor_radius_m, dist, np.inf)
        # Route corridor among the nearest candidates: agents ahead whose box reaches the route polyline.
        c = min(CORRIDOR_CANDIDATES, len(others))
        near = np.argpartition(dist, c - 1, axis=1)[:, :c] if c < len(others) else np.tile(np.arange(c), (s, 1))
        near_d = np.take_along_axis(dist, near, 1)
        rel = _rotate(a.xy[others[near]] - xy[:, None], yaw)                     # (S, c, 2)
        lateral = _polyline_distance(rel, route[..., :2], route[..., 2] > 0.5)    # (S, c)
        reach = (a.width[slots][:, None] + a.width[others[near]]) / 2 + CORRIDOR_MARGIN_M
        corridor = (lateral < reach) & (rel[..., 0] > 0.0) & (near_d <= cfg.corridor_range_m)
        np.put_along_axis(key, near, np.where(corridor, near_d - CORRIDOR_PRIORITY_M, key[np.arange(s)[:, None],
                                                                                        near]), 1)
        k = min(n, len(others))
        order = np.argsort(key, axis=1, kind="stable")[:, :k]
        ok = np.isfinite(np.take_along_axis(key, order, 1))
        sel = others[order]
        dyaw = a.yaw[sel] - yaw[:, None]
        f = feats[:, :k]  # a view: the features are written in place, then masked
        f[..., 0:2] = _rotate(a.xy[sel] - xy[:, None], yaw)
        f[..., 2], f[..., 3] = np.cos(dyaw), np.sin(dyaw)
        f[..., 4:6] = _rotate(a.velocity[sel], yaw)
        f[..., 6], f[..., 7] = a.length[sel], a.width[sel]
        f[..., 8:11] = type_one_hot(a.agent_type[sel])
        f *= ok[..., None]
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
        # Squared centre distances as one small matrix product (|c|^2 - 2 x.c + |x|^2), then the closest
        # point of each candidate in float32 (metres relative to the agent: precise to well below 1 mm).
        centre = packed.chunk_center
        centre_d2 = (centre * centre).sum(1)[None] - 2.0 * xy @ centre.T + (xy * xy).sum(1)[:, None]
        k = min(3 * lcap, m)
        cand = np.argpartition(centre_d2, k - 1, axis=1)[:, :k] if k < m else np.tile(np.arange(m), (s, 1))
        rel = self._points32(packed)[cand] - xy.astype(np.float32)[:, None, None]
        point_d = np.sqrt(np.einsum("...i,...i->...", rel, rel).min(-1)).astype(np.float64)  # one sqrt
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
        q = chosen.shape[1]
        feat = feat_out[:, :q]  # a view: the features are written in place, then masked
        feat[..., :NUM_RELATIONS] = _RELATION_ONE_HOT[rel]
        feat[..., NUM_RELATIONS] = rpos >= 0
        feat[..., NUM_RELATIONS + 1] = np.maximum(rpos, 0.0)
        feat[..., NUM_RELATIONS + 2] = packed.speed_limit_mps[lane_of] / 30.0
        feat[..., NUM_RELATIONS + 3] = packed.width_m[lane_of] / 4.0
        feat *= ok[..., None]
        pts_out[:, :q] = _rotate(packed.chunk_points[chosen] - xy[:, None, None], yaw)
        pts_out[:, :q] *= ok[..., None, None]
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
            hit_s, hit_e = self._edges_from(packed, current)
            # Relation codes 1..4 follow the EDGE_* constants shifted by one (0 is "current").
            relation[hit_s, packed.edge_dst[hit_e]] = packed.edge_kind[hit_e] + 1
        ok = current >= 0
        relation[np.nonzero(ok)[0], current[ok]] = 0
        return relation, route_pos

    def _edges_from(self, packed: PackedLanes, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pairs (row, edge) of every edge whose source is ``lanes[row]`` (lanes (S,) lane indices, -1: none),
        ordered by row, then edge index -- ``np.nonzero(lanes[:, None] == packed.edge_src[None])`` without the
        (S, E) comparison (the edges grouped by source are kept while the packed lanes stay the same)."""
        if self._edge_groups is None or self._edge_groups[0] is not packed:
            order = np.argsort(packed.edge_src, kind="stable")
            starts = np.searchsorted(packed.edge_src[order], np.arange(packed.num_lanes + 1))
            self._edge_groups = (packed, order, starts)
        _, order, starts = self._edge_groups
        ok = (lanes >= 0) & (lanes < packed.num_lanes)
        lo = np.where(ok, starts[np.clip(lanes, 0, packed.num_lanes - 1)], 0)
        counts = np.where(ok, starts[np.clip(lanes + 1, 0, packed.num_lanes)] - lo, 0)
        rows = np.repeat(np.arange(len(lanes)), counts)
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return rows, order[np.repeat(lo, counts) + offsets]

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
