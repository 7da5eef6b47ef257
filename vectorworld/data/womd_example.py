"""WOMD tf.Example TFRecords (the other official Waymo Open Motion release) -> :class:`Scenario`, and back.

No TensorFlow: :mod:`vectorworld.data.tfrecord` does the framing, our wire-compatible ``tf.train.Example``
(``proto/tfexample/example.proto`` -> :mod:`vectorworld.data.tf_example_pb2`) the parsing. One Example is
one scenario of flattened, fixed-capacity feature lists (names as in the WOMD tf.Example spec):

* ``scenario/id`` (bytes); ``state/id``, ``state/type`` (float, one per object slot), ``state/is_sdc``,
  ``state/tracks_to_predict``, ``state/objects_of_interest`` (int64);
  ``state/{past,current,future}/{x,y,z,bbox_yaw,length,width,height,velocity_x,velocity_y,vel_yaw,speed}``
  (float) and ``.../{valid,timestamp_micros}`` (int64), (objects x steps) row-major. Past + current +
  future are the scenario's steps; ``current_index`` = the number of past steps. Object slots never valid
  are padding and dropped.
* ``roadgraph_samples/{xyz,dir}`` (float, 3 per sample), ``/{id,type,valid}`` (int64): map points, regrouped
  into features by id in sample order. Types: 0-3 lane (WOMD LaneCenter.type), 5-13 road line
  (RoadLine.type + 5), 14-16 road edge (RoadEdge.type + 14), 17 stop sign, 18 crosswalk, 19 speed bump,
  20 driveway; others are counted in ``metadata["skipped_roadgraph_samples"]``.
* ``traffic_light_state/{past,current,future}/{state,valid,id,x,y,z}`` (steps x lights) and
  ``.../timestamp_micros`` (one per step: the scenario's timestamps when present, else a 10 Hz grid).

The format has no lane graph, neighbours, boundaries, speed limits or ``interpolating`` flags: successor
edges are inferred from the geometry (:func:`~vectorworld.data.assemble.infer_successors`), widths and
speed limits take the defaults, stop signs lose their controlled lanes. Coordinates are float32.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from vectorworld.data import assemble, tf_example_pb2, womd_pb2
from vectorworld.data.scenario import Scenario, ScenarioSource, TrafficSignals
from vectorworld.data.tfrecord import Record, iter_records, read_record, write_records
from vectorworld.data.womd_export import (
    KIND_CODES,
    ROAD_EDGE_BASE,
    ROAD_LINE_BASE,
    feature_points,
    roadgraph_type,
    signal_steps,
    track_arrays,
)
from vectorworld.data.womd_map import road_map_from_features
from vectorworld.errors import DataFormatError

DATASET = "womd-example"
SEGMENTS = ("past", "current", "future")
STATE_FLOATS = ("x", "y", "z", "bbox_yaw", "length", "width", "height", "velocity_x", "velocity_y", "vel_yaw",
                "speed")
LIGHT_FIELDS = ("state", "valid", "id", "x", "y", "z")
STOP_SIGN, CROSSWALK, SPEED_BUMP, DRIVEWAY = (KIND_CODES[k] for k in ("stop_sign", "crosswalk", "speed_bump",
                                                                       "driveway"))
_POLYGON_TYPES = {CROSSWALK: "crosswalk", SPEED_BUMP: "speed_bump", DRIVEWAY: "driveway"}


# --- reading ---------------------------------------------------------------------------------------------

def parse_example(payload: bytes, where: str) -> dict[str, np.ndarray | list[bytes]]:
    """Feature name -> values of one serialized tf.Example (float32 / int64 arrays, lists of bytes)."""
    try:
        msg = tf_example_pb2.Example.FromString(payload)
    except DecodeError as exc:
        raise DataFormatError(f"{where}: not a tf.Example protobuf ({exc})") from exc
    out: dict[str, np.ndarray | list[bytes]] = {}
    for name, feature in msg.features.feature.items():
        kind = feature.WhichOneof("kind")
        if kind == "float_list":
            out[name] = np.asarray(feature.float_list.value, np.float32)
        elif kind == "int64_list":
            out[name] = np.asarray(feature.int64_list.value, np.int64)
        elif kind == "bytes_list":
            out[name] = list(feature.bytes_list.value)
    return out


def looks_like_womd_example(payload: bytes) -> bool:
    """Whether a TFRecord payload is a WOMD tf.Example (has object states or roadgraph samples)."""
    try:
        feats = tf_example_pb2.Example.FromString(payload).features.feature
    except DecodeError:
        return False
    return "state/current/x" in feats or "roadgraph_samples/xyz" in feats


class _Fields:
    """Typed access to the parsed features; errors name the feature."""

    def __init__(self, feats: dict[str, np.ndarray | list[bytes]], where: str) -> None:
        self.feats, self.where = feats, where

    def array(self, name: str, rows: int | None = None, cols: int | None = None) -> np.ndarray:
        value = self.feats.get(name)
        if value is None:
            raise DataFormatError(f"{self.where}: tf.Example has no feature {name!r}")
        if isinstance(value, list):
            raise DataFormatError(f"{self.where}: feature {name!r} holds bytes, expected numbers")
        if rows is None:
            return value
        cols = len(value) // rows if cols is None and rows else cols
        if rows * (cols or 0) != len(value):
            raise DataFormatError(
                f"{self.where}: feature {name!r} has {len(value)} values, expected {rows} x {cols}")
        return value.reshape(rows, cols or 0)

    def optional(self, name: str, rows: int, cols: int) -> np.ndarray | None:
        return self.array(name, rows, cols) if name in self.feats else None


def scenario_from_example(feats: dict[str, np.ndarray | list[bytes]], source: ScenarioSource,
                          where: str) -> Scenario:
    """Convert the parsed features of one WOMD tf.Example (see module docstring)."""
    f = _Fields(feats, where)
    slots = len(f.array("state/id"))
    counts = {seg: len(f.array(f"state/{seg}/x")) // max(slots, 1) for seg in SEGMENTS}
    if counts["current"] != 1:
        raise DataFormatError(f"{where}: feature 'state/current/x' must hold one step per object slot")

    def over_time(name: str) -> np.ndarray:  # (slots, S)
        return np.concatenate([f.array(f"state/{seg}/{name}", slots, counts[seg]) for seg in SEGMENTS], axis=1)

    valid_all = over_time("valid") > 0
    keep = np.nonzero(valid_all.any(axis=1))[0]
    cols = {name: over_time(name)[keep].astype(np.float64) for name in ("x", "y", "bbox_yaw", "velocity_x",
                                                                       "velocity_y", "length", "width", "height")}
    valid = valid_all[keep]
    current = counts["past"]
    num_steps = valid.shape[1]
    tracks = assemble.build_tracks(
        ids=np.rint(f.array("state/id", slots, 1)[keep, 0]).astype(np.int64),
        types=np.rint(f.array("state/type", slots, 1)[keep, 0]).astype(np.int64),
        xy=np.stack([cols["x"], cols["y"]], -1), yaw=cols["bbox_yaw"],
        velocity=np.stack([cols["velocity_x"], cols["velocity_y"]], -1),
        size=np.stack([cols["length"], cols["width"], cols["height"]], -1), valid=valid, current=current)
    position = {int(slot): i for i, slot in enumerate(keep)}

    def flagged(name: str) -> list[int]:
        flags = f.optional(name, slots, 1)
        return [] if flags is None else [int(s) for s in np.nonzero(flags[:, 0] > 0)[0] if int(s) in position]

    sdc = flagged("state/is_sdc")
    timestamps = _timestamps(f, counts, num_steps)
    features, skipped = _map_features(f, where)
    road_map, notes = road_map_from_features(features)
    sid = _scenario_id(feats)
    metadata = {"objects_of_interest": [int(tracks.ids[position[s]]) for s in flagged("state/objects_of_interest")],
                "timestamp_offset_s": float(timestamps[0]), "inferred": ["successors"], **notes}
    if skipped:
        metadata["skipped_roadgraph_samples"] = skipped
    return Scenario(
        scenario_id=sid or source.name, timestamps_s=timestamps - timestamps[0], current_index=current,
        tracks=tracks, map=road_map, signals=_signals(f, counts), source=source,
        sdc_index=position[sdc[0]] if sdc else -1,
        predict_indices=np.asarray([position[s] for s in flagged("state/tracks_to_predict")], np.int64),
        metadata=metadata)


def _timestamps(f: _Fields, counts: dict[str, int], num_steps: int) -> np.ndarray:
    """(S,) s: the traffic-light timestamps when present and increasing, else a 10 Hz grid."""
    names = [f"traffic_light_state/{seg}/timestamp_micros" for seg in SEGMENTS]
    if all(n in f.feats for n in names):
        micros = np.concatenate([f.array(n, 1, counts[seg])[0] for n, seg in zip(names, SEGMENTS, strict=True)])
        if len(micros) == num_steps and (num_steps < 2 or np.all(np.diff(micros) > 0)):
            return micros.astype(np.float64) / 1e6
    return np.arange(num_steps) * 0.1


def _signals(f: _Fields, counts: dict[str, int]) -> TrafficSignals:
    if "traffic_light_state/current/state" not in f.feats:
        return TrafficSignals.empty(sum(counts.values()))
    lights = len(f.array("traffic_light_state/current/state"))
    steps: list[list[tuple[int, int, float, float]]] = []
    for seg in SEGMENTS:
        cols = {name: f.array(f"traffic_light_state/{seg}/{name}", counts[seg], lights) for name in LIGHT_FIELDS
                if name != "z"}
        for k in range(counts[seg]):
            on = np.nonzero(cols["valid"][k] > 0)[0]
            steps.append([(int(cols["id"][k, j]), int(cols["state"][k, j]), float(cols["x"][k, j]),
                           float(cols["y"][k, j])) for j in on])
    return TrafficSignals.from_steps(steps)


def _map_features(f: _Fields, where: str) -> tuple[list[womd_pb2.MapFeature], dict[str, int]]:
    """Regroup the roadgraph samples by id into WOMD map features (lanes get inferred successors)."""
    if "roadgraph_samples/xyz" not in f.feats:
        return [], {}
    xyz = f.array("roadgraph_samples/xyz", None)
    points = len(xyz) // 3
    xyz = f.array("roadgraph_samples/xyz", points, 3).astype(np.float64)
    ids = f.array("roadgraph_samples/id", points, 1)[:, 0]
    types = f.array("roadgraph_samples/type", points, 1)[:, 0]
    valid = f.array("roadgraph_samples/valid", points, 1)[:, 0] > 0 if "roadgraph_samples/valid" in f.feats \
        else np.ones(points, bool)
    order: dict[int, list[int]] = {}
    for i in np.nonzero(valid)[0]:
        order.setdefault(int(ids[i]), []).append(int(i))
    lanes: dict[int, tuple[np.ndarray, int]] = {}
    others: list[womd_pb2.MapFeature] = []
    skipped: dict[str, int] = {}
    for fid, rows in order.items():
        code, pts = int(types[rows[0]]), xyz[rows]
        if 0 <= code <= 3:
            lanes[fid] = (pts, code)
        elif ROAD_LINE_BASE <= code < ROAD_EDGE_BASE:
            others.append(assemble.polyline_feature("road_line", fid, pts, code - ROAD_LINE_BASE))
        elif ROAD_EDGE_BASE <= code < STOP_SIGN:
            others.append(assemble.polyline_feature("road_edge", fid, pts, code - ROAD_EDGE_BASE))
        elif code == STOP_SIGN:
            others.append(assemble.stop_sign_feature(fid, pts[0]))
        elif code in _POLYGON_TYPES:
            others.append(assemble.polyline_feature(_POLYGON_TYPES[code], fid, pts))
        else:
            skipped[str(code)] = skipped.get(str(code), 0) + len(rows)
    successors = assemble.infer_successors({fid: pts for fid, (pts, _) in lanes.items()})
    features = [assemble.lane_feature(fid, pts, code, exit_=successors[fid]) for fid, (pts, code) in lanes.items()]
    return features + others, skipped


def scenario_from_record(path: str | Path, record: Record) -> Scenario:
    """Parse and convert one TFRecord record of a WOMD tf.Example file."""
    where = f"{path}: record {record.index} at byte offset {record.offset}"
    feats = parse_example(record.payload, where)
    source = ScenarioSource(dataset=DATASET, path=str(path), index=record.index, name=_scenario_id(feats))
    return scenario_from_example(feats, source, where)


def _scenario_id(feats: dict[str, np.ndarray | list[bytes]]) -> str:
    value = feats.get("scenario/id")
    return value[0].decode("utf-8", "replace") if isinstance(value, list) and value else ""


def iter_womd_example(path: str | Path, verify: bool = True) -> Iterator[Scenario]:
    for record in iter_records(path, verify=verify):
        yield scenario_from_record(path, record)


def read_womd_example(path: str | Path, selector: int | str = 0, verify: bool = True) -> Scenario:
    """One scenario: by record index (int or digits) or by ``scenario/id`` (other strings)."""
    if isinstance(selector, int) or selector.isdigit():
        return scenario_from_record(path, read_record(path, int(selector), verify=verify))
    for record in iter_records(path, verify=verify):
        if _scenario_id(parse_example(record.payload, f"{path}: record {record.index}")) == selector:
            return scenario_from_record(path, record)
    raise DataFormatError(f"{path}: no scenario with id {selector!r}")


# --- writing ---------------------------------------------------------------------------------------------

def example_from_womd(msg: womd_pb2.Scenario, max_objects: int = 128, max_points: int = 30000,
                      max_lights: int = 16) -> tf_example_pb2.Example:
    """A WOMD Scenario message as a WOMD tf.Example with the official capacities (ValueError if it does not
    fit). Padding: ids, types and coordinates -1, valid 0."""
    arrays = track_arrays(msg)
    num, steps = arrays.valid.shape
    if num > max_objects:
        raise ValueError(f"tracks: {num} tracks exceed max_objects {max_objects}")
    current = int(msg.current_time_index)
    ex = tf_example_pb2.Example()
    feats = ex.features.feature
    feats["scenario/id"].bytes_list.value.append(msg.scenario_id.encode())

    def put(name: str, values: np.ndarray, as_int: bool = False) -> None:
        target = feats[name].int64_list if as_int else feats[name].float_list
        target.value.extend(np.asarray(values).reshape(-1).tolist())

    def padded(values: np.ndarray, fill: float) -> np.ndarray:
        out = np.full((max_objects,) + values.shape[1:], fill, np.float64)
        out[:num] = values
        return out

    put("state/id", padded(arrays.ids.astype(np.float64), -1))
    put("state/type", padded(arrays.types.astype(np.float64), -1))
    flags = {"state/is_sdc": [msg.sdc_track_index] if msg.HasField("sdc_track_index") else [],
             "state/tracks_to_predict": [r.track_index for r in msg.tracks_to_predict],
             "state/objects_of_interest": [i for i, t in enumerate(msg.tracks) if t.id in set(msg.objects_of_interest)]}
    for name, rows in flags.items():
        col = np.zeros(max_objects, np.int64)
        col[[r for r in rows if 0 <= r < num]] = 1
        put(name, col, as_int=True)
    valid = arrays.valid
    vx, vy = arrays.field("velocity_x"), arrays.field("velocity_y")
    derived = {"x": arrays.field("center_x"), "y": arrays.field("center_y"), "z": arrays.field("center_z"),
               "bbox_yaw": arrays.field("heading"), "length": arrays.field("length"),
               "width": arrays.field("width"), "height": arrays.field("height"), "velocity_x": vx,
               "velocity_y": vy, "vel_yaw": np.arctan2(vy, vx), "speed": np.hypot(vx, vy)}
    micros = np.rint(np.asarray(msg.timestamps_seconds, np.float64) * 1e6).astype(np.int64)
    bounds = {"past": (0, current), "current": (current, current + 1), "future": (current + 1, steps)}
    for seg, (lo, hi) in bounds.items():
        for name in STATE_FLOATS:
            put(f"state/{seg}/{name}", padded(np.where(valid, derived[name], -1.0)[:, lo:hi], -1))
        put(f"state/{seg}/valid", padded(valid[:, lo:hi].astype(np.float64), 0).astype(np.int64), as_int=True)
        stamps = np.where(valid, micros[None], -1)[:, lo:hi]
        put(f"state/{seg}/timestamp_micros", padded(stamps.astype(np.float64), -1).astype(np.int64), as_int=True)
    _put_lights(msg, put, bounds, micros, max_lights)
    _put_roadgraph(msg, put, max_points)
    return ex


def _put_lights(msg: womd_pb2.Scenario, put, bounds: dict[str, tuple[int, int]], micros: np.ndarray,
                max_lights: int) -> None:
    steps = signal_steps(msg)
    cols = {name: np.full((len(steps), max_lights), -1.0) for name in LIGHT_FIELDS}
    cols["valid"][:] = 0
    for k, entries in enumerate(steps):
        if len(entries) > max_lights:
            raise ValueError(f"dynamic_map_states[{k}]: {len(entries)} signals exceed max_lights {max_lights}")
        for j, e in enumerate(entries):
            for name, value in zip(LIGHT_FIELDS, (e.state, 1, e.lane) + e.stop_xyz, strict=True):
                cols[name][k, j] = value
    for seg, (lo, hi) in bounds.items():
        for name in LIGHT_FIELDS:
            put(f"traffic_light_state/{seg}/{name}", cols[name][lo:hi].astype(np.int64) if name in
                ("state", "valid", "id") else cols[name][lo:hi], as_int=name in ("state", "valid", "id"))
        put(f"traffic_light_state/{seg}/timestamp_micros", micros[lo:hi], as_int=True)


def _put_roadgraph(msg: womd_pb2.Scenario, put, max_points: int) -> None:
    blocks = []
    for feature in msg.map_features:
        kind = feature.WhichOneof("feature_data")
        pts = feature_points(feature)
        if kind is None or not len(pts):
            continue
        code = roadgraph_type(feature)
        step = np.diff(pts, axis=0, append=pts[-1:])
        norm = np.linalg.norm(step, axis=1, keepdims=True)
        blocks.append((pts, np.divide(step, norm, out=np.zeros_like(step), where=norm > 0), feature.id, code))
    total = sum(len(b[0]) for b in blocks)
    if total > max_points:
        raise ValueError(f"map_features: {total} roadgraph samples exceed max_points {max_points}")
    xyz, direction = np.full((max_points, 3), -1.0), np.zeros((max_points, 3))
    ids, types, valid = (np.full(max_points, -1, np.int64), np.full(max_points, -1, np.int64),
                         np.zeros(max_points, np.int64))
    at = 0
    for pts, dirs, fid, code in blocks:
        xyz[at:at + len(pts)], direction[at:at + len(pts)] = pts, dirs
        ids[at:at + len(pts)], types[at:at + len(pts)], valid[at:at + len(pts)] = fid, code, 1
        at += len(pts)
    put("roadgraph_samples/xyz", xyz)
    put("roadgraph_samples/dir", direction)
    put("roadgraph_samples/id", ids, as_int=True)
    put("roadgraph_samples/type", types, as_int=True)
    put("roadgraph_samples/valid", valid, as_int=True)


def write_womd_example(path: str | Path, msgs: list[womd_pb2.Scenario], compress: bool = False,
                       **capacities: int) -> int:
    """Write WOMD Scenario messages as a tf.Example TFRecord file; returns the number of records."""
    return write_records(path, (example_from_womd(m, **capacities).SerializeToString() for m in msgs),
                         compress=compress)
