"""ScenarioNet / MetaDrive scenario descriptions (pickled dicts) -> :class:`Scenario`, and back.

Every pickle is read with :mod:`vectorworld.data.safe_pickle` (builtins containers/scalars and numpy arrays
only; anything else is refused before it runs). A source is one ``.pkl`` scenario file or a dataset folder:
its ``dataset_summary.pkl`` (scenario file name -> metadata; the order numbers the scenarios) and
``dataset_mapping.pkl`` (file name -> sub-folder, relative to the dataset folder), else the folder's
``sd_*.pkl`` files in name order.

Scenario description layout (MetaDrive's ``ScenarioDescription``, string ids everywhere):

* ``id``, ``version``, ``length`` (steps); ``metadata``: ``ts`` (S,), ``sdc_id`` (a ``tracks`` key),
  ``current_time_index``, ``objects_of_interest`` (track ids), ``tracks_to_predict`` (id -> ``track_index``...),
  ``dataset``, ``scenario_id``.
* ``tracks``: id -> ``type`` (VEHICLE, PEDESTRIAN, CYCLIST, OTHER, UNSET; cones, barriers, ... -> other)
  and ``state``: ``position`` (S, 2|3), ``heading`` (S,), ``velocity`` (S, 2), ``length`` / ``width`` /
  ``height`` (S,) and ``valid`` (S,).
* ``map_features``: id -> ``type`` and geometry. LANE_* (``polyline``, ``speed_limit_mph`` / ``_kmh`` /
  ``_mps``, ``interpolating``, ``entry_lanes``, ``exit_lanes``, ``left_neighbor`` / ``right_neighbor`` as
  WOMD-style dicts or plain ids, ``left_boundaries`` / ``right_boundaries``); ROAD_LINE_* / UNKNOWN_LINE and
  ROAD_EDGE_* / UNKNOWN (``polyline``: ScenarioNet's WOMD converter writes "UNKNOWN" for unknown lines and
  edges alike; we read it as a road edge); STOP_SIGN (``position``, ``lane``); CROSSWALK, SPEED_BUMP,
  DRIVEWAY (``polygon``). Other types are counted in ``metadata["skipped_map_features"]``.
* ``dynamic_map_states``: id -> ``lane``, ``stop_point`` and ``state.object_state`` (S names such as
  LANE_STATE_GO, or MetaDrive's TRAFFIC_LIGHT_GREEN/YELLOW/RED/UNKNOWN; None where not observed).

Decimal string ids keep their value; other ids (nuScenes tokens, "ego") get fresh ids, kept in
``metadata["named_track_ids"]`` / ``["named_feature_ids"]``. The map goes through the WOMD map converter, so
a WOMD-derived ScenarioNet file gives the WOMD reader's lanes, edges, neighbours, widths and speed limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vectorworld.data import assemble, safe_pickle, womd_pb2
from vectorworld.data.scenario import Scenario, ScenarioSource, SignalState, TrafficSignals
from vectorworld.data.womd_map import MPH_TO_MPS, road_map_from_features
from vectorworld.errors import DataFormatError
from vectorworld.scene import AgentType

DATASET = "scenarionet"
SUMMARY_FILE, MAPPING_FILE = "dataset_summary.pkl", "dataset_mapping.pkl"
KMH_TO_MPH = 1 / 1.609344
AGENT_TYPES = {"UNSET": AgentType.UNSET, "VEHICLE": AgentType.VEHICLE, "PEDESTRIAN": AgentType.PEDESTRIAN,
               "CYCLIST": AgentType.CYCLIST}
LANE_TYPES = {"LANE_UNKNOWN": 0, "LANE_FREEWAY": 1, "LANE_SURFACE_STREET": 2, "LANE_SURFACE_UNSTRUCTURE": 2,
              "LANE_BIKE_LANE": 3}
ROAD_LINE_TYPES = {"UNKNOWN_LINE": 0, "ROAD_LINE_BROKEN_SINGLE_WHITE": 1, "ROAD_LINE_SOLID_SINGLE_WHITE": 2,
                   "ROAD_LINE_SOLID_DOUBLE_WHITE": 3, "ROAD_LINE_BROKEN_SINGLE_YELLOW": 4,
                   "ROAD_LINE_BROKEN_DOUBLE_YELLOW": 5, "ROAD_LINE_SOLID_SINGLE_YELLOW": 6,
                   "ROAD_LINE_SOLID_DOUBLE_YELLOW": 7, "ROAD_LINE_PASSING_DOUBLE_YELLOW": 8}
ROAD_EDGE_TYPES = {"UNKNOWN": 0, "ROAD_EDGE_BOUNDARY": 1, "ROAD_EDGE_MEDIAN": 2}
POLYGON_TYPES = {"CROSSWALK": "crosswalk", "SPEED_BUMP": "speed_bump", "DRIVEWAY": "driveway"}
SIGNAL_NAMES = {f"LANE_STATE_{s.name}": s for s in SignalState} | {
    "TRAFFIC_LIGHT_GREEN": SignalState.GO, "TRAFFIC_LIGHT_YELLOW": SignalState.CAUTION,
    "TRAFFIC_LIGHT_RED": SignalState.STOP, "TRAFFIC_LIGHT_UNKNOWN": SignalState.UNKNOWN}


@dataclass(frozen=True)
class ScenarioNetEntry:
    """One scenario of a source: its number, file and file name (the summary key)."""

    index: int
    path: Path
    name: str


def is_scenario_file(name: str) -> bool:
    """ScenarioNet's rule: ``sd_*.pkl`` or ``<digits>.pkl``."""
    return name.endswith(".pkl") and (name.startswith("sd_") or name[:-4].isdigit())


