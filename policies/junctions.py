"""Right of way at intersections: which agents may enter which connector lanes this step.

Traffic lights come first (:func:`signal_holds`): red holds every agent that can still stop before the stop
point, yellow every agent that can stop comfortably (the others clear the junction). Among the agents a
light lets go (or at junctions without lights) the rules below decide; a permissive green left (GO on a
turning connector) yields to the other green movements, and at a junction without lights a minor road (a
lower speed limit) yields to the major one.

Two connectors conflict when their centrelines cross, pass within 3 m, or merge into the same lane; for a long
vehicle (a truck, a bus) "pass close" is judged on the boxes it sweeps through the junction, whose corners swing
far off a tight connector's centreline (:func:`swept_outline`). An agent about to enter a connector is granted it
only if no agent occupies or has been granted a conflicting one.
Requests are served in order: agents too close to stop (they enter anyway), then agents that waited
``PATIENCE_S`` (they reserve their connector even when they cannot go yet, so newcomers cannot starve
them), then the closest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vectorworld.geometry import (
    point_segment_distance,
    polyline_headings,
    resample_by_spacing,
    segment_crossing,
    wrap_angle,
)
from vectorworld.scene import Lane, LaneGraph, LaneType
from vectorworld.signals import SignalState, SignalView, is_red, is_yellow

YELLOW_STOP_DECEL_MPS2 = 3.0
"""On yellow an agent stops if that needs at most this deceleration (m/s^2); otherwise it goes through."""
SIGNAL_LOOKAHEAD_M = 70.0
"""Lights farther ahead than this (m) along the route are not looked at yet."""
LONG_VEHICLE_M = 6.5
"""Vehicles longer than this (m) are judged at junctions by the boxes they sweep, not by their centrelines."""
SWEPT_BOX_M = {False: (5.0, 2.0), True: (12.0, 2.6)}
"""(length, width) in m of the box swept along a connector by a car and by a long vehicle (the longest the world
spawns is 11 m; WOMD's buses are about 12 m)."""
SWEPT_GAP_M = 1.0
"""A long vehicle's connector conflicts with another when the boxes swept along them come closer than this (m);
for two cars on straight connectors that is the 3 m centreline rule."""


def signal_holds(states: np.ndarray, speed_mps: np.ndarray, front_m: np.ndarray,
                 max_decel_mps2: float) -> np.ndarray:
    """(N,) bool: whether agents at ``speed_mps`` (N,) whose front is ``front_m`` (N,) m before a stop point
    with light ``states`` (N,) must stop there: on red if they still can at ``max_decel_mps2``, on yellow if
    they can at :data:`YELLOW_STOP_DECEL_MPS2`."""
    v = np.maximum(np.asarray(speed_mps, dtype=np.float64), 0.0)
    need = v * v / (2.0 * np.maximum(np.asarray(front_m, dtype=np.float64) - 0.3, 0.05))
    red, yellow = is_red(states), is_yellow(states)
    return (red & (need <= max_decel_mps2)) | (yellow & (need <= YELLOW_STOP_DECEL_MPS2))


def turns_left(lane: Lane) -> bool:
    """Whether a connector turns left (its heading changes by more than 0.6 rad counter-clockwise)."""
    return float(wrap_angle(lane.end_pose[1] - lane.start_pose[1])) > 0.6


def yields_on_green(graph: LaneGraph, signals: SignalView, connector: int) -> bool:
    """A permissive left: GO (not a protected arrow) on a left-turning connector."""
    return signals.state(connector) == SignalState.GO and turns_left(graph[connector])


def _segments_cross(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether polylines a (N, 2) and b (M, 2) intersect (ignoring shared end points)."""
    t, u, denom = segment_crossing(a[:-1, None], (a[1:] - a[:-1])[:, None], b[None, :-1], (b[1:] - b[:-1])[None])
    hit = (np.abs(denom) > 1e-12) & (t > 1e-3) & (t < 1 - 1e-3) & (u > 1e-3) & (u < 1 - 1e-3)
    return bool(hit.any())


def _pass_close(la: Lane, lb: Lane, clearance_m: float = 3.0) -> bool:
    """Whether two connectors come so close that vehicles on them would touch (their boxes, not their
    centrelines, would meet). Connectors leaving the same lane are ordered by car following instead."""
    if set(la.predecessors) & set(lb.predecessors):
        return False
    d = point_segment_distance(la.points, lb.points[:-1], lb.points[1:])
    return bool(d.min() < clearance_m)


def swept_outline(lane: Lane, length_m: float, width_m: float) -> np.ndarray:
    """(K, 2) points covering the boxes of ``length_m`` x ``width_m`` whose centre follows ``lane``'s centreline
    (every metre), continued straight for half a length before its start and past its end: while the centre
    approaches or leaves the connector, the box's front or tail is still in the junction."""
    centre = resample_by_spacing(lane.points, 1.0)
    heads = polyline_headings(centre)
    half = length_m / 2.0
    reach = np.linspace(half, 0.0, max(2, int(np.ceil(half)) + 1))[:-1, None]                # (E, 1)
    before = centre[0] - reach * np.array([np.cos(heads[0]), np.sin(heads[0])])
    after = centre[-1] + reach[::-1] * np.array([np.cos(heads[-1]), np.sin(heads[-1])])
    centres = np.concatenate([before, centre, after])
    heads = np.concatenate([np.full(len(before), heads[0]), heads, np.full(len(after), heads[-1])])
    s, w = np.meshgrid(np.linspace(-half, half, 5), np.array([-1.0, 0.0, 1.0]) * width_m / 2.0)
    cos, sin = np.cos(heads)[:, None], np.sin(heads)[:, None]
    x = centres[:, :1] + cos * s.ravel() - sin * w.ravel()
    y = centres[:, 1:] + sin * s.ravel() + cos * w.ravel()
    return np.stack([x.ravel(), y.ravel()], -1)


def _sweeps_close(outline_a: np.ndarray, outline_b: np.ndarray) -> bool:
    """Whether two swept outlines (K, 2), (M, 2) come within :data:`SWEPT_GAP_M` of each other."""
    lo, hi = np.maximum(outline_a.min(0), outline_b.min(0)), np.minimum(outline_a.max(0), outline_b.max(0))
    if np.any(lo - hi > SWEPT_GAP_M):
        return False  # the bounding boxes are apart
    d = outline_a[:, None] - outline_b[None]
    return bool(np.einsum("abk,abk->ab", d, d).min() < SWEPT_GAP_M**2)


class ConflictMap:
    """Caches whether pairs of connector lanes conflict, for cars and for long vehicles on them."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, int, bool, bool], bool] = {}
        self._outlines: dict[tuple[int, bool], np.ndarray] = {}

    def conflict(self, graph: LaneGraph, a: int, b: int, long_a: bool = False, long_b: bool = False) -> bool:
        """Whether connectors ``a`` and ``b`` conflict; ``long_a`` / ``long_b``: a long vehicle drives on it."""
        if a == b:
            return False  # followers on one connector are handled by car following
        key = (a, b, long_a, long_b) if a < b else (b, a, long_b, long_a)
        hit = self._cache.get(key)
        if hit is None:
            la, lb = graph[a], graph[b]
            reach = (SWEPT_BOX_M[True][0] if long_a or long_b else 0.0)
            if np.linalg.norm(la.points.mean(0) - lb.points.mean(0)) > la.length_m + lb.length_m + reach:
                hit = False
            elif set(la.successors) & set(lb.successors) or _segments_cross(la.points, lb.points):
                hit = True
            elif long_a or long_b:
                hit = not set(la.predecessors) & set(lb.predecessors) and _sweeps_close(
                    self._outline(la, long_a), self._outline(lb, long_b))
            else:
                hit = _pass_close(la, lb)
            self._cache[key] = hit
        return hit

    def any_conflict(self, graph: LaneGraph, a: int, others: Sequence[tuple[int, bool]], long_a: bool = False) -> bool:
        """Whether connector ``a`` conflicts with any of ``others`` ((connector, long vehicle on it) pairs; the
        hot loop of granting)."""
        cache = self._cache
        for b, long_b in others:
            hit = cache.get((a, b, long_a, long_b) if a < b else (b, a, long_b, long_a))
            if hit is None:
                hit = self.conflict(graph, a, b, long_a, long_b)
            if hit and a != b:
                return True
        return False

    def forget(self, lane_ids: Sequence[int]) -> None:
        gone = set(lane_ids)
        self._cache = {k: v for k, v in self._cache.items() if k[0] not in gone and k[1] not in gone}
        self._outlines = {k: v for k, v in self._outlines.items() if k[0] not in gone}

    def _outline(self, lane: Lane, long: bool) -> np.ndarray:
        outline = self._outlines.get((lane.id, long))
        if outline is None:
            outline = self._outlines[(lane.id, long)] = swept_outline(lane, *SWEPT_BOX_M[long])
        return outline


PATIENCE_S = 5.0
"""After waiting this long at a junction entry, an agent goes before newcomers."""
YIELD_PATIENCE_S = 12.0
"""The same for an agent that yields (a permissive left, a minor road): it waits for a gap this long before
it claims its connector against the traffic it yields to."""
MINOR_MARGIN_MPS = 1.0
"""An unsignalised approach is a minor road when a conflicting approach's speed limit is higher by more."""


@dataclass(frozen=True)
class JunctionRequest:
    """Agent ``agent_id`` will enter ``connector`` after ``distance_m`` along its route."""

    agent_id: int
    connector: int
    distance_m: float
    committed: bool = False
    """Too close to stop before the entry even with hard braking: it enters whatever is granted."""
    yields: bool = False
    """A permissive green left or a minor road: served after the agents that do not yield (committed agents
    still go first, and a yielding agent that waited :data:`YIELD_PATIENCE_S`)."""
    length_m: float = 0.0
    """The agent's length: a long vehicle's connector conflicts by its swept boxes (:data:`LONG_VEHICLE_M`)."""
    then: tuple[int, ...] = ()
    """The connectors right after ``connector`` on its route: granted together with it, as one junction (a
    chain's second connector requested only from the first came too late to stop for: two cars granted
    crossing chains met inside a learned junction)."""

    @property
    def long(self) -> bool:
        return self.length_m > LONG_VEHICLE_M

    @property
    def connectors(self) -> tuple[int, ...]:
        return (self.connector, *self.then)


def grant_connectors(graph: LaneGraph, conflicts: ConflictMap, occupied: Mapping[int, float],
                     requests: Sequence[JunctionRequest], waited_s: Mapping[int, float] | None = None,
                     patience_s: float = PATIENCE_S, sole_occupant: Mapping[int, int] | None = None) -> set[int]:
    """Agent ids allowed to enter their next connector.

    occupied: connector lane id -> the length (m) of the longest agent on it (0: none); sole_occupant:
    connector -> the agent id when that agent alone occupies it (an agent's own connector never holds it
    back from the next one: a chain of connectors touches at its joints). waited_s: how long each agent has
    been held at its entry. Committed agents go first, then those who waited ``patience_s`` or more
    (:data:`YIELD_PATIENCE_S` for yielding agents; longest first), then the others by distance, yielding
    agents last. A patient agent that still cannot go reserves its connector, so that a stream of newcomers
    on a conflicting connector cannot starve it.
    """
    waited = waited_s or {}
    sole = sole_occupant or {}
    granted: set[int] = set()
    taken = [(c, length > LONG_VEHICLE_M, sole.get(c, -1)) for c, length in occupied.items() if length > 0]

    def patient(r: JunctionRequest) -> bool:
        return waited.get(r.agent_id, 0.0) >= (max(patience_s, YIELD_PATIENCE_S) if r.yields else patience_s)

    def priority(r: JunctionRequest) -> tuple:
        wait = waited.get(r.agent_id, 0.0)
        return (not r.committed, not patient(r), -wait if patient(r) else 0.0, r.yields, r.distance_m, r.agent_id)

    for req in sorted(requests, key=priority):
        others = [(c, long) for c, long, occupant in taken if occupant != req.agent_id]
        mine = [c for c in req.connectors if c in graph]
        if req.committed or not any(conflicts.any_conflict(graph, c, others, req.long) for c in mine):
            granted.add(req.agent_id)
            taken.extend((c, req.long, -1) for c in mine)
        elif patient(req):
            taken.extend((c, req.long, -1) for c in mine)
    return granted


def approach_speed_mps(graph: LaneGraph, connector: int) -> float:
    """The speed limit of the road a connector is entered from (the fastest of its predecessors; the
    connector's own limit when none is known)."""
    lane = graph[connector]
    limits = [graph[p].speed_limit_mps for p in lane.predecessors if p in graph]
    return max(limits) if limits else lane.speed_limit_mps


def minor_roads(graph: LaneGraph, conflicts: ConflictMap, requests: Sequence[JunctionRequest],
                signals: SignalView) -> list[bool]:
    """Per request, whether it comes from a minor road at an unsignalised junction: a conflicting request
    comes from an approach whose speed limit is higher by more than :data:`MINOR_MARGIN_MPS` (a two-way
    stop: the minor road yields to the major one)."""
    speeds = [approach_speed_mps(graph, r.connector) for r in requests]
    out = []
    for k, r in enumerate(requests):
        out.append(signals.state(r.connector) is None and any(
            speeds[m] > speeds[k] + MINOR_MARGIN_MPS and conflicts.conflict(graph, r.connector, q.connector)
            for m, q in enumerate(requests) if m != k))
    return out


def is_connector(graph: LaneGraph, lane_id: int) -> bool:
    return lane_id in graph and graph[lane_id].lane_type == LaneType.CONNECTOR
