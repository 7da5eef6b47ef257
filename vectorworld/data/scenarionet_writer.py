"""WOMD ``Scenario`` messages -> ScenarioNet scenario descriptions and dataset folders (what ScenarioNet's
WOMD converter writes: float32 arrays, string ids, MetaDrive type names), for tests and conversions."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np

from vectorworld.data import womd_pb2
from vectorworld.data.scenario import SignalState
from vectorworld.data.scenarionet import (
    LANE_TYPES,
    MAPPING_FILE,
    ROAD_EDGE_TYPES,
    ROAD_LINE_TYPES,
    SUMMARY_FILE,
)
from vectorworld.data.womd_export import feature_points, signal_steps, track_arrays
from vectorworld.scene import AgentType

_LANE_NAMES = {code: name for name, code in LANE_TYPES.items() if name != "LANE_SURFACE_UNSTRUCTURE"}
_LINE_NAMES = {code: name for name, code in ROAD_LINE_TYPES.items()}
_EDGE_NAMES = {code: name for name, code in ROAD_EDGE_TYPES.items()}
_AGENT_NAMES = {t: t.name for t in AgentType}


def _f32(points: np.ndarray) -> np.ndarray:
    return np.asarray(points, np.float32)


def _boundaries(rows: Any) -> list[dict[str, str]]:
    return [{"lane_start_index": str(b.lane_start_index), "lane_end_index": str(b.lane_end_index),
             "boundary_type": _LINE_NAMES.get(int(b.boundary_type), "UNKNOWN_LINE"),
             "boundary_feature_id": str(b.boundary_feature_id)} for b in rows]


def _neighbours(rows: Any) -> list[dict[str, Any]]:
    return [{"feature_id": str(n.feature_id), "self_start_index": str(n.self_start_index),
             "self_end_index": str(n.self_end_index), "neighbor_start_index": str(n.neighbor_start_index),
             "neighbor_end_index": str(n.neighbor_end_index), "boundaries": _boundaries(n.boundaries)}
            for n in rows]


def _map_feature(feature: womd_pb2.MapFeature) -> dict[str, Any] | None:
    kind = feature.WhichOneof("feature_data")
    pts = _f32(feature_points(feature))
    if kind == "lane":
        lane = feature.lane
        return {"type": _LANE_NAMES[int(lane.type)], "polyline": pts, "speed_limit_mph": lane.speed_limit_mph,
                "speed_limit_kmh": lane.speed_limit_mph * 1.609344, "interpolating": lane.interpolating,
                "entry_lanes": [int(i) for i in lane.entry_lanes], "exit_lanes": [int(i) for i in lane.exit_lanes],
                "left_boundaries": _boundaries(lane.left_boundaries),
                "right_boundaries": _boundaries(lane.right_boundaries),
                "left_neighbor": _neighbours(lane.left_neighbors), "right_neighbor": _neighbours(lane.right_neighbors)}
    if kind == "road_line":
        return {"type": _LINE_NAMES[int(feature.road_line.type)], "polyline": pts}
    if kind == "road_edge":
        return {"type": _EDGE_NAMES[int(feature.road_edge.type)], "polyline": pts}
    if kind == "stop_sign":
        return {"type": "STOP_SIGN", "lane": [int(i) for i in feature.stop_sign.lane], "position": pts[0]}
    if kind in ("crosswalk", "speed_bump", "driveway"):
        return {"type": kind.upper(), "polygon": pts}
    return None


def description_from_womd(msg: womd_pb2.Scenario, dataset: str = "waymo", version: str = "v1.2") -> dict[str, Any]:
    """One WOMD Scenario message as a plain-dict ScenarioNet scenario description."""
    arrays = track_arrays(msg)
    steps = len(msg.timestamps_seconds)
    tracks = {}
    for i, track in enumerate(msg.tracks):
        key = str(track.id)
        field = {name: arrays.field(name)[i] for name in ("center_x", "center_y", "center_z", "length", "width",
                                                           "height", "heading", "velocity_x", "velocity_y")}
        kind = _AGENT_NAMES[AgentType(int(track.object_type))]
        tracks[key] = {
            "type": kind,
            "state": {"position": _f32(np.stack([field["center_x"], field["center_y"], field["center_z"]], -1)),
                      "length": _f32(field["length"]), "width": _f32(field["width"]), "height": _f32(field["height"]),
                      "heading": _f32(field["heading"]),
                      "velocity": _f32(np.stack([field["velocity_x"], field["velocity_y"]], -1)),
                      "valid": arrays.valid[i].copy()},
            "metadata": {"track_length": steps, "type": kind, "object_id": key, "dataset": dataset}}
    lights: dict[str, dict[str, Any]] = {}
    for k, entries in enumerate(signal_steps(msg)):
        for e in entries:
            light = lights.setdefault(str(e.lane), {
                "type": "TRAFFIC_LIGHT", "state": {"object_state": [None] * steps}, "lane": e.lane,
                "stop_point": np.zeros(3, np.float32),
                "metadata": {"track_length": steps, "type": "TRAFFIC_LIGHT", "object_id": str(e.lane),
                             "dataset": dataset}})
            light["state"]["object_state"][k] = f"LANE_STATE_{SignalState(e.state).name}"
            light["stop_point"][:] = e.stop_xyz
    features = {str(f.id): d for f in msg.map_features if (d := _map_feature(f)) is not None}
    sdc = int(msg.sdc_track_index) if msg.HasField("sdc_track_index") else -1
    metadata: dict[str, Any] = {
        "id": msg.scenario_id, "coordinate": "waymo", "ts": np.asarray(msg.timestamps_seconds, np.float32),
        "metadrive_processed": False, "sdc_id": str(msg.tracks[sdc].id) if sdc >= 0 else None,
        "dataset": dataset, "scenario_id": msg.scenario_id, "source_file": "", "track_length": steps,
        "current_time_index": int(msg.current_time_index), "sdc_track_index": sdc,
        "objects_of_interest": [str(i) for i in msg.objects_of_interest],
        "tracks_to_predict": {str(msg.tracks[r.track_index].id): {
            "track_index": int(r.track_index), "track_id": str(msg.tracks[r.track_index].id),
            "difficulty": int(r.difficulty), "object_type": tracks[str(msg.tracks[r.track_index].id)]["type"]}
            for r in msg.tracks_to_predict}}
    return {"id": msg.scenario_id, "version": version, "length": steps, "tracks": tracks,
            "dynamic_map_states": lights, "map_features": features, "metadata": metadata}


def write_scenarionet(folder: str | Path, msgs: list[womd_pb2.Scenario], dataset: str = "waymo",
                      version: str = "v1.2") -> list[Path]:
    """Write WOMD Scenario messages as a ScenarioNet dataset folder (``sd_{dataset}_{version}_{id}.pkl``,
    ``dataset_summary.pkl``, ``dataset_mapping.pkl``); returns the scenario files."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    mapping: dict[str, str] = {}
    files = []
    for msg in msgs:
        sd = description_from_womd(msg, dataset, version)
        name = f"sd_{dataset}_{version}_{sd['id']}.pkl"
        with open(folder / name, "wb") as f:
            pickle.dump(sd, f)
        summary[name] = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in sd["metadata"].items()}
        mapping[name] = ""
        files.append(folder / name)
    for name, table in ((SUMMARY_FILE, summary), (MAPPING_FILE, mapping)):
        with open(folder / name, "wb") as f:
            pickle.dump(table, f)
    return files