def list_scenarios(path: str | Path) -> list[ScenarioNetEntry]:
    """The scenarios of a ``.pkl`` file (one) or a dataset folder (summary order, see module docstring)."""
    path = Path(path)
    if path.is_file():
        return [ScenarioNetEntry(0, path, path.name)]
    if not path.is_dir():
        raise DataFormatError(f"{path}: no such file or folder")
    summary_path = path / SUMMARY_FILE
    if not summary_path.is_file():
        files = sorted(p.name for p in path.iterdir() if p.is_file() and is_scenario_file(p.name))
        if not files:
            raise DataFormatError(f"{path}: a ScenarioNet folder needs {SUMMARY_FILE} or sd_*.pkl files")
        return [ScenarioNetEntry(i, path / name, name) for i, name in enumerate(files)]
    summary = safe_pickle.load_file(summary_path)
    if not isinstance(summary, dict):
        raise DataFormatError(f"{summary_path}: expected a dict of scenario file name -> metadata, "
                              f"got {type(summary).__name__}")
    mapping: Any = {}
    if (path / MAPPING_FILE).is_file():
        mapping = safe_pickle.load_file(path / MAPPING_FILE)
        if not isinstance(mapping, dict):
            raise DataFormatError(f"{path / MAPPING_FILE}: expected a dict of file name -> folder")
    return [ScenarioNetEntry(i, path / str(mapping.get(name, "") or "") / str(name), str(name))
            for i, name in enumerate(summary)]


def select(path: str | Path, selector: int | str = 0) -> ScenarioNetEntry:
    """An entry by number, file name or scenario id (the ``id`` in its summary metadata or the file)."""
    entries = list_scenarios(path)
    if isinstance(selector, int) or str(selector).isdigit():
        i = int(selector)
        if not 0 <= i < len(entries):
            raise DataFormatError(f"{path}: no scenario {i}; the source holds {len(entries)}")
        return entries[i]
    for entry in entries:
        if selector in (entry.name, entry.name.removesuffix(".pkl")) or entry.name.endswith(f"_{selector}.pkl"):
            return entry
    raise DataFormatError(f"{path}: no scenario named {selector!r}")


def read_scenarionet(path: str | Path, selector: int | str = 0) -> Scenario:
    """One scenario of a ScenarioNet file or dataset folder."""
    entry = select(path, selector)
    data = safe_pickle.load_file(entry.path)
    source = ScenarioSource(dataset=DATASET, path=str(path), index=entry.index, name=entry.name)
    return scenario_from_description(data, source, str(entry.path))


def _field(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise DataFormatError(f"{where}: expected a dict, got {type(obj).__name__}")
    if key not in obj:
        raise DataFormatError(f"{where}: missing field {key!r}")
    return obj[key]


def _array(value: Any, where: str, steps: int, width: int | None = None) -> np.ndarray:
    """(S,) or (S, width) float64; a scalar broadcasts over the steps."""
    try:
        arr = np.asarray(value, np.float64)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"{where}: not numeric ({exc})") from exc
    if arr.ndim == 0:
        arr = np.full(steps, float(arr))
    if width is None:
        arr = arr.reshape(len(arr), -1)[:, 0] if arr.ndim > 1 else arr
    elif arr.ndim != 2 or arr.shape[1] < width:
        raise DataFormatError(f"{where}: shape {arr.shape}, expected ({steps}, >={width})")
    else:
        arr = arr[:, :width]
    if len(arr) != steps:
        raise DataFormatError(f"{where}: {len(arr)} steps, expected {steps}")
    return arr


