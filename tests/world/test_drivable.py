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
