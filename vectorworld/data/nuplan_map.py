"""nuPlan GeoPackage maps -> :class:`~vectorworld.data.scenario.RoadMap`, cropped around a scenario.

Mapping decisions:

* Lanes come from ``lanes_polygons`` (id = ``fid`` as in the nuPlan devkit, ``lane_fid`` if there is no
  ``fid`` column) and lane connectors from
  ``lane_connectors`` (id = ``fid`` + :data:`CONNECTOR_ID_OFFSET`, so the two id spaces never collide;
  traffic lights name connectors by their fid and go through the same offset). Their centrelines are the
  ``baseline_paths`` keyed by ``lane_fid`` / ``lane_connector_fid``. Connectors get
  :attr:`LaneType.CONNECTOR`, lanes :attr:`LaneType.SURFACE_STREET`.
* Edges: a connector leaves its ``exit_lane_fid`` lane and enters its ``entry_lane_fid`` lane (the devkit's
  incoming / outgoing edges): exit lane -> connector -> entry lane. Left/right neighbours: lanes of
  one lane group (``lane_group_fid``) sorted by ``lane_index``; for each adjacent pair the side is decided
  geometrically (sign of the lateral offset), whatever the index convention.
* Width: lane polygon area / centreline length (lanes); mean width of the entry and exit lanes
  (connectors); else the default. Speed limit: ``speed_limit_mps`` or the default.
* Drivable area = road_segments U intersections U generic_drivable_areas U carpark_areas (the layers
  present), clipped to the crop box; its outline becomes the road edges. ``boundaries`` become road lines
  (type 0) and ``crosswalks`` the crosswalks.
* Only features intersecting the crop box are kept; edges to lanes outside it are dropped.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import shapely

from vectorworld import geometry
from vectorworld.data.geopackage import Layer, read_layer, table_names
from vectorworld.data.scenario import DEFAULT_LANE_WIDTH_M, DEFAULT_SPEED_LIMIT_MPS, Polylines, RoadMap
from vectorworld.errors import DataFormatError
from vectorworld.scene import Lane, LaneGraph, LaneType

CONNECTOR_ID_OFFSET = 1_000_000_000
"""Lane connector fid f becomes lane id f + CONNECTOR_ID_OFFSET."""
DRIVABLE_LAYERS = ("road_segments", "intersections", "generic_drivable_areas", "carpark_areas")
REQUIRED_LAYERS = ("baseline_paths", "lanes_polygons", "lane_connectors")
Bounds = tuple[float, float, float, float]


def find_map_file(maps_root: str | Path, map_names: Sequence[str]) -> Path:
    """``{maps_root}/{name}/{version}/map.gpkg`` for the first name that exists (highest version wins).

    ``maps_root`` may also be a .gpkg file itself. Raises DataFormatError when nothing matches.
    """
    root = Path(maps_root)
    if root.is_file():
        return root
    for name in map_names:
        folder = root / name
        if not name or not folder.is_dir():
            continue
        versions = sorted((p for p in folder.iterdir() if (p / "map.gpkg").is_file()), key=_version_key)
        if versions:
            return versions[-1] / "map.gpkg"
        if (folder / "map.gpkg").is_file():
            return folder / "map.gpkg"
    raise DataFormatError(f"{root}: no map.gpkg for map {' or '.join(repr(n) for n in map_names if n)} "
                          f"(expected {root}/<map name>/<version>/map.gpkg)")


def _version_key(path: Path) -> tuple[Any, ...]:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in path.name.replace("-", ".").split("."))


def open_geopackage(path: str | Path) -> sqlite3.Connection:
    """Open a GeoPackage read-only. Raises DataFormatError if missing or not a GeoPackage."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    with open(path, "rb") as f:
        if f.read(16) != b"SQLite format 3\x00":
            raise DataFormatError(f"{path}: not a GeoPackage (not an SQLite file)")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    missing = [t for t in REQUIRED_LAYERS if t not in table_names(conn)]
    if missing:
        conn.close()
        raise DataFormatError(f"{path}: not a nuPlan map GeoPackage: missing layer(s) {', '.join(missing)}")
    return conn


