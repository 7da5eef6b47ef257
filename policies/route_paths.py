"""Route paths of agents: each route's joined centreline with IDM's speed caps and junction entries, cached.

:class:`PathProfile` is built once per route (lanes are immutable values, so a route whose lanes did not
change keeps its profile); :class:`RoutePaths` keeps the profiles of a world and projects agents onto
them (memoised per agent state). The IDM policy and ego planner, DeltaSim's route targets and the
right-of-way service each hold one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from policies.base import PolicyInput
from vectorworld import geometry
from vectorworld.scene import Agents, Lane, LaneGraph, LaneType
from vectorworld.world.routes import RoutePath, build_path
from vectorworld.world.uniform_paths import UniformPath, UniformPathBatch

if TYPE_CHECKING:
    from policies.idm import IdmParams


@dataclass(frozen=True)
class PathProfile:
    """A route path with what IDM needs along it, computed once per route.

    cap: (P,) m/s, speed cap at each path point (lane speed limit x speed factor, and the curve speed
    sqrt(max_lat_accel / curvature)); connector / connector_s: the first junction connector after the
    current lane and the arc length where it starts (-1 / inf if none).
    """

    path: RoutePath
    cap: np.ndarray
    connector: int
    connector_s: float
    lanes: tuple[Lane, ...]
    """The lanes it was built from (lanes are immutable values: a changed lane is a new object)."""
    uniform: UniformPath
    """The path resampled uniformly (about 1 m) with ``cap`` as its values, for batched lookups."""
    first_lane_m: float
    """How far along the path the agent can be: it is on the first lane (the route book drops lanes driven
    past), so projecting onto that stretch is enough, and a later part of the path that bends back near
    the agent is never mistaken for its position."""
    chain: tuple[int, ...] = ()
    """The connectors that directly follow ``connector`` on the path (a junction drawn as several lanes in a
    row): entering the first commits the agent to them."""
    signal_lanes: tuple[tuple[int, float], ...] = ()
    """(lane id, arc length of its start: the stop point) of every signalised lane after the first one."""
    lane_start_s: dict[int, float] = field(default_factory=dict, compare=False)
    """Arc length (m) where each lane of the path starts."""
    head: UniformPath | None = field(default=None, compare=False)
    """The points of ``uniform`` that projecting within ``first_lane_m`` can reach (all of them if None)."""

    @classmethod
    def build(cls, graph: LaneGraph, route: tuple[int, ...], p: IdmParams) -> PathProfile:
        """The profile of ``route`` (lanes of ``graph``); ``p`` gives the speed factor and lateral acceleration."""
        path = build_path(graph, route)
        lanes = [graph[i] for i in route]
        limit = np.array([lane.speed_limit_mps for lane in lanes])[path.lane_index] * p.speed_factor
        kappa = geometry.curvature(path.points)
        cap = np.minimum(limit, np.sqrt(p.max_lat_accel_mps2 / np.maximum(kappa, 1e-4)))
        connector, connector_s, start = -1, np.inf, 0.0
        chain: list[int] = []
        signal_lanes, starts = [], {}
        for k, lane in enumerate(lanes):
            starts.setdefault(lane.id, start)
            is_connector = k > 0 and lane.lane_type == LaneType.CONNECTOR
            if is_connector and connector >= 0 and lanes[k - 1].id == (chain[-1] if chain else connector):
                chain.append(lane.id)
            if is_connector and connector < 0:
                connector, connector_s = lane.id, start
            if k > 0 and lane.signal is not None:
                signal_lanes.append((lane.id, start))
            start += lane.length_m
        uniform = UniformPath.resample(path.points, path.s, cap)
        first_lane_m = lanes[0].length_m + 2.0
        return cls(path, cap, connector, connector_s, tuple(lanes), uniform, first_lane_m, tuple(chain),
                   tuple(signal_lanes), starts, uniform.head(first_lane_m))


class RoutePaths:
    """The route profiles of one world (cached per route) and the agents' positions on them."""

    def __init__(self, params: IdmParams | None = None) -> None:
        if params is None:
            from policies.idm import IdmParams

            params = IdmParams()
        self.params = params
        self._paths: dict[tuple[int, ...], PathProfile] = {}
        self._paths_version = -1
        self._memo_agents: Agents | None = None
        self._memo: dict[tuple[int, tuple[int, ...]], tuple[float, float]] = {}

    def reset(self) -> None:
        self._paths.clear()
        self._paths_version = -1
        self._memo_agents, self._memo = None, {}

    def path(self, inp: PolicyInput, agent_id: int) -> RoutePath | None:
        profile = self.profile(inp, agent_id)
        return None if profile is None else profile.path

    def profile(self, inp: PolicyInput, agent_id: int) -> PathProfile | None:
        """The agent's route path with its speed caps and first junction entry (cached per route)."""
        return self.profiles(inp, [agent_id])[0]

    def profiles(self, inp: PolicyInput, agent_ids: Iterable[int]) -> list[PathProfile | None]:
        """``profile`` of each of ``agent_ids``."""
        graph = inp.graph
        if graph.version != self._paths_version:  # forget paths through lanes retired or changed since
            self._paths = {k: pr for k, pr in self._paths.items() if all(graph.lanes.get(lane.id) is lane
                                                                          for lane in pr.lanes)}
            self._paths_version = graph.version
        if len(self._paths) > 4096:
            self._paths.clear()
        out: list[PathProfile | None] = []
        for agent_id in agent_ids:
            route = tuple(inp.routes.get(agent_id, ()))
            profile = self._paths.get(route)
            if profile is None:
                known = tuple(i for i in route if i in graph)
                if known:
                    profile = self._paths[route] = PathProfile.build(graph, known, self.params)
            out.append(profile)
        return out

    def positions(self, inp: PolicyInput, slots: np.ndarray,
                   profiles: list[PathProfile | None]) -> tuple[np.ndarray, np.ndarray]:
        """Arc position and lateral offset (N,) m of each slot on its route path (0 without a route).

        Memoised for the current agent state (every caller of one step projects from the same state).
        """
        a = inp.agents
        if self._memo_agents is not a:
            self._memo_agents, self._memo = a, {}
        s_now, lateral = np.zeros(len(slots)), np.zeros(len(slots))
        missing = []
        for row, (slot, profile) in enumerate(zip(slots, profiles, strict=True)):
            if profile is None:
                continue
            known = self._memo.get((int(a.id[slot]), profile.path.lane_ids))
            if known is None:
                missing.append(row)
            else:
                s_now[row], lateral[row] = known
        if missing:
            batch = UniformPathBatch.of([profiles[r].head or profiles[r].uniform for r in missing])
            within = np.fromiter((profiles[r].first_lane_m for r in missing), float, len(missing))
            s_now[missing], lateral[missing] = batch.project(a.xy[slots[missing]], within)
            for r in missing:
                self._memo[(int(a.id[slots[r]]), profiles[r].path.lane_ids)] = (s_now[r], lateral[r])
        return s_now, lateral
