"""Builders of small nuPlan fixture files (log .db and map .gpkg) following the schema in FORMATS.md.

The synthetic world: an ego drives at EGO_SPEED along lane A (heading HEADING) in UTM-like coordinates.
Lane B runs parallel, 3.5 m to A's left (same lane group). Connector 10 (same fid as lane 10 on purpose)
turns left from A into lane D; connector 11 goes straight from B into lane E. Lane 99 is 5 km away (must be
cropped). Frames are 20 Hz with a little jitter; two scenes. Extra tables and columns exist that the reader
must ignore.
"""

from __future__ import annotations

import sqlite3
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import shapely

from vectorworld.data.geopackage import encode_gpkg_geometry
from vectorworld.geometry import hermite_curve

ORIGIN = np.array([664_000.0, 3_997_000.0])
HEADING = 0.5
EGO_SPEED = 10.0
T0_US = 1_600_000_000_000_000
FRAME_US = 50_000
MAP_NAME = "us-nv-las-vegas-strip"
MAP_VERSION = "9.12.1817"
LANE_WIDTH = 3.5


def _dir(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw), np.sin(yaw)])


def _left(yaw: float) -> np.ndarray:
    return np.array([-np.sin(yaw), np.cos(yaw)])


def token(kind: int, index: int) -> bytes:
    """A deterministic 8-byte token."""
    return struct.pack(">HIH", kind, index, 0xBEEF)


@dataclass(frozen=True)
class LogTruth:
    """What the fixture log holds, for assertions."""

    frame_timestamps_us: np.ndarray   # (F,) all frames, both scenes
    scene_frames: tuple[int, ...]      # frames per scene
    ego_rear_xy: np.ndarray            # (F, 2)
    vehicle_token: bytes
    bicycle_token: bytes
    pedestrian_token: bytes
    cone_token: bytes


def lane_points() -> dict[int, np.ndarray]:
    """Centrelines by lane fid (connectors keyed 1010, 1011 here only)."""
    d, l = _dir(HEADING), _left(HEADING)
    s = np.linspace(-50.0, 100.0, 31)[:, None]
    a = ORIGIN + s * d
    b = a + LANE_WIDTH * l
    turn = HEADING + np.pi / 2
    d_start = a[-1] + 12.0 * d + 12.0 * l
    lane_d = d_start + np.linspace(0.0, 50.0, 11)[:, None] * _dir(turn)
    e_start = b[-1] + 20.0 * d
    lane_e = e_start + np.linspace(0.0, 60.0, 13)[:, None] * d
    far = ORIGIN + 5000.0 * l + np.linspace(0, 30, 4)[:, None] * d
    return {
        10: a, 11: b, 12: lane_d, 13: lane_e, 99: far,
        1010: hermite_curve(a[-1], HEADING, lane_d[0], turn, 15),
        1011: np.linspace(b[-1], e_start, 9),
    }