def load_nuplan_map(path: str | Path, bounds: Bounds | None = None) -> tuple[RoadMap, dict[str, Any]]:
    """Read the map, keeping features that intersect ``bounds`` (xmin, ymin, xmax, ymax; None = all).

    Returns the RoadMap and notes for the scenario metadata (map file, projected coordinate system).
    """
    where = str(path)
    conn = open_geopackage(path)
    try:
        box = shapely.box(*bounds) if bounds is not None else None
        names = table_names(conn)
        baseline = _crop(read_layer(conn, "baseline_paths", ["fid", "lane_fid", "lane_connector_fid"],
                                    where), box)
        lanes = read_layer(conn, "lanes_polygons", ["fid", "lane_fid", "lane_group_fid", "lane_index",
                                                    "speed_limit_mps"], where)
        connectors = read_layer(conn, "lane_connectors", ["fid", "entry_lane_fid", "exit_lane_fid",
                                                          "speed_limit_mps"], where)
        graph = _lane_graph(baseline, lanes, connectors, where)
        drivable = _drivable(conn, names, box, where)
        road_lines = (_polylines(_crop(read_layer(conn, "boundaries", ["fid"], where), box))
                      if "boundaries" in names else Polylines.empty())
        crosswalks = (_polylines(_crop(read_layer(conn, "crosswalks", ["fid"], where), box))
                      if "crosswalks" in names else Polylines.empty())
        notes: dict[str, Any] = {"map_file": where}
        if "meta" in names:
            row = _meta(conn, "projectedCoordSystem")
            if row is not None:
                notes["projected_coord_system"] = row
    except sqlite3.DatabaseError as exc:
        raise DataFormatError(f"{where}: cannot read the GeoPackage: {exc}") from exc
    finally:
        conn.close()
    edges = Polylines.empty() if drivable is None else _outline(drivable)
    return RoadMap(lanes=graph, road_lines=road_lines, road_edges=edges, crosswalks=crosswalks,
                   drivable_polygons=drivable), notes


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.DatabaseError:
        return None
    return None if row is None else str(row[0])


def _crop(layer: Layer, box: shapely.Geometry | None) -> Layer:
    present = np.array([g is not None for g in layer.geometry], dtype=bool)
    if box is None or len(layer) == 0:
        return layer.subset(present)
    hit = present.copy()
    hit[present] = shapely.intersects(layer.geometry[present].astype(object), box)
    return layer.subset(hit)


