"""Right of way as one per-step service: who may enter which junction connector, and who must stop where.

The Session owns one :class:`RightOfWay` and calls :meth:`RightOfWay.decide` once per step, before any policy
or planner moves; the :class:`RightOfWayDecision` goes to every policy and planner in
``PolicyInput.right_of_way`` (IDM NPCs, the IDM ego planner, DeltaSim's stop tokens), so they all obey one
decision and the waiting clocks advance once per step. A policy driven without a Session (tests, tools)
takes its own decision from a private service.

The rules, in order (geometry and the grant in :mod:`policies.junctions`):

1. **Signals.** Every agent whose route reaches a signalised lane within
   :data:`~policies.junctions.SIGNAL_LOOKAHEAD_M` showing red (it can still stop) or yellow (it can stop
   comfortably) is held at that lane's start. A light-held agent neither enters nor reserves its
   connector, and its waiting clock does not run.
2. **Priority.** Agents within ``junction_approach_m`` (or :data:`APPROACH_HORIZON_S` at their speed) of
   the first connector on their route request it;
   committed agents (too close to stop) go first; agents whose connector exit is blocked by standing traffic
   are held (nobody enters a junction it cannot leave); a permissive green left, and a minor road at a
   junction without lights, yield (they go in gaps of the traffic they yield to).
3. **First come, with anti-starvation.** Otherwise the closest go first if their connector conflicts with
   nothing occupied or granted; an agent held ``PATIENCE_S`` reserves its connector, so a stream of
   newcomers cannot starve it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from policies.base import PolicyInput
from policies.junctions import (
    SIGNAL_LOOKAHEAD_M,
    ConflictMap,
    JunctionRequest,
    grant_connectors,
    minor_roads,
    signal_holds,
    yields_on_green,
)
from policies.route_paths import PathProfile, RoutePaths
from vectorworld.scene import LaneType
from vectorworld.signals import is_red, is_yellow

EXIT_CLEAR_M = 6.0
EXIT_BLOCKING_MPS = 1.0
APPROACH_HORIZON_S = 5.0
"""An agent requests its next connector once it is within ``junction_approach_m`` of it or will reach it
within this many seconds at its speed, so a fast car is seen by the junction before a slow one enters in
front of it."""


@dataclass(frozen=True)
class RightOfWayDecision:
    """One step's right of way.

    requested: ids of the agents approaching a junction entry; granted: those allowed to enter their next
    connector; held: agent id -> the lane at whose start (its first point) the agent must stop (a connector
    it was not granted, or a signalised lane whose light holds it); by_light: the held agents a light holds.
    """

    step: int
    requested: frozenset[int] = frozenset()
    granted: frozenset[int] = frozenset()
    held: Mapping[int, int] = field(default_factory=dict)
    by_light: frozenset[int] = frozenset()
    by_crossing: frozenset[int] = frozenset()
    """The held agents a pedestrian on a crosswalk holds."""


class RightOfWay:
    """The per-step right-of-way service (module docstring). ``decide`` once per step; ``reset`` per episode."""

    def __init__(self, params=None, paths: RoutePaths | None = None) -> None:  # noqa: ANN001 - IdmParams
        self.paths = paths if paths is not None else RoutePaths(params)
        self.params = self.paths.params
        self.conflicts = ConflictMap()
        self._waited_s: dict[int, float] = {}
        self._last: tuple[object, int, RightOfWayDecision] | None = None

    def reset(self) -> None:
        self.paths.reset()
        self.conflicts = ConflictMap()
        self._waited_s = {}
        self._last = None

    @property
    def last(self) -> RightOfWayDecision | None:
        """The latest decision taken (None before the first)."""
        return None if self._last is None else self._last[2]

    @property
    def waited_s(self) -> Mapping[int, float]:
        """How long each agent has been held (standing, not granted) at its junction entry."""
        return self._waited_s

    def decide(self, inp: PolicyInput) -> RightOfWayDecision:
        """The decision for the state of ``inp`` (computed once per state: a second call for the same agents
        and step returns the first answer, the clocks advance once)."""
        last = self._last
        if last is not None and last[0] is inp.agents and last[1] == inp.step:
            return last[2]
        a = inp.agents
        slots = np.array([s for s in np.nonzero(a.valid)[0] if inp.routes.get(int(a.id[s]))], np.int64)
        profiles = self.paths.profiles(inp, a.id[slots].tolist())
        keep = np.array([pr is not None for pr in profiles], bool)
        slots = slots[keep] if len(slots) else slots
        profiles = [pr for pr in profiles if pr is not None]
        s_now, _ = self.paths.positions(inp, slots, profiles) if len(slots) else (np.zeros(0), np.zeros(0))
        requests = []
        for slot, profile, s_k in zip(slots.tolist(), profiles, s_now, strict=True):
            dist = profile.connector_s - s_k
            reach_m = max(self.params.junction_approach_m, float(a.speed[slot]) * APPROACH_HORIZON_S)
            if profile.connector >= 0 and 0.0 <= dist <= reach_m:
                requests.append(self.junction_request(int(a.id[slot]), profile.connector, dist, float(a.speed[slot]),
                                                      float(a.length[slot]), profile.chain))
        requested = frozenset(r.agent_id for r in requests)
        standing = self._minor_yields(inp, self._lights(inp, requests))
        standing = self._exit_clear(inp, standing)
        # A pedestrian on a crosswalk closes the connectors across it to all who can still stop.
        by_crossing = {r.agent_id for r in standing if not r.committed and r.connector in inp.crossing_blocked}
        standing = [r for r in standing if r.agent_id not in by_crossing]
        occupied, sole = self._occupied_connectors(inp)
        granted = grant_connectors(inp.graph, self.conflicts, occupied, standing, self._waited_s,
                                   sole_occupant=sole)
        self._update_waits(inp, standing, granted)
        held = {r.agent_id: r.connector for r in requests if r.agent_id not in granted}
        light_s, light_lane = self.signal_stops(inp, slots, profiles, s_now)
        by_light = set()
        for k in np.nonzero(light_lane >= 0)[0].tolist():
            agent_id = int(a.id[slots[k]])
            by_light.add(agent_id)
            current = held.get(agent_id)
            if current is None or profiles[k].lane_start_s.get(current, np.inf) > light_s[k]:
                held[agent_id] = int(light_lane[k])
        decision = RightOfWayDecision(inp.step, requested, frozenset(granted), held, frozenset(by_light),
                                      frozenset(by_crossing))
        self._last = (inp.agents, inp.step, decision)
        return decision

    def junction_request(self, agent_id: int, connector: int, distance_m: float, speed_mps: float,
                         length_m: float = 0.0, then: tuple[int, ...] = ()) -> JunctionRequest:
        """A request to enter ``connector`` (and the connectors ``then`` right after it), ``distance_m`` ahead
        of an agent ``length_m`` long driving at ``speed_mps``."""
        return JunctionRequest(agent_id, connector, distance_m, self._committed(speed_mps, distance_m),
                               length_m=length_m, then=then)

    def signal_stops(self, inp: PolicyInput, slots: np.ndarray, profiles: list[PathProfile],
                     s_now: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N,) arc length of the stop point where a light holds each slot (the start of the first signalised
        lane ahead within :data:`SIGNAL_LOOKAHEAD_M` whose light holds it; inf where none) and that lane (-1)."""
        out = np.full(len(slots), np.inf)
        lane_out = np.full(len(slots), -1, np.int64)
        rows, starts, states, lanes = _lights_ahead(inp, profiles, s_now)
        if not len(rows):
            return out, lane_out
        a = inp.agents
        slot_r = np.asarray(slots)[rows]
        hold = signal_holds(states, a.speed[slot_r], starts - s_now[rows] - a.length[slot_r] / 2.0,
                            self.params.max_decel_mps2)
        for row, start, lane_id in zip(rows[hold], starts[hold], lanes[hold], strict=True):
            if start < out[row]:
                out[row], lane_out[row] = start, lane_id
        return out, lane_out

    def red_ahead_m(self, inp: PolicyInput, slots: np.ndarray) -> np.ndarray:
        """(N,) distance (m) from each slot's position to the stop point of the first light ahead on its route
        (within :data:`SIGNAL_LOOKAHEAD_M`) if that light shows red or yellow; inf where none does."""
        out = np.full(len(slots), np.inf)
        ids = inp.agents.id[np.asarray(slots, np.int64)].tolist()
        profiles = self.paths.profiles(inp, ids)
        known = [k for k, pr in enumerate(profiles) if pr is not None]
        if not known or not len(inp.signals):
            return out
        kept = [profiles[k] for k in known]
        s_now, _ = self.paths.positions(inp, np.asarray(slots)[known], kept)
        rows, starts, states, _ = _lights_ahead(inp, kept, s_now)
        first = {}
        for row, start, state in zip(rows.tolist(), starts.tolist(), states.tolist(), strict=True):
            first.setdefault(row, (start, state))  # lights come in route order: the first one ahead counts
        for row, (start, state) in first.items():
            if bool(is_red(state)) or bool(is_yellow(state)):
                out[known[row]] = start - s_now[row]
        return out

    def _lights(self, inp: PolicyInput, requests: list[JunctionRequest]) -> list[JunctionRequest]:
        """Drop the requests a light holds (they neither go nor reserve their connector, and their waiting
        clock does not run); mark permissive green lefts as yielding."""
        signals = inp.signals
        if not len(signals) or not requests:
            return requests
        a = inp.agents
        lit = [k for k, r in enumerate(requests) if signals.state(r.connector) is not None]
        if not lit:
            return requests
        slot_of = {int(i): k for k, i in enumerate(a.id.tolist()) if a.valid[k]}
        slots = np.array([slot_of.get(requests[k].agent_id, 0) for k in lit])
        states = np.array([int(signals.state(requests[k].connector)) for k in lit])
        front = np.array([requests[k].distance_m for k in lit]) - a.length[slots] / 2.0
        hold = signal_holds(states, a.speed[slots], front, self.params.max_decel_mps2)
        held = {lit[k] for k in np.nonzero(hold)[0].tolist()}
        lit_set = set(lit)
        out = []
        for k, r in enumerate(requests):
            if k in held:
                continue
            if k in lit_set and yields_on_green(inp.graph, signals, r.connector):
                r = dataclasses.replace(r, yields=True)
            out.append(r)
        return out

    def _minor_yields(self, inp: PolicyInput, requests: list[JunctionRequest]) -> list[JunctionRequest]:
        """Mark the requests from a minor road at a junction without lights as yielding."""
        minor = minor_roads(inp.graph, self.conflicts, requests, inp.signals)
        return [dataclasses.replace(r, yields=True) if m else r for r, m in zip(requests, minor, strict=True)]

    def _exit_clear(self, inp: PolicyInput, requests: list[JunctionRequest]) -> list[JunctionRequest]:
        """Drop requests whose connector exit is blocked by a (nearly) standing agent in traffic on the way
        out (on the connector or a lane it leads to, within ``EXIT_CLEAR_M`` of its end): nobody enters a
        junction it cannot leave, so crossing traffic is never blocked by a queue spilling into it
        (committed agents enter anyway). Agents standing near the exit on other lanes do not block it (they
        wait at their own entries; counting them let two held agents wait for each other for good)."""
        a = inp.agents
        standing = [s for s in np.flatnonzero(a.valid & (a.speed < EXIT_BLOCKING_MPS))
                    if inp.routes.get(int(a.id[s]))]  # parked cars (no route) never block
        if not standing or not requests:
            return requests
        ids, xy = a.id[standing], a.xy[standing]
        lane = np.array([inp.routes.get(int(i))[0] for i in ids])

        def blocked(req: JunctionRequest) -> bool:
            connector = inp.graph[req.connector]
            on_way_out = np.isin(lane, (req.connector, *connector.successors)) & (ids != req.agent_id)
            return bool((on_way_out & (((xy - connector.points[-1]) ** 2).sum(-1) < EXIT_CLEAR_M**2)).any())

        return [req for req in requests if req.committed or not blocked(req)]

    def _update_waits(self, inp: PolicyInput, requests: list[JunctionRequest], granted: set[int]) -> None:
        """Time each agent has been held (standing, not granted) at its junction entry."""
        a = inp.agents
        standing = set(a.id[a.valid & (a.speed < 0.5)].tolist())
        self._waited_s = {r.agent_id: self._waited_s.get(r.agent_id, 0.0) + inp.dt_s for r in requests
                          if r.agent_id not in granted and r.agent_id in standing}

    def _committed(self, speed: float, distance_m: float) -> bool:
        """Whether an agent at ``speed`` can no longer stop within ``distance_m`` at the hard braking limit."""
        return speed * speed / (2.0 * self.params.max_decel_mps2) > distance_m - 0.5

    def _occupied_connectors(self, inp: PolicyInput) -> tuple[dict[int, float], dict[int, int]]:
        """Connector -> the length of the longest *moving* agent on it: its centre is on the connector, or it
        left the connector less than half its length ago (its tail is still in the junction). A stopped agent
        does not hold its connector: if it stands in someone's way, car following stops them behind it; if
        not, nobody needs to wait (this prevents junction deadlocks). Also connector -> the agent id where one
        agent alone occupies it (its own connector does not hold it back from the next one)."""
        occupied: dict[int, float] = {}
        occupants: dict[int, set[int]] = {}
        a, graph = inp.agents, inp.graph
        moving = np.nonzero(a.valid & (a.speed > 0.3))[0]
        for slot, agent_id in zip(moving.tolist(), a.id[moving].tolist(), strict=True):
            route = inp.routes.get(agent_id)
            if not route or route[0] not in graph:
                continue
            length, lane = float(a.length[slot]), graph[route[0]]
            on = lane.id if lane.lane_type == LaneType.CONNECTOR else None
            if on is None and float(np.hypot(*(a.xy[slot] - lane.points[0]))) < length / 2.0:
                on = _connector_behind(inp, slot, lane.predecessors)
            if on is not None:
                occupied[on] = max(occupied.get(on, 0.0), length)
                occupants.setdefault(on, set()).add(agent_id)
        return occupied, {c: next(iter(ids)) for c, ids in occupants.items() if len(ids) == 1}


