"""GPUDrive / PufferLib driving-env scene JSON (converted from WOMD) -> :class:`Scenario`, and back.

One scene per ``.json`` file, the layout of GPUDrive's ``data_utils/process_waymo_files.py``:

* ``name``, ``scenario_id``; ``metadata``: ``sdc_track_index``, ``objects_of_interest`` (track ids),
  ``tracks_to_predict`` (``track_index``, ``difficulty``).
* ``objects``: per track ``position`` / ``velocity`` (lists of ``{"x", "y"[, "z"]}``), ``heading`` (rad),
  ``valid`` (bools), one per step; a single ``width`` / ``length`` / ``height`` (the last valid box);
  ``type`` ("vehicle", "pedestrian", "cyclist", "other", "unset"); ``id``; ``goalPosition``;
  ``mark_as_expert``. Invalid steps hold a filler value (-1e4): ``valid`` is authoritative.
* ``roads``: per map feature ``geometry`` (list of points), ``type`` ("lane", "road_line", "road_edge",
  "stop_sign", "crosswalk", "speed_bump", "driveway"), ``id``, ``map_element_id`` (the tf.Example type code:
  lanes 0-3, road lines 5-13, road edges 14-16).
* ``tl_states``: lane id -> ``state`` (names: "go", "stop", "arrow_caution", ...), ``x``, ``y``, ``z``,
  ``time_index`` (parallel lists).

The file has no timestamps (10 Hz assumed), no current step (WOMD's 10 is used, or the last step of a
shorter scene), no lane graph, neighbours, boundaries or speed limits: successor edges are inferred from the
geometry (:func:`~vectorworld.data.assemble.infer_successors`); widths and speed limits take the defaults.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from vectorworld.data import assemble, womd_pb2
from vectorworld.data.scenario import Scenario, ScenarioSource, SignalState, TrafficSignals
from vectorworld.data.womd_export import (
    ROAD_EDGE_BASE,
    ROAD_LINE_BASE,
    feature_points,
    roadgraph_type,
    signal_steps,
    track_arrays,
)
from vectorworld.data.womd_map import road_map_from_features
from vectorworld.errors import DataFormatError
from vectorworld.scene import AgentType

DATASET = "gpudrive"
ERR_VAL = -1e4
CURRENT_INDEX = 10
OBJECT_TYPES = {"unset": AgentType.UNSET, "vehicle": AgentType.VEHICLE, "pedestrian": AgentType.PEDESTRIAN,
                "cyclist": AgentType.CYCLIST, "other": AgentType.OTHER}
SIGNAL_NAMES = {s: s.name.lower() for s in SignalState}
ROAD_KINDS = ("lane", "road_line", "road_edge", "stop_sign", "crosswalk", "speed_bump", "driveway")
_TYPE_BASE = {"road_line": ROAD_LINE_BASE, "road_edge": ROAD_EDGE_BASE}


def load_json(path: str | Path) -> dict[str, Any]:
    """The scene dict of a GPUDrive JSON file; DataFormatError for unreadable, truncated or non-object JSON."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    try:
        with open(path, "rb") as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{path}: not valid JSON, truncated or corrupt ({exc})") from exc
    if not isinstance(data, dict):
        raise DataFormatError(f"{path}: a GPUDrive scene is a JSON object, got {type(data).__name__}")
    return data


