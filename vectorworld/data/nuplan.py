"""nuPlan log databases (SQLite) -> :class:`~vectorworld.data.scenario.Scenario`, without the devkit.

One Scenario per ``scene`` row (or the whole log when the database has no scenes). The ~20 Hz lidar_pc
timeline is resampled to a uniform 10 Hz grid: step k takes the lidar_pc nearest to t0 + k * 0.1 s if it
lies within 50 ms (else every track is invalid at that step); ``timestamps_s`` is the grid.

* Ego (track index 0, id 0): ``ego_pose`` via ``lidar_pc.ego_pose_token``. The pose is the rear axle; the
  box centre is :data:`REAR_AXLE_TO_CENTER_M` ahead of it. Yaw from the quaternion; velocity from the
  vehicle-frame (vx, vy) plus yaw rate x lever arm, rotated to the global frame.
* Agents: ``lidar_box`` -> ``track`` -> ``category``. Category names vehicle / pedestrian / bicycle map to
  vehicle / pedestrian / cyclist; static objects (traffic_cone, barrier, czone_sign, generic_object) and
  unknown names to OTHER (dropped with ``include_static=False``). Track ids are the first 8 bytes of the
  track token as a positive int64; the hex tokens are in ``metadata["track_tokens"]``.
* Traffic lights: ``traffic_light_status`` (green -> GO, yellow -> CAUTION, red -> STOP, else UNKNOWN) on
  the lane connector's lane id (see :mod:`vectorworld.data.nuplan_map`).
* ``current_index`` is 10 (1 s of history, WOMD's convention) or the last step of shorter scenes.
* Map (optional): ``{maps_root}/{log.map_version or log.location}/{version}/map.gpkg``, cropped to the ego
  path's bounding box grown by ``map_margin_m``.

Only the listed tables/columns are read; extra tables and columns are ignored. A database without the
required tables or columns raises :class:`~vectorworld.errors.DataFormatError` naming the table.
"""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vectorworld.data.nuplan_map import CONNECTOR_ID_OFFSET, find_map_file, load_nuplan_map
from vectorworld.data.scenario import RoadMap, Scenario, ScenarioSource, SignalState, Tracks, TrafficSignals
from vectorworld.errors import DataFormatError
from vectorworld.scene import AgentType, LaneGraph

DATASET = "nuplan"
EGO_WIDTH_M = 2.297
EGO_FRONT_LENGTH_M = 4.049
EGO_REAR_LENGTH_M = 1.127
EGO_HEIGHT_M = 1.777
EGO_LENGTH_M = EGO_FRONT_LENGTH_M + EGO_REAR_LENGTH_M
REAR_AXLE_TO_CENTER_M = (EGO_FRONT_LENGTH_M - EGO_REAR_LENGTH_M) / 2.0
STEP_US = 100_000
MATCH_TOLERANCE_US = 50_000
CATEGORY_TYPES = {"vehicle": AgentType.VEHICLE, "pedestrian": AgentType.PEDESTRIAN, "bicycle": AgentType.CYCLIST}
SIGNAL_STATES = {"green": SignalState.GO, "yellow": SignalState.CAUTION, "red": SignalState.STOP}
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "log": ("token",),
    "lidar_pc": ("token", "ego_pose_token", "timestamp"),
    "ego_pose": ("token", "x", "y", "qw", "qx", "qy", "qz"),
    "lidar_box": ("lidar_pc_token", "track_token", "x", "y", "yaw"),
    "track": ("token", "category_token"),
    "category": ("token", "name"),
}
_CHUNK = 500


@dataclass(frozen=True)
class NuPlanScene:
    """One scene of a log: its position in time order, token (hex), name and lidar_pc span."""

    index: int
    token: str
    name: str
    start_us: int
    end_us: int
    num_frames: int


@dataclass(frozen=True)
class NuPlanOptions:
    include_static: bool = True
    """Keep static objects (cones, barriers, ...) as OTHER tracks."""
    map_margin_m: float = 100.0
    """Map features within this distance of the ego path's bounding box are loaded."""
    current_index: int = 10


