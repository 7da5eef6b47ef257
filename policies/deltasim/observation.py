"""Batched observations of DeltaSim for every controlled agent at once, each in its own frame.

The agent frame has its origin at the agent's box centre, x along its heading. For each observed agent:

* own history: the last H steps (x, y, cos dyaw, sin dyaw, speed, valid) in the current agent frame, plus
  own features: length, width, type one-hot, and the light ahead (the first signalised lane of its route
  within ``SIGNAL_LOOKAHEAD_M``: red / yellow / green one-hot, distance to its stop point) and whether the
  step's right of way granted it its next connector;
* N other agents (the ego included): first those ahead in its route corridor (up to 60 m along the route:
  the queue it follows, even beyond the neighbour radius), then the nearest others; relative pose, velocity
  in the agent frame, size, type;
* the L nearest lane chunks (see :mod:`policies.deltasim.lane_chunks`): points in the agent frame and the chunk's
  relation to the agent's current lane (current / successor / predecessor / left / right / other), whether
  it lies on the agent's route and where along the route, speed limit and width;
* route targets: for each distance d in ROUTE_AHEAD_M, the point d metres further along the agent's route
  path than its projection onto it and the lowest speed cap (limit, curve speed) on the way there (x, y,
  valid, cap; :mod:`policies.deltasim.routes`) -- direct lane-keeping, turning and speed cues;
* the junction stop token: where the right-of-way rule holds the agent before a junction this step, a
  standing wall across the connector's entry in the neighbour format (type one-hot all zero; see
  :mod:`policies.deltasim.junctions`). The network reads it as one more neighbour token
  (:func:`with_stop_token`).

Fixed capacities with masks; no Python loop over agents in the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from policies.base import PolicyInput
from policies.deltasim.junctions import STOP_DEPTH_M, HeldAgents, JunctionStops
from policies.deltasim.lane_chunks import ChunkTables, LaneChunkCache, PackedLanes
from policies.deltasim.routes import RouteFix, RouteTargets
from policies.junctions import SIGNAL_LOOKAHEAD_M
from policies.route_paths import RoutePaths
from vectorworld import geometry
from vectorworld.scene import AgentType
from vectorworld.signals import GREEN_STATES, RED_STATES, YELLOW_STATES

HISTORY_FEATURES = 6
BASE_STATIC_FEATURES = 5
SIGNAL_FEATURES = 5
STATIC_FEATURES = BASE_STATIC_FEATURES + SIGNAL_FEATURES
NEIGHBOR_FEATURES = 11
LANE_FEATURES = 10
ROUTE_FEATURES = 4
NUM_RELATIONS = 6  # current, successor, predecessor, left, right, other
STANDING_MPS = 0.1
"""Below this speed an agent off every route counts as parked (:func:`policy_slots`)."""
_RELATION_ONE_HOT = np.eye(NUM_RELATIONS)
_INF32_BITS = int(np.array(np.inf, np.float32).view(np.int32))
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
class ObservationFeatures:
    """The feature schema of DeltaSim, declared once: what the network reads of S agents (float32 unless
    stated; all in each agent's own frame). Observations and training samples both hold these arrays.

    history: (S, H, 6) x m, y m, cos dyaw, sin dyaw, speed m/s, valid.
    static: (S, 10) length m, width m, is_vehicle, is_pedestrian, is_cyclist, then the light ahead: is_red,
    is_yellow, is_green (all 0: no light within SIGNAL_LOOKAHEAD_M, or unknown), distance to its stop point /
    SIGNAL_LOOKAHEAD_M (1 without a light), granted (the right of way lets it enter its next connector).
    neighbors: (S, N, 11) x, y, cos dyaw, sin dyaw, vx, vy (m/s), length, width, type one-hot (3).
    neighbor_mask: (S, N) bool.
    lane_points: (S, L, P, 2) m. lane_features: (S, L, 10): relation one-hot (6), on_route, route position
    in [0, 1], speed limit / 30 m/s, width / 4 m. lane_mask: (S, L) bool.
    route_ahead: (S, R, 4) route targets (x m, y m, valid, speed cap m/s up to the target).
    stop: (S, 11) the junction stop token in the neighbour format (zeros where none); stop_mask: (S,) bool.
    """

    history: np.ndarray
    static: np.ndarray
    neighbors: np.ndarray
    neighbor_mask: np.ndarray
    lane_points: np.ndarray
    lane_features: np.ndarray
    lane_mask: np.ndarray
    route_ahead: np.ndarray
    stop: np.ndarray
    stop_mask: np.ndarray


FEATURE_FIELDS = tuple(f.name for f in fields(ObservationFeatures))
"""The names of the feature arrays, in schema order."""


@dataclass(frozen=True)
class Observation(ObservationFeatures):
    """The features of S agents (:class:`ObservationFeatures`) and who they are.

    slots: (S,) int64, the agent slots observed. neighbor_slots: (S, N) int64 (-1 where masked).
    """

    slots: np.ndarray
    neighbor_slots: np.ndarray

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


def polyline_distance(px: np.ndarray, py: np.ndarray, polyline: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Distance (S, c) of points (x ``px``, y ``py``: (S, c)) to each row's polyline (S, R, 2) through its valid
    vertices (S, R) (segments between two valid consecutive vertices; inf where a row has none)."""
    seg_ok = valid[:, :-1] & valid[:, 1:]                                          # (S, K)
    pa = polyline[:, :-1]
    ab = polyline[:, 1:] - pa
    inv_len2 = np.where(seg_ok, 1.0 / np.maximum(np.einsum("skx,skx->sk", ab, ab), 1e-12), 0.0)
    # Segment-major (K, S, c): the minimum over the segments is then an elementwise reduction.
    ax, ay = pa[..., 0].T[..., None], pa[..., 1].T[..., None]                      # (K, S, 1)
    abx, aby = ab[..., 0].T[..., None], ab[..., 1].T[..., None]
    apx = px - ax                                                                  # (K, S, c)
    apy = py - ay
    t = geometry.clamp((apx * abx + apy * aby) * inv_len2.T[..., None], 0.0, 1.0)
    dx, dy = apx - t * abx, apy - t * aby
    d2 = np.where(seg_ok.T[..., None], dx * dx + dy * dy, np.inf)
    return np.sqrt(d2.min(0))


def stop_tokens(held: HeldAgents, ids: np.ndarray, xy: np.ndarray, yaw: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Stop tokens (S, 11) and mask (S,) of agents ``ids`` (S,) at ``xy`` (S, 2), ``yaw`` (S,): the wall of
    :class:`~policies.deltasim.junctions.HeldAgents` in each held agent's frame (standing, length
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


def signal_features(inp: PolicyInput, fix: RouteFix, rows: np.ndarray, agent_ids: np.ndarray,
                    granted: frozenset[int]) -> np.ndarray:
    """(S, SIGNAL_FEATURES) of the agents at ``rows`` of ``fix`` (ids ``agent_ids``): the light ahead on the
    route (red, yellow, green one-hot; distance to its stop point / SIGNAL_LOOKAHEAD_M, 1 without one) and
    whether ``granted`` holds the agent."""
    out = np.zeros((len(rows), SIGNAL_FEATURES))
    out[:, 3] = 1.0
    signals = inp.signals
    if len(signals):
        for k, row in enumerate(rows.tolist()):
            profile = fix.profiles[row]
            if profile is None:
                continue
            for lane_id, start in profile.signal_lanes:
                ahead = start - float(fix.s_m[row])
                if ahead > SIGNAL_LOOKAHEAD_M:
                    break
                state = signals.state(lane_id)
                if ahead < 0 or state is None:
                    continue
                colour = 0 if state in RED_STATES else 1 if state in YELLOW_STATES else 2 if state in GREEN_STATES \
                    else -1
                if colour >= 0:
                    out[k, colour] = 1.0
                out[k, 3] = ahead / SIGNAL_LOOKAHEAD_M
                break
    out[:, 4] = np.isin(agent_ids, np.fromiter(granted, np.int64, len(granted)))
    return out


class ObservationBuilder:
    """Builds :class:`Observation` batches; keeps the lane-chunk cache between steps."""

    def __init__(self, config: ObservationConfig = ObservationConfig()) -> None:
        self.config = config
        self.lanes = LaneChunkCache(config.chunk_length_m, config.chunk_points)
        # route paths (cached per route), shared by the route targets and junction stops
        self.routes = RoutePaths()
        self.targets = RouteTargets(self.routes)
        self.junctions = JunctionStops(self.routes)
        self._tables: ChunkTables | None = None

    def reset(self) -> None:
        """Forget per-episode state (junction waiting times, cached route paths); the lane cache follows
        the graph anyway."""
        self.routes.reset()
        self.targets.reset()
        self.junctions.reset()

    def tables(self, packed: PackedLanes) -> ChunkTables:
        """The lookup tables of ``packed`` (built once per packing)."""
        if self._tables is None or self._tables.packed is not packed:
            self._tables = ChunkTables.build(packed)
        return self._tables

    def skip(self, inp: PolicyInput) -> None:
        """Advance the per-step state (junction waiting clocks, when no Session decides) for a step that is
        not observed."""
        if self.config.junction_stops:
            everyone = self.routed_slots(inp, np.zeros(0, np.int64))
            self.junctions.update(inp, everyone, self.targets(inp, everyone))

    @staticmethod
    def routed_slots(inp: PolicyInput, slots: np.ndarray) -> np.ndarray:
        """``slots`` plus every other valid agent with a route, ascending."""
        a = inp.agents
        others = a.valid.copy()
        others[slots] = False
        routes = inp.routes
        chosen = np.zeros(len(others), bool)
        chosen[[slot for slot, i in zip(np.nonzero(others)[0].tolist(), a.id[others].tolist(), strict=True)
                if routes.get(i)]] = True
        chosen[slots] = True
        return np.nonzero(chosen)[0].astype(np.int64)

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
            everyone = self.routed_slots(inp, slots)
            fix = self.targets(inp, everyone)
            held = self.junctions.update(inp, everyone, fix)
            rows = np.searchsorted(everyone, slots)
            targets, target_ok, cap = fix.targets[rows], fix.valid[rows], fix.cap_mps[rows]
        else:
            fix = self.targets(inp, slots)
            rows = np.arange(len(slots))
            targets, target_ok, cap = fix.targets, fix.valid, fix.cap_mps
        decision = inp.right_of_way if inp.right_of_way is not None else self.junctions.service.decide(inp)
        static = np.concatenate([static, signal_features(inp, fix, rows, agents.id[slots], decision.granted)], -1)
        route = np.concatenate([targets, target_ok[..., None], cap[..., None]], -1)
        neighbors, nmask, nslots = self._neighbors(inp, slots, route)
        stop, stop_mask = stop_tokens(held, agents.id[slots], agents.xy[slots], agents.yaw[slots])
        f32 = np.float32
        return Observation(slots=slots, history=history.astype(f32, copy=False), static=static.astype(f32),
                           neighbors=neighbors.astype(f32, copy=False), neighbor_mask=nmask, neighbor_slots=nslots,
                           lane_points=lane_pts.astype(f32, copy=False),
                           lane_features=lane_feat.astype(f32, copy=False), lane_mask=lmask,
                           route_ahead=route.astype(f32), stop=stop.astype(f32), stop_mask=stop_mask)

    def _own(self, inp: PolicyInput, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = inp.agents
        h = self.config.history_steps
        hist = a.history[slots, -h:]
        hvalid = a.history_valid[slots, -h:]
        origin, yaw = a.xy[slots], a.yaw[slots]
        cos, sin = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
        gx, gy = hist[..., 0] - origin[:, 0, None], hist[..., 1] - origin[:, 1, None]   # (S, H)
        dyaw = hist[..., 2] - yaw[:, None]
        out = np.empty(hist.shape[:2] + (HISTORY_FEATURES,), np.float32)  # rounded once when stored
        out[..., 0], out[..., 1] = cos * gx + sin * gy, -sin * gx + cos * gy
        out[..., 2], out[..., 3] = np.cos(dyaw), np.sin(dyaw)
        out[..., 4], out[..., 5] = hist[..., 3], 1.0
        out *= hvalid[..., None]
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
        feats = np.zeros((s, n, NEIGHBOR_FEATURES), np.float32)  # written in float64, rounded when stored
        mask = np.zeros((s, n), bool)
        nslots = np.full((s, n), -1, np.int64)
        if s == 0 or len(others) == 0:
            return feats, mask, nslots
        xy, yaw = a.xy[slots], a.yaw[slots]
        cos, sin = np.cos(yaw)[:, None], np.sin(yaw)[:, None]                     # (S, 1)
        dx = a.xy[others, 0][None] - xy[:, 0, None]
        dy = a.xy[others, 1][None] - xy[:, 1, None]
        dist = np.sqrt(dx * dx + dy * dy)                                         # (S, O)
        dist[others[None] == slots[:, None]] = np.inf
        key = np.where(dist <= cfg.neighbor_radius_m, dist, np.inf)
        # Route corridor among the nearest candidates: agents ahead whose box reaches the route polyline.
        c = min(CORRIDOR_CANDIDATES, len(others))
        near = np.argpartition(dist, c - 1, axis=1)[:, :c] if c < len(others) else np.tile(np.arange(c), (s, 1))
        rows = np.arange(s)[:, None]
        near_d = dist[rows, near]
        near_slots = others[near]
        gx, gy = a.xy[near_slots, 0] - xy[:, 0, None], a.xy[near_slots, 1] - xy[:, 1, None]
        ahead = cos * gx + sin * gy                                               # (S, c) in the agent frame
        lateral = polyline_distance(ahead, -sin * gx + cos * gy, route[..., :2], route[..., 2] > 0.5)
        reach = (a.width[slots][:, None] + a.width[near_slots]) / 2 + CORRIDOR_MARGIN_M
        corridor = (lateral < reach) & (ahead > 0.0) & (near_d <= cfg.corridor_range_m)
        key[rows, near] = np.where(corridor, near_d - CORRIDOR_PRIORITY_M, key[rows, near])
        k = min(n, len(others))
        order = np.argsort(key, axis=1, kind="stable")[:, :k]
        ok = np.isfinite(key[rows, order])
        sel = others[order]
        dyaw = a.yaw[sel] - yaw[:, None]
        f = feats[:, :k]  # a view: the features are written in place, then masked
        gx, gy = a.xy[sel, 0] - xy[:, 0, None], a.xy[sel, 1] - xy[:, 1, None]
        f[..., 0], f[..., 1] = cos * gx + sin * gy, -sin * gx + cos * gy
        f[..., 2], f[..., 3] = np.cos(dyaw), np.sin(dyaw)
        velocity = a.velocity
        vx, vy = velocity[sel, 0], velocity[sel, 1]
        f[..., 4], f[..., 5] = cos * vx + sin * vy, -sin * vx + cos * vy
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
        pts_out = np.zeros((s, lcap, p, 2), np.float32)  # written in float64, rounded once when stored
        feat_out = np.zeros((s, lcap, LANE_FEATURES), np.float32)
        mask_out = np.zeros((s, lcap), bool)
        m = packed.num_chunks
        if s == 0 or m == 0:
            return pts_out, feat_out, mask_out
        a = inp.agents
        xy, yaw = a.xy[slots], a.yaw[slots]
        # Pre-select by chunk centre, then rank the candidates by their closest point.
        # Squared centre distances as one small matrix product (|c|^2 - 2 x.c + |x|^2), then the closest
        # point of each candidate in float32 (metres relative to the agent: precise to well below 1 mm).
        tables = self.tables(packed)
        centre_d2 = tables.centre_sq[None] - 2.0 * xy @ packed.chunk_center.T + (xy * xy).sum(1)[:, None]
        k = min(3 * lcap, m)
        cand = np.argpartition(centre_d2, k - 1, axis=1)[:, :k] if k < m else np.tile(np.arange(m), (s, 1))
        xy32 = xy.astype(np.float32)
        dx = np.take(tables.x32, cand, 1) - xy32[:, 0, None]                      # (P, S, k)
        dy = np.take(tables.y32, cand, 1) - xy32[:, 1, None]
        point_d = np.sqrt((dx * dx + dy * dy).min(0))  # one sqrt; (S, k) float32, >= 0
        # Rank by (distance, chunk index), the out-of-range ones (inf) last: one sort of int64 keys made of the
        # float32 bit pattern (ordered as the values, for values >= 0) and the chunk index.
        bits = np.where(point_d.astype(np.float64) <= cfg.lane_radius_m, point_d.view(np.int32), _INF32_BITS)
        key = np.sort((bits.astype(np.int64) << 32) | cand, axis=1)[:, : min(lcap, k)]
        chosen = key & 0xFFFFFFFF
        ok = (key >> 32) < _INF32_BITS
        current, route_pos = self._relations(inp, slots, packed, cand, xy, yaw)
        lane_of = packed.chunk_lane[chosen]
        rel = tables.relation(current, lane_of)
        rpos = route_pos[np.arange(s)[:, None], lane_of]
        q = chosen.shape[1]
        feat = feat_out[:, :q]  # a view: the features are written in place, then masked
        feat[..., :NUM_RELATIONS] = _RELATION_ONE_HOT[rel]
        feat[..., NUM_RELATIONS] = rpos >= 0
        feat[..., NUM_RELATIONS + 1] = np.maximum(rpos, 0.0)
        feat[..., NUM_RELATIONS + 2] = packed.speed_limit_mps[lane_of] / 30.0
        feat[..., NUM_RELATIONS + 3] = packed.width_m[lane_of] / 4.0
        feat *= ok[..., None]
        cos, sin = np.cos(yaw)[:, None, None], np.sin(yaw)[:, None, None]
        gx = np.take(tables.x64, chosen, 0) - xy[:, 0, None, None]                # (S, q, P)
        gy = np.take(tables.y64, chosen, 0) - xy[:, 1, None, None]
        pts_out[:, :q, :, 0] = (cos * gx + sin * gy) * ok[..., None]
        pts_out[:, :q, :, 1] = (-sin * gx + cos * gy) * ok[..., None]
        mask_out[:, :q] = ok
        return pts_out, feat_out, mask_out

    def _relations(self, inp: PolicyInput, slots: np.ndarray, packed: PackedLanes, cand: np.ndarray,
                   xy: np.ndarray, yaw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per agent: its current lane (S,) int64 (the first lane of its route, else the lane of the nearest
        point of its candidate chunks ``cand`` (S, k)) and the route position (S, NL) in [0, 1] of every lane,
        -1 off the route."""
        s, nl = len(slots), packed.num_lanes
        routes = [inp.routes.get(i, ()) for i in inp.agents.id[slots].tolist()]
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
        if len(flat):
            current = np.where(lengths > 0, flat_idx[np.minimum(starts, len(flat) - 1)], -1)
        missing = current < 0
        if missing.any():
            current[missing] = self._nearest_lane(packed, cand[missing], xy[missing], yaw[missing])
        return current, route_pos

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
