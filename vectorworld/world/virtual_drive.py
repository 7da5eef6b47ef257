"""Grow a streaming world the way an episode does: a virtual ego drives along its lanes and the world covers
the road ahead of it (:meth:`StreamingWorld.ensure_coverage`).

Corpora and evaluations used to grow worlds only at random open lane ends. An episode asks for other tiles:
the ports nearest the ego, beside and across roads already drawn, several to a tile. A generator trained or
judged on random ends alone meets those requests unprepared. This driver lets both see them.
"""

from __future__ import annotations

import numpy as np

from vectorworld import geometry
from vectorworld.errors import ConfigError
from vectorworld.scene import Lane
from vectorworld.world.routes import RouteBook
from vectorworld.world.streaming import GeneratedTile, StreamingWorld

STEP_M = 8.0
"""How far the virtual ego drives between two coverage calls (about a second at city speed)."""
EGO = 0
"""The virtual ego's id in its route book."""


class VirtualDrive:
    """A virtual ego on a started world: :meth:`step` drives it ``step_m`` along a random route (straight on
    more often than turning, as :class:`RouteBook` draws it) and returns the tiles the world then made."""

    def __init__(self, world: StreamingWorld, first: GeneratedTile, rng: np.random.Generator,
                 step_m: float = STEP_M) -> None:
        self.world, self.rng, self.step_m = world, rng, step_m
        self.routes = RouteBook()
        self.routes.assign(EGO, _start_lane(first).id)
        self.s_m = 0.0

    @property
    def pose(self) -> tuple[np.ndarray, float]:
        """The ego's position (2,) and heading (rad) on the first lane of its route."""
        lane = self.world.graph[self.routes.get(EGO)[0]]
        s = min(self.s_m, lane.length_m)
        a, here, b = geometry.interpolate_polyline(lane.points, lane.arc_length,
                                                   np.array([max(s - 0.5, 0.0), s, s + 0.5]))
        return here, float(np.arctan2(b[1] - a[1], b[0] - a[0]))

    def step(self, agents_xy: np.ndarray | None = None) -> list[GeneratedTile] | None:
        """Drive on, then let the world cover the road ahead (``agents_xy`` (M, 2): agents new tiles must not
        spawn onto). The tiles made (often none); None once the ego stands at the end of a road the world
        could not continue."""
        graph, route = self.world.graph, self.routes.get(EGO)
        self.routes.extend(graph, self.rng, EGO, dead_ends=self.world.dead_ends)
        if not route:  # the lane under the ego was replaced (a crossing road won): the drive ends
            return None
        self.s_m += self.step_m
        while self.s_m > graph[route[0]].length_m and len(route) > 1:
            self.s_m -= graph[route[0]].length_m
            route.pop(0)
        if self.s_m > graph[route[0]].length_m and route[0] in self.world.dead_ends:
            return None
        xy, yaw = self.pose
        return self.world.ensure_coverage(xy, yaw, route[-1], np.zeros((0, 2)) if agents_xy is None else agents_xy)


def _start_lane(first: GeneratedTile) -> Lane:
    """The first tile's lane along the tile's heading (within 0.5 rad) that passes nearest its centre."""
    frame = first.tile
    along = [lane for lane in first.content.lanes
             if abs(float(geometry.wrap_angle(lane.start_pose[1] - frame.yaw))) < 0.5]
    if not along:
        raise ConfigError("the first tile has no lane along its heading for a virtual ego to drive")
    return min(along, key=lambda lane: float(np.linalg.norm(lane.points - frame.center_xy, axis=-1).min()))