class LogDatabase:
    """A read-only nuPlan log database with schema checks. Use as a context manager."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DataFormatError(f"{self.path}: no such file")
        with open(self.path, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise DataFormatError(f"{self.path}: not a nuPlan log database (not an SQLite file)")
        self.conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            self.tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            missing = [t for t in REQUIRED_COLUMNS if t not in self.tables]
            if missing:
                raise DataFormatError(
                    f"{self.path}: not a nuPlan log database: missing table(s) {', '.join(missing)}")
            for table, columns in REQUIRED_COLUMNS.items():
                absent = [c for c in columns if not self.has_column(table, c)]
                if absent:
                    raise DataFormatError(
                        f"{self.path}: table {table} lacks column(s) {', '.join(absent)}")
        except BaseException:
            self.conn.close()
            raise

    def __enter__(self) -> LogDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()

    def has_column(self, table: str, column: str) -> bool:
        if table not in self.tables:
            return False
        return any(r[1] == column for r in self.conn.execute(f'PRAGMA table_info("{table}")'))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise DataFormatError(f"{self.path}: query failed ({exc}): {sql[:80]}") from exc

    def query_in(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run ``sql`` whose ``{marks}`` placeholder is an IN list, in chunks over ``values``."""
        rows: list[tuple[Any, ...]] = []
        for i in range(0, len(values), _CHUNK):
            chunk = list(values[i: i + _CHUNK])
            rows += self.query(sql.format(marks=",".join("?" * len(chunk))), chunk)
        return rows

    def optional(self, table: str, column: str, fallback: str = "NULL") -> str:
        """``column`` if the table has it, else a SQL literal."""
        return column if self.has_column(table, column) else fallback


def list_scenes(db_path: str | Path) -> list[NuPlanScene]:
    """The scenes of a log in time order (one pseudo-scene "log" when there is no scene table)."""
    with LogDatabase(db_path) as db:
        return _scenes(db)


def _scenes(db: LogDatabase) -> list[NuPlanScene]:
    if "scene" in db.tables and db.has_column("lidar_pc", "scene_token"):
        name_col = db.optional("scene", "name", "''")
        rows = db.query(
            f"SELECT s.token, {name_col}, MIN(l.timestamp), MAX(l.timestamp), COUNT(*) FROM scene s "
            "JOIN lidar_pc l ON l.scene_token = s.token GROUP BY s.token ORDER BY MIN(l.timestamp)")
        if rows:
            return [NuPlanScene(i, bytes(r[0]).hex(), str(r[1] or ""), int(r[2]), int(r[3]), int(r[4]))
                    for i, r in enumerate(rows)]
    row = db.query("SELECT MIN(timestamp), MAX(timestamp), COUNT(*) FROM lidar_pc")[0]
    if not row[2]:
        raise DataFormatError(f"{db.path}: table lidar_pc is empty")
    return [NuPlanScene(0, "", "log", int(row[0]), int(row[1]), int(row[2]))]


def select_scene(scenes: Sequence[NuPlanScene], selector: int | str, where: str) -> NuPlanScene:
    """A scene by index (int or digits), name or token (hex, case-insensitive)."""
    if isinstance(selector, int) or str(selector).isdigit():
        index = int(selector)
        if not 0 <= index < len(scenes):
            raise DataFormatError(f"{where}: no scene {index}; the log has {len(scenes)} scene(s)")
        return scenes[index]
    for scene in scenes:
        if selector in (scene.name, scene.token) or str(selector).lower() == scene.token:
            return scene
    raise DataFormatError(f"{where}: no scene named or with token {selector!r}")


def read_nuplan(db_path: str | Path, scene: int | str = 0, maps_root: str | Path | None = None,
                options: NuPlanOptions = NuPlanOptions()) -> Scenario:
    """Read one scene of a nuPlan log as a Scenario (with its map when ``maps_root`` is given)."""
    with LogDatabase(db_path) as db:
        chosen = select_scene(_scenes(db), scene, str(db.path))
        return _read_scene(db, chosen, maps_root, options)


