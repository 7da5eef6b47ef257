"""Crop 64 m training tiles out of a :class:`~vectorworld.data.scenario.Scenario`.

A tile is centred on an anchor (the ego, or another agent) at one step and aligned with its heading: the
tile frame has its origin at the anchor, x along its yaw, and spans [-32, 32]^2 m.

* Lanes: each centreline is clipped *exactly* to the square (every inside run becomes its own tile lane;
  runs shorter than ``min_lane_length_m`` are dropped), resampled to 20 points in the tile frame.
  ``lane_cut[:, 0/1]`` says whether the start/end was cut by the border.
* Edges: ``edges[i, j]`` (int8) = 0 none, 1 j is a predecessor of i, 2 j is a successor of i, 3 j is the
  left neighbour of i, 4 j is the right neighbour of i (the numbering of
  :mod:`vectorworld.generation.learned.tile_tensors`). Successor edges need i's end and j's start uncut.
* Agents valid at the step whose centre is inside the tile and whose type is in ``agent_types``:
  state (x, y, speed, cos yaw, sin yaw, length, width) in the tile frame (speed signed along the heading),
  the :class:`~vectorworld.scene.AgentType`, and a motion code: 6 points of the agent's own recent path in
  its body frame at the current step, oldest first, at arc distances L*6/6, ..., L*1/6 behind the agent,
  where L <= ``motion_path_m`` is the length of the path through the valid history points (at most
  ``motion_history_steps``; gaps bridged). All zeros when L < ``static_path_m`` (static). An agent first
  seen at this step is given a straight path of 1 s at its speed.
* Trajectories (for NPC policy training): per agent ``past_steps`` + 1 + ``future_steps`` states
  (x, y, yaw, speed) in the *global* frame with validity, current step at index ``past_steps``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.data.scenario import Scenario
from vectorworld.scene import TILE_SIZE_M, AgentType, LaneGraph

EDGE_NONE, EDGE_PRED, EDGE_SUCC, EDGE_LEFT, EDGE_RIGHT = range(5)
KIND_EGO, KIND_AGENT = 0, 1


@dataclass(frozen=True)
class TileConfig:
    """How tiles are cut. Distances in m, steps at 10 Hz."""

    size_m: float = TILE_SIZE_M
    lane_points: int = 20
    max_lanes: int = 128
    max_agents: int = 64
    min_lane_length_m: float = 0.5
    agent_types: tuple[int, ...] = (int(AgentType.VEHICLE), int(AgentType.PEDESTRIAN), int(AgentType.CYCLIST))
    ego_centric: bool = True
    agent_centric: bool = True
    anchor_types: tuple[int, ...] = (int(AgentType.VEHICLE),)
    """Agent types that get their own agent-centric tile."""
    step_stride: int = 0
    """0: tiles at the scenario's current step only; k > 0: every k steps from the current step on."""
    motion_points: int = 6
    motion_path_m: float = 12.0
    motion_history_steps: int = 50
    static_path_m: float = 0.25
    past_steps: int = 10
    future_steps: int = 80


@dataclass(frozen=True, eq=False)
class TileSample:
    """One tile. L lanes, A agents, P lane points, T = past + 1 + future trajectory steps.

    center_xy: (2,) float64 m global; yaw: rad global; step: scenario step; kind: KIND_EGO / KIND_AGENT;
    anchor_id: track id of the anchor agent.
    lane_points: (L, P, 2) float32 m tile frame; lane_ids: (L,) int64 source lane ids (a lane cut into
    several runs appears several times); lane_width, lane_speed_limit: (L,) float32 m, m/s;
    lane_type: (L,) int8 LaneType; lane_cut: (L, 2) bool (start, end cut by the border); edges: (L, L) int8.
    agent_state: (A, 7) float32; agent_type: (A,) int8 AgentType; agent_motion: (A, 6, 2) float32 m body
    frame; agent_ids: (A,) int64; agent_is_anchor: (A,) bool.
    agent_traj: (A, T, 4) float64 (x m, y m, yaw rad, speed m/s) global frame; agent_traj_valid: (A, T) bool.
    """

    scenario_id: str
    step: int
    kind: int
    anchor_id: int
    center_xy: np.ndarray
    yaw: float
    lane_points: np.ndarray
    lane_ids: np.ndarray
    lane_width: np.ndarray
    lane_speed_limit: np.ndarray
    lane_type: np.ndarray
    lane_cut: np.ndarray
    edges: np.ndarray
    agent_state: np.ndarray
    agent_type: np.ndarray
    agent_motion: np.ndarray
    agent_ids: np.ndarray
    agent_is_anchor: np.ndarray
    agent_traj: np.ndarray
    agent_traj_valid: np.ndarray
    source: str = field(default="")

    @property
    def num_lanes(self) -> int:
        return len(self.lane_ids)

    @property
    def num_agents(self) -> int:
        return len(self.agent_ids)


