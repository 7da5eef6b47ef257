"""Cross-check against the official Waymo protobuf classes (skipped when waymo-open-dataset is absent).

Install without its heavy dependencies to run it: ``pip install --no-deps waymo-open-dataset-tf-2-12-0``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vectorworld.data import womd_pb2
from vectorworld.data.tfrecord import read_record

official = pytest.importorskip("waymo_open_dataset.protos.scenario_pb2", reason="waymo-open-dataset not installed")


@pytest.fixture(scope="module")
def both(womd_path: Path):
    payload = read_record(womd_path, 0).payload
    return official.Scenario.FromString(payload), womd_pb2.Scenario.FromString(payload), payload


def test_wire_compatible(both) -> None:
    theirs, ours, _ = both
    assert official.Scenario.FromString(ours.SerializeToString()) == theirs
    assert womd_pb2.Scenario.FromString(theirs.SerializeToString()) == ours
    assert womd_pb2.Scenario.DESCRIPTOR.full_name == "vectorworld.womd.Scenario"


def test_field_by_field(both, womd_scenario) -> None:
    theirs, _, _ = both
    s = womd_scenario
    assert s.scenario_id == theirs.scenario_id
    assert np.allclose(s.timestamps_s + s.metadata["timestamp_offset_s"], theirs.timestamps_seconds)
    assert s.current_index == theirs.current_time_index and s.sdc_index == theirs.sdc_track_index
    assert s.predict_indices.tolist() == [r.track_index for r in theirs.tracks_to_predict]
    for i, track in enumerate(theirs.tracks):
        assert s.tracks.ids[i] == track.id and s.tracks.types[i] == track.object_type
        valid = np.array([st.valid for st in track.states])
        assert (s.tracks.valid[i] == valid).all()
        xy = np.array([(st.center_x, st.center_y) for st in track.states])
        yaw = np.array([st.heading for st in track.states])
        vel = np.array([(st.velocity_x, st.velocity_y) for st in track.states])
        assert np.array_equal(s.tracks.xy[i][valid], xy[valid])
        assert np.array_equal(s.tracks.yaw[i][valid], yaw[valid])
        assert np.array_equal(s.tracks.velocity[i][valid], vel[valid])
        cur = theirs.current_time_index
        if valid[cur]:
            assert s.tracks.length[i] == track.states[cur].length
            assert s.tracks.width[i] == track.states[cur].width
    lanes = s.map.lanes
    for feature in theirs.map_features:
        kind = feature.WhichOneof("feature_data")
        if kind == "lane":
            lane = lanes[feature.id]
            pts = np.array([(p.x, p.y) for p in feature.lane.polyline])
            assert np.array_equal(lane.points[: len(pts)], pts)
            assert set(feature.lane.exit_lanes) <= set(lane.successors)
            assert set(feature.lane.entry_lanes) <= set(lane.predecessors)
            assert [n.feature_id for n in feature.lane.left_neighbors] == list(lane.left_neighbors)
        elif kind in ("road_line", "road_edge"):
            group = s.map.road_lines if kind == "road_line" else s.map.road_edges
            k = group.ids.tolist().index(feature.id)
            msg = getattr(feature, kind)
            assert group.types[k] == msg.type
            assert np.array_equal(group[k], np.array([(p.x, p.y) for p in msg.polyline]))
    for step, dyn in enumerate(theirs.dynamic_map_states):
        expected = {ls.lane: ls.state for ls in dyn.lane_states}
        assert {k: int(v) for k, v in s.signals.at(step).items()} == expected
