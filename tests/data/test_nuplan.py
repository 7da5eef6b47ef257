"""nuPlan reader on fixture databases built from the documented schema (tests/data/nuplan_fixture.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import shapely

from vectorworld.data.nuplan import (
    EGO_LENGTH_M,
    EGO_WIDTH_M,
    REAR_AXLE_TO_CENTER_M,
    NuPlanOptions,
    list_scenes,
    read_nuplan,
    resample_10hz,
    token_to_id,
)
from vectorworld.data.nuplan_map import CONNECTOR_ID_OFFSET, find_map_file, load_nuplan_map
from vectorworld.data.scenario import SignalState
from vectorworld.errors import DataFormatError
from vectorworld.scene import AgentType, LaneType


def test_scenes(nuplan_files) -> None:
    db, _, truth = nuplan_files
    scenes = list_scenes(db)
    assert [s.name for s in scenes] == ["scene_a", "scene_b"]
    assert scenes[1].start_us == truth.frame_timestamps_us[100] and scenes[0].num_frames == 100
    by_name = read_nuplan(db, "scene_b")
    by_token = read_nuplan(db, scenes[1].token.upper())
    assert by_name.scenario_id == by_token.scenario_id == scenes[1].token
    with pytest.raises(DataFormatError, match="no scene 5; the log has 2"):
        read_nuplan(db, 5)
    with pytest.raises(DataFormatError, match="no scene named"):
        read_nuplan(db, "scene_z")


def test_downsampling_to_10hz(nuplan_files, nuplan_scenario) -> None:
    _, _, truth = nuplan_files
    s = nuplan_scenario
    assert s.num_steps == 50 and s.current_index == 10
    assert np.allclose(s.timestamps_s, np.arange(50) * 0.1)
    picks = resample_10hz(truth.frame_timestamps_us[:100])
    assert picks.tolist() == list(range(0, 100, 2))
    stamps = np.array([0, 50_000, 100_000, 400_000, 450_000])  # a 300 ms gap
    assert resample_10hz(stamps).tolist() == [0, 2, -1, -1, 3]


def test_ego_rear_axle_to_centre(nuplan_files, nuplan_scenario, nuplan_fixture) -> None:
    _, _, truth = nuplan_files
    s = nuplan_scenario
    tr = s.tracks
    assert s.sdc_index == 0 and tr.ids[0] == 0 and tr.types[0] == AgentType.VEHICLE
    heading = nuplan_fixture.HEADING
    direction = np.array([np.cos(heading), np.sin(heading)])
    expected = truth.ego_rear_xy[0:100:2] + REAR_AXLE_TO_CENTER_M * direction
    assert np.allclose(tr.xy[0], expected, atol=1e-6)
    assert np.allclose(tr.yaw[0], heading)
    assert np.allclose(tr.velocity[0], nuplan_fixture.EGO_SPEED * direction)
    assert tr.length[0] == pytest.approx(EGO_LENGTH_M) and tr.width[0] == pytest.approx(EGO_WIDTH_M)
    assert tr.valid[0].all()


def test_agents_and_categories(nuplan_files, nuplan_scenario, nuplan_fixture) -> None:
    _, _, truth = nuplan_files
    s = nuplan_scenario
    tr = s.tracks
    index = {tok: i for i, tok in enumerate(s.metadata["track_tokens"])}
    veh, bike = index[truth.vehicle_token.hex()], index[truth.bicycle_token.hex()]
    ped, cone = index[truth.pedestrian_token.hex()], index[truth.cone_token.hex()]
    assert tr.types[veh] == AgentType.VEHICLE and tr.types[ped] == AgentType.PEDESTRIAN
    assert tr.types[bike] == AgentType.CYCLIST and tr.types[cone] == AgentType.OTHER
    assert tr.ids[veh] == token_to_id(truth.vehicle_token) and len(set(tr.ids.tolist())) == len(tr.ids)
    assert tr.length[veh] == pytest.approx(4.8) and tr.width[veh] == pytest.approx(2.0)
    assert tr.length[bike] == pytest.approx(1.8) and tr.width[bike] == pytest.approx(0.7)  # from the boxes
    assert not tr.valid[bike, :20].any() and tr.valid[bike, 20:].all()  # appears at frame 40 = step 20
    assert tr.valid[veh].all()
    assert np.allclose(np.linalg.norm(tr.velocity[veh], axis=-1), 8.0)
    gap = np.linalg.norm(tr.xy[veh] - tr.xy[0], axis=-1)
    assert gap[0] == pytest.approx(25.0 - REAR_AXLE_TO_CENTER_M, abs=1e-6)
    without = read_nuplan(nuplan_files[0], 0, options=NuPlanOptions(include_static=False))
    assert AgentType.OTHER not in without.tracks.types.tolist()
    assert without.map.lanes.lanes == {}


def test_map_connectivity_and_crop(nuplan_scenario) -> None:
    lanes = nuplan_scenario.map.lanes
    c10, c11 = 10 + CONNECTOR_ID_OFFSET, 11 + CONNECTOR_ID_OFFSET
    assert sorted(lanes.lanes) == [10, 11, 12, 13, c10, c11]  # lane 99 (5 km away) cropped
    assert lanes[10].successors == (c10,) and lanes[c10].successors == (12,)
    assert lanes[12].predecessors == (c10,) and lanes[c10].predecessors == (10,)
    assert lanes[11].successors == (c11,) and lanes[c11].successors == (13,)
    assert lanes[10].left_neighbors == (11,) and lanes[11].right_neighbors == (10,)
    assert lanes[c10].lane_type == LaneType.CONNECTOR and lanes[10].lane_type == LaneType.SURFACE_STREET
    assert lanes[10].width_m == pytest.approx(3.5, abs=0.01) and lanes[c10].width_m == pytest.approx(3.5, abs=0.01)
    assert lanes[10].speed_limit_mps == 15.0 and lanes[c10].speed_limit_mps == 8.0
    assert lanes[13].speed_limit_mps == pytest.approx(13.9)
    for lane in lanes.lanes.values():
        for succ in lane.successors:
            assert np.linalg.norm(lane.points[-1] - lanes[succ].points[0]) < 1e-6


def test_map_areas_and_signals(nuplan_scenario) -> None:
    s = nuplan_scenario
    area = s.map.drivable_area
    ego_path = shapely.LineString(s.tracks.xy[0])
    assert area.buffer(1e-6).contains(ego_path)
    assert len(s.map.road_edges) >= 1 and len(s.map.crosswalks) == 1 and len(s.map.road_lines) == 1
    c10 = 10 + CONNECTOR_ID_OFFSET
    assert s.signals.at(0) == {c10: SignalState.STOP, 11 + CONNECTOR_ID_OFFSET: SignalState.UNKNOWN}
    assert s.signals.at(49)[c10] == SignalState.GO
    assert np.allclose(s.signals.stop_xy[0, 0], s.map.lanes[c10].points[0])
    assert s.metadata["projected_coord_system"].startswith("+proj=utm")


def test_find_map_file_picks_highest_version(nuplan_files, nuplan_fixture, tmp_path: Path) -> None:
    _, maps, _ = nuplan_files
    path = find_map_file(maps, ["", nuplan_fixture.MAP_NAME])
    assert path.parent.name == nuplan_fixture.MAP_VERSION
    assert find_map_file(path, ["anything"]) == path
    with pytest.raises(DataFormatError, match="no map.gpkg for map 'nowhere'"):
        find_map_file(tmp_path, ["nowhere"])
    road_map, notes = load_nuplan_map(path)
    assert 99 in road_map.lanes and notes["map_file"] == str(path)


def _copy_db(src: Path, dst: Path) -> Path:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    return dst


def test_bad_databases(nuplan_files, tmp_path: Path) -> None:
    db = nuplan_files[0]
    with pytest.raises(DataFormatError, match="no such file"):
        read_nuplan(tmp_path / "absent.db")
    text = tmp_path / "text.db"
    text.write_text("hello")
    with pytest.raises(DataFormatError, match=r"text\.db: not a nuPlan log database \(not an SQLite file\)"):
        read_nuplan(text)
    broken = _copy_db(db, tmp_path / "no_box.db")
    with sqlite3.connect(broken) as conn:
        conn.execute("DROP TABLE lidar_box")
        conn.execute("DROP TABLE category")
    with pytest.raises(DataFormatError, match=r"no_box\.db: .*missing table\(s\) lidar_box, category"):
        read_nuplan(broken)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE something (a INTEGER)")
    with pytest.raises(DataFormatError, match="missing table"):
        list_scenes(other)
    no_col = _copy_db(db, tmp_path / "no_col.db")
    with sqlite3.connect(no_col) as conn:
        conn.execute("ALTER TABLE ego_pose RENAME COLUMN qw TO quat_w")
    with pytest.raises(DataFormatError, match="table ego_pose lacks column.* qw"):
        read_nuplan(no_col)


def test_bad_map(nuplan_files, tmp_path: Path, nuplan_fixture) -> None:
    db = nuplan_files[0]
    maps = tmp_path / "maps" / nuplan_fixture.MAP_NAME / "1.0"
    maps.mkdir(parents=True)
    with sqlite3.connect(maps / "map.gpkg") as conn:
        conn.execute("CREATE TABLE lanes_polygons (fid INTEGER)")
    with pytest.raises(DataFormatError, match=r"map\.gpkg: not a nuPlan map GeoPackage: missing layer"):
        read_nuplan(db, 0, maps_root=tmp_path / "maps")


def test_log_without_scene_table(nuplan_files, tmp_path: Path) -> None:
    flat = _copy_db(nuplan_files[0], tmp_path / "flat.db")
    with sqlite3.connect(flat) as conn:
        conn.execute("DROP TABLE scene")
    scenes = list_scenes(flat)
    assert len(scenes) == 1 and scenes[0].num_frames == 200
    s = read_nuplan(flat)
    assert s.num_steps == 100 and s.scenario_id == "2021.07.01.fixture"
