"""IDM lane following, batched: car following, curve speed, stop at open ends, yielding at junctions.

Each controlled agent drives along the centreline of its route. Its speed follows the Intelligent
Driver Model (Treiber et al., 2000) towards a desired speed capped by the lane speed limit and by the
curvature ahead (|a_lat| <= max_lat_accel), behind the nearest obstacle in its corridor: another agent,
the end of the known road, or the entry of a connector it has not been granted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from policies.base import Policy, PolicyInput, register_policy
from policies.junctions import (
    SIGNAL_LOOKAHEAD_M,
    ConflictMap,
    JunctionRequest,
    grant_connectors,
    signal_holds,
    yields_on_green,
)
from vectorworld import geometry
from vectorworld.scene import Agents, Lane, LaneGraph, LaneType
from vectorworld.world.routes import RoutePath, build_path
from vectorworld.world.uniform_paths import UniformPath, UniformPathBatch

LOOKAHEAD_M = 70.0
MAX_YAW_RATE_RPS = 1.2
MAX_LAT_ACCEL_MPS2 = 6.0
MAX_CURVATURE_PER_M = 0.25  # a 4 m turning radius
SAMPLE_M = 2.0
MOVING_MARGIN_M = 0.6
STANDING_MARGIN_M = 0.2
STANDING_MPS = 0.1
CONVERGING_RAD = 0.2
EXIT_CLEAR_M = 6.0
EXIT_BLOCKING_MPS = 1.0


@dataclass(frozen=True)
class IdmParams:
    """IDM parameters (SI units); defaults are a calm urban driver."""

    time_headway_s: float = 1.4
    min_gap_m: float = 2.5
    max_accel_mps2: float = 1.8
    comfort_decel_mps2: float = 2.5
    max_decel_mps2: float = 5.0
    exponent: float = 4.0
    speed_factor: float = 1.0
    max_lat_accel_mps2: float = 2.0
    junction_approach_m: float = 25.0


@dataclass(frozen=True)
class IdmPlan:
    """One IDM step for the planned slots (N): accel (N,) m/s^2, each slot's route path (None without a
    route), its arc position s (N,) m and lateral offset (N,) m on it; ``uniform`` holds the paths of the
    rows in ``routed`` (N,) bool, resampled for batched lookups."""

    slots: np.ndarray
    accel: np.ndarray
    paths: list[RoutePath | None]
    s: np.ndarray
    lateral: np.ndarray
    routed: np.ndarray
    uniform: UniformPathBatch
    gap: np.ndarray | None = None
    """(N,) m bumper gap to what each slot follows (an agent, a held junction entry, the end of the known
    road; inf if nothing), and that obstacle's speed along the path (N,) m/s (0 for a virtual stop)."""
    lead_speed: np.ndarray | None = None

    def row(self, slot: int) -> int:
        """The row of ``slot`` in this plan."""
        return int(np.nonzero(self.slots == slot)[0][0])


