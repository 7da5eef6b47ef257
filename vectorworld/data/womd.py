"""Waymo Open Motion Dataset reader: TFRecord files of ``Scenario`` protobufs -> :class:`Scenario`.

No TensorFlow: :mod:`vectorworld.data.tfrecord` does the framing and our wire-compatible proto subset
(``proto/womd/scenario.proto`` -> :mod:`vectorworld.data.womd_pb2`) the parsing. Tracks map to agents
with WOMD's 10 Hz steps and validity (Track.object_type numbering equals :class:`~vectorworld.scene.AgentType`);
the SDC track is the ego; traffic-signal states are kept per step.
Map conversion rules are in :mod:`vectorworld.data.womd_map`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from vectorworld.data import womd_pb2
from vectorworld.data.assemble import box_dimension
from vectorworld.data.scenario import Scenario, ScenarioSource, Tracks, TrafficSignals
from vectorworld.data.tfrecord import Record, iter_records, read_record
from vectorworld.data.womd_map import road_map_from_features
from vectorworld.errors import DataFormatError

DATASET = "womd"


def parse_scenario_proto(payload: bytes, where: str) -> womd_pb2.Scenario:
    """Parse one serialized Scenario; ``where`` (file and offset) goes into the error message."""
    try:
        msg = womd_pb2.Scenario.FromString(payload)
    except DecodeError as exc:
        raise DataFormatError(f"{where}: not a WOMD Scenario protobuf ({exc})") from exc
    if len(msg.timestamps_seconds) == 0:
        raise DataFormatError(f"{where}: not a WOMD Scenario protobuf (no timestamps_seconds)")
    return msg


def scenario_from_proto(msg: womd_pb2.Scenario, source: ScenarioSource, where: str = "") -> Scenario:
    """Convert a parsed WOMD Scenario message. Raises DataFormatError on inconsistent contents."""
    where = where or f"{source.path}#{source.index}"
    num_steps = len(msg.timestamps_seconds)
    timestamps = np.asarray(msg.timestamps_seconds, np.float64)
    tracks = _tracks(msg, num_steps, where)
    current = int(msg.current_time_index)
    if not 0 <= current < num_steps:
        raise DataFormatError(f"{where}: current_time_index {current} outside the {num_steps} timestamps")
    sdc = int(msg.sdc_track_index) if msg.HasField("sdc_track_index") else -1
    if not -1 <= sdc < tracks.num_tracks:
        raise DataFormatError(f"{where}: sdc_track_index {sdc} outside the {tracks.num_tracks} tracks")
    road_map, notes = road_map_from_features(msg.map_features)
    predict = [r.track_index for r in msg.tracks_to_predict if 0 <= r.track_index < tracks.num_tracks]
    metadata = {
        "objects_of_interest": [int(i) for i in msg.objects_of_interest],
        "tracks_to_predict_difficulty": [int(r.difficulty) for r in msg.tracks_to_predict],
        "timestamp_offset_s": float(timestamps[0]),
        **notes,
    }
    return Scenario(
        scenario_id=msg.scenario_id,
        timestamps_s=timestamps - timestamps[0],
        current_index=current,
        tracks=tracks,
        map=road_map,
        signals=_signals(msg, num_steps),
        source=source,
        sdc_index=sdc,
        predict_indices=np.asarray(predict, np.int64),
        metadata=metadata,
    )


def _tracks(msg: womd_pb2.Scenario, num_steps: int, where: str) -> Tracks:
    rows = []
    for i, track in enumerate(msg.tracks):
        if len(track.states) != num_steps:
            raise DataFormatError(
                f"{where}: track {i} (id {track.id}) has {len(track.states)} states, expected {num_steps}")
        rows.append([(s.center_x, s.center_y, s.heading, s.velocity_x, s.velocity_y, s.length, s.width,
                      s.height, s.valid) for s in track.states])
    arr = np.asarray(rows, np.float64).reshape(len(rows), num_steps, 9)
    valid = arr[..., 8] > 0.5
    arr = np.where(valid[..., None], arr, 0.0)
    return Tracks(
        ids=np.asarray([t.id for t in msg.tracks], np.int64),
        types=np.asarray([t.object_type for t in msg.tracks], np.int8),
        xy=arr[..., 0:2].copy(),
        yaw=arr[..., 2].copy(),
        velocity=arr[..., 3:5].copy(),
        length=box_dimension(arr[..., 5], valid, int(msg.current_time_index)),
        width=box_dimension(arr[..., 6], valid, int(msg.current_time_index)),
        height=box_dimension(arr[..., 7], valid, int(msg.current_time_index)),
        valid=valid,
    )


def _signals(msg: womd_pb2.Scenario, num_steps: int) -> TrafficSignals:
    steps = [[(int(s.lane), int(s.state), s.stop_point.x, s.stop_point.y) if s.HasField("stop_point")
              else (int(s.lane), int(s.state), np.nan, np.nan) for s in dyn.lane_states]
             for dyn in msg.dynamic_map_states[:num_steps]]
    steps += [[] for _ in range(num_steps - len(steps))]
    return TrafficSignals.from_steps(steps)


def scenario_from_record(path: str | Path, record: Record) -> Scenario:
    """Parse and convert one TFRecord record of a WOMD file."""
    where = f"{path}: record {record.index} at byte offset {record.offset}"
    msg = parse_scenario_proto(record.payload, where)
    source = ScenarioSource(dataset=DATASET, path=str(path), index=record.index, name=msg.scenario_id)
    return scenario_from_proto(msg, source, where)


def iter_womd(path: str | Path, verify: bool = True) -> Iterator[Scenario]:
    """Scenarios of a WOMD TFRecord file (plain or gzip), lazily, in file order."""
    for record in iter_records(path, verify=verify):
        yield scenario_from_record(path, record)


def read_womd(path: str | Path, selector: int | str = 0, verify: bool = True) -> Scenario:
    """One scenario of a WOMD file: by record index (int or digits) or by scenario id (other strings)."""
    if isinstance(selector, int) or selector.isdigit():
        return scenario_from_record(path, read_record(path, int(selector), verify=verify))
    for record in iter_records(path, verify=verify):
        where = f"{path}: record {record.index} at byte offset {record.offset}"
        msg = parse_scenario_proto(record.payload, where)
        if msg.scenario_id == selector:
            source = ScenarioSource(dataset=DATASET, path=str(path), index=record.index, name=msg.scenario_id)
            return scenario_from_proto(msg, source)
    raise DataFormatError(f"{path}: no scenario with id {selector!r}")

