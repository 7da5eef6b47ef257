"""The drivable raster fits the swept path of the longest vehicle on tight curves, not only the lane width."""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.scene import Lane, LaneType
from vectorworld.world.drivable import LONGEST_VEHICLE_M, DrivableGrid

RADIUS_M = 7.0


def _corner() -> Lane:
    """A right-angle connector of radius 7 m (a residential corner), 3.5 m wide."""
    angle = np.linspace(-np.pi / 2, 0.0, 40)
    return Lane(1, np.column_stack([RADIUS_M * np.cos(angle), RADIUS_M * np.sin(angle) + RADIUS_M]),
                lane_type=LaneType.CONNECTOR)


def _boxes_on(lane: Lane, length_m: float, width_m: float) -> np.ndarray:
    """Corners (K, 4, 2) of boxes centred and tangent on the lane's curved part."""
    pts = lane.points[8:-8]
    heading = np.arctan2(*(np.gradient(lane.points, axis=0)[8:-8][:, ::-1].T))
    n = len(pts)
    return geometry.box_corners(pts, heading, np.full(n, length_m), np.full(n, width_m))


def _roads(grid: DrivableGrid, corner: Lane) -> DrivableGrid:
    """The corner between its approach (along +x to the origin) and its exit (along +y from (7, 7))."""
    for lane in (Lane(0, np.array([[-30.0, 0.0], [0.0, 0.0]])), corner,
                 Lane(2, np.array([[RADIUS_M, RADIUS_M], [RADIUS_M, RADIUS_M + 30.0]]))):
        grid.add(lane)
    return grid


def test_a_truck_turning_a_tight_corner_stays_on_the_drivable_area() -> None:
    lane = _corner()
    assert _roads(DrivableGrid(), lane).contains(_boxes_on(lane, *LONGEST_VEHICLE_M)).all()
    # The lane's own width would not hold it: its outer corners swing 1.7 m beyond the lane edge.
    narrow = _roads(DrivableGrid(longest_vehicle_m=(4.0, 2.0)), lane)
    assert not narrow.contains(_boxes_on(lane, *LONGEST_VEHICLE_M)).all()
    assert geometry.box_reach_m(*LONGEST_VEHICLE_M, 1.0 / RADIUS_M) > lane.width_m / 2.0 + 1.0


def test_a_straight_lane_keeps_its_own_width() -> None:
    lane = Lane(2, np.array([[0.0, 0.0], [50.0, 0.0]]))
    grid = DrivableGrid()
    grid.add(lane)
    assert grid.half_width_m(lane) == lane.width_m / 2.0
    assert grid.contains(np.array([[25.0, 1.75 + 0.2]])).all()
    assert not grid.contains(np.array([[25.0, 1.75 + 0.5]])).any()


def test_corridor_cells_are_exactly_the_cells_of_discs_around_the_centreline() -> None:
    """The raster dilation paints the same cells as placing the disc at every centre cell (the definition)."""
    from vectorworld.world.drivable import _disc_dilation, disc_half_widths

    rng = np.random.default_rng(0)
    for k in range(60):
        cell = (0.25, 0.5, 0.2)[k % 3]
        radius = float(rng.uniform(0.1, 5.0))
        pts = np.cumsum(rng.normal(size=(int(rng.integers(2, 10)), 2)) * rng.uniform(0.1, 8.0), 0) + 300.0
        base = np.floor(geometry.resample_by_spacing(pts, cell) / cell).astype(np.int64)
        reach = int(np.ceil(radius / cell))
        grid = np.stack(np.meshgrid(np.arange(-reach, reach + 1), np.arange(-reach, reach + 1), indexing="ij"), -1)
        disc = grid.reshape(-1, 2)[np.linalg.norm(grid.reshape(-1, 2) * cell, axis=-1) <= radius]
        expected = np.unique((base[:, None] + disc[None]).reshape(-1, 2), axis=0)
        got = _disc_dilation(base, disc_half_widths(radius, cell))
        assert len(got) == len(np.unique(got, axis=0))
        np.testing.assert_array_equal(np.unique(got, axis=0), expected)