def idm_accel(v: np.ndarray, v0: np.ndarray, gap: np.ndarray, lead_speed: np.ndarray, p: IdmParams) -> np.ndarray:
    """The Intelligent Driver Model's acceleration (m/s^2) at speed ``v`` towards desired speed ``v0``, behind
    an obstacle ``gap`` m ahead (inf: free road) moving at ``lead_speed``; clipped to the braking limits."""
    dv = v - lead_speed
    s_star = p.min_gap_m + v * p.time_headway_s + v * dv / (2 * np.sqrt(p.max_accel_mps2 *
                                                                      p.comfort_decel_mps2))
    free = 1.0 - (v / v0) ** p.exponent
    interaction = (np.maximum(s_star, p.min_gap_m) / np.maximum(gap, 0.1)) ** 2
    accel = p.max_accel_mps2 * (free - np.where(np.isfinite(gap), interaction, 0.0))
    return np.clip(accel, -p.max_decel_mps2, p.max_accel_mps2)


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
    signal_lanes: tuple[tuple[int, float], ...] = ()
    """(lane id, arc length of its start: the stop point) of every signalised lane after the first one."""

    @classmethod
    def build(cls, graph: LaneGraph, route: tuple[int, ...], p: IdmParams) -> PathProfile:
        path = build_path(graph, route)
        lanes = [graph[i] for i in route]
        limit = np.array([lane.speed_limit_mps for lane in lanes])[path.lane_index] * p.speed_factor
        kappa = geometry.curvature(path.points)
        cap = np.minimum(limit, np.sqrt(p.max_lat_accel_mps2 / np.maximum(kappa, 1e-4)))
        connector, connector_s, start = -1, np.inf, 0.0
        signal_lanes = []
        for k, lane in enumerate(lanes):
            if k > 0 and lane.lane_type == LaneType.CONNECTOR and connector < 0:
                connector, connector_s = lane.id, start
            if k > 0 and lane.signal is not None:
                signal_lanes.append((lane.id, start))
            start += lane.length_m
        return cls(path, cap, connector, connector_s, tuple(lanes), UniformPath.resample(path.points, path.s, cap),
                   lanes[0].length_m + 2.0, tuple(signal_lanes))


@runtime_checkable
class SharesIdmCore(Protocol):
    """A policy that can work on an ego planner's :class:`IdmCore` (route paths, junction right of way)."""

    def adopt_idm_core(self, core: IdmCore) -> bool:
        """Use ``core`` from now on if its parameters fit; returns whether it was adopted."""
        ...