def build_log_db(path: str | Path, frames_per_scene: int = 100, scenes: int = 2) -> LogTruth:
    """Write a nuPlan-like log database with ``scenes`` scenes of ``frames_per_scene`` 20 Hz frames."""
    conn = sqlite3.connect(path)
    c = conn.cursor()
    c.executescript("""
        CREATE TABLE log (token BLOB PRIMARY KEY, vehicle_name TEXT, date TEXT, timestamp INTEGER,
                          logfile TEXT, location TEXT, map_version TEXT, extra_note TEXT);
        CREATE TABLE scene (token BLOB PRIMARY KEY, log_token BLOB, name TEXT, goal_ego_pose_token BLOB,
                            roadblock_ids TEXT);
        CREATE TABLE lidar_pc (token BLOB PRIMARY KEY, next_token BLOB, prev_token BLOB, scene_token BLOB,
                               ego_pose_token BLOB, lidar_token BLOB, filename TEXT, timestamp INTEGER,
                               unknown_column REAL);
        CREATE TABLE ego_pose (token BLOB PRIMARY KEY, log_token BLOB, timestamp INTEGER, x REAL, y REAL,
                               z REAL, qw REAL, qx REAL, qy REAL, qz REAL, vx REAL, vy REAL, vz REAL,
                               acceleration_x REAL, acceleration_y REAL, acceleration_z REAL,
                               angular_rate_x REAL, angular_rate_y REAL, angular_rate_z REAL, epsg INTEGER);
        CREATE TABLE category (token BLOB PRIMARY KEY, name TEXT, description TEXT);
        CREATE TABLE track (token BLOB PRIMARY KEY, category_token BLOB, width REAL, length REAL, height REAL);
        CREATE TABLE lidar_box (token BLOB PRIMARY KEY, lidar_pc_token BLOB, track_token BLOB,
                                next_token BLOB, prev_token BLOB, x REAL, y REAL, z REAL, width REAL,
                                length REAL, height REAL, vx REAL, vy REAL, vz REAL, yaw REAL,
                                confidence REAL);
        CREATE TABLE traffic_light_status (token BLOB PRIMARY KEY, lidar_pc_token BLOB,
                                           lane_connector_id INTEGER, status TEXT);
        CREATE TABLE scenario_tag (token BLOB PRIMARY KEY, lidar_pc_token BLOB, type TEXT,
                                   agent_track_token BLOB);
        CREATE TABLE lidar (token BLOB PRIMARY KEY, log_token BLOB, channel TEXT, model TEXT);
        CREATE TABLE camera (token BLOB PRIMARY KEY, log_token BLOB, channel TEXT);
    """)
    log_token = token(1, 0)
    c.execute("INSERT INTO log VALUES (?,?,?,?,?,?,?,?)", (log_token, "car-1", "2021-07-01", T0_US,
                                                           "2021.07.01.fixture", "las_vegas", MAP_NAME, "x"))
    names = ["vehicle", "pedestrian", "bicycle", "traffic_cone", "barrier", "czone_sign", "generic_object"]
    for i, name in enumerate(names):
        c.execute("INSERT INTO category VALUES (?,?,?)", (token(2, i), name, f"{name} things"))
    veh, ped, bike, cone = token(3, 0), token(3, 1), token(3, 2), token(3, 3)
    c.execute("INSERT INTO track VALUES (?,?,?,?,?)", (veh, token(2, 0), 2.0, 4.8, 1.6))
    c.execute("INSERT INTO track VALUES (?,?,?,?,?)", (ped, token(2, 1), 0.6, 0.7, 1.8))
    c.execute("INSERT INTO track VALUES (?,?,?,?,?)", (bike, token(2, 2), None, None, None))
    c.execute("INSERT INTO track VALUES (?,?,?,?,?)", (cone, token(2, 3), 0.4, 0.4, 0.8))
    d, left = _dir(HEADING), _left(HEADING)
    total = frames_per_scene * scenes
    jitter = np.array([0, 1500, -1200, 800, -400])  # microseconds
    stamps = T0_US + FRAME_US * np.arange(total) + jitter[np.arange(total) % 5]
    rear = np.zeros((total, 2))
    for s in range(scenes):
        name = f"scene_{chr(ord('a') + s)}"
        c.execute("INSERT INTO scene VALUES (?,?,?,?,?)", (token(4, s), log_token, name, None, "1,2"))
    qw, qz = np.cos(HEADING / 2), np.sin(HEADING / 2)
    box_count = 0
    for f in range(total):
        t = (stamps[f] - T0_US) / 1e6
        rear[f] = ORIGIN + (EGO_SPEED * t - 20.0) * d
        pc, pose = token(5, f), token(6, f)
        c.execute("INSERT INTO lidar_pc VALUES (?,?,?,?,?,?,?,?,?)",
                  (pc, None, None, token(4, f // frames_per_scene), pose, token(7, 0), f"f{f}.pcd",
                   int(stamps[f]), 1.0))
        c.execute("INSERT INTO ego_pose VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                  (pose, log_token, int(stamps[f]), rear[f, 0], rear[f, 1], 0.0, qw, 0.0, 0.0, qz,
                   EGO_SPEED, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 32611))
        boxes = [(veh, rear[f] + (25.0 + 8.0 * t - 2.0 * t) * d, HEADING, 8.0 * d, (4.8, 2.0)),
                 (ped, ORIGIN + 30.0 * d + 6.0 * left, HEADING + 1.0, np.zeros(2), (0.7, 0.6)),
                 (cone, ORIGIN + 10.0 * d - 2.5 * left, 0.0, np.zeros(2), (0.4, 0.4))]
        if f % frames_per_scene >= 40:
            boxes.append((bike, ORIGIN + 40.0 * d + 2.5 * left + 4.0 * t * d, HEADING, 4.0 * d, (1.8, 0.7)))
        for track_token, xy, yaw, vel, (length, width) in boxes:
            c.execute("INSERT INTO lidar_box VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                      (token(8, box_count), pc, track_token, None, None, xy[0], xy[1], 0.0, width, length,
                       1.5, vel[0], vel[1], 0.0, yaw, 0.9))
            box_count += 1
        status = "red" if f % frames_per_scene < frames_per_scene // 2 else "green"
        c.execute("INSERT INTO traffic_light_status VALUES (?,?,?,?)", (token(9, 2 * f), pc, 10, status))
        c.execute("INSERT INTO traffic_light_status VALUES (?,?,?,?)", (token(9, 2 * f + 1), pc, 11, "unknown"))
    conn.commit()
    conn.close()
    return LogTruth(stamps, (frames_per_scene,) * scenes, rear, veh, bike, ped, cone)


