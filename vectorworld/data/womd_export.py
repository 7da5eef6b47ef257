"""Plain arrays out of a WOMD ``Scenario`` message: what the format writers (tf.Example, GPUDrive JSON,
ScenarioNet) start from, as the official converters do."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld.data import womd_pb2

STATE_FIELDS = ("center_x", "center_y", "center_z", "length", "width", "height", "heading", "velocity_x",
                "velocity_y", "valid")


@dataclass(frozen=True)
class TrackArrays:
    """T tracks over S steps. states: (T, S, 10) float64 in :data:`STATE_FIELDS` order; valid: (T, S)."""

    ids: np.ndarray
    types: np.ndarray
    states: np.ndarray
    valid: np.ndarray

    def field(self, name: str) -> np.ndarray:
        """(T, S) one state field."""
        return self.states[..., STATE_FIELDS.index(name)]


def track_arrays(msg: womd_pb2.Scenario) -> TrackArrays:
    steps = len(msg.timestamps_seconds)
    rows = [[[getattr(s, f) for f in STATE_FIELDS] for s in t.states] for t in msg.tracks]
    for i, t in enumerate(msg.tracks):
        if len(t.states) != steps:
            raise ValueError(f"tracks[{i}].states: {len(t.states)} states, expected {steps}")
    states = np.asarray(rows, np.float64).reshape(len(rows), steps, len(STATE_FIELDS))
    return TrackArrays(ids=np.asarray([t.id for t in msg.tracks], np.int64),
                       types=np.asarray([t.object_type for t in msg.tracks], np.int64),
                       states=states, valid=states[..., -1] > 0.5)


@dataclass(frozen=True)
class SignalEntry:
    lane: int
    state: int
    stop_xyz: tuple[float, float, float]


def signal_steps(msg: womd_pb2.Scenario) -> list[list[SignalEntry]]:
    """Per step (S lists) the signal states of that step."""
    steps = len(msg.timestamps_seconds)
    out = [[SignalEntry(int(s.lane), int(s.state), (s.stop_point.x, s.stop_point.y, s.stop_point.z))
            for s in dyn.lane_states] for dyn in msg.dynamic_map_states[:steps]]
    return out + [[] for _ in range(steps - len(out))]


def feature_points(feature: womd_pb2.MapFeature) -> np.ndarray:
    """(N, 3) the polyline / polygon / position of any map feature."""
    kind = feature.WhichOneof("feature_data")
    if kind is None:
        return np.zeros((0, 3))
    msg = getattr(feature, kind)
    if kind == "stop_sign":
        pts = [msg.position]
    elif kind in ("crosswalk", "speed_bump", "driveway"):
        pts = msg.polygon
    else:
        pts = msg.polyline
    return np.array([(p.x, p.y, p.z) for p in pts], np.float64).reshape(-1, 3)


ROAD_LINE_BASE, ROAD_EDGE_BASE = 5, 14
"""tf.Example / GPUDrive map type codes: road lines are RoadLine.type + 5, road edges RoadEdge.type + 14."""
KIND_CODES = {"stop_sign": 17, "crosswalk": 18, "speed_bump": 19, "driveway": 20}


def roadgraph_type(feature: womd_pb2.MapFeature) -> int:
    """The tf.Example ``roadgraph_samples/type`` (GPUDrive ``map_element_id``) of a map feature; -1 if empty."""
    kind = feature.WhichOneof("feature_data")
    if kind == "lane":
        return int(feature.lane.type)
    if kind == "road_line":
        return ROAD_LINE_BASE + int(feature.road_line.type)
    if kind == "road_edge":
        return ROAD_EDGE_BASE + int(feature.road_edge.type)
    return KIND_CODES.get(kind or "", -1)
