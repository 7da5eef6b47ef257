"""The known context of a frontier tile as model input: known lanes clipped to the tile, in the tile frame.

At inference every known lane is a condition token; the frontier (the rest of the lane slots and all
agent slots) is generated. Known agents are not tokens: the request only has their positions, so the
learned generator is trained without back-half agents and keeps spawns clear of the known ones instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import TileFrame, TileRequest
from vectorworld.generation.learned.filter_config import FrontierPort
from vectorworld.generation.learned.tile_tensors import (
    HALF_TILE_M,
    HINT_FEATURES,
    LANE_POINTS,
    TileTensors,
    border_hints,
    edges_from_lists,
    empty_tile,
    port_hints,
)


@dataclass(frozen=True)
class TileContext:
    """Model input (batch of one) plus what is needed to map the answer back to the world.

    tiles: the context as :class:`TileTensors` (no leading batch dimension);
    known_ids: (K,) lane ids of the condition lane slots 0..K-1;
    known_points: per known lane, its clipped polyline (tile frame, m);
    ports: ports and optional joints in the tile frame (see :func:`_ports`);
    hints: (L, 6) port hints: port k is the hint of frontier slot K + k (see tile_tensors.port_hints);
    nearby: (N, LANE_POINTS, 2) every known lane in the square, not only the K that fit the condition slots
    (None: those K), for the filter.
    """

    tiles: TileTensors
    known_ids: tuple[int, ...]
    known_points: tuple[np.ndarray, ...]
    ports: tuple[FrontierPort, ...]
    hints: np.ndarray
    nearby: np.ndarray | None = None

    def filter_lanes(self) -> np.ndarray:
        """The known lanes the validity filter checks new ones against (N, LANE_POINTS, 2) float64."""
        lanes = self.tiles.lane_points[:len(self.known_ids)] if self.nearby is None else self.nearby
        return lanes.astype(np.float64)


def _crossing(inside: np.ndarray, outside: np.ndarray, half: float) -> np.ndarray:
    """The point on segment inside -> outside where it leaves the square [-half, half]^2."""
    d = outside - inside
    t = 1.0
    for axis in range(2):
        if d[axis] > 1e-12:
            t = min(t, (half - inside[axis]) / d[axis])
        elif d[axis] < -1e-12:
            t = min(t, (-half - inside[axis]) / d[axis])
    return inside + max(0.0, t) * d


def clip_to_square(points: np.ndarray, half: float = HALF_TILE_M, spacing_m: float = 2.0) -> np.ndarray | None:
    """The longest run of a polyline (N, 2) (tile frame) inside the square [-half, half]^2, ends cut exactly
    at the border (a polyline that leaves the square is first densified at ``spacing_m``); None if it misses
    the square or less than 2 m of it is inside."""
    (x_lo, y_lo), (x_hi, y_hi) = points.min(0).tolist(), points.max(0).tolist()
    if x_lo > half or y_lo > half or x_hi < -half or y_hi < -half:
        return None
    if x_lo >= -half and y_lo >= -half and x_hi <= half and y_hi <= half:
        return points if geometry.polyline_lengths(points)[-1] >= 2.0 else None
    dense = geometry.resample_by_spacing(points, spacing_m)
    inside = np.maximum(np.abs(dense[:, 0]), np.abs(dense[:, 1])) <= half + 1e-6
    if not inside.any():
        return None
    padded = np.concatenate([[False], inside, [False]])
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    starts, stops = edges[::2], edges[1::2]
    k = int(np.argmax(stops - starts))
    run = dense[starts[k]:stops[k]]
    if starts[k] > 0:        # extend to the exact border crossing
        run = np.concatenate([_crossing(dense[starts[k]], dense[starts[k] - 1], half)[None], run])
    if stops[k] < len(dense):
        run = np.concatenate([run, _crossing(dense[stops[k] - 1], dense[stops[k]], half)[None]])
    if len(run) < 2 or geometry.polyline_lengths(run)[-1] < 2.0:
        return None
    return run


def to_tile_frame(frame: TileFrame, polylines: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Polylines (global, non-empty list) in ``frame``'s tile frame, with their bounding boxes' corners lo, hi
    (n, 2): one transform for all of them."""
    counts = np.array([len(p) for p in polylines])
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    local = frame.to_local(np.concatenate(polylines))
    lo, hi = np.minimum.reduceat(local, offsets, 0), np.maximum.reduceat(local, offsets, 0)
    return np.split(local, offsets[1:]), lo, hi