def _get(obj: Any, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise DataFormatError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise DataFormatError(f"{where}: field {key!r} must be {getattr(kind, '__name__', kind)}, "
                              f"got {type(value).__name__}")
    return value


def _xy(points: list[Any], where: str) -> np.ndarray:
    try:
        return np.array([(p["x"], p["y"]) for p in points], np.float64).reshape(-1, 2)
    except (TypeError, KeyError, ValueError) as exc:
        raise DataFormatError(f"{where}: points must be objects with numeric 'x' and 'y' ({exc})") from exc


def scenario_from_gpudrive(scene: dict[str, Any], source: ScenarioSource) -> Scenario:
    """Convert a parsed GPUDrive scene (see module docstring)."""
    where = source.path or "gpudrive scene"
    objects = _get(scene, "objects", where, list)
    steps = len(_get(objects[0], "valid", f"{where}: objects[0]", list)) if objects else 0
    ids, types, xy, yaw, vel, size, valid = [], [], [], [], [], [], []
    for i, obj in enumerate(objects):
        w = f"{where}: objects[{i}]"
        v = np.asarray(_get(obj, "valid", w, list), bool)
        if len(v) != steps:
            raise DataFormatError(f"{w}: field 'valid' has {len(v)} steps, expected {steps}")
        pos, velocity = _xy(_get(obj, "position", w, list), f"{w}.position"), \
            _xy(_get(obj, "velocity", w, list), f"{w}.velocity")
        heading = np.asarray(_get(obj, "heading", w, list), np.float64)
        for name, arr in (("position", pos), ("velocity", velocity), ("heading", heading)):
            if len(arr) != steps:
                raise DataFormatError(f"{w}: field {name!r} has {len(arr)} steps, expected {steps}")
        kind = str(obj.get("type", "other")).lower()
        ids.append(int(obj.get("id", i)))
        types.append(int(OBJECT_TYPES.get(kind, AgentType.OTHER)))
        xy.append(pos)
        yaw.append(heading)
        vel.append(velocity)
        size.append([float(_get(obj, k, w, (int, float))) for k in ("length", "width", "height")])
        valid.append(v)
    current = min(CURRENT_INDEX, max(steps - 1, 0))
    tracks = assemble.build_tracks(ids, types, np.reshape(xy, (len(ids), steps, 2)),
                                   np.reshape(yaw, (len(ids), steps)), np.reshape(vel, (len(ids), steps, 2)),
                                   np.reshape(size, (len(ids), 3)), np.reshape(valid, (len(ids), steps)), current)
    meta = scene.get("metadata") if isinstance(scene.get("metadata"), dict) else {}
    sdc = int(meta.get("sdc_track_index", -1))
    if not -1 <= sdc < len(ids):
        raise DataFormatError(f"{where}: metadata.sdc_track_index {sdc} outside the {len(ids)} objects")
    predict = [int(t["track_index"]) for t in meta.get("tracks_to_predict", [])
               if isinstance(t, dict) and 0 <= int(t.get("track_index", -1)) < len(ids)]
    road_map, notes = road_map_from_features(_map_features(_get(scene, "roads", where, list), where))
    timestamps = np.arange(steps) * 0.1
    return Scenario(
        scenario_id=str(scene.get("scenario_id", "")), timestamps_s=timestamps, current_index=current,
        tracks=tracks, map=road_map, signals=_signals(scene.get("tl_states") or {}, steps, where), source=source,
        sdc_index=sdc, predict_indices=np.asarray(predict, np.int64),
        metadata={"objects_of_interest": [int(i) for i in meta.get("objects_of_interest", [])],
                  "name": str(scene.get("name", "")), "inferred": ["successors", "timestamps", "current_index"],
                  **notes})


def _map_features(roads: list[Any], where: str) -> list[womd_pb2.MapFeature]:
    lanes: dict[int, tuple[np.ndarray, int]] = {}
    others: list[womd_pb2.MapFeature] = []
    for i, road in enumerate(roads):
        w = f"{where}: roads[{i}]"
        kind = _get(road, "type", w, str)
        if kind not in ROAD_KINDS:
            continue
        pts = _xy(_get(road, "geometry", w, list), f"{w}.geometry")
        fid = int(road.get("id", i))
        code = road.get("map_element_id")
        if kind == "lane":
            lanes[fid] = (pts, int(code) if isinstance(code, int) and 0 <= code <= 3 else 2)
        elif kind in _TYPE_BASE:
            sub = int(code) - _TYPE_BASE[kind] if isinstance(code, int) and code >= _TYPE_BASE[kind] else 0
            others.append(assemble.polyline_feature(kind, fid, pts, sub))
        elif kind == "stop_sign":
            if len(pts):
                others.append(assemble.stop_sign_feature(fid, pts[0]))
        else:
            others.append(assemble.polyline_feature(kind, fid, pts))
    successors = assemble.infer_successors({fid: pts for fid, (pts, _) in lanes.items()})
    return [assemble.lane_feature(fid, pts, code, exit_=successors[fid])
            for fid, (pts, code) in lanes.items()] + others


def _signals(tl_states: Any, steps: int, where: str) -> TrafficSignals:
    if not isinstance(tl_states, dict):
        raise DataFormatError(f"{where}: field 'tl_states' must be an object")
    by_name = {name: int(state) for state, name in SIGNAL_NAMES.items()}
    per_step: list[list[tuple[int, int, float, float]]] = [[] for _ in range(steps)]
    for lane, entry in tl_states.items():
        w = f"{where}: tl_states[{lane}]"
        names, times = _get(entry, "state", w, list), _get(entry, "time_index", w, list)
        xs, ys = _get(entry, "x", w, list), _get(entry, "y", w, list)
        if not len(names) == len(times) == len(xs) == len(ys):
            raise DataFormatError(f"{w}: 'state', 'time_index', 'x' and 'y' differ in length")
        for name, k, x, y in zip(names, times, xs, ys, strict=True):
            if 0 <= int(k) < steps:
                per_step[int(k)].append((int(lane), by_name.get(str(name).lower(), 0), float(x), float(y)))
    return TrafficSignals.from_steps(per_step)


def read_gpudrive(path: str | Path) -> Scenario:
    """The scene of one GPUDrive JSON file."""
    scene = load_json(path)
    source = ScenarioSource(dataset=DATASET, path=str(path), index=0, name=str(scene.get("scenario_id", "")))
    return scenario_from_gpudrive(scene, source)


# --- writing ---------------------------------------------------------------------------------------------

def gpudrive_from_womd(msg: womd_pb2.Scenario, name: str = "") -> dict[str, Any]:
    """A WOMD Scenario message as a GPUDrive scene dict (what the official converter writes; collision-based
    ``mark_as_expert`` flags are all False)."""
    arrays = track_arrays(msg)
    objects = []
    for i, track in enumerate(msg.tracks):
        valid = arrays.valid[i]
        last = int(np.nonzero(valid)[0][-1]) if valid.any() else 0
        st = arrays.states[i]
        col = {f: arrays.field(f)[i] for f in ("center_x", "center_y", "center_z", "heading", "velocity_x",
                                               "velocity_y", "length", "width", "height")}
        objects.append({
            "position": [{"x": col["center_x"][k], "y": col["center_y"][k], "z": col["center_z"][k]} if valid[k]
                         else {"x": ERR_VAL, "y": ERR_VAL, "z": ERR_VAL} for k in range(len(valid))],
            "width": col["width"][last], "length": col["length"][last], "height": col["height"][last],
            "heading": [math.remainder(h, 2 * math.pi) if v else ERR_VAL for h, v in zip(col["heading"], valid,
                                                                                       strict=True)],
            "velocity": [{"x": col["velocity_x"][k], "y": col["velocity_y"][k]} if valid[k]
                         else {"x": ERR_VAL, "y": ERR_VAL} for k in range(len(valid))],
            "valid": [bool(v) for v in valid],
            "goalPosition": {"x": st[last, 0], "y": st[last, 1], "z": st[last, 2]},
            "type": [k for k, t in OBJECT_TYPES.items() if t == track.object_type][0],
            "id": int(track.id), "mark_as_expert": False})
    roads = []
    for feature in msg.map_features:
        kind = feature.WhichOneof("feature_data")
        if kind is None:
            continue
        roads.append({"geometry": [{"x": x, "y": y, "z": z} for x, y, z in feature_points(feature).tolist()],
                      "type": kind, "map_element_id": roadgraph_type(feature), "id": int(feature.id)})
    tl: dict[str, dict[str, list[Any]]] = {}
    for k, entries in enumerate(signal_steps(msg)):
        for e in entries:
            slot = tl.setdefault(str(e.lane), {"state": [], "x": [], "y": [], "z": [], "time_index": []})
            slot["state"].append(SIGNAL_NAMES[SignalState(e.state)])
            for key, value in zip(("x", "y", "z"), e.stop_xyz, strict=True):
                slot[key].append(value)
            slot["time_index"].append(k)
    return {"name": name or f"{msg.scenario_id}.json", "scenario_id": msg.scenario_id, "objects": objects,
            "roads": roads, "tl_states": tl,
            "metadata": {"sdc_track_index": int(msg.sdc_track_index),
                         "objects_of_interest": [int(i) for i in msg.objects_of_interest],
                         "tracks_to_predict": [{"track_index": int(r.track_index), "difficulty": int(r.difficulty)}
                                               for r in msg.tracks_to_predict]}}


def write_gpudrive(path: str | Path, msg: womd_pb2.Scenario) -> Path:
    """Write one WOMD Scenario message as a GPUDrive JSON file."""
    path = Path(path)
    with open(path, "w") as f:
        json.dump(gpudrive_from_womd(msg, path.name), f)
    return path