def _connector_behind(inp: PolicyInput, slot: int, predecessors: tuple[int, ...]) -> int | None:
    """The connector among ``predecessors`` that the tail of the agent in ``slot`` is still on (the one closest
    to its rear end; None if none of them is a connector)."""
    a, graph = inp.agents, inp.graph
    connectors = [graph[p] for p in predecessors if p in graph and graph[p].lane_type == LaneType.CONNECTOR]
    if not connectors:
        return None
    yaw = float(a.yaw[slot])
    rear = a.xy[slot] - a.length[slot] / 2.0 * np.array([np.cos(yaw), np.sin(yaw)])
    return min(connectors, key=lambda c: float(np.min(np.hypot(*(c.points - rear).T)))).id


def _lights_ahead(inp: PolicyInput, profiles: list[PathProfile], s_now: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every signalised lane ahead of each row within :data:`SIGNAL_LOOKAHEAD_M`, in route order: (K,) row
    indices, the lanes' start arc lengths (stop points), their states and lane ids."""
    signals = inp.signals
    rows, starts, states, lanes = [], [], [], []
    if len(signals):
        for row, profile in enumerate(profiles):
            for lane_id, start in profile.signal_lanes:
                if start - s_now[row] > SIGNAL_LOOKAHEAD_M:
                    break
                state = signals.state(lane_id)
                if state is not None and start >= s_now[row]:
                    rows.append(row)
                    starts.append(start)
                    states.append(int(state))
                    lanes.append(lane_id)
    return (np.array(rows, np.int64), np.array(starts, float), np.array(states, np.int64),
            np.array(lanes, np.int64))