def build_context(request: TileRequest, max_lanes: int, max_agents: int, port_margin_m: float = 0.5,
                  port_min_x_m: float = -4.0, required_margin_m: float = 2.5) -> TileContext:
    """Known lanes near the tile -> condition lane slots (nearest to the partition first), and the ports:
    required ones (open ends inside the square by ``required_margin_m`` with tile-frame x >= ``port_min_x_m``:
    the frontier) and optional joints (see :func:`_ports`). Port hints go to the required ports."""
    frame = request.frame
    radius = HALF_TILE_M * np.sqrt(2.0) + 8.0
    candidates = []
    near = request.graph.near(np.asarray(frame.center_xy, np.float64), radius)
    if near:  # one transform for all lanes, then a bounding-box test before any clipping
        local, lo, hi = to_tile_frame(frame, [request.graph[lane_id].points for lane_id in near])
        hit = np.all(lo <= HALF_TILE_M, 1) & np.all(hi >= -HALF_TILE_M, 1)
        for k in np.flatnonzero(hit):
            run = clip_to_square(local[k])
            if run is not None:
                candidates.append((float(np.min(np.abs(run[:, 0]))), near[k], run))
    candidates.sort(key=lambda c: (c[0], c[1]))
    nearby = np.array([geometry.resample_polyline(c[2], LANE_POINTS) for c in candidates]).reshape(-1, LANE_POINTS, 2)
    candidates = candidates[:max_lanes // 2]
    tiles = empty_tile(max_lanes, max_agents)
    ids = tuple(c[1] for c in candidates)
    slot = {lane_id: i for i, lane_id in enumerate(ids)}
    succ, left, right = [], [], []
    for i, (_, lane_id, _) in enumerate(candidates):
        lane = request.graph[lane_id]
        tiles.lane_points[i] = nearby[i]
        tiles.lane_valid[i] = True
        tiles.lane_cond[i] = True
        succ.append([slot[j] for j in lane.successors if j in slot])
        left.append([slot[j] for j in lane.left_neighbors if j in slot])
        right.append([slot[j] for j in lane.right_neighbors if j in slot])
    tiles.edges[:] = edges_from_lists(succ, left, right, max_lanes)
    ports = _ports(request, near, port_margin_m, port_min_x_m, required_margin_m)
    hints = slot_hints(ports, len(ids), max_lanes)
    return TileContext(tiles=tiles, known_ids=ids, known_points=tuple(c[2] for c in candidates),
                       ports=tuple(ports), hints=hints, nearby=nearby)


def slot_hints(ports: list[FrontierPort], known: int, max_lanes: int) -> np.ndarray:
    """Port hints (max_lanes, 6) of the free slots: required port k hints slot ``known + k``."""
    hints = np.zeros((max_lanes, HINT_FEATURES), np.float32)
    required = [p for p in ports if p.required]
    for k, port in enumerate(required[:max_lanes - known]):
        row = hints[known + k]
        row[0 if port.is_out else 1] = 1.0
        row[2:4] = port.xy / HALF_TILE_M
        row[4:6] = np.cos(port.yaw), np.sin(port.yaw)
    return hints


def _ports(request: TileRequest, near: list[int], margin_m: float, min_x_m: float, required_margin_m: float
           ) -> list[FrontierPort]:
    """The request's open ports inside the square by ``margin_m`` (required when at tile-frame x >=
    ``min_x_m`` and inside by ``required_margin_m``: the frontier; the ones deeper in the known half or at the
    border, where the lane continuing them may lie mostly outside this tile, are optional), then every other start / end
    of a known lane inside the square, as optional joints (a new road may merge into a known one there)."""
    frame = request.frame
    ports: list[FrontierPort] = []
    seen = set()
    for index, port in enumerate(request.ports):
        xy = frame.to_local(np.asarray(port.xy, np.float64))
        if np.max(np.abs(xy)) > HALF_TILE_M - margin_m:
            continue
        seen.add((port.lane_id, port.is_out))
        ports.append(FrontierPort(index=index, xy=xy, yaw=float(geometry.wrap_angle(port.yaw - frame.yaw)),
                                  is_out=port.is_out, lane_id=port.lane_id,
                                  required=bool(xy[0] >= min_x_m
                                                and np.max(np.abs(xy)) <= HALF_TILE_M - required_margin_m)))
    if not near:
        return ports
    lanes = [request.graph[lane_id] for lane_id in near]
    ends = np.stack([lane.points[[-1, -2, 0, 1]] for lane in lanes])                 # (N, 4, 2)
    local = frame.to_local(ends.reshape(-1, 2)).reshape(-1, 4, 2)
    inside = np.maximum(np.abs(local[:, [0, 2], 0]), np.abs(local[:, [0, 2], 1])) <= HALF_TILE_M - margin_m  # (N, 2)
    for k, is_out, a, b in ((0, True, 1, 0), (1, False, 2, 3)):
        for n in np.flatnonzero(inside[:, k]):
            if (near[n], is_out) in seen:
                continue
            d = local[n, b] - local[n, a]
            ports.append(FrontierPort(index=-1, xy=local[n, 0 if is_out else 2], yaw=float(np.arctan2(d[1], d[0])),
                                      is_out=is_out, required=False, lane_id=near[n]))
    return ports


def tile_ports(tile: TileTensors, margin_m: float = 0.5, required_margin_m: float = 2.5) -> list[FrontierPort]:
    """The ports of a partitioned ground-truth tile (training / held-out checks): the end of a known lane
    with a frontier successor is a required out port, the start of a known lane with a frontier predecessor
    a required in port (when inside the square by ``required_margin_m``); every other end / start of a known
    lane inside the square by ``margin_m`` is an optional joint. ``lane_id`` is the known lane's slot."""
    from vectorworld.generation.learned.tile_tensors import EDGE_PRED, EDGE_SUCC

    known = np.flatnonzero(tile.lane_valid & tile.lane_cond)
    frontier = tile.lane_valid & ~tile.lane_cond
    ports: list[FrontierPort] = []
    for i in known:
        pts = tile.lane_points[i].astype(np.float64)
        for is_out, kind in ((True, EDGE_SUCC), (False, EDGE_PRED)):
            xy = pts[-1] if is_out else pts[0]
            inside = HALF_TILE_M - float(np.max(np.abs(xy)))
            if inside < margin_m:
                continue
            d = pts[-1] - pts[-3] if is_out else pts[2] - pts[0]
            linked = bool(np.any((tile.edges[i] == kind) & frontier))
            ports.append(FrontierPort(index=len(ports), xy=xy, yaw=float(np.arctan2(d[1], d[0])), is_out=is_out,
                                      required=linked and inside >= required_margin_m, lane_id=int(i)))
    return ports


def context_from_tile(tile: TileTensors, plan: bool = False) -> TileContext:
    """The inference context of a partitioned ground-truth tile (held-out checks): its known lanes moved to
    the first slots, every frontier lane and agent removed, the ports of :func:`tile_ports` and their hints
    on the free slots -- what ``build_context`` would give for the same known world. ``known_ids`` are the
    known lanes' slots in ``tile``. ``plan`` adds the tile's own road plan (tile_tensors.border_hints) on the
    free slots after the ports' (an oracle plan: what a perfect plan prior would give)."""
    known = np.flatnonzero(tile.lane_valid & tile.lane_cond)
    ctx = empty_tile(tile.num_lanes, tile.num_agents)
    k = len(known)
    ctx.lane_points[:k] = tile.lane_points[known]
    ctx.lane_valid[:k] = True
    ctx.lane_cond[:k] = True
    ctx.edges[:k, :k] = tile.edges[np.ix_(known, known)]
    ports = tile_ports(tile)
    moved = [FrontierPort(p.index, p.xy, p.yaw, p.is_out, p.required, int(np.flatnonzero(known == p.lane_id)[0]))
             for p in ports]
    ctx = TileContext(tiles=ctx, known_ids=tuple(range(k)),
                      known_points=tuple(tile.lane_points[i].astype(np.float64) for i in known),
                      ports=tuple(moved), hints=slot_hints(moved, k, tile.num_lanes))
    return with_plan(ctx, tile_plan(tile)) if plan else ctx


def tile_plan(tile: TileTensors) -> np.ndarray:
    """The road plan (k, 6) of a partitioned ground-truth tile: its border hints (tile_tensors.border_hints)
    that are not port hints."""
    own = port_hints(tile.lane_points, tile.lane_valid, tile.lane_cond, tile.edges)
    planned = border_hints(tile.lane_points, tile.lane_valid, tile.lane_cond, own)
    return planned[(planned[:, :2].sum(-1) > 0.5) & (own[:, :2].sum(-1) < 0.5)]


def with_plan(ctx: TileContext, rows: np.ndarray) -> TileContext:
    """``ctx`` with road-plan hint rows (k, 6) on the free slots after the required ports' (as many as fit)."""
    start = len(ctx.known_ids) + sum(p.required for p in ctx.ports)
    rows = rows[:max(len(ctx.hints) - start, 0)]
    hints = ctx.hints.copy()
    hints[start:start + len(rows)] = rows
    return replace(ctx, hints=hints)