def _gpkg_tables(c: sqlite3.Cursor) -> None:
    c.executescript("""
        CREATE TABLE gpkg_spatial_ref_sys (srs_name TEXT, srs_id INTEGER PRIMARY KEY, organization TEXT,
                                           organization_coordsys_id INTEGER, definition TEXT, description TEXT);
        CREATE TABLE gpkg_contents (table_name TEXT PRIMARY KEY, data_type TEXT, identifier TEXT,
                                    description TEXT, last_change TEXT, min_x REAL, min_y REAL, max_x REAL,
                                    max_y REAL, srs_id INTEGER);
        CREATE TABLE gpkg_geometry_columns (table_name TEXT, column_name TEXT, geometry_type_name TEXT,
                                            srs_id INTEGER, z INTEGER, m INTEGER);
        INSERT INTO gpkg_spatial_ref_sys VALUES ('WGS 84 / UTM zone 11N', 32611, 'EPSG', 32611, '', '');
    """)


def _layer(c: sqlite3.Cursor, name: str, columns: dict[str, str], rows: list[tuple], geometry_type: str,
           geom_column: str = "geom") -> None:
    cols = "".join(f", {k} {v}" for k, v in columns.items())
    c.execute(f"CREATE TABLE {name} (fid INTEGER PRIMARY KEY, {geom_column} BLOB{cols})")
    c.execute("INSERT INTO gpkg_contents (table_name, data_type, identifier, srs_id) VALUES (?,?,?,?)",
              (name, "features", name, 32611))
    c.execute("INSERT INTO gpkg_geometry_columns VALUES (?,?,?,?,?,?)", (name, geom_column, geometry_type,
                                                                         32611, 0, 0))
    marks = ",".join("?" * (len(columns) + 2))
    for row in rows:
        fid, geom, *rest = row
        c.execute(f"INSERT INTO {name} VALUES ({marks})", (fid, encode_gpkg_geometry(geom, 32611), *rest))


