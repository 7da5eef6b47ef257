"""Pedestrians who cross at crosswalks, and the lanes their crossing closes to traffic.

A new crosswalk gets a pedestrian at one of its kerbs with probability :data:`WALKER_PROB`. The pedestrian
waits a while (:data:`DWELL_S`), then steps onto the crosswalk when it may:

* where the crossed road has lights (``Crosswalk.through``), only while its straight movements show red, and
  will still show red when the pedestrian reaches the far kerb (plus :data:`CLEAR_AHEAD_S`);
* never in front of a vehicle that is on a connector crossing the strip, that can no longer stop before one
  (at :data:`VEHICLE_BRAKE_MPS2`), or whose box already touches the strip.

While someone is on a crosswalk, the conflicting connectors it has not yet walked past (by
:data:`PASSED_M`) are closed (:meth:`Crossings.blocked`): the right-of-way service holds every vehicle that
has not committed to one at its start, as it does at a red light. At the far kerb the pedestrian turns to
a crosswalk that starts there (the next arm round the corner) or back across the same one, and waits
again. Walkers are moved here, not by the NPC policy; one whose crosswalk is retired with its tile stays
where it is, standing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorworld import geometry
from vectorworld.generation.base import AgentSpawns
from vectorworld.scene import Agents, AgentType, Crosswalk, LaneGraph
from vectorworld.signals import is_red

WALKER_PROB = 0.5
WALK_SPEED_MPS = (1.1, 1.6)
DWELL_S = (4.0, 30.0)
"""How long (s) a pedestrian waits at a kerb before it may cross (drawn per kerb)."""
CLEAR_AHEAD_S = 2.0
CORNER_M = 8.0
"""A crosswalk whose start lies within this distance (m) of where a walk ended continues it."""
VEHICLE_BRAKE_MPS2 = 3.0
VEHICLE_REACH_M = 80.0
"""Vehicles farther than this (m) from a crosswalk, plus their stopping distance, are no threat to it (no
junction connector is that long)."""
PEDESTRIAN_SIZE_M = 0.6
KEEP_RIGHT_M = 0.5
PASSED_M = 2.5
"""A pedestrian this far (m) past where a lane crosses its walk no longer closes that lane."""
PERSONAL_SPACE_M = 0.3
"""A walker does not step closer than this (m, box to box) to anyone: it waits behind a slower pedestrian
or a vehicle standing in its way."""


@dataclass
class Walker:
    """One crossing pedestrian: the crosswalk it is at, which way it walks it, and what it is doing."""

    agent_id: int
    crosswalk: int
    forward: bool
    speed_mps: float
    ready_at_s: float
    on_strip: bool = False
    to_kerb: np.ndarray | None = None
    """Where it is walking round a corner to (the start of its next crosswalk), if it is."""

    def path(self, walk: Crosswalk) -> np.ndarray:
        """The walk in this walker's direction, kept :data:`KEEP_RIGHT_M` to the right (people walking the
        other way pass on the other side)."""
        line, along = (walk.walk, walk.direction) if self.forward else (walk.walk[::-1], -walk.direction)
        return line + KEEP_RIGHT_M * np.array([along[1], -along[0]])


class Crossings:
    """The crossing pedestrians of one episode (module docstring)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.walkers: dict[int, Walker] = {}
        self._points: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def spawns(self, crosswalks: tuple[Crosswalk, ...], t_s: float) -> tuple[AgentSpawns, list[Walker]]:
        """Pedestrians for new crosswalks, waiting at a kerb: their spawns and walkers (agent ids unset)."""
        chosen = [(w, bool(self.rng.random() < 0.5)) for w in crosswalks if self.rng.random() < WALKER_PROB]
        walkers, xy, yaw = [], [], []
        for walk, forward in chosen:
            walker = Walker(-1, walk.id, forward, float(self.rng.uniform(*WALK_SPEED_MPS)),
                            t_s + float(self.rng.uniform(*DWELL_S)))
            path = walker.path(walk)
            walkers.append(walker)
            xy.append(path[0])
            yaw.append(_heading(path[0], path[1]))
        n = len(walkers)
        size = np.full(n, PEDESTRIAN_SIZE_M)
        spawns = AgentSpawns(np.array(xy).reshape(n, 2), np.array(yaw), np.zeros(n), size, size.copy(),
                             np.full(n, AgentType.PEDESTRIAN, np.int8), np.full(n, -1, np.int64),
                             np.zeros((n, 6, 2)))
        return spawns, walkers

    def add(self, walker: Walker) -> None:
        self.walkers[walker.agent_id] = walker

    def forget(self, agent_ids: list[int]) -> None:
        for agent_id in agent_ids:
            self.walkers.pop(agent_id, None)

    def occupied(self, crosswalks: dict[int, Crosswalk]) -> frozenset[int]:
        """Ids of the crosswalks someone is on."""
        return frozenset(w.crosswalk for w in self.walkers.values() if w.on_strip and w.crosswalk in crosswalks)

    def blocked(self, crosswalks: dict[int, Crosswalk], graph: LaneGraph, agents: Agents) -> frozenset[int]:
        """Connector lanes closed to vehicles that have not committed: those a pedestrian on a crosswalk has
        not yet walked :data:`PASSED_M` beyond (where the connector, or the lane it leads into, crosses the
        walk), so a turning car goes once the pedestrian has passed its lane."""
        slot_of = {int(i): k for k, i in enumerate(agents.id.tolist()) if agents.valid[k]}
        out: set[int] = set()
        for w in self.walkers.values():
            walk = crosswalks.get(w.crosswalk)
            slot = slot_of.get(w.agent_id)
            if not w.on_strip or walk is None or slot is None:
                continue
            lanes, at = self._crossing_points(walk, graph)
            here = float(np.dot(agents.xy[slot] - walk.walk[0], walk.direction))
            ahead = at > here - PASSED_M if w.forward else at < here + PASSED_M
            out.update(lanes[ahead].tolist())
        return frozenset(out)

    def _crossing_points(self, walk: Crosswalk, graph: LaneGraph) -> tuple[np.ndarray, np.ndarray]:
        """The conflicting lanes (K,) of a crosswalk and where each crosses its walk (K,) m from walk[0]: the
        lane's end nearer the walk line (an entering connector starts at the strip, a leaving one ends there),
        kept once computed."""
        hit = self._points.get(walk.id)
        if hit is None:
            start, along = walk.walk[0], walk.direction
            across = np.array([-along[1], along[0]])
            lanes, at = [], []
            for lane_id in walk.conflicts:
                if lane_id not in graph:
                    continue
                ends = graph[lane_id].points[[0, -1]]
                near = ends[int(np.argmin(np.abs((ends - start) @ across)))]
                lanes.append(lane_id)
                at.append(float(np.dot(near - start, along)))
            hit = self._points[walk.id] = (np.array(lanes, np.int64), np.array(at))
        return hit

    def move(self, agents: Agents, crosswalks: dict[int, Crosswalk], graph: LaneGraph,
             routes: dict[int, list[int]], t_s: float, dt_s: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Next state of every walker that still has its crosswalk: slots (W,), xy (W, 2), yaw (W,), speed (W,)."""
        slots, xy, yaw, speed = [], [], [], []
        slot_of = {int(i): k for k, i in enumerate(agents.id.tolist()) if agents.valid[k]}
        for agent_id, w in self.walkers.items():
            slot = slot_of.get(agent_id)
            walk = crosswalks.get(w.crosswalk)
            if slot is None or walk is None:
                continue
            here = agents.xy[slot]
            if w.to_kerb is not None:
                target, moving = w.to_kerb, True
            elif w.on_strip:
                target, moving = w.path(walk)[-1], True
            else:
                moving = t_s >= w.ready_at_s and self._may_start(w, walk, agents, graph, routes, t_s)
                w.on_strip = moving
                target = w.path(walk)[-1]
            step = w.speed_mps * dt_s if moving else 0.0
            gap = float(np.linalg.norm(target - here))
            new = target.copy() if gap <= step else here + (target - here) * (step / max(gap, 1e-9))
            if step > 0.0 and _closing_in(agents, slot, here, new):
                new, step = here.copy(), 0.0
                moving = False
            heading = _heading(here, target) if gap > 1e-6 else float(agents.yaw[slot])
            if moving and gap <= step:
                self._arrived(w, walk, crosswalks, t_s)
            slots.append(slot)
            xy.append(new)
            yaw.append(heading)
            speed.append(step / dt_s)
        n = len(slots)
        return (np.array(slots, np.int64), np.array(xy).reshape(n, 2), np.array(yaw, float),
                np.array(speed, float))

    def _arrived(self, w: Walker, walk: Crosswalk, crosswalks: dict[int, Crosswalk], t_s: float) -> None:
        """At the far kerb (or at the start of the next crosswalk after a corner): choose what comes next."""
        if w.to_kerb is not None:
            w.to_kerb = None
            w.ready_at_s = t_s + float(self.rng.uniform(*DWELL_S))
            return
        w.on_strip = False
        end = w.path(walk)[-1]
        nexts = [(k, bool(fwd)) for k, other in sorted(crosswalks.items()) if k != walk.id
                 for fwd, kerb in ((True, other.walk[0]), (False, other.walk[-1]))
                 if float(np.linalg.norm(kerb - end)) < CORNER_M]
        if nexts and self.rng.random() < 0.7:
            w.crosswalk, w.forward = nexts[int(self.rng.integers(len(nexts)))]
            w.to_kerb = w.path(crosswalks[w.crosswalk])[0].copy()
        else:  # back across the same one
            w.forward = not w.forward
            w.ready_at_s = t_s + float(self.rng.uniform(*DWELL_S))

    def _may_start(self, w: Walker, walk: Crosswalk, agents: Agents, graph: LaneGraph,
                   routes: dict[int, list[int]], t_s: float) -> bool:
        crossing_s = walk.length_m / w.speed_mps + CLEAR_AHEAD_S
        for lane_id in walk.through:
            signal = graph.lanes[lane_id].signal if lane_id in graph else None
            if signal is None:
                continue
            times = np.array([t_s, t_s + crossing_s / 2.0, t_s + crossing_s])
            states = np.array([int(signal.program.rule_states(np.array([signal.group]), t)[0]) for t in times])
            if not bool(np.all(is_red(states))):
                return False
        return not _vehicle_in_the_way(walk, agents, graph, routes)


def _vehicle_in_the_way(walk: Crosswalk, agents: Agents, graph: LaneGraph, routes: dict[int, list[int]]) -> bool:
    """A vehicle is on a connector crossing the strip, committed to one, or touching the strip."""
    conflicts = set(walk.conflicts)
    moving_kinds = agents.valid & (agents.agent_type != AgentType.PEDESTRIAN)
    centre = walk.walk.mean(0)
    # Connectors are short: a vehicle on one, or before one and unable to stop, is within this reach.
    reach = walk.length_m / 2.0 + VEHICLE_REACH_M + agents.speed ** 2 / (2.0 * VEHICLE_BRAKE_MPS2)
    close = moving_kinds & (np.linalg.norm(agents.xy - centre, axis=-1) < reach)
    for slot in np.nonzero(close)[0].tolist():
        route = routes.get(int(agents.id[slot]), ())
        if route and route[0] in conflicts:
            return True
        speed = max(float(agents.speed[slot]), 0.0)
        if len(route) > 1 and route[1] in conflicts and route[1] in graph:
            to_start = float(np.linalg.norm(agents.xy[slot] - graph[route[1]].points[0])) - agents.length[slot] / 2.0
            if speed * speed / (2.0 * VEHICLE_BRAKE_MPS2) > to_start - 1.0:
                return True
    near = moving_kinds & (np.linalg.norm(agents.xy - centre, axis=-1) < walk.length_m / 2.0 + 8.0)
    if not near.any():
        return False
    reach = walk.half_width_m + 0.5 * np.hypot(agents.length[near], agents.width[near])
    dist = geometry.point_segment_distance(agents.xy[near], walk.walk[:-1], walk.walk[1:]).min(1)
    return bool((dist < reach).any())


def _closing_in(agents: Agents, slot: int, here: np.ndarray, new: np.ndarray) -> bool:
    """Whether stepping from ``here`` to ``new`` takes the walker in ``slot`` within PERSONAL_SPACE_M of
    another agent's box, closer than it is now."""
    others = agents.valid.copy()
    others[slot] = False
    near = others & (np.linalg.norm(agents.xy - here, axis=-1) < 0.5 * (agents.length + agents.width) + 3.0)
    if not near.any():
        return False
    before, after = (_box_distance(agents, near, p) - PEDESTRIAN_SIZE_M / 2.0 for p in (here, new))
    return bool(np.any((after < PERSONAL_SPACE_M) & (after < before)))


def _box_distance(agents: Agents, mask: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Distance (K,) m from ``point`` to the boxes of the agents in ``mask``."""
    local = geometry.to_local(point[None], agents.xy[mask], agents.yaw[mask])  # row-wise frames: (K, 2)
    dx = np.maximum(np.abs(local[:, 0]) - agents.length[mask] / 2.0, 0.0)
    dy = np.maximum(np.abs(local[:, 1]) - agents.width[mask] / 2.0, 0.0)
    return np.hypot(dx, dy)


def _heading(a: np.ndarray, b: np.ndarray) -> float:
    d = b - a
    return float(np.arctan2(d[1], d[0]))