class IdmCore:
    """The batched IDM computation shared by the NPC policy and the default ego planner."""

    def __init__(self, params: IdmParams = IdmParams(), plans_everyone: bool = False) -> None:
        self.params = params
        self.plans_everyone = plans_everyone
        """Plan every valid agent at once and answer each caller from that plan (set when the ego planner
        and the NPC policy share this core: one computation per step instead of two)."""
        self._last_plan: tuple[Agents, int, IdmPlan] | None = None
        self._last_grant: tuple[Agents, int, set[int], set[int]] | None = None
        self.conflicts = ConflictMap()
        self._paths: dict[tuple[int, ...], PathProfile] = {}
        self._paths_version = -1
        self._memo_agents: Agents | None = None
        self._memo: dict[tuple[int, tuple[int, ...]], tuple[float, float]] = {}
        self._waited_s: dict[int, float] = {}

    def reset(self) -> None:
        self.conflicts = ConflictMap()
        self._paths.clear()
        self._memo_agents, self._memo = None, {}
        self._waited_s = {}
        self._last_plan = None
        self._last_grant = None

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

    def plan(self, inp: PolicyInput, slots: np.ndarray) -> IdmPlan:
        """IDM acceleration for ``slots`` (at least: find a slot's row with ``IdmPlan.row``) given every agent
        in ``inp`` as a potential obstacle. A core that ``plans_everyone`` plans all valid agents once per
        state, so the ego planner and the NPC policy sharing it cost one computation per step."""
        if not self.plans_everyone:
            return self._plan(inp, slots)
        last = self._last_plan
        if last is not None and last[0] is inp.agents and last[1] == inp.step:
            return last[2]
        plan = self._plan(inp, np.nonzero(inp.agents.valid)[0])
        self._last_plan = (inp.agents, inp.step, plan)
        return plan

    def _plan(self, inp: PolicyInput, slots: np.ndarray) -> IdmPlan:
        p, a = self.params, inp.agents
        slots = np.asarray(slots, dtype=np.int64)
        n = len(slots)
        profiles = self.profiles(inp, a.id[slots].tolist())
        routed = np.array([pr is not None for pr in profiles], bool)
        rows = np.nonzero(routed)[0]
        uniform = UniformPathBatch.of([profiles[r].uniform for r in rows])
        if self.plans_everyone:  # one plan per state: nothing to share between calls
            s_now, lateral = np.zeros(n), np.zeros(n)
            if len(rows):
                within = np.fromiter((profiles[r].first_lane_m for r in rows), float, len(rows))
                s_now[rows], lateral[rows] = uniform.project(a.xy[slots[rows]], within)
        else:
            s_now, lateral = self._positions(inp, slots, profiles)
        # Sampled corridor ahead of each agent: (N, K, 2) points, arc lengths, speed caps.
        ahead_s = s_now[:, None] + np.arange(int(LOOKAHEAD_M / SAMPLE_M) + 1)[None] * SAMPLE_M
        ahead = np.repeat(a.xy[slots][:, None], ahead_s.shape[1], 1)
        ahead_cap = np.full(ahead_s.shape, np.inf)
        stop_at = np.zeros(n)  # arc length of a virtual stopped obstacle (m); agents without a route stop
        if len(rows):
            ahead[rows], cap = uniform.at(ahead_s[rows])
            ahead_cap[rows] = np.where(ahead_s[rows] > uniform.length_m[:, None], np.inf, cap)
            stop_at[rows] = uniform.length_m  # the road is not known past here (yet)
        requests: list[JunctionRequest] = []
        entry_s: dict[int, float] = {}
        for row in rows:
            profile, agent_id = profiles[row], int(a.id[slots[row]])
            dist = profile.connector_s - s_now[row]
            if profile.connector >= 0 and 0.0 <= dist <= p.junction_approach_m:
                requests.append(self.junction_request(agent_id, profile.connector, dist, float(a.speed[slots[row]])))
                entry_s[agent_id] = profile.connector_s
        decided = self.decision(inp)
        if decided is None:  # nobody decided this state's right of way yet: decide it for everyone
            requests += self._other_requests(inp, slots)
            requests, granted = self.grant(inp, requests)
            held = set(entry_s) - granted
        else:  # decided by whoever shares this core (requests from its own route positions): an agent it
            # did not count as approaching is not held
            requested, granted = decided
            held = (set(entry_s) & requested) - granted
        for row, slot in enumerate(slots):
            agent_id = int(a.id[slot])
            if agent_id in held:
                stop_at[row] = min(stop_at[row], entry_s[agent_id] - 0.5 + a.length[slot] / 2.0)
        light_s, _ = self.signal_stops(inp, slots, profiles, s_now)
        stop_at = np.minimum(stop_at, light_s - 0.5 + a.length[slots] / 2.0)
        gap, lead_speed = np.full(n, np.inf), np.zeros(n)  # agents without a route stop anyway
        gap[rows], lead_speed[rows] = self._leaders(inp, slots[rows], ahead[rows], ahead_s[rows], s_now[rows])
        virtual_gap = stop_at - s_now - a.length[slots] / 2.0
        use_virtual = virtual_gap < gap
        gap = np.where(use_virtual, virtual_gap, gap)
        lead_speed = np.where(use_virtual, 0.0, lead_speed)
        v = np.maximum(a.speed[slots], 0.0)
        # Desired speed: the tightest cap ahead, reachable with comfortable braking.
        reach = np.sqrt(ahead_cap**2 + 2.0 * p.comfort_decel_mps2 * np.maximum(ahead_s - s_now[:, None], 0))
        v0 = np.maximum(reach.min(1), 0.5)
        accel = idm_accel(v, v0, gap, lead_speed, p)
        paths = [None if pr is None else pr.path for pr in profiles]
        return IdmPlan(slots, accel, paths, s_now, lateral, routed, uniform, gap, lead_speed)

    def signal_stops(self, inp: PolicyInput, slots: np.ndarray, profiles: list[PathProfile | None],
                     s_now: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N,) arc length of the stop point where a traffic light holds each slot (the start of the first
        signalised lane ahead within :data:`SIGNAL_LOOKAHEAD_M` whose light holds it, see
        :func:`policies.junctions.signal_holds`; inf where no light does) and that lane's id (N,) (-1)."""
        out = np.full(len(slots), np.inf)
        lane_out = np.full(len(slots), -1, np.int64)
        signals = inp.signals
        if not len(signals):
            return out, lane_out
        a = inp.agents
        rows, starts, states, lanes = [], [], [], []
        for row, profile in enumerate(profiles):
            if profile is None or not profile.signal_lanes:
                continue
            for lane_id, start in profile.signal_lanes:
                if start - s_now[row] > SIGNAL_LOOKAHEAD_M:
                    break
                state = signals.state(lane_id)
                if state is not None and start >= s_now[row]:
                    rows.append(row)
                    starts.append(start)
                    states.append(int(state))
                    lanes.append(lane_id)
        if not rows:
            return out, lane_out
        rows_a, starts_a = np.array(rows), np.array(starts)
        slot_r = np.asarray(slots)[rows_a]
        hold = signal_holds(np.array(states), a.speed[slot_r], starts_a - s_now[rows_a] - a.length[slot_r] / 2.0,
                            self.params.max_decel_mps2)
        for row, start, lane_id in zip(rows_a[hold], starts_a[hold], np.array(lanes)[hold], strict=True):
            if start < out[row]:
                out[row], lane_out[row] = start, lane_id
        return out, lane_out

    def junction_request(self, agent_id: int, connector: int, distance_m: float, speed_mps: float) -> JunctionRequest:
        """A request to enter ``connector``, ``distance_m`` ahead of an agent driving at ``speed_mps``."""
        return JunctionRequest(agent_id, connector, distance_m, self._committed(speed_mps, distance_m))

    def grant(self, inp: PolicyInput, requests: list[JunctionRequest]) -> tuple[list[JunctionRequest], set[int]]:
        """Right of way for this step's ``requests`` (every agent approaching a junction; call once per step,
        it advances the waiting clocks): the requests that stand (those into a blocked exit are dropped
        unless committed) and the ids of the agents granted their connector."""
        requested = {r.agent_id for r in requests}
        requests = self._exit_clear(inp, self._lights(inp, requests))
        granted = grant_connectors(inp.graph, self.conflicts, self._occupied_connectors(inp), requests,
                                   self._waited_s)
        self._update_waits(inp, requests, granted)
        self._last_grant = (inp.agents, inp.step, requested, granted)
        return requests, granted

    def _lights(self, inp: PolicyInput, requests: list[JunctionRequest]) -> list[JunctionRequest]:
        """Drop the requests a traffic light holds (they neither go nor reserve their connector, and their
        waiting clock does not run); mark permissive green lefts as yielding."""
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
        out = []
        for k, r in enumerate(requests):
            if k in held:
                continue
            if k in lit and yields_on_green(inp.graph, signals, r.connector):
                r = JunctionRequest(r.agent_id, r.connector, r.distance_m, r.committed, yields=True)
            out.append(r)
        return out

    def decision(self, inp: PolicyInput) -> tuple[set[int], set[int]] | None:
        """(ids that requested a connector, ids granted one) of this step's :meth:`grant` for the state of
        ``inp``, or None if it has not run for that state. A planner sharing this core with a policy that
        granted every agent (the ΔSim junction stops) reads the decision instead of taking it again: one
        decision per state, and the waiting clocks advance once per step."""
        last = self._last_grant
        if last is not None and last[0] is inp.agents and last[1] == inp.step:
            return last[2], last[3]
        return None

    def _positions(self, inp: PolicyInput, slots: np.ndarray,
                   profiles: list[PathProfile | None]) -> tuple[np.ndarray, np.ndarray]:
        """Arc position and lateral offset (N,) m of each slot on its route path (0 without a route).

        Memoised for the current agent state: the ego planner and the NPC policy plan from the same state
        in one step, and each sees every other agent approaching a junction.
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
            batch = UniformPathBatch.of([profiles[r].uniform for r in missing])
            within = np.fromiter((profiles[r].first_lane_m for r in missing), float, len(missing))
            s_now[missing], lateral[missing] = batch.project(a.xy[slots[missing]], within)
            for r in missing:
                self._memo[(int(a.id[slots[r]]), profiles[r].path.lane_ids)] = (s_now[r], lateral[r])
        return s_now, lateral

    def _other_requests(self, inp: PolicyInput, slots: np.ndarray) -> list[JunctionRequest]:
        """Everyone else approaching a junction competes too, so that the ego planner and the NPC policy
        (separate calls) reach the same decision for the same state."""
        a = inp.agents
        planned = set(a.id[slots].tolist())
        others = [slot for slot in np.nonzero(a.valid)[0] if int(a.id[slot]) not in planned]
        profiles = self.profiles(inp, a.id[others].tolist())
        keep = [k for k, pr in enumerate(profiles) if pr is not None and pr.connector >= 0]
        if not keep:
            return []
        chosen = [profiles[k] for k in keep]
        s_other, _ = self._positions(inp, np.array([others[k] for k in keep]), chosen)
        out = []
        for k, profile, s_k in zip(keep, chosen, s_other, strict=True):
            dist = profile.connector_s - s_k
            if 0.0 <= dist <= self.params.junction_approach_m:
                out.append(self.junction_request(int(a.id[others[k]]), profile.connector, dist,
                                                 float(a.speed[others[k]])))
        return out

    def _exit_clear(self, inp: PolicyInput, requests: list[JunctionRequest]) -> list[JunctionRequest]:
        """Drop requests whose connector exit is blocked by a (nearly) standing agent in traffic: nobody enters a
        junction it cannot leave, so crossing traffic is never blocked by a queue spilling into it
        (committed agents enter anyway). Depends on the state only, so every core agrees."""
        a = inp.agents
        standing = a.valid & (a.speed < EXIT_BLOCKING_MPS)
        standing[standing] = [bool(inp.routes.get(int(i))) for i in a.id[standing]]  # not parked cars
        if not standing.any():
            return requests
        if not requests:
            return requests
        xy, ids = a.xy[standing], a.id[standing]
        ends = np.array([inp.graph[req.connector].points[-1] for req in requests])
        delta = xy[None] - ends[:, None]
        near = (np.einsum("rak,rak->ra", delta, delta) < EXIT_CLEAR_M**2) & (
            ids[None] != np.array([req.agent_id for req in requests])[:, None])
        blocked = near.any(1)
        return [req for req, b in zip(requests, blocked, strict=True) if req.committed or not b]

    def _update_waits(self, inp: PolicyInput, requests: list[JunctionRequest], granted: set[int]) -> None:
        """Time each agent has been held (standing, not granted) at its junction entry. Every core sees
        every request each step, so the ego planner's and the NPC policy's clocks agree."""
        a = inp.agents
        standing = set(a.id[a.valid & (a.speed < 0.5)].tolist())
        self._waited_s = {r.agent_id: self._waited_s.get(r.agent_id, 0.0) + inp.dt_s for r in requests
                          if r.agent_id not in granted and r.agent_id in standing}

    def _committed(self, speed: float, distance_m: float) -> bool:
        """Whether an agent at ``speed`` can no longer stop within ``distance_m`` at the hard braking limit."""
        return speed * speed / (2.0 * self.params.max_decel_mps2) > distance_m - 0.5

    def _occupied_connectors(self, inp: PolicyInput) -> dict[int, int]:
        """Connectors with a *moving* agent on them. A stopped agent does not hold its connector: if it
        stands in someone's way, car following stops them behind it; if not, nobody needs to wait (this
        prevents junction deadlocks)."""
        occupied: dict[int, int] = {}
        a = inp.agents
        moving = {int(i) for i in a.id[a.valid & (a.speed > 0.3)]}
        for agent_id, route in inp.routes.items():
            if (agent_id in moving and route and route[0] in inp.graph
                    and inp.graph[route[0]].lane_type == LaneType.CONNECTOR):
                occupied[route[0]] = occupied.get(route[0], 0) + 1
        return occupied

    def _leaders(self, inp: PolicyInput, slots: np.ndarray, ahead: np.ndarray, ahead_s: np.ndarray,
                 s_now: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bumper gap (N,) m to the nearest agent inside each corridor, and its speed along the path."""
        a = inp.agents
        others = np.nonzero(a.valid)[0]
        n = len(slots)
        gap = np.full(n, np.inf)
        lead_speed = np.zeros(n)
        if len(others) < 2:
            return gap, lead_speed
        # Candidate pairs: agents whose box can reach into the bounding box of a corridor (no farther than
        # half their length + width from its centre line), padded by our half width and the margin.
        pad = a.width[slots] / 2.0 + MOVING_MARGIN_M
        reach = 0.5 * (a.length[others] + a.width[others])
        x, y = a.xy[others, 0], a.xy[others, 1]
        x_lo, x_hi, y_lo, y_hi = x + reach, x - reach, y + reach, y - reach
        inside = np.zeros((n, len(others)), bool)
        mid = ahead.shape[1] // 2
        for part in (ahead[:, : mid + 1], ahead[:, mid:]):  # two boxes hug a bending corridor better than one
            lo, hi = part.min(1) - pad[:, None], part.max(1) + pad[:, None]
            inside |= ((x_lo >= lo[:, 0, None]) & (x_hi <= hi[:, 0, None])
                       & (y_lo >= lo[:, 1, None]) & (y_hi <= hi[:, 1, None]))
        inside &= others[None] != slots[:, None]
        pn, pm = np.nonzero(inside)
        if len(pn) == 0:
            return gap, lead_speed
        o = others[pm]
        # Distance from each candidate to each segment of its corridor: (Q, K-1).
        seg_a, seg = ahead[pn, :-1], np.diff(ahead[pn], axis=1)
        seg_len2 = np.maximum(np.einsum("qki,qki->qk", seg, seg), 1e-9)
        rel = a.xy[o][:, None] - seg_a
        t = np.clip(np.einsum("qki,qki->qk", rel, seg) / seg_len2, 0.0, 1.0)
        off = rel - t[..., None] * seg
        d = np.sqrt(np.einsum("qki,qki->qk", off, off))
        q = np.arange(len(pn))
        k_best = d.argmin(1)
        d_best, t_best = d[q, k_best], t[q, k_best]
        dyaw = a.yaw[o] - np.arctan2(seg[q, k_best, 1], seg[q, k_best, 0])
        # Lateral half-extent of the other box across the corridor, plus our half width and a margin:
        # moving agents get a wide one (they may drift in), standing ones a narrow one, so traffic passes
        # cars parked at the curb. Adjacent lanes (>= 3.2 m apart) stay out either way.
        across = 0.5 * (np.abs(a.length[o] * np.sin(dyaw)) + np.abs(a.width[o] * np.cos(dyaw)))
        margin = np.where(a.speed[o] < STANDING_MPS, STANDING_MARGIN_M, MOVING_MARGIN_M)
        half = a.width[slots[pn]] / 2.0 + across + margin
        s_other = ahead_s[pn, k_best] + t_best * SAMPLE_M
        # Inside the corridor and not past its end; ahead of the agent, or beside it on a converging course
        # (its box reaches past our centre: moving on would drive into its side).
        ahead_of_us = s_other > s_now[pn]
        converging = (s_other + a.length[o] / 2.0 > s_now[pn]) & (np.abs(geometry.wrap_angle(dyaw)) > CONVERGING_RAD)
        mask = (d_best < half) & (ahead_of_us | converging) & ~((k_best == seg.shape[1] - 1) & (t_best >= 1.0))
        bumper = np.full((n, len(others)), np.inf)
        bumper[pn, pm] = np.where(mask, s_other - s_now[pn] - (a.length[slots[pn]] + a.length[o]) / 2.0, np.inf)
        k_full = np.zeros((n, len(others)), np.int64)
        k_full[pn, pm] = k_best
        j = bumper.argmin(1)
        rows = np.arange(n)
        gap = bumper[rows, j]
        k = k_full[rows, j]
        tangent = ahead[rows, np.minimum(k + 1, ahead.shape[1] - 1)] - ahead[rows, np.maximum(k - 1, 0)]
        path_yaw = np.arctan2(tangent[:, 1], tangent[:, 0])
        lead = others[j]
        lead_speed = np.where(np.isfinite(gap), a.speed[lead] * np.cos(a.yaw[lead] - path_yaw), 0.0)
        return gap, lead_speed


