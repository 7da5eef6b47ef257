"""Routes: the lane sequence each agent intends to follow, and paths sampled along it.

A route starts with the agent's current lane. It is extended at forks with an explicit rng as the world
grows, and the lanes already driven are dropped as the agent advances.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.scene import LaneGraph
from vectorworld.world.path_batch import PathBatch

PATH_SPACING_M = 1.0
STRAIGHT_WEIGHT = 3.0
"""At a fork, the successor that goes straight on (turning < ``STRAIGHT_RAD``) is this many times as likely as
each turn: most traffic at a city junction goes straight (turning shares of 10-25% per direction)."""
STRAIGHT_RAD = 0.5


@dataclass(frozen=True)
class RoutePath:
    """A route sampled at about 1 m.

    points: (P, 2) m global; s: (P,) m cumulative arc length; lane_index: (P,) index into ``lane_ids`` of
    the lane each point lies on; lane_ids: the route's lanes.
    """

    points: np.ndarray
    s: np.ndarray
    lane_index: np.ndarray
    lane_ids: tuple[int, ...]

    @property
    def length_m(self) -> float:
        return float(self.s[-1])


def build_path(graph: LaneGraph, lane_ids: Sequence[int]) -> RoutePath:
    """Concatenate the centrelines of consecutive route lanes (joint points de-duplicated)."""
    chunks, owners = [], []
    for k, lane_id in enumerate(lane_ids):
        pts = graph[lane_id].points
        if chunks:
            pts = pts[1:]
        chunks.append(pts)
        owners.append(np.full(len(pts), k, np.int32))
    points = np.concatenate(chunks)
    lane_index = np.concatenate(owners)
    return RoutePath(points, geometry.polyline_lengths(points), lane_index, tuple(lane_ids))


def route_length(graph: LaneGraph, lane_ids: Sequence[int]) -> float:
    return float(sum(graph[i].length_m for i in lane_ids))


class RouteBook:
    """Routes of all agents (ego included), keyed by agent id."""

    def __init__(self, min_ahead_m: float = 80.0) -> None:
        self.min_ahead_m = min_ahead_m
        self.routes: dict[int, list[int]] = {}
        self._settled: dict[int, int] = {}  # agent id -> graph version its route was last extended as far as it goes
        self._pruned_at = -1  # graph version the routes were last pruned at
        self._checked: dict[int, tuple[float, float]] = {}  # agent id -> where advance last found it on its route

    def assign(self, agent_id: int, lane_id: int) -> None:
        self.routes[agent_id] = [lane_id]
        self._settled.pop(agent_id, None)
        self._checked.pop(agent_id, None)

    def drop(self, agent_id: int) -> None:
        self.routes.pop(agent_id, None)
        self._settled.pop(agent_id, None)
        self._checked.pop(agent_id, None)

    def get(self, agent_id: int) -> list[int]:
        return self.routes.get(agent_id, [])

    def extend(self, graph: LaneGraph, rng: np.random.Generator, agent_id: int,
               choose: str = "random", dead_ends: Collection[int] = ()) -> None:
        """Append successors until the route reaches ``min_ahead_m`` or ends at an open lane end.

        ``choose`` is "random" (drawn with the straight-on successor weighted :data:`STRAIGHT_WEIGHT`, every
        turn 1) or "straight" (the successor whose heading changes least). Successors in ``dead_ends`` (lanes
        the world could not continue) are avoided whenever another successor exists.
        """
        if self._settled.get(agent_id) == graph.version:
            return  # neither the route nor the graph changed since it was extended
        route = self.routes.get(agent_id)
        if route:
            _prune(route, graph)
        if not route:
            return
        ahead = route_length(graph, route[1:])
        self._settled[agent_id] = graph.version
        while ahead < self.min_ahead_m:
            successors = [i for i in graph[route[-1]].successors if i in graph]
            if not successors:
                return
            successors = [i for i in successors if i not in dead_ends] or successors
            if len(successors) == 1:
                route.append(successors[0])
            else:
                _, yaw_end = graph[route[-1]].end_pose
                turn = np.abs([float(geometry.wrap_angle(graph[i].end_pose[1] - yaw_end)) for i in successors])
                if choose == "straight":
                    route.append(successors[int(np.argmin(turn))])
                else:
                    weight = np.where(turn < STRAIGHT_RAD, STRAIGHT_WEIGHT, 1.0)
                    pick = np.searchsorted(np.cumsum(weight), rng.random() * weight.sum(), side="right")
                    route.append(successors[min(int(pick), len(successors) - 1)])
            ahead += graph[route[-1]].length_m

    def advance(self, graph: LaneGraph, agent_ids: np.ndarray, xy: np.ndarray, yaw: np.ndarray) -> None:
        """Drop route lanes the agents (ids (M,) at xy (M, 2), yaw (M,)) have driven past; re-localise any
        agent that left its route (more than 4 m beside its current lane). Batched over agents."""
        pending: list[tuple[int, list[int]]] = []  # (row, route) of agents whose first lane is to check
        prune = graph.version != self._pruned_at
        self._pruned_at = graph.version
        checked = self._checked
        for row, (agent_id, x, y) in enumerate(zip(agent_ids.tolist(), xy[:, 0].tolist(), xy[:, 1].tolist(),
                                                   strict=True)):
            route = self.routes.get(agent_id)
            if route is None or (not prune and checked.get(agent_id) == (x, y)):
                continue  # no route, or standing where it was last found on its lane of an unchanged map
            checked.pop(agent_id, None)
            if prune:
                _prune(route, graph)
            pending.append((row, route))
        for row, route in pending:
            if not route:  # every lane of the route was retired
                self._relocalise(graph, route, xy[row], float(yaw[row]))
                self._settled.pop(int(agent_ids[row]), None)
        ids = agent_ids.tolist()
        while pending:
            live = [(row, route) for row, route in pending if route]
            if not live:
                break
            lanes = [graph[route[0]] for _, route in live]
            batch = PathBatch.of([lane.points for lane in lanes], [lane.arc_length for lane in lanes])
            s, lateral = batch.project(xy[[row for row, _ in live]])
            pending = []
            for (row, route), lane, s_k, lat_k in zip(live, lanes, s, lateral, strict=True):
                if len(route) > 1 and s_k >= lane.length_m - 1e-6:
                    route.pop(0)  # past the end of this lane: check the next one
                    self._settled.pop(ids[row], None)
                    pending.append((row, route))
                elif abs(float(lat_k)) > 4.0:
                    self._relocalise(graph, route, xy[row], float(yaw[row]))
                    self._settled.pop(ids[row], None)
                else:
                    checked[ids[row]] = (float(xy[row, 0]), float(xy[row, 1]))

    @staticmethod
    def _relocalise(graph: LaneGraph, route: list[int], xy: np.ndarray, yaw: float) -> None:
        lane_id, _ = graph.nearest(xy, yaw, radius_m=8.0)
        route[:] = [lane_id] if lane_id >= 0 else []


def _prune(route: list[int], graph: LaneGraph) -> None:
    """Drop retired lanes at the start of a route, and cut it at the first retired lane after that."""
    while route and route[0] not in graph:
        route.pop(0)
    for k, lane_id in enumerate(route):
        if lane_id not in graph:
            del route[k:]
            break