def scenario_from_description(sd: Any, source: ScenarioSource, where: str) -> Scenario:
    """Convert a loaded scenario description (see module docstring)."""
    meta = _field(sd, "metadata", where)
    tracks_in = _field(sd, "tracks", where)
    features_in = _field(sd, "map_features", where)
    if not isinstance(tracks_in, dict) or not isinstance(features_in, dict):
        raise DataFormatError(f"{where}: fields 'tracks' and 'map_features' must be dicts")
    ts = meta.get("ts") if isinstance(meta, dict) else None
    steps = int(sd.get("length") or (len(ts) if ts is not None else 0))
    timestamps = np.asarray(ts, np.float64) if ts is not None else np.arange(steps) * 0.1
    if len(timestamps) != steps:
        raise DataFormatError(f"{where}: metadata.ts has {len(timestamps)} entries, expected length {steps}")
    current = int(meta.get("current_time_index", min(10, max(steps - 1, 0))))
    track_ids = assemble.IdMap(tracks_in)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("xy", "yaw", "vel", "size", "valid")}
    types = []
    for key, track in tracks_in.items():
        w = f"{where}: tracks[{key!r}]"
        state = _field(track, "state", w)
        cols["xy"].append(_array(_field(state, "position", w), f"{w}.state.position", steps, 2))
        cols["yaw"].append(_array(_field(state, "heading", w), f"{w}.state.heading", steps))
        vel = state.get("velocity")
        cols["vel"].append(np.zeros((steps, 2)) if vel is None else _array(vel, f"{w}.state.velocity", steps, 2))
        cols["size"].append(np.stack([_array(state.get(k, 0.0), f"{w}.state.{k}", steps)
                                      for k in ("length", "width", "height")], -1))
        cols["valid"].append(_array(_field(state, "valid", w), f"{w}.state.valid", steps) > 0.5)
        types.append(int(AGENT_TYPES.get(str(track.get("type", "OTHER")), AgentType.OTHER)))
    keys = [str(k) for k in tracks_in]
    n = len(keys)
    tracks = assemble.build_tracks(
        [track_ids[k] for k in keys], types, np.reshape(cols["xy"], (n, steps, 2)),
        np.reshape(cols["yaw"], (n, steps)), np.reshape(cols["vel"], (n, steps, 2)),
        np.reshape(cols["size"], (n, steps, 3)), np.reshape(cols["valid"], (n, steps)), current)
    sdc_key = meta.get("sdc_id")
    sdc = keys.index(str(sdc_key)) if sdc_key is not None and str(sdc_key) in keys else \
        int(meta.get("sdc_track_index", -1))
    predict = meta.get("tracks_to_predict") or {}
    predict_idx = [keys.index(str(k)) for k in predict if str(k) in keys]
    feature_ids = assemble.IdMap(features_in)
    features, skipped = _map_features(features_in, feature_ids, where)
    road_map, notes = road_map_from_features(features)
    metadata: dict[str, Any] = {
        "objects_of_interest": [i for i in (track_ids.get(k) for k in meta.get("objects_of_interest", []))
                                if i is not None],
        "timestamp_offset_s": float(timestamps[0]) if steps else 0.0, "dataset": str(meta.get("dataset", "")),
        **notes}
    for name, table in (("named_track_ids", track_ids), ("named_feature_ids", feature_ids)):
        if table.named:
            metadata[name] = dict(table.named)
    if skipped:
        metadata["skipped_map_features"] = skipped
    return Scenario(
        scenario_id=str(sd.get("id") or meta.get("scenario_id") or source.name),
        timestamps_s=timestamps - (timestamps[0] if steps else 0.0), current_index=current, tracks=tracks,
        map=road_map, signals=_signals(sd.get("dynamic_map_states") or {}, feature_ids, steps, where),
        source=source, sdc_index=sdc, predict_indices=np.asarray(predict_idx, np.int64), metadata=metadata)


def _ids(values: Any, ids: assemble.IdMap) -> list[int]:
    return [i for i in (ids.get(v) for v in (values or [])) if i is not None]