def iter_nuplan(db_path: str | Path, maps_root: str | Path | None = None,
                options: NuPlanOptions = NuPlanOptions()) -> Iterator[Scenario]:
    """Every scene of a log, in time order."""
    with LogDatabase(db_path) as db:
        for scene in _scenes(db):
            yield _read_scene(db, scene, maps_root, options)


def _frames(db: LogDatabase, scene: NuPlanScene) -> tuple[list[bytes], list[bytes], np.ndarray]:
    if scene.token:
        rows = db.query("SELECT token, ego_pose_token, timestamp FROM lidar_pc WHERE scene_token = ? "
                        "ORDER BY timestamp", (bytes.fromhex(scene.token),))
    else:
        rows = db.query("SELECT token, ego_pose_token, timestamp FROM lidar_pc ORDER BY timestamp")
    return [r[0] for r in rows], [r[1] for r in rows], np.array([int(r[2]) for r in rows], np.int64)


def resample_10hz(timestamps_us: np.ndarray) -> np.ndarray:
    """For each step of the 10 Hz grid from the first timestamp, the index of the nearest frame within
    50 ms, or -1. (S,) int64."""
    t0 = timestamps_us[0]
    num = int((timestamps_us[-1] - t0) // STEP_US) + 1
    targets = t0 + STEP_US * np.arange(num, dtype=np.int64)
    right = np.clip(np.searchsorted(timestamps_us, targets), 0, len(timestamps_us) - 1)
    left = np.clip(right - 1, 0, len(timestamps_us) - 1)
    pick = np.where(np.abs(timestamps_us[left] - targets) <= np.abs(timestamps_us[right] - targets), left, right)
    return np.where(np.abs(timestamps_us[pick] - targets) <= MATCH_TOLERANCE_US, pick, -1)


def _read_scene(db: LogDatabase, scene: NuPlanScene, maps_root: str | Path | None,
                options: NuPlanOptions) -> Scenario:
    where = f"{db.path}#{scene.name or scene.index}"
    tokens, ego_tokens, stamps = _frames(db, scene)
    if not tokens:
        raise DataFormatError(f"{where}: the scene has no lidar_pc frames")
    step_frame = resample_10hz(stamps)
    num_steps = len(step_frame)
    frame_step: dict[bytes, list[int]] = {}
    for step, frame in enumerate(step_frame):
        if frame >= 0:
            frame_step.setdefault(tokens[frame], []).append(step)
    ego = _ego(db, [ego_tokens[f] for f in step_frame if f >= 0], step_frame, where)
    agents, track_tokens = _agents(db, frame_step, num_steps, options)
    tracks = _stack(ego, agents)
    log = _log_row(db)
    road_map, map_notes = _road_map(tracks, log, maps_root, options)
    signals = _signals(db, frame_step, num_steps, road_map.lanes)
    current = min(options.current_index, num_steps - 1)
    return Scenario(
        scenario_id=scene.token or f"{log.get('logfile') or db.path.stem}",
        timestamps_s=np.arange(num_steps) * (STEP_US / 1e6),
        current_index=current,
        tracks=tracks,
        map=road_map,
        signals=signals,
        source=ScenarioSource(dataset=DATASET, path=str(db.path), index=scene.index, name=scene.name),
        sdc_index=0,
        metadata={"scene_token": scene.token, "scene_name": scene.name, "start_timestamp_us": int(stamps[0]),
                  "track_tokens": ["ego"] + track_tokens, **log, **map_notes},
    )


def _log_row(db: LogDatabase) -> dict[str, Any]:
    cols = [c for c in ("logfile", "vehicle_name", "location", "map_version") if db.has_column("log", c)]
    if not cols:
        return {}
    row = db.query(f"SELECT {', '.join(cols)} FROM log LIMIT 1")
    return {c: (None if v is None else str(v)) for c, v in zip(cols, row[0], strict=True)} if row else {}


def _ego(db: LogDatabase, pose_tokens: list[bytes], step_frame: np.ndarray, where: str) -> dict[str, np.ndarray]:
    cols = ["token", "x", "y", "qw", "qx", "qy", "qz", db.optional("ego_pose", "vx", "0"),
            db.optional("ego_pose", "vy", "0"), db.optional("ego_pose", "angular_rate_z", "0")]
    rows = {r[0]: r[1:] for r in db.query_in(f"SELECT {', '.join(cols)} FROM ego_pose WHERE token IN ({{marks}})",
                                             pose_tokens)}
    num = len(step_frame)
    state = np.zeros((num, 9))
    valid = np.zeros(num, bool)
    it = iter(pose_tokens)
    for step, frame in enumerate(step_frame):
        if frame < 0:
            continue
        token = next(it)
        if token in rows:
            state[step] = [float(v or 0.0) for v in rows[token]]
            valid[step] = True
    if not valid.any():
        raise DataFormatError(f"{where}: no ego_pose rows for the scene's lidar_pc frames")
    x, y, qw, qx, qy, qz, vx, vy_rear, yaw_rate = state.T
    yaw = np.arctan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
    c, s = np.cos(yaw), np.sin(yaw)
    vy = vy_rear + yaw_rate * REAR_AXLE_TO_CENTER_M  # lever arm from the rear axle to the box centre
    xy = np.stack([x + c * REAR_AXLE_TO_CENTER_M, y + s * REAR_AXLE_TO_CENTER_M], -1)
    velocity = np.stack([c * vx - s * vy, s * vx + c * vy], -1)
    mask = valid[:, None]
    return {"xy": np.where(mask, xy, 0.0), "yaw": np.where(valid, yaw, 0.0),
            "velocity": np.where(mask, velocity, 0.0), "valid": valid}


def _agents(db: LogDatabase, frame_step: dict[bytes, list[int]], num_steps: int,
            options: NuPlanOptions) -> tuple[dict[str, np.ndarray], list[str]]:
    """Agent tracks (N, S, ...) ordered by first appearance, then token; and their hex tokens."""
    opt = db.optional
    cols = ["lidar_pc_token", "track_token", "x", "y", "yaw", opt("lidar_box", "vx", "0"),
            opt("lidar_box", "vy", "0"), opt("lidar_box", "length", "NULL"), opt("lidar_box", "width", "NULL"),
            opt("lidar_box", "height", "NULL")]
    boxes = db.query_in(f"SELECT {', '.join(cols)} FROM lidar_box WHERE lidar_pc_token IN ({{marks}})",
                        list(frame_step))
    info = {r[0]: r[1:] for r in db.query_in(
        f"SELECT t.token, c.name, {opt('track', 't.width')}, {opt('track', 't.length')}, "
        f"{opt('track', 't.height')} FROM track t LEFT JOIN category c ON t.category_token = c.token "
        "WHERE t.token IN ({marks})", sorted({b[1] for b in boxes}))}
    first: dict[bytes, int] = {}
    for box in boxes:
        step = frame_step[box[0]][0]
        first[box[1]] = min(first.get(box[1], step), step)
    types: dict[bytes, AgentType] = {}
    for token in first:
        name = str((info.get(token) or (None,))[0] or "")
        types[token] = CATEGORY_TYPES.get(name, AgentType.OTHER)
    order = sorted((t for t in first if options.include_static or types[t] != AgentType.OTHER),
                   key=lambda t: (first[t], bytes(t)))
    index = {t: i for i, t in enumerate(order)}
    n = len(order)
    state = np.zeros((n, num_steps, 8))
    valid = np.zeros((n, num_steps), bool)
    for box in boxes:
        row = index.get(box[1])
        if row is None:
            continue
        values = [float(v) if v is not None else np.nan for v in box[2:]]
        for step in frame_step[box[0]]:
            state[row, step] = values
            valid[row, step] = True
    dims = np.zeros((n, 3))  # (length, width, height)
    for token, row in index.items():
        _, width, length, height = info.get(token) or (None, None, None, None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no box dimensions at all
            observed = np.nanmedian(np.where(valid[row][:, None], state[row, :, 5:8], np.nan), axis=0)
        dims[row] = [observed[i] if v is None else float(v) for i, v in enumerate((length, width, height))]
    dims = np.nan_to_num(dims)
    mask = valid[..., None]
    return {
        "ids": np.array([token_to_id(t) for t in order], np.int64),
        "types": np.array([types[t] for t in order], np.int8),
        "xy": np.where(mask, state[..., 0:2], 0.0),
        "yaw": np.where(valid, state[..., 2], 0.0),
        "velocity": np.where(mask, np.nan_to_num(state[..., 3:5]), 0.0),
        "dims": dims,
        "valid": valid,
    }, [bytes(t).hex() for t in order]


def token_to_id(token: bytes) -> int:
    """A positive int64 track id from a token: its first 8 bytes, big-endian, top bit cleared (0 -> 1;
    0 is the ego)."""
    value = int.from_bytes(bytes(token)[:8].rjust(8, b"\0"), "big") & 0x7FFF_FFFF_FFFF_FFFF
    return value or 1


def _stack(ego: dict[str, np.ndarray], agents: dict[str, np.ndarray]) -> Tracks:
    """Ego first (id 0), then the agents."""
    return Tracks(
        ids=np.concatenate([[0], agents["ids"]]).astype(np.int64),
        types=np.concatenate([[AgentType.VEHICLE], agents["types"]]).astype(np.int8),
        xy=np.concatenate([ego["xy"][None], agents["xy"]]),
        yaw=np.concatenate([ego["yaw"][None], agents["yaw"]]),
        velocity=np.concatenate([ego["velocity"][None], agents["velocity"]]),
        length=np.concatenate([[EGO_LENGTH_M], agents["dims"][:, 0]]),
        width=np.concatenate([[EGO_WIDTH_M], agents["dims"][:, 1]]),
        height=np.concatenate([[EGO_HEIGHT_M], agents["dims"][:, 2]]),
        valid=np.concatenate([ego["valid"][None], agents["valid"]]),
    )


def _road_map(tracks: Tracks, log: dict[str, Any], maps_root: str | Path | None,
              options: NuPlanOptions) -> tuple[RoadMap, dict[str, Any]]:
    if maps_root is None:
        return RoadMap(lanes=LaneGraph()), {"map_file": None}
    path = find_map_file(maps_root, [log.get("map_version") or "", log.get("location") or ""])
    ego_xy = tracks.xy[0][tracks.valid[0]]
    lo, hi = ego_xy.min(0) - options.map_margin_m, ego_xy.max(0) + options.map_margin_m
    return load_nuplan_map(path, (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])))


def _signals(db: LogDatabase, frame_step: dict[bytes, list[int]], num_steps: int,
             lanes: LaneGraph) -> TrafficSignals:
    needed = ("lidar_pc_token", "lane_connector_id", "status")
    if "traffic_light_status" not in db.tables or not all(
            db.has_column("traffic_light_status", c) for c in needed):
        return TrafficSignals.empty(num_steps)
    steps: list[list[tuple[int, int, float, float]]] = [[] for _ in range(num_steps)]
    rows = db.query_in("SELECT lidar_pc_token, lane_connector_id, status FROM traffic_light_status "
                       "WHERE lidar_pc_token IN ({marks}) ORDER BY lane_connector_id", list(frame_step))
    for frame, connector, status in rows:
        if connector is None:
            continue
        lane_id = int(connector) + CONNECTOR_ID_OFFSET
        state = SIGNAL_STATES.get(str(status).lower(), SignalState.UNKNOWN)
        stop = lanes[lane_id].points[0] if lane_id in lanes else (np.nan, np.nan)
        for step in frame_step[frame]:
            steps[step].append((lane_id, int(state), float(stop[0]), float(stop[1])))
    return TrafficSignals.from_steps(steps)
