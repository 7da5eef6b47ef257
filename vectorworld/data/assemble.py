"""Shared building blocks of the readers that are not WOMD ``Scenario`` protobufs (tf.Example, GPUDrive
JSON, ScenarioNet pickles): one conversion path for every format.

* Map: each reader lowers its map to WOMD ``MapFeature`` messages (:func:`lane_feature`,
  :func:`polyline_feature`, ...) and :func:`~vectorworld.data.womd_map.road_map_from_features` converts
  them, so lane widths, speed limits, single-point lanes and edge symmetry follow the same rules whatever
  the file format.
* Formats without a lane graph (tf.Example, GPUDrive) get successor edges from the geometry
  (:func:`infer_successors`): lane B follows lane A when B starts within :data:`EDGE_GAP_M` of A's end and
  turns by at most :data:`EDGE_MAX_TURN_RAD` there. On the real WOMD sample this reproduces all 193
  successor edges and adds none (tests/data/test_formats_roundtrip.py).
* Tracks: :func:`build_tracks` from (T, S) arrays, invalid entries zeroed, box dimensions by
  :func:`box_dimension` (the current step, else the median over valid steps).
* Ids: :class:`IdMap` turns a format's string ids into the int64 ids of a Scenario.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from vectorworld.data import womd_pb2
from vectorworld.data.scenario import Tracks

EDGE_GAP_M = 0.5
"""Largest gap (m) between a lane's end and another lane's start for an inferred successor edge."""
EDGE_MAX_TURN_RAD = np.pi / 2
"""Largest heading change (rad) across an inferred successor edge."""


class IdMap:
    """String (or int) ids of a format -> int64 ids: decimal strings keep their value, any other string
    gets the next free id above the largest decimal one (in first-seen order); :attr:`named` keeps those."""

    def __init__(self, keys: Iterable[object]) -> None:
        keys = [str(k) for k in keys]
        numeric = [int(k) for k in keys if _is_int(k)]
        nxt = max(numeric, default=-1) + 1
        self.ids: dict[str, int] = {}
        self.named: dict[str, int] = {}
        for key in keys:
            if key in self.ids:
                continue
            if _is_int(key):
                self.ids[key] = int(key)
            else:
                self.ids[key] = self.named[key] = nxt
                nxt += 1

    def get(self, key: object) -> int | None:
        return self.ids.get(str(key))

    def __getitem__(self, key: object) -> int:
        return self.ids[str(key)]


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit() and abs(int(text)) < 2**63


def box_dimension(values: np.ndarray, valid: np.ndarray, current: int) -> np.ndarray:
    """(T,) the value at the current step where valid, else the median over valid steps, else 0."""
    out = values[:, current] * valid[:, current]
    for row in np.nonzero(~valid[:, current] & valid.any(axis=1))[0]:
        out[row] = np.median(values[row][valid[row]])
    return out


def build_tracks(ids: Sequence[int], types: Sequence[int], xy: np.ndarray, yaw: np.ndarray,
                 velocity: np.ndarray, size: np.ndarray, valid: np.ndarray, current: int) -> Tracks:
    """Tracks from (T, S, 2) xy / velocity, (T, S) yaw and valid, and (T, S, 3) or (T, 3) length, width,
    height; invalid entries become zeros, per-step sizes reduce with :func:`box_dimension`."""
    valid = np.asarray(valid, bool)
    t, s = valid.shape
    mask2 = valid[..., None]
    size = np.asarray(size, np.float64)
    if size.ndim == 3:
        dims = [box_dimension(np.where(valid, size[..., k], 0.0), valid, current) for k in range(3)]
    else:
        dims = [size.reshape(t, 3)[:, k].copy() for k in range(3)]
    return Tracks(
        ids=np.asarray(ids, np.int64).reshape(t), types=np.asarray(types, np.int8).reshape(t),
        xy=np.where(mask2, np.asarray(xy, np.float64).reshape(t, s, 2), 0.0),
        yaw=np.where(valid, np.asarray(yaw, np.float64).reshape(t, s), 0.0),
        velocity=np.where(mask2, np.asarray(velocity, np.float64).reshape(t, s, 2), 0.0),
        length=dims[0], width=dims[1], height=dims[2], valid=valid)


def _points(field: object, xy: np.ndarray) -> None:
    pts = np.asarray(xy, np.float64)
    if pts.size == 0:
        return
    pts = pts.reshape(len(pts), -1)
    z = pts[:, 2] if pts.shape[1] > 2 else np.zeros(len(pts))
    for x, y, zz in zip(pts[:, 0].tolist(), pts[:, 1].tolist(), z.tolist(), strict=True):
        field.add(x=x, y=y, z=zz)  # type: ignore[attr-defined]


def lane_feature(feature_id: int, xy: np.ndarray, lane_type: int = 2, *, speed_limit_mph: float = 0.0,
                 interpolating: bool = False, entry: Iterable[int] = (), exit_: Iterable[int] = (),
                 left: Iterable[tuple[int, int, int]] = (), right: Iterable[tuple[int, int, int]] = (),
                 left_boundaries: Iterable[tuple[int, int, int, int]] = (),
                 right_boundaries: Iterable[tuple[int, int, int, int]] = ()) -> womd_pb2.MapFeature:
    """A WOMD lane feature. ``left`` / ``right``: (neighbour id, self start index, self end index);
    boundaries: (lane start index, lane end index, boundary feature id, boundary type)."""
    feature = womd_pb2.MapFeature(id=int(feature_id))
    lane = feature.lane
    lane.type = int(lane_type)
    lane.speed_limit_mph = float(speed_limit_mph)
    lane.interpolating = bool(interpolating)
    _points(lane.polyline, xy)
    lane.entry_lanes.extend(int(i) for i in entry)
    lane.exit_lanes.extend(int(i) for i in exit_)
    for field, rows in ((lane.left_neighbors, left), (lane.right_neighbors, right)):
        for fid, start, end in rows:
            field.add(feature_id=int(fid), self_start_index=int(start), self_end_index=int(end))
    for field, rows in ((lane.left_boundaries, left_boundaries), (lane.right_boundaries, right_boundaries)):
        for start, end, fid, btype in rows:
            field.add(lane_start_index=int(start), lane_end_index=int(end), boundary_feature_id=int(fid),
                      boundary_type=int(btype))
    return feature


POLYLINE_KINDS = ("road_line", "road_edge")
POLYGON_KINDS = ("crosswalk", "speed_bump", "driveway")


def polyline_feature(kind: str, feature_id: int, xy: np.ndarray, type_code: int = 0) -> womd_pb2.MapFeature:
    """A road line / road edge (``kind`` in :data:`POLYLINE_KINDS`, polyline) or a crosswalk / speed bump /
    driveway (:data:`POLYGON_KINDS`, polygon) feature."""
    feature = womd_pb2.MapFeature(id=int(feature_id))
    msg = getattr(feature, kind)
    if kind in POLYLINE_KINDS:
        msg.type = int(type_code)
        _points(msg.polyline, xy)
    elif kind in POLYGON_KINDS:
        _points(msg.polygon, xy)
    else:
        raise ValueError(f"polyline_feature: unknown kind {kind!r}")
    return feature


def stop_sign_feature(feature_id: int, xy: Sequence[float], lanes: Iterable[int] = ()) -> womd_pb2.MapFeature:
    feature = womd_pb2.MapFeature(id=int(feature_id))
    feature.stop_sign.position.x, feature.stop_sign.position.y = float(xy[0]), float(xy[1])
    if len(xy) > 2:
        feature.stop_sign.position.z = float(xy[2])
    feature.stop_sign.lane.extend(int(i) for i in lanes)
    return feature


def _heading(points: np.ndarray, at_end: bool) -> float | None:
    """Direction (rad) of the first (or last) non-degenerate segment; None for a point-like lane."""
    segs = np.diff(points, axis=0)
    ok = np.nonzero(np.hypot(segs[:, 0], segs[:, 1]) > 1e-6)[0]
    if not len(ok):
        return None
    d = segs[ok[-1] if at_end else ok[0]]
    return float(np.arctan2(d[1], d[0]))


def infer_successors(lanes: Mapping[int, np.ndarray]) -> dict[int, list[int]]:
    """Successor lane ids per lane id from centreline geometry (see module docstring)."""
    ids = [i for i, p in lanes.items() if len(p)]
    if not ids:
        return {}
    starts = np.array([np.asarray(lanes[i], np.float64)[0, :2] for i in ids])
    out: dict[int, list[int]] = {i: [] for i in lanes}
    for a in ids:
        pa = np.asarray(lanes[a], np.float64)[:, :2]
        near = np.nonzero(np.hypot(*(starts - pa[-1]).T) <= EDGE_GAP_M)[0]
        ha = _heading(pa, at_end=True)
        for j in near:
            b = ids[j]
            if b == a:
                continue
            hb = _heading(np.asarray(lanes[b], np.float64)[:, :2], at_end=False)
            if ha is not None and hb is not None:
                turn = abs((hb - ha + np.pi) % (2 * np.pi) - np.pi)
                if turn > EDGE_MAX_TURN_RAD:
                    continue
            out[a].append(b)
    return out