def _neighbours(values: Any, ids: assemble.IdMap, length: int) -> list[tuple[int, int, int]]:
    out = []
    for v in values or []:
        if isinstance(v, dict):
            fid = ids.get(v.get("feature_id"))
            if fid is not None:
                out.append((fid, int(v.get("self_start_index", 0)), int(v.get("self_end_index", length - 1))))
        elif ids.get(v) is not None:
            out.append((ids[v], 0, length - 1))
    return out


def _boundaries(values: Any, ids: assemble.IdMap) -> list[tuple[int, int, int, int]]:
    out = []
    for b in values or []:
        fid = ids.get(b.get("boundary_feature_id")) if isinstance(b, dict) else None
        if fid is not None:
            btype = b.get("boundary_type", 0)
            code = ROAD_LINE_TYPES.get(str(btype), int(btype) if str(btype).isdigit() else 0)
            out.append((int(b.get("lane_start_index", 0)), int(b.get("lane_end_index", 0)), fid, code))
    return out


def _speed_mph(lane: dict[str, Any]) -> float:
    for key, factor in (("speed_limit_mph", 1.0), ("speed_limit_kmh", KMH_TO_MPH), ("speed_limit_mps", 1 / MPH_TO_MPS)):
        value = lane.get(key)
        if value is not None and np.isfinite(float(value)):
            return float(value) * factor
    return 0.0


def _map_features(features: dict[Any, Any], ids: assemble.IdMap,
                  where: str) -> tuple[list[womd_pb2.MapFeature], dict[str, int]]:
    out: list[womd_pb2.MapFeature] = []
    skipped: dict[str, int] = {}
    for key, f in features.items():
        w = f"{where}: map_features[{key!r}]"
        kind = str(_field(f, "type", w))
        fid = ids[key]
        if kind in LANE_TYPES:
            pts = np.asarray(_field(f, "polyline", w), np.float64)
            out.append(assemble.lane_feature(
                fid, pts, LANE_TYPES[kind], speed_limit_mph=_speed_mph(f), interpolating=bool(f.get("interpolating")),
                entry=_ids(f.get("entry_lanes"), ids), exit_=_ids(f.get("exit_lanes"), ids),
                left=_neighbours(f.get("left_neighbor"), ids, len(pts)),
                right=_neighbours(f.get("right_neighbor"), ids, len(pts)),
                left_boundaries=_boundaries(f.get("left_boundaries"), ids),
                right_boundaries=_boundaries(f.get("right_boundaries"), ids)))
        elif kind in ROAD_LINE_TYPES or kind in ROAD_EDGE_TYPES:
            line = kind in ROAD_LINE_TYPES
            out.append(assemble.polyline_feature("road_line" if line else "road_edge", fid,
                                                 np.asarray(_field(f, "polyline", w), np.float64),
                                                 (ROAD_LINE_TYPES if line else ROAD_EDGE_TYPES)[kind]))
        elif kind == "STOP_SIGN":
            out.append(assemble.stop_sign_feature(fid, np.asarray(_field(f, "position", w), np.float64).reshape(-1),
                                                  _ids(f.get("lane"), ids)))
        elif kind in POLYGON_TYPES:
            pts = f.get("polygon", f.get("polyline"))
            if pts is None:
                raise DataFormatError(f"{w}: missing field 'polygon'")
            out.append(assemble.polyline_feature(POLYGON_TYPES[kind], fid, np.asarray(pts, np.float64)))
        else:
            skipped[kind] = skipped.get(kind, 0) + 1
    return out, skipped


def _signals(states: Any, ids: assemble.IdMap, steps: int, where: str) -> TrafficSignals:
    per_step: list[list[tuple[int, int, float, float]]] = [[] for _ in range(steps)]
    if not isinstance(states, dict):
        raise DataFormatError(f"{where}: field 'dynamic_map_states' must be a dict")
    for key, light in states.items():
        w = f"{where}: dynamic_map_states[{key!r}]"
        lane = ids.get(light.get("lane", key)) if isinstance(light, dict) else None
        if lane is None:
            lane = ids.get(key)
        if lane is None:
            continue
        names = _field(_field(light, "state", w), "object_state", f"{w}.state")
        stop = np.asarray(light.get("stop_point", (np.nan, np.nan)), np.float64).reshape(-1)
        for k, name in enumerate(list(names)[:steps]):
            if name is None:
                continue
            state = SIGNAL_NAMES.get(str(name), int(name) if str(name).isdigit() else SignalState.UNKNOWN)
            per_step[k].append((lane, int(state), float(stop[0]), float(stop[1])))
    return TrafficSignals.from_steps(per_step)
