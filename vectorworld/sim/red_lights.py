"""Red-light infractions: a vehicle whose front crosses the stop point of a signalised lane showing red.

The stop point of a signalised lane is its first point, the stop line runs across the lane there (the lane's
width). A vehicle *enters* the lane in a step when its front point (box centre + half its length along its
heading) goes from behind the line to on or past it, within the lane's width (plus 0.5 m) and heading the
lane's way (within 60 degrees). Several lanes may start at one stop line (straight, left and right
connectors of one approach): the one entered is the one on the vehicle's route, else the one turning least.
The light is judged by the state it showed at the start of the step (what the driver saw).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vectorworld import geometry
from vectorworld.scene import LaneGraph
from vectorworld.signals import SignalView, is_red

LATERAL_SLACK_M = 0.5
ALIGNED_COS = 0.5


def crossed_stop_lines(front_before: np.ndarray, front_after: np.ndarray, yaw: float,
                       signals: SignalView) -> np.ndarray:
    """Rows of ``signals`` whose stop line a front point moving from ``front_before`` (2,) to ``front_after``
    (2,) m with heading ``yaw`` crossed in this step."""
    if not len(signals):
        return np.zeros(0, np.int64)
    u = np.stack([np.cos(signals.stop_yaw), np.sin(signals.stop_yaw)], -1)
    d0 = np.einsum("lk,lk->l", front_before - signals.stop_xy, u)
    rel = front_after - signals.stop_xy
    d1 = np.einsum("lk,lk->l", rel, u)
    lateral = np.abs(rel[:, 0] * u[:, 1] - rel[:, 1] * u[:, 0])
    aligned = np.cos(geometry.wrap_angle(yaw - signals.stop_yaw)) > ALIGNED_COS
    return np.nonzero((d0 < 0.0) & (d1 >= 0.0) & (lateral <= signals.width_m / 2.0 + LATERAL_SLACK_M) & aligned)[0]


def entered_lane(rows: np.ndarray, signals: SignalView, graph: LaneGraph, route: Sequence[int]) -> int:
    """The row among ``rows`` (crossed stop lines) of the lane actually entered: on ``route``, else the one
    whose heading changes least along it."""
    on_route = [int(r) for r in rows if int(signals.lane_ids[r]) in set(route)]
    if on_route:
        return on_route[0]

    def turn(r: int) -> float:
        lane_id = int(signals.lane_ids[r])
        if lane_id not in graph:
            return np.inf
        lane = graph[lane_id]
        return abs(float(geometry.wrap_angle(lane.end_pose[1] - lane.start_pose[1])))

    return min((int(r) for r in rows), key=turn)


def red_light_entry(xy_before: np.ndarray, yaw_before: float, xy_after: np.ndarray, yaw_after: float,
                    length_m: float, signals: SignalView, graph: LaneGraph, route: Sequence[int]) -> int | None:
    """The lane id a vehicle entered on red in this step (its pose before / after, ``signals`` at the start of
    the step), None if it entered none or the light of the lane it entered was not red."""
    half = length_m / 2.0
    front0 = xy_before + half * np.array([np.cos(yaw_before), np.sin(yaw_before)])
    front1 = xy_after + half * np.array([np.cos(yaw_after), np.sin(yaw_after)])
    rows = crossed_stop_lines(front0, front1, yaw_after, signals)
    if not len(rows):
        return None
    row = entered_lane(rows, signals, graph, route)
    return int(signals.lane_ids[row]) if bool(is_red(signals.states[row])) else None