def _float(value: Any) -> float | None:
    """A float from a number or a numeric string (some maps store fids as text); None for NULL/NaN/junk."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(number) else number


def _int(value: Any) -> int | None:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    number = _float(value)
    return None if number is None else int(number)


def _line_points(geom: shapely.Geometry) -> np.ndarray | None:
    """(N, 2) points of a (multi)line; a MultiLineString is merged, else its longest part is used."""
    if geom.geom_type == "MultiLineString":
        geom = shapely.line_merge(geom)
        if geom.geom_type == "MultiLineString":
            geom = max(geom.geoms, key=lambda g: g.length)
    if geom.geom_type != "LineString":
        return None
    pts = np.asarray(geom.coords, dtype=np.float64)[:, :2]
    return pts if len(pts) >= 2 else None


def _lane_graph(baseline: Layer, lanes: Layer, connectors: Layer, where: str) -> LaneGraph:
    lane_ids = lanes.column("fid") if "fid" in lanes.columns else lanes.column("lane_fid")
    lane_rows = {_int(v): i for i, v in enumerate(lane_ids) if _int(v) is not None}
    conn_rows = {_int(v): i for i, v in enumerate(connectors.column("fid")) if _int(v) is not None}
    paths: dict[int, np.ndarray] = {}
    is_connector: dict[int, bool] = {}
    for lane_fid, conn_fid, geom in zip(baseline.column("lane_fid"), baseline.column("lane_connector_fid"),
                                        baseline.geometry, strict=True):
        pts = _line_points(geom)
        if pts is None:
            continue
        if _int(lane_fid) is not None:
            paths[_int(lane_fid)] = pts
            is_connector[_int(lane_fid)] = False
        elif _int(conn_fid) is not None:
            paths[_int(conn_fid) + CONNECTOR_ID_OFFSET] = pts
            is_connector[_int(conn_fid) + CONNECTOR_ID_OFFSET] = True
    widths: dict[int, float] = {}
    built: dict[int, dict[str, Any]] = {}
    for lane_id, pts in paths.items():
        length = float(geometry.polyline_lengths(pts)[-1])
        if is_connector[lane_id]:
            row = conn_rows.get(lane_id - CONNECTOR_ID_OFFSET)
            table = connectors
        else:
            row = lane_rows.get(lane_id)
            table = lanes
            poly = lanes.geometry[row] if row is not None else None
            if poly is not None and length > 1.0:
                widths[lane_id] = float(np.clip(poly.area / length, 1.5, 6.0))
        speed = _float(table.column("speed_limit_mps")[row]) if row is not None else None
        speed = speed if speed is not None and speed > 0 else DEFAULT_SPEED_LIMIT_MPS
        built[lane_id] = {"points": pts, "speed": speed, "succ": [], "pred": [], "left": [], "right": []}
    for lane_id, entry in built.items():
        if not is_connector[lane_id]:
            continue
        row = conn_rows.get(lane_id - CONNECTOR_ID_OFFSET)
        if row is None:
            continue
        src = _int(connectors.column("exit_lane_fid")[row])  # the lane the connector leaves
        dst = _int(connectors.column("entry_lane_fid")[row])  # the lane it enters
        if src in built and not is_connector[src]:
            built[src]["succ"].append(lane_id)
            entry["pred"].append(src)
        if dst in built and not is_connector[dst]:
            entry["succ"].append(dst)
            built[dst]["pred"].append(lane_id)
        near = [widths[i] for i in (src, dst) if i in widths]
        if near:
            widths[lane_id] = float(np.mean(near))
    _neighbours(built, lanes, lane_ids)
    graph = LaneGraph()
    graph.add(Lane(id=lane_id, points=e["points"], width_m=widths.get(lane_id, DEFAULT_LANE_WIDTH_M),
                   speed_limit_mps=e["speed"],
                   lane_type=LaneType.CONNECTOR if is_connector[lane_id] else LaneType.SURFACE_STREET,
                   successors=tuple(e["succ"]), predecessors=tuple(e["pred"]),
                   left_neighbors=tuple(e["left"]), right_neighbors=tuple(e["right"]))
              for lane_id, e in sorted(built.items()))
    return graph


def _neighbours(built: dict[int, dict[str, Any]], lanes: Layer, lane_ids: np.ndarray) -> None:
    groups: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for lane_id, group, index in zip(lane_ids, lanes.column("lane_group_fid"), lanes.column("lane_index"),
                                     strict=True):
        lane_id, group, index = _int(lane_id), _int(group), _int(index)
        if lane_id in built and group is not None and index is not None:
            groups[group].append((index, lane_id))
    for members in groups.values():
        members.sort()
        for (_, a), (_, b) in zip(members[:-1], members[1:], strict=True):
            pa, pb = built[a]["points"], built[b]["points"]
            mid = pb[len(pb) // 2][None]
            _, lateral, _ = geometry.project_to_polyline(mid, pa)
            left, right = (b, a) if lateral[0] > 0 else (a, b)  # b is left of a when lateral > 0
            built[right]["left"].append(left)
            built[left]["right"].append(right)


def _drivable(conn: sqlite3.Connection, names: set[str], box: shapely.Geometry | None,
              where: str) -> shapely.Geometry | None:
    parts = []
    for layer_name in DRIVABLE_LAYERS:
        if layer_name in names:
            layer = _crop(read_layer(conn, layer_name, ["fid"], where), box)
            parts.extend(g for g in layer.geometry if g.geom_type in ("Polygon", "MultiPolygon"))
    if not parts:
        return None
    area = shapely.union_all(np.array(parts, dtype=object))
    return area if box is None else shapely.intersection(area, box)


def _outline(area: shapely.Geometry) -> Polylines:
    rings: list[np.ndarray] = []
    for poly in getattr(area, "geoms", [area]):
        if poly.geom_type != "Polygon" or poly.is_empty:
            continue
        rings.append(np.asarray(poly.exterior.coords)[:, :2])
        rings.extend(np.asarray(r.coords)[:, :2] for r in poly.interiors)
    return Polylines.from_list(range(len(rings)), [1] * len(rings), rings)


def _polylines(layer: Layer) -> Polylines:
    ids, polys = [], []
    for fid, geom in zip(layer.column("fid", -1), layer.geometry, strict=True):
        if geom.geom_type == "Polygon":
            polys.append(np.asarray(geom.exterior.coords)[:, :2])
        elif geom.geom_type == "LineString":
            polys.append(np.asarray(geom.coords)[:, :2])
        else:
            continue
        ids.append(_int(fid) if _int(fid) is not None else -1)
    return Polylines.from_list(ids, [0] * len(ids), polys)