def clip_polylines_to_square(points: np.ndarray, offsets: np.ndarray,
                             half: float) -> list[tuple[int, np.ndarray, bool, bool]]:
    """Exact clip of many polylines to the square [-half, half]^2 (Liang-Barsky, vectorised over segments).

    points: (N, 2) all polylines concatenated (square frame); offsets: (P + 1,) polyline k is
    ``points[offsets[k]:offsets[k + 1]]``. Returns the inside runs in order as
    (polyline index, points (M, 2), start_cut, end_cut).
    """
    if len(points) < 2:
        return []
    a, b = points[:-1], points[1:]
    d = b - a
    owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[:-1]
    real = np.ones(len(a), bool)
    real[offsets[1:-1] - 1] = False  # the "segment" joining one polyline's end to the next one's start
    t0, t1 = np.zeros(len(a)), np.ones(len(a))
    keep = real.copy()
    for p, q in ((-d[:, 0], a[:, 0] + half), (d[:, 0], half - a[:, 0]),
                 (-d[:, 1], a[:, 1] + half), (d[:, 1], half - a[:, 1])):
        parallel = np.abs(p) < 1e-12
        keep &= ~(parallel & (q < 0))
        t = q / np.where(parallel, 1.0, p)
        t0 = np.where(~parallel & (p < 0), np.maximum(t0, t), t0)
        t1 = np.where(~parallel & (p > 0), np.minimum(t1, t), t1)
    keep &= t0 <= t1
    # segment k continues the run of segment k - 1 when both are kept and their shared vertex is inside
    cont = np.zeros(len(a), bool)
    cont[1:] = keep[1:] & keep[:-1] & (t1[:-1] >= 1.0) & (t0[1:] <= 0.0)
    starts = np.nonzero(keep & ~cont)[0]
    ends = np.nonzero(keep & ~np.append(cont[1:], False))[0]
    runs = []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        run = np.concatenate([(a[s] + t0[s] * d[s])[None], b[s:e], (a[e] + t1[e] * d[e])[None]])
        runs.append((int(owner[s]), run, bool(t0[s] > 0.0), bool(t1[e] < 1.0)))
    return runs


def clip_polyline_to_square(points: np.ndarray, half: float) -> list[tuple[np.ndarray, bool, bool]]:
    """Exact clip of one polyline (N, 2) (square frame) to [-half, half]^2: its inside runs in travel
    order as (points (M, 2), start_cut, end_cut)."""
    runs = clip_polylines_to_square(np.asarray(points, np.float64), np.array([0, len(points)]), half)
    return [(run, start_cut, end_cut) for _, run, start_cut, end_cut in runs]


def crop_lanes(graph: LaneGraph, center_xy: np.ndarray, yaw: float, config: TileConfig) -> dict[str, np.ndarray]:
    """Lanes of ``graph`` clipped to the tile at (center_xy, yaw): the lane arrays of a TileSample."""
    half = config.size_m / 2.0
    ids = graph.near(center_xy, half * np.sqrt(2.0) + graph.cell_m)
    polylines = [graph[i].points for i in ids]
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in polylines])]).astype(np.int64)
    local = geometry.to_local(np.concatenate(polylines), center_xy, yaw) if ids else np.zeros((0, 2))
    pieces: list[tuple[int, np.ndarray, bool, bool]] = []
    for owner, run, start_cut, end_cut in clip_polylines_to_square(local, offsets, half):
        if np.sum(np.linalg.norm(np.diff(run, axis=0), axis=-1)) >= config.min_lane_length_m:
            pieces.append((ids[owner], run, start_cut, end_cut))
    dist = [float(np.min(np.linalg.norm(run, axis=-1))) for _, run, _, _ in pieces]
    order = sorted(range(len(pieces)), key=lambda k: (dist[k], pieces[k][0]))[: config.max_lanes]
    pieces = [pieces[k] for k in order]
    count = len(pieces)
    out = {
        "lane_points": np.zeros((count, config.lane_points, 2), np.float32),
        "lane_ids": np.array([p[0] for p in pieces], np.int64),
        "lane_width": np.array([graph[p[0]].width_m for p in pieces], np.float32),
        "lane_speed_limit": np.array([graph[p[0]].speed_limit_mps for p in pieces], np.float32),
        "lane_type": np.array([int(graph[p[0]].lane_type) for p in pieces], np.int8),
        "lane_cut": np.array([(p[2], p[3]) for p in pieces], bool).reshape(count, 2),
        "edges": np.zeros((count, count), np.int8),
    }
    by_lane: dict[int, list[int]] = {}
    for k, (lane_id, run, _, _) in enumerate(pieces):
        out["lane_points"][k] = geometry.resample_polyline(run, config.lane_points)
        by_lane.setdefault(lane_id, []).append(k)
    edges = out["edges"]
    for i, (lane_id, _, _, end_cut) in enumerate(pieces):
        lane = graph[lane_id]
        if not end_cut:
            for succ in lane.successors:
                for j in by_lane.get(succ, ()):
                    if not pieces[j][2]:
                        edges[i, j], edges[j, i] = EDGE_SUCC, EDGE_PRED
        for kind, neighbours in ((EDGE_LEFT, lane.left_neighbors), (EDGE_RIGHT, lane.right_neighbors)):
            for other in neighbours:
                for j in by_lane.get(other, ()):
                    edges[i, j] = kind
    return out


