"""WOMD map features -> :class:`~vectorworld.data.scenario.RoadMap`.

Mapping decisions (documented here once):

* ``LaneCenter`` -> :class:`~vectorworld.scene.Lane`: id = feature id; points = the polyline's (x, y);
  entry lanes -> predecessors, exit lanes -> successors (the graph is made symmetric: an edge listed on
  either side appears on both); left/right neighbours -> left/right neighbours. Edges to ids that are not
  lanes in this scenario are dropped. ``interpolating`` lanes (across intersections) become
  :attr:`LaneType.CONNECTOR`, the others keep WOMD's type.
* A lane polyline with a single point (they occur) becomes a zero-length two-point lane, so that lane counts
  and edges match the source.
* Speed limit: mph -> m/s; 0 (unknown) becomes :data:`DEFAULT_SPEED_LIMIT_MPS`.
* Width (WOMD has none), per lane, the first estimate with plausible samples (in
  [:data:`MIN_LANE_WIDTH_M`, :data:`MAX_LANE_WIDTH_M`]): median over vertices of the distance to the left
  boundary plus the distance to the right boundary (where both are given); else twice the distance to the
  one known boundary; else the centre-to-centre distance to the neighbour lanes (samples below
  :data:`MIN_NEIGHBOUR_DISTANCE_M` ignored: forks); else :data:`DEFAULT_LANE_WIDTH_M`.
* Road lines and road edges keep their WOMD type codes; crosswalks, speed bumps and driveways are polygon
  rings; stop signs keep their position and controlled lanes. The drivable area is derived from the lanes
  (see :func:`~vectorworld.data.scenario.lanes_drivable_area`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import shapely

from vectorworld.data.scenario import (
    DEFAULT_LANE_WIDTH_M,
    DEFAULT_SPEED_LIMIT_MPS,
    Polylines,
    RoadMap,
    StopSigns,
)
from vectorworld.scene import Lane, LaneGraph, LaneType

MPH_TO_MPS = 0.44704
MIN_LANE_WIDTH_M = 1.5
MAX_LANE_WIDTH_M = 6.0
MIN_NEIGHBOUR_DISTANCE_M = 2.5
_WIDTH_STRIDE = 4  # sample every 4th vertex (~2 m) when estimating widths


def _xy(points: Iterable[Any]) -> np.ndarray:
    """(N, 2) float64 from repeated MapPoint."""
    return np.array([(p.x, p.y) for p in points], dtype=np.float64).reshape(-1, 2)


def road_map_from_features(features: Sequence[Any]) -> tuple[RoadMap, dict[str, Any]]:
    """Convert repeated ``MapFeature`` messages to a RoadMap; also returns notes for the metadata."""
    lanes: dict[int, Any] = {}
    lane_points: dict[int, np.ndarray] = {}
    groups: dict[str, tuple[list[int], list[int], list[np.ndarray]]] = {
        k: ([], [], []) for k in ("road_line", "road_edge", "crosswalk", "speed_bump", "driveway")}
    stop_ids: list[int] = []
    stop_xy: list[tuple[float, float]] = []
    stop_lanes: list[tuple[int, ...]] = []
    for feature in features:
        kind = feature.WhichOneof("feature_data")
        if kind == "lane":
            lanes[feature.id] = feature.lane
            lane_points[feature.id] = _xy(feature.lane.polyline)
        elif kind in ("road_line", "road_edge"):
            msg = getattr(feature, kind)
            ids, types, polys = groups[kind]
            ids.append(feature.id)
            types.append(int(msg.type))
            polys.append(_xy(msg.polyline))
        elif kind in ("crosswalk", "speed_bump", "driveway"):
            ids, types, polys = groups[kind]
            ids.append(feature.id)
            types.append(0)
            polys.append(_xy(getattr(feature, kind).polygon))
        elif kind == "stop_sign":
            stop_ids.append(feature.id)
            pos = feature.stop_sign.position
            stop_xy.append((pos.x, pos.y))
            stop_lanes.append(tuple(int(i) for i in feature.stop_sign.lane))
    boundaries = {fid: pts for kind in ("road_line", "road_edge")
                  for fid, pts in zip(groups[kind][0], groups[kind][2], strict=True)}
    graph, notes = _lane_graph(lanes, lane_points, _as_lines(boundaries))
    polylines = {k: Polylines.from_list(*v) for k, v in groups.items()}
    road_map = RoadMap(
        lanes=graph,
        road_lines=polylines["road_line"],
        road_edges=polylines["road_edge"],
        crosswalks=polylines["crosswalk"],
        speed_bumps=polylines["speed_bump"],
        driveways=polylines["driveway"],
        stop_signs=StopSigns(ids=np.asarray(stop_ids, np.int64),
                             xy=np.asarray(stop_xy, np.float64).reshape(-1, 2), lane_ids=tuple(stop_lanes)),
    )
    return road_map, notes


def _as_lines(polylines: dict[int, np.ndarray]) -> dict[int, shapely.LineString]:
    return {fid: shapely.LineString(pts) for fid, pts in polylines.items() if len(pts) >= 2}


def _lane_graph(lanes: dict[int, Any], points: dict[int, np.ndarray],
                boundaries: dict[int, shapely.LineString]) -> tuple[LaneGraph, dict[str, Any]]:
    graph = LaneGraph()
    centerlines = _as_lines(points)
    usable = {lane_id for lane_id, pts in points.items() if len(pts)}
    single_point: list[int] = []
    built: list[Lane] = []
    for lane_id, msg in lanes.items():
        if lane_id not in usable:
            continue
        pts = points[lane_id]
        if len(pts) == 1:
            single_point.append(lane_id)
            pts = np.repeat(pts, 2, axis=0)
        left = tuple(int(n.feature_id) for n in msg.left_neighbors if n.feature_id in usable)
        right = tuple(int(n.feature_id) for n in msg.right_neighbors if n.feature_id in usable)
        mph = float(msg.speed_limit_mph)
        built.append(Lane(
            id=int(lane_id),
            points=pts,
            width_m=estimate_lane_width(pts, msg, boundaries, centerlines),
            speed_limit_mps=mph * MPH_TO_MPS if mph > 0 else DEFAULT_SPEED_LIMIT_MPS,
            lane_type=LaneType.CONNECTOR if msg.interpolating else LaneType(int(msg.type)),
            left_neighbors=left,
            right_neighbors=right,
        ))
    graph.add(built)
    for lane_id, msg in lanes.items():
        if lane_id not in graph:
            continue
        for nxt in msg.exit_lanes:
            if nxt in graph and nxt != lane_id:
                graph.connect(int(lane_id), int(nxt))
        for prev in msg.entry_lanes:
            if prev in graph and prev != lane_id:
                graph.connect(int(prev), int(lane_id))
    notes = {"single_point_lanes": sorted(single_point)} if single_point else {}
    return graph, notes


def _side_distance(points: np.ndarray, segments: Iterable[tuple[int, int, int]],
                   lines: dict[int, shapely.LineString]) -> np.ndarray:
    """(N,) distance (m) from sampled lane vertices to the given polylines over their index ranges; NaN
    where no polyline is given (and at vertices skipped by the sampling stride)."""
    out = np.full(len(points), np.nan)
    for start, end, feature_id in segments:
        line = lines.get(feature_id)
        lo, hi = max(0, start), min(len(points) - 1, end)
        if line is None or hi < lo:
            continue
        idx = np.arange(lo, hi + 1, _WIDTH_STRIDE)
        out[idx] = np.fmin(out[idx], shapely.distance(shapely.points(points[idx]), line))
    return out


def estimate_lane_width(points: np.ndarray, msg: Any, boundaries: dict[int, shapely.LineString],
                        centerlines: dict[int, shapely.LineString]) -> float:
    """Lane width (m) from a WOMD ``LaneCenter`` and the polylines it references (see module docstring).

    Per-vertex samples outside the plausible range are ignored: WOMD also lists diverging and merging
    lanes as neighbours, whose centrelines coincide near the fork.
    """
    left = _side_distance(points, ((b.lane_start_index, b.lane_end_index, b.boundary_feature_id)
                                   for b in msg.left_boundaries), boundaries)
    right = _side_distance(points, ((b.lane_start_index, b.lane_end_index, b.boundary_feature_id)
                                    for b in msg.right_boundaries), boundaries)

    def neighbours() -> np.ndarray:  # only computed when the boundaries do not settle it
        return _side_distance(points, ((n.self_start_index, n.self_end_index, n.feature_id)
                                       for n in list(msg.left_neighbors) + list(msg.right_neighbors)),
                              centerlines)

    candidates = (
        (lambda: left + right, MIN_LANE_WIDTH_M),
        (lambda: 2.0 * np.where(np.isnan(left), right, left), MIN_LANE_WIDTH_M),
        (neighbours, MIN_NEIGHBOUR_DISTANCE_M),
    )
    for samples_fn, low in candidates:
        samples = samples_fn()
        ok = (samples >= low) & (samples <= MAX_LANE_WIDTH_M)  # NaN compares False
        if ok.any():
            return float(np.median(samples[ok]))
    return DEFAULT_LANE_WIDTH_M
