"""The drivable area as a sparse raster, for O(1) off-road tests of many points per step.

Each lane paints a corridor of its width (plus a tolerance) around its centreline into 0.25 m cells; where
a lane curves so tightly that the longest vehicle of the fleet sweeps wider than the lane (a bus turning a
corner), the corridor widens to that vehicle's swept path, as a junction's pavement does.
Cells hold counts, so removing a lane (when the world retires tiles) is exact.
"""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.scene import Lane

CHUNK_CELLS = 128
LONGEST_VEHICLE_M = (11.0, 2.6)
"""Length and width (m) of the longest vehicle whose swept path the corridors fit (the spawner's trucks)."""
CURVATURE_SAMPLE_M = 2.0
SHARPEST_PERCENTILE = 90.0
"""A lane's tightest curve is the 90th percentile of its curvature at 2 m spacing (robust to jagged points
of logged maps)."""


class DrivableGrid:
    """Sparse count raster of lane corridors.

    cell_m: raster resolution (m); tolerance_m: how far outside a lane's edge a point still counts as
    on-road (DESIGN.md section 7 uses 0.3 m for the off-road metric).
    """

    def __init__(self, cell_m: float = 0.25, tolerance_m: float = 0.3,
                 longest_vehicle_m: tuple[float, float] = LONGEST_VEHICLE_M) -> None:
        self.cell_m = cell_m
        self.tolerance_m = tolerance_m
        self.longest_vehicle_m = longest_vehicle_m
        self._chunks: dict[tuple[int, int], np.ndarray] = {}
        self._painted: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.version = 0
        """Bumped by every change, so callers can keep answers for points that did not move."""

    def add(self, lane: Lane) -> None:
        cells = self._corridor_cells(lane)
        self._painted[lane.id] = cells
        self._apply(cells, +1)
        self.version += 1

    def remove(self, lane_id: int) -> None:
        cells = self._painted.pop(lane_id, None)
        if cells is not None:
            self._apply(cells, -1)
            self.version += 1

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """Bool (...) whether points (..., 2) (m, global) are on the drivable area."""
        flat = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        ij = np.floor(flat / self.cell_m).astype(np.int64)
        chunk = np.floor_divide(ij, CHUNK_CELLS)
        local = ij - chunk * CHUNK_CELLS
        out = np.zeros(len(flat), bool)
        codes = _cell_codes(chunk)
        order = np.argsort(codes, kind="stable")  # points grouped by chunk
        codes = codes[order]
        bounds = np.flatnonzero(np.diff(codes)) + 1
        for group in np.split(order, bounds):
            key = chunk[group[0]]
            grid = self._chunks.get((int(key[0]), int(key[1])))
            if grid is not None:
                out[group] = grid[local[group, 0], local[group, 1]] > 0
        return out.reshape(np.shape(xy)[:-1])

    def _corridor_cells(self, lane: Lane) -> tuple[np.ndarray, np.ndarray]:
        """Cells within half the lane width, or the longest vehicle's reach on the lane's tightest curve
        (+ tolerance), of the centreline: the union of discs around centreline points spaced at the cell
        size (so the ends get round caps). A widened corridor runs on straight for half the vehicle's length
        past both ends, where the vehicle's rear (or front) still swings wide of the lanes before and after."""
        half = self.half_width_m(lane)
        radius = half + self.tolerance_m
        points = lane.points
        if half > lane.width_m / 2.0:
            (start, yaw0), (end, yaw1) = lane.start_pose, lane.end_pose
            run = self.longest_vehicle_m[0] / 2.0
            points = np.vstack([start - run * np.array([np.cos(yaw0), np.sin(yaw0)]), points,
                                end + run * np.array([np.cos(yaw1), np.sin(yaw1)])])
        centres = geometry.resample_by_spacing(points, self.cell_m)
        base = np.floor(centres / self.cell_m).astype(np.int64)
        cells = _disc_dilation(base, disc_half_widths(radius, self.cell_m))
        chunk = np.floor_divide(cells, CHUNK_CELLS)
        return chunk, cells - chunk * CHUNK_CELLS

    def half_width_m(self, lane: Lane) -> float:
        """Half the corridor's width without the tolerance (m)."""
        sampled = geometry.resample_by_spacing(lane.points, CURVATURE_SAMPLE_M)
        sharpest = float(np.percentile(geometry.curvature(sampled), SHARPEST_PERCENTILE)) if len(sampled) > 2 else 0.0
        return max(lane.width_m / 2.0, geometry.box_reach_m(*self.longest_vehicle_m, sharpest))

    def _apply(self, cells: tuple[np.ndarray, np.ndarray], delta: int) -> None:
        chunk, local = cells
        if len(chunk) == 0:
            return
        codes = _cell_codes(chunk)
        for code in np.unique(codes):
            sel = local[codes == code]
            key = chunk[np.argmax(codes == code)]
            tkey = (int(key[0]), int(key[1]))
            grid = self._chunks.get(tkey)
            if grid is None:
                grid = self._chunks[tkey] = np.zeros((CHUNK_CELLS, CHUNK_CELLS), np.int16)
            np.add.at(grid, (sel[:, 0], sel[:, 1]), delta)
            if delta < 0 and not grid.any():
                del self._chunks[tkey]


def _cell_codes(cells: np.ndarray) -> np.ndarray:
    """One int64 per integer cell pair (N, 2), for fast 1-D unique/compare."""
    return (cells[:, 0] + (1 << 31)) * (1 << 32) + (cells[:, 1] + (1 << 31))


def disc_half_widths(radius_m: float, cell_m: float) -> np.ndarray:
    """(2R+1,) for each row offset dx in -R..R of the disc of cells whose offset (dx, dy) lies within
    ``radius_m`` (R = ceil(radius / cell)), the largest |dy| in that row (-1 for a row without cells)."""
    reach = int(np.ceil(radius_m / cell_m))
    offsets = np.stack(np.meshgrid(np.arange(-reach, reach + 1), np.arange(reach + 1), indexing="ij"), -1)
    inside = np.linalg.norm(offsets * cell_m, axis=-1) <= radius_m
    return np.where(inside.any(1), inside.sum(1) - 1, -1)


def _disc_dilation(base: np.ndarray, half: np.ndarray) -> np.ndarray:
    """The distinct cells (K, 2) of the disc (:func:`disc_half_widths` ``half``) around any of the ``base``
    cells (M, 2): a raster dilation, one row offset at a time (each row of a disc is a run of cells), instead
    of M x disc-size offsets made unique."""
    reach = (len(half) - 1) // 2
    lo = base.min(0) - reach
    grid = np.zeros(tuple(base.max(0) - lo + reach + 1), bool)
    grid[base[:, 0] - lo[0], base[:, 1] - lo[1]] = True
    rows, cols = grid.shape
    # runs[:, j] counts base cells in columns < j, so a window's count is one difference.
    runs = np.concatenate([np.zeros((rows, 1), np.int64), np.cumsum(grid, 1)], 1)
    j = np.arange(cols)
    out = np.zeros_like(grid)
    widened: dict[int, np.ndarray] = {}
    for dx, w in zip(range(-reach, reach + 1), half.tolist(), strict=True):
        if w < 0:
            continue
        if w not in widened:  # base cells within w columns of each cell
            widened[w] = runs[:, np.minimum(j + w + 1, cols)] > runs[:, np.maximum(j - w, 0)]
        band = widened[w]
        if dx >= 0:
            out[dx:] |= band[:rows - dx]
        else:
            out[:dx] |= band[-dx:]
    return np.argwhere(out) + lo