def build_map_gpkg(path: str | Path) -> dict[int, np.ndarray]:
    """Write the fixture map GeoPackage; returns the centrelines by fid (connectors as 1000 + fid)."""
    pts = lane_points()
    conn = sqlite3.connect(path)
    c = conn.cursor()
    _gpkg_tables(c)
    c.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    c.execute("INSERT INTO meta VALUES ('projectedCoordSystem', '+proj=utm +zone=11 +datum=WGS84')")
    lanes = {10: (100, 1, 15.0), 11: (100, 0, 15.0), 12: (101, 0, 11.0), 13: (102, 0, None), 99: (199, 0, 9.0)}
    _layer(c, "lanes_polygons",
           {"lane_fid": "INTEGER", "lane_group_fid": "INTEGER", "lane_index": "INTEGER",
            "left_boundary_fid": "INTEGER", "right_boundary_fid": "INTEGER", "speed_limit_mps": "REAL",
            "creator_id": "TEXT"},
           [(fid, shapely.LineString(pts[fid]).buffer(LANE_WIDTH / 2, cap_style="flat"), fid, g, idx, 1, 2,
             speed, "fixture") for fid, (g, idx, speed) in lanes.items()], "POLYGON")
    _layer(c, "lane_connectors",
           {"entry_lane_fid": "INTEGER", "exit_lane_fid": "INTEGER", "lane_group_connector_fid": "INTEGER",
            "speed_limit_mps": "REAL", "left_boundary_fid": "INTEGER", "right_boundary_fid": "INTEGER"},
           # nuPlan naming: a connector *exits* lane exit_lane_fid and *enters* lane entry_lane_fid
           [(10, shapely.LineString(pts[1010]), 12, 10, 500, 8.0, 1, 2),
            (11, shapely.LineString(pts[1011]), 13, "11", 501, None, 1, 2)], "LINESTRING")
    rows = [(i + 1, shapely.LineString(pts[fid]), fid, None, 0) for i, fid in enumerate(lanes)]
    rows += [(20 + i, shapely.LineString(pts[1000 + cf]), None, cf, 1) for i, cf in enumerate((10, 11))]
    _layer(c, "baseline_paths", {"lane_fid": "INTEGER", "lane_connector_fid": "INTEGER", "path_type_fid": "INTEGER"},
           rows, "LINESTRING")
    road = shapely.union_all([shapely.LineString(pts[f]).buffer(LANE_WIDTH / 2 + 0.5, cap_style="flat")
                              for f in (10, 11, 12, 13)])
    junction = shapely.LineString(pts[1010]).buffer(6.0)
    _layer(c, "road_segments", {"name": "TEXT"}, [(1, road, "main")], "MULTIPOLYGON")
    _layer(c, "intersections", {"intersection_type_fid": "INTEGER"}, [(1, junction, 2)], "POLYGON")
    _layer(c, "generic_drivable_areas", {}, [], "POLYGON")
    cross = shapely.Point(ORIGIN + 60.0 * _dir(HEADING)).buffer(3.0, quad_segs=1)
    _layer(c, "crosswalks", {"creator": "TEXT"}, [(1, cross, "x")], "POLYGON")
    _layer(c, "boundaries", {"boundary_type_fid": "INTEGER"},
           [(1, shapely.LineString(pts[10] - LANE_WIDTH / 2 * _left(HEADING)), 2)], "LINESTRING")
    _layer(c, "walkways", {}, [], "POLYGON")
    conn.commit()
    conn.close()
    return pts


def build_maps_root(root: str | Path) -> Path:
    """``{root}/{MAP_NAME}/{MAP_VERSION}/map.gpkg`` plus an older version folder; returns the gpkg path."""
    root = Path(root)
    (root / MAP_NAME / "9.9.1").mkdir(parents=True)
    (root / MAP_NAME / "9.9.1" / "map.gpkg").write_bytes(b"an older version that must not be chosen")
    folder = root / MAP_NAME / MAP_VERSION
    folder.mkdir(parents=True)
    build_map_gpkg(folder / "map.gpkg")
    return folder / "map.gpkg"