def motion_codes(xy: np.ndarray, valid: np.ndarray, yaw: np.ndarray, config: TileConfig,
                 speed: np.ndarray | None = None) -> np.ndarray:
    """Motion codes (A, 6, 2) from past positions xy (A, H, 2) global, oldest first, the last entry the
    current step (valid there), validity (A, H) and current yaw (A,). See the module docstring.

    Gaps in the history are bridged. An agent seen for the first time (one valid point) that moves
    (|speed| (A,) m/s >= 0.5) gets a straight path of |speed| x 1 s behind it along its heading.
    """
    out = np.zeros((len(xy), config.motion_points, 2))
    for a in range(len(xy)):
        path = xy[a][valid[a]][::-1]  # newest first
        if len(path) < 2 and speed is not None and abs(speed[a]) >= 0.5:
            back = np.array([np.cos(yaw[a]), np.sin(yaw[a])]) * np.sign(speed[a]) * abs(speed[a])
            path = np.stack([xy[a, -1], xy[a, -1] - back])
        if len(path) < 2:
            continue
        s = geometry.polyline_lengths(path)
        total = min(float(s[-1]), config.motion_path_m)
        if total < config.static_path_m:
            continue
        back = total * np.arange(config.motion_points, 0, -1) / config.motion_points  # oldest first
        pts = geometry.interpolate_polyline(path, s, back)
        out[a] = geometry.to_local(pts, xy[a, -1], yaw[a])
    return out


def crop_tile(scenario: Scenario, step: int, anchor: int, kind: int, config: TileConfig) -> TileSample:
    """The tile centred on track index ``anchor`` at ``step`` (the anchor must be valid there)."""
    tr = scenario.tracks
    center = tr.xy[anchor, step].copy()
    yaw = float(tr.yaw[anchor, step])
    lanes = crop_lanes(scenario.map.lanes, center, yaw, config)
    half = config.size_m / 2.0
    local = geometry.to_local(tr.xy[:, step], center, yaw)
    inside = (tr.valid[:, step] & np.all(np.abs(local) <= half, axis=-1)
              & np.isin(tr.types, np.asarray(config.agent_types, np.int8)))
    rows = np.nonzero(inside)[0]
    rows = rows[np.argsort(np.linalg.norm(local[rows], axis=-1), kind="stable")][: config.max_agents]
    speed = tr.speed
    rel_yaw = tr.yaw[rows, step] - yaw
    state = np.stack([local[rows, 0], local[rows, 1], speed[rows, step], np.cos(rel_yaw), np.sin(rel_yaw),
                      tr.length[rows], tr.width[rows]], -1).reshape(len(rows), 7)
    lo = max(0, step - config.motion_history_steps + 1)
    motion = motion_codes(tr.xy[rows, lo: step + 1], tr.valid[rows, lo: step + 1], tr.yaw[rows, step], config,
                          speed[rows, step])
    steps = np.arange(step - config.past_steps, step + config.future_steps + 1)
    inside_log = (steps >= 0) & (steps < scenario.num_steps)
    cols = np.clip(steps, 0, scenario.num_steps - 1)
    traj = np.concatenate([tr.xy[rows][:, cols], tr.yaw[rows][:, cols, None], speed[rows][:, cols, None]], -1)
    traj_valid = tr.valid[rows][:, cols] & inside_log[None]
    return TileSample(
        scenario_id=scenario.scenario_id, step=step, kind=kind, anchor_id=int(tr.ids[anchor]),
        center_xy=center, yaw=yaw, **lanes,
        agent_state=state.astype(np.float32), agent_type=tr.types[rows].astype(np.int8),
        agent_motion=motion.astype(np.float32), agent_ids=tr.ids[rows].astype(np.int64),
        agent_is_anchor=rows == anchor,
        agent_traj=np.where(traj_valid[..., None], traj, 0.0), agent_traj_valid=traj_valid,
        source=f"{scenario.source.dataset}:{scenario.source.path}#{scenario.source.index}",
    )


def tile_steps(scenario: Scenario, config: TileConfig) -> list[int]:
    """The steps tiles are cut at."""
    if config.step_stride <= 0:
        return [scenario.current_index]
    return list(range(scenario.current_index, scenario.num_steps, config.step_stride))


def iter_tiles(scenario: Scenario, config: TileConfig = TileConfig()) -> Iterator[TileSample]:
    """Every tile of a scenario: per step, the ego tile, then agent tiles in track order."""
    tr = scenario.tracks
    for step in tile_steps(scenario, config):
        if config.ego_centric and scenario.sdc_index >= 0 and tr.valid[scenario.sdc_index, step]:
            yield crop_tile(scenario, step, scenario.sdc_index, KIND_EGO, config)
        if config.agent_centric:
            anchors = tr.valid[:, step] & np.isin(tr.types, np.asarray(config.anchor_types, np.int8))
            for anchor in np.nonzero(anchors)[0]:
                if anchor != scenario.sdc_index:
                    yield crop_tile(scenario, step, int(anchor), KIND_AGENT, config)
