"""WOMD reader: the real sample's exact contents, and mapping rules on synthetic protobufs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from vectorworld.data import womd_pb2
from vectorworld.data.scenario import SignalState
from vectorworld.data.tfrecord import encode_record, write_records
from vectorworld.data.womd import iter_womd, read_womd
from vectorworld.data.womd_map import DEFAULT_LANE_WIDTH_M, MPH_TO_MPS
from vectorworld.errors import DataFormatError
from vectorworld.scene import AgentType, LaneType

ROOT = Path(__file__).resolve().parents[2]


# --- the real sample -----------------------------------------------------------------------------------

def test_real_sample_counts(womd_scenario) -> None:
    s = womd_scenario
    assert s.num_steps == 91
    assert s.current_index == 10
    assert s.tracks.num_tracks == 83
    assert s.type_counts() == {"vehicle": 70, "pedestrian": 10, "cyclist": 3}
    assert len(s.map.lanes) == 199
    assert len(s.map.road_lines) == 59
    assert len(s.map.road_edges) == 28
    assert len(s.map.stop_signs) == 8
    assert len(s.map.crosswalks) == 4
    assert len(s.map.speed_bumps) == 3
    assert len(s.map.driveways) == 0
    assert (s.signals.valid.sum(axis=1) == 12).all()
    assert s.scenario_id == "637f20cafde22ff8"
    assert np.allclose(np.diff(s.timestamps_s), 0.1, atol=1e-3)


def test_real_sample_lane_graph_consistent(womd_scenario) -> None:
    lanes = womd_scenario.map.lanes
    edges = 0
    for lane in lanes.lanes.values():
        for succ in lane.successors:
            assert succ in lanes
            assert lane.id in lanes[succ].predecessors
            assert np.linalg.norm(lane.points[-1] - lanes[succ].points[0]) < 1.0
            edges += 1
        for other in lane.left_neighbors + lane.right_neighbors:
            assert other in lanes
    assert edges >= 190


def test_real_sample_lanes_and_tracks_plausible(womd_scenario) -> None:
    s = womd_scenario
    widths = np.array([lane.width_m for lane in s.map.lanes.lanes.values()])
    assert 3.0 < np.median(widths) < 4.5
    limits = {round(lane.speed_limit_mps, 3) for lane in s.map.lanes.lanes.values()}
    assert round(25 * MPH_TO_MPS, 3) in limits or round(45 * MPH_TO_MPS, 3) in limits
    tr = s.tracks
    assert s.sdc_index == 82 and tr.ids[82] == 2406
    assert tr.valid[s.sdc_index].all()
    assert np.all(tr.xy[~tr.valid] == 0.0)
    vehicles = tr.types == AgentType.VEHICLE
    assert 4.0 < np.median(tr.length[vehicles]) < 5.5
    # the map covers the agents
    x0, y0, x1, y1 = s.map.extent()
    current = tr.xy[:, s.current_index][tr.valid[:, s.current_index]]
    assert np.all((current[:, 0] > x0 - 50) & (current[:, 0] < x1 + 50))
    assert s.map.drivable_area.contains(__import__("shapely").Point(tr.xy[s.sdc_index, 10]))


def test_real_sample_agents_at(womd_scenario) -> None:
    s = womd_scenario
    agents = s.agents_at()
    assert agents.capacity == int(s.tracks.valid[:, 10].sum())
    assert agents.history.shape == (agents.capacity, 11, 4)
    slot = agents.slot_of(2406)
    row = s.sdc_index
    assert np.allclose(agents.history[slot, :, :2], s.tracks.xy[row, :11])
    assert np.allclose(agents.history[slot, -1, :2], agents.xy[slot])
    later = s.agents_at(50, include_ego=False, capacity=100)
    assert later.capacity == 100 and not np.any(later.id[later.valid] == 2406)
    early = s.agents_at(3)
    assert not early.history_valid[:, :7].any() and early.history_valid[:, 7:].any()


def test_generated_code_is_up_to_date(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "tools" / "gen_protos.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for path in gen.generate(tmp_path):
        checked_in = ROOT / path.relative_to(tmp_path)
        assert gen.without_tool_versions(checked_in.read_bytes()) == gen.without_tool_versions(path.read_bytes()), \
            f"{checked_in} is stale: run tools/gen_protos.py"


# --- synthetic protobufs -------------------------------------------------------------------------------

def _point(msg, x: float, y: float) -> None:
    p = msg.add()
    p.x, p.y, p.z = x, y, 0.0


def synthetic_scenario(num_steps: int = 20) -> womd_pb2.Scenario:
    """Lane 1 (straight, 0..50 m) -> lane 2 (interpolating) -> lane 3; lane 4 runs 3.6 m to the left of 1;
    road line 10 and road edge 11 bound lane 1 at 1.7 and 1.9 m; lane 5 has a single point."""
    s = womd_pb2.Scenario(scenario_id="synthetic", current_time_index=10, sdc_track_index=0)
    s.timestamps_seconds.extend(np.arange(num_steps) * 0.1 + 3.0)
    for i, (typ, y0, speed) in enumerate([(1, 0.0, 5.0), (2, 4.0, 0.0), (3, -4.0, 1.0)]):
        track = s.tracks.add(id=100 + i, object_type=typ)
        for t in range(num_steps):
            track.states.add(center_x=speed * 0.1 * t, center_y=y0, heading=0.0, velocity_x=speed,
                             velocity_y=0.0, length=4.5 if typ == 1 else 0.8, width=2.0, height=1.5,
                             valid=not (i == 2 and t < 5))
    lane_xs = {1: np.arange(0.0, 50.5, 0.5), 2: np.arange(50.0, 60.5, 0.5), 3: np.arange(60.0, 80.5, 0.5)}
    for lane_id, xs in lane_xs.items():
        f = s.map_features.add(id=lane_id)
        f.lane.speed_limit_mph = 25.0 if lane_id != 3 else 0.0
        f.lane.type = 2
        f.lane.interpolating = lane_id == 2
        for x in xs:
            _point(f.lane.polyline, x, 0.0)
        if lane_id < 3:
            f.lane.exit_lanes.append(lane_id + 1)
        if lane_id > 1:
            f.lane.entry_lanes.append(lane_id - 1)
    s.map_features[0].lane.left_neighbors.add(feature_id=4, self_start_index=0, self_end_index=100)
    s.map_features[0].lane.left_boundaries.add(lane_start_index=0, lane_end_index=100, boundary_feature_id=10)
    s.map_features[0].lane.right_boundaries.add(lane_start_index=0, lane_end_index=100, boundary_feature_id=11)
    s.map_features[0].lane.exit_lanes.append(999)  # not in the scenario: dropped
    f = s.map_features.add(id=4)
    for x in np.arange(0.0, 50.5, 0.5):
        _point(f.lane.polyline, x, 3.6)
    f.lane.right_neighbors.add(feature_id=1, self_start_index=0, self_end_index=100)
    f = s.map_features.add(id=5)
    _point(f.lane.polyline, 90.0, 0.0)
    f = s.map_features.add(id=10)
    f.road_line.type = 1
    for x in (0.0, 50.0):
        _point(f.road_line.polyline, x, 1.7)
    f = s.map_features.add(id=11)
    f.road_edge.type = 1
    for x in (0.0, 50.0):
        _point(f.road_edge.polyline, x, -1.9)
    f = s.map_features.add(id=12)
    f.stop_sign.lane.append(3)
    f.stop_sign.position.x, f.stop_sign.position.y = 60.0, -2.0
    f = s.map_features.add(id=13)
    for x, y in [(20, -3), (24, -3), (24, 3), (20, 3)]:
        _point(f.crosswalk.polygon, x, y)
    for t in range(num_steps - 2):  # fewer dynamic states than steps: padded
        dyn = s.dynamic_map_states.add()
        dyn.lane_states.add(lane=2, state=6 if t > 5 else 4).stop_point.x = 50.0
    s.tracks_to_predict.add(track_index=1, difficulty=1)
    return s


def test_synthetic_mapping(tmp_path: Path) -> None:
    path = tmp_path / "synthetic.tfrecord"
    write_records(path, [synthetic_scenario().SerializeToString()])
    s = read_womd(path)
    lanes = s.map.lanes
    assert sorted(lanes.lanes) == [1, 2, 3, 4, 5]
    assert lanes[1].successors == (2,) and lanes[2].predecessors == (1,) and lanes[2].successors == (3,)
    assert lanes[1].left_neighbors == (4,) and lanes[4].right_neighbors == (1,)
    assert lanes[2].lane_type == LaneType.CONNECTOR and lanes[1].lane_type == LaneType.SURFACE_STREET
    assert lanes[1].speed_limit_mps == pytest.approx(25.0 * MPH_TO_MPS)
    assert lanes[3].speed_limit_mps == pytest.approx(13.9)
    assert lanes[1].width_m == pytest.approx(3.6, abs=1e-6)   # 1.7 + 1.9 from both boundaries
    assert lanes[4].width_m == pytest.approx(3.6, abs=1e-6)   # centre-to-centre distance to lane 1
    assert lanes[3].width_m == DEFAULT_LANE_WIDTH_M
    assert lanes[5].length_m == 0.0 and s.metadata["single_point_lanes"] == [5]
    assert s.map.road_lines.types.tolist() == [1] and s.map.road_edges.ids.tolist() == [11]
    assert s.map.stop_signs.lane_ids == ((3,),) and np.allclose(s.map.stop_signs.xy, [[60.0, -2.0]])
    assert s.map.crosswalks[0].shape == (4, 2)
    assert s.timestamps_s[0] == 0.0 and s.metadata["timestamp_offset_s"] == pytest.approx(3.0)
    assert s.signals.at(0) == {2: SignalState.STOP} and s.signals.at(10) == {2: SignalState.GO}
    assert s.signals.at(19) == {}
    tr = s.tracks
    assert tr.types.tolist() == [1, 2, 3] and s.sdc_index == 0
    assert not tr.valid[2, :5].any() and tr.valid[2, 5:].all()
    assert np.allclose(tr.speed[0], 5.0) and tr.xy[0, 10, 0] == pytest.approx(5.0)
    assert s.predict_indices.tolist() == [1]
    assert s.ego_state()[0][0] == pytest.approx(5.0)


def test_select_by_id_and_iterate(tmp_path: Path) -> None:
    a, b = synthetic_scenario(), synthetic_scenario()
    b.scenario_id = "second"
    path = tmp_path / "two.tfrecord.gz"
    write_records(path, [a.SerializeToString(), b.SerializeToString()], compress=True)
    assert [s.scenario_id for s in iter_womd(path)] == ["synthetic", "second"]
    assert read_womd(path, "second").source.index == 1
    assert read_womd(path, "1").scenario_id == "second"
    with pytest.raises(DataFormatError, match="no scenario with id 'nope'"):
        read_womd(path, "nope")


def test_payload_that_is_not_a_scenario(tmp_path: Path) -> None:
    path = tmp_path / "bad.tfrecord"
    path.write_bytes(encode_record(b"\xff\xff\xff\xff garbage that is no protobuf"))
    with pytest.raises(DataFormatError, match=r"bad\.tfrecord: record 0 at byte offset 0: not a WOMD Scenario"):
        read_womd(path)
    path.write_bytes(encode_record(b""))  # parses, but holds no timestamps
    with pytest.raises(DataFormatError, match="no timestamps"):
        read_womd(path)


def test_inconsistent_track_lengths(tmp_path: Path) -> None:
    msg = synthetic_scenario()
    del msg.tracks[1].states[3]
    path = tmp_path / "short.tfrecord"
    write_records(path, [msg.SerializeToString()])
    with pytest.raises(DataFormatError, match=r"track 1 \(id 101\) has 19 states, expected 20"):
        read_womd(path)