def advance_on_paths(plan: IdmPlan, agents: Agents, dt_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move each planned agent along its path with its planned accel for one step: new xy (N, 2), yaw (N,),
    speed (N,).

    Each agent moves exactly ds = v_next * dt (semi-implicit Euler: the engine reads the new speed back
    as ds / dt) towards a target on its path, turning at most at the yaw-rate, lateral-acceleration and
    turning-radius limits. An agent off the centreline converges to it smoothly (about 1.5 m of offset removed per 10 m
    travelled), never by a sideways jump. Agents without a path brake straight ahead.
    """
    slots = plan.slots
    xy, yaw = agents.xy[slots], agents.yaw[slots]
    v_next = np.maximum(0.0, agents.speed[slots] + plan.accel * dt_s)
    ds = v_next * dt_s
    turn = np.zeros(len(slots))
    rows = np.nonzero(plan.routed)[0]
    if len(rows):
        s_next = np.minimum(plan.s[rows] + ds[rows], plan.uniform.length_m)
        lat = plan.lateral[rows]
        lat_next = np.where(np.abs(lat) > 0.02, lat * np.maximum(0.0, 1.0 - 0.15 * ds[rows]), 0.0)
        pts, _ = plan.uniform.at(np.stack([np.maximum(s_next - 0.5, 0.0), s_next, s_next + 0.5], 1))
        tangent = pts[:, 2] - pts[:, 0]
        path_yaw = np.arctan2(tangent[:, 1], tangent[:, 0])
        target = pts[:, 1] + lat_next[:, None] * np.stack([-np.sin(path_yaw), np.cos(path_yaw)], -1)
        step = target - xy[rows]
        target_yaw = np.where(np.linalg.norm(step, axis=-1) > 1e-6, np.arctan2(step[:, 1], step[:, 0]), path_yaw)
        max_turn = np.minimum.reduce([np.full(len(rows), MAX_YAW_RATE_RPS * dt_s),
                                      MAX_LAT_ACCEL_MPS2 / np.maximum(v_next[rows], 1e-3) * dt_s,
                                      MAX_CURVATURE_PER_M * ds[rows]])  # no turning on the spot
        wanted = np.clip(geometry.wrap_angle(target_yaw - yaw[rows]), -max_turn, max_turn)
        turn[rows] = np.where(np.linalg.norm(tangent, axis=-1) > 1e-6, wanted, 0.0)
    turn = np.where(ds > 1e-6, turn, 0.0)
    mid = yaw + 0.5 * turn
    return xy + ds[:, None] * np.stack([np.cos(mid), np.sin(mid)], -1), yaw + turn, v_next


@register_policy("idm")
class IdmPolicy(Policy):
    """Rule-based NPCs: lane following with IDM car following and junction yielding."""

    name = "idm"

    def __init__(self, params: IdmParams = IdmParams()) -> None:
        self.core = IdmCore(params)

    def reset(self) -> None:
        self.core.reset()

    def act(self, inp: PolicyInput, rng: np.random.Generator) -> np.ndarray:
        a = inp.agents
        actions = np.zeros((a.capacity, 3))
        slots = np.nonzero(inp.controlled & a.valid)[0]
        if len(slots) == 0:
            return actions
        plan = self.core.plan(inp, slots)
        xy_next, yaw_next, _ = advance_on_paths(plan, a, inp.dt_s)
        mine = np.isin(plan.slots, slots)
        slots = plan.slots[mine]
        actions[slots, :2] = geometry.to_local(xy_next[mine], a.xy[slots], a.yaw[slots])
        actions[slots, 2] = geometry.wrap_angle(yaw_next[mine] - a.yaw[slots])
        return actions
