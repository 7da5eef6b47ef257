"""IDM lane following, batched: car following, curve speed, stop at open ends, yielding at junctions.

Each controlled agent drives along the centreline of its route. Its speed follows the Intelligent
Driver Model (Treiber et al., 2000) towards a desired speed capped by the lane speed limit and by the
curvature ahead (|a_lat| <= max_lat_accel), behind the nearest obstacle in its corridor: another agent,
the end of the known road, or the entry of a connector it has not been granted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.base import Policy, PolicyInput, register_policy
from policies.junctions import ConflictMap, JunctionRequest, grant_connectors
from vectorworld import geometry
from vectorworld.scene import LaneGraph, LaneType
from vectorworld.world.routes import RoutePath, build_path

LOOKAHEAD_M = 70.0
MAX_YAW_RATE_RPS = 1.2
MAX_LAT_ACCEL_MPS2 = 6.0
SAMPLE_M = 2.0
MOVING_MARGIN_M = 0.6
STANDING_MARGIN_M = 0.2
STANDING_MPS = 0.5


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
    """One IDM step for the planned slots: accel (N,) m/s^2, and per slot the route path and arc position."""

    slots: np.ndarray
    accel: np.ndarray
    paths: list[RoutePath]
    s: np.ndarray
    lateral: np.ndarray


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

    @classmethod
    def build(cls, graph: LaneGraph, route: tuple[int, ...], p: IdmParams) -> PathProfile:
        path = build_path(graph, route)
        lanes = [graph[i] for i in route]
        limit = np.array([lane.speed_limit_mps for lane in lanes])[path.lane_index] * p.speed_factor
        kappa = geometry.curvature(path.points)
        cap = np.minimum(limit, np.sqrt(p.max_lat_accel_mps2 / np.maximum(kappa, 1e-4)))
        connector, connector_s, start = -1, np.inf, 0.0
        for k, lane in enumerate(lanes):
            if k > 0 and lane.lane_type == LaneType.CONNECTOR:
                connector, connector_s = lane.id, start
                break
            start += lane.length_m
        return cls(path, cap, connector, connector_s)


class IdmCore:
    """The batched IDM computation shared by the NPC policy and the default ego planner."""

    def __init__(self, params: IdmParams = IdmParams()) -> None:
        self.params = params
        self.conflicts = ConflictMap()
        self._paths: dict[tuple[int, ...], PathProfile] = {}

    def reset(self) -> None:
        self.conflicts = ConflictMap()
        self._paths.clear()

    def path(self, inp: PolicyInput, agent_id: int) -> RoutePath | None:
        profile = self.profile(inp, agent_id)
        return None if profile is None else profile.path

    def profile(self, inp: PolicyInput, agent_id: int) -> PathProfile | None:
        """The agent's route path with its speed caps and first junction entry (cached per route)."""
        route = tuple(i for i in inp.routes.get(agent_id, ()) if i in inp.graph)
        if not route:
            return None
        profile = self._paths.get(route)
        if profile is None:
            if len(self._paths) > 4096:
                self._paths.clear()
            profile = self._paths[route] = PathProfile.build(inp.graph, route, self.params)
        return profile

    def plan(self, inp: PolicyInput, slots: np.ndarray) -> IdmPlan:
        """IDM acceleration for ``slots`` given every agent in ``inp`` as a potential obstacle."""
        p, a = self.params, inp.agents
        n = len(slots)
        profiles = [self.profile(inp, int(a.id[i])) for i in slots]
        paths = [None if pr is None else pr.path for pr in profiles]
        s_now = np.zeros(n)
        lateral = np.zeros(n)
        # Sampled corridor ahead of each agent: (N, K, 2) points, arc lengths, speed caps.
        k_count = int(LOOKAHEAD_M / SAMPLE_M) + 1
        ahead = np.zeros((n, k_count, 2))
        ahead_s = np.zeros((n, k_count))
        ahead_cap = np.full((n, k_count), np.inf)
        stop_at = np.full(n, np.inf)  # arc length of a virtual stopped obstacle (m, along the path)
        requests: list[JunctionRequest] = []
        entry_s: dict[int, float] = {}
        steps = np.arange(k_count) * SAMPLE_M
        for row, (slot, profile) in enumerate(zip(slots, profiles, strict=True)):
            if profile is None:
                stop_at[row] = 0.0
                ahead[row] = a.xy[slot]
                continue
            path = profile.path
            s_proj, lat_proj, _ = geometry.project_to_polyline(a.xy[slot][None], path.points)
            s_now[row], lateral[row] = s_proj[0], lat_proj[0]
            targets = s_now[row] + steps
            ahead[row] = geometry.interpolate_polyline(path.points, path.s, targets)
            ahead_s[row] = targets
            ahead_cap[row] = np.where(targets > path.s[-1], np.inf, np.interp(targets, path.s, profile.cap))
            stop_at[row] = path.s[-1]  # the road is not known past here (yet)
            if profile.connector >= 0:
                dist = profile.connector_s - s_now[row]
                if 0.0 <= dist <= p.junction_approach_m:
                    requests.append(JunctionRequest(int(a.id[slot]), profile.connector, dist))
                    entry_s[int(a.id[slot])] = profile.connector_s
        # Everyone else approaching a junction competes too, so that the ego planner and the NPC policy
        # (separate calls) reach the same decision for the same state.
        planned = {int(a.id[slot]) for slot in slots}
        for slot in np.nonzero(a.valid)[0]:
            agent_id = int(a.id[slot])
            if agent_id in planned:
                continue
            profile = self.profile(inp, agent_id)
            if profile is None or profile.connector < 0:
                continue
            s_other = geometry.project_to_polyline(a.xy[slot][None], profile.path.points)[0][0]
            dist = profile.connector_s - s_other
            if 0.0 <= dist <= p.junction_approach_m:
                requests.append(JunctionRequest(agent_id, profile.connector, dist))
        occupied = self._occupied_connectors(inp)
        granted = grant_connectors(inp.graph, self.conflicts, occupied, requests)
        for row, slot in enumerate(slots):
            agent_id = int(a.id[slot])
            if agent_id in entry_s and agent_id not in granted:
                stop_at[row] = min(stop_at[row], entry_s[agent_id] - 0.5 + a.length[slot] / 2.0)
        gap, lead_speed = self._leaders(inp, slots, ahead, ahead_s, s_now)
        virtual_gap = stop_at - s_now - a.length[slots] / 2.0
        use_virtual = virtual_gap < gap
        gap = np.where(use_virtual, virtual_gap, gap)
        lead_speed = np.where(use_virtual, 0.0, lead_speed)
        v = np.maximum(a.speed[slots], 0.0)
        # Desired speed: the tightest cap ahead, reachable with comfortable braking.
        reach = np.sqrt(ahead_cap**2 + 2.0 * p.comfort_decel_mps2 * np.maximum(ahead_s - s_now[:, None], 0))
        v0 = np.maximum(reach.min(1), 0.5)
        dv = v - lead_speed
        s_star = p.min_gap_m + v * p.time_headway_s + v * dv / (2 * np.sqrt(p.max_accel_mps2 *
                                                                          p.comfort_decel_mps2))
        free = 1.0 - (v / v0) ** p.exponent
        interaction = (np.maximum(s_star, p.min_gap_m) / np.maximum(gap, 0.1)) ** 2
        accel = p.max_accel_mps2 * (free - np.where(np.isfinite(gap), interaction, 0.0))
        accel = np.clip(accel, -p.max_decel_mps2, p.max_accel_mps2)
        return IdmPlan(np.asarray(slots), accel, paths, s_now, lateral)

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
        # Distance from every agent to every corridor segment: (N, K-1, M).
        seg_a, seg = ahead[:, :-1], np.diff(ahead, axis=1)
        seg_len2 = np.maximum(np.sum(seg * seg, -1), 1e-9)
        rel = a.xy[others][None, None] - seg_a[:, :, None]
        t = np.clip(np.sum(rel * seg[:, :, None], -1) / seg_len2[:, :, None], 0.0, 1.0)
        d = np.linalg.norm(rel - t[..., None] * seg[:, :, None], axis=-1)
        k_best = d.argmin(1)  # (N, M)
        d_best = np.take_along_axis(d, k_best[:, None, :], 1)[:, 0]
        t_best = np.take_along_axis(t, k_best[:, None, :], 1)[:, 0]
        seg_yaw = np.arctan2(seg[..., 1], seg[..., 0])  # (N, K-1)
        dyaw = a.yaw[others][None] - np.take_along_axis(seg_yaw, k_best, 1)
        # Lateral half-extent of the other box across the corridor, plus our half width and a margin.
        across = 0.5 * (np.abs(a.length[others][None] * np.sin(dyaw)) + np.abs(a.width[others][None] * np.cos(dyaw)))
        # Moving agents get a wide margin (they may drift in); standing ones a narrow one, so traffic
        # passes cars parked at the curb. Adjacent lanes (>= 3.2 m apart) stay out either way.
        margin = np.where(a.speed[others] < STANDING_MPS, STANDING_MARGIN_M, MOVING_MARGIN_M)[None]
        half = a.width[slots][:, None] / 2.0 + across + margin
        s_other = np.take_along_axis(ahead_s, k_best, 1) + t_best * SAMPLE_M
        # Inside the corridor, ahead of the agent, and not the agent itself.
        mask = (d_best < half) & (s_other > s_now[:, None]) & (others[None] != slots[:, None])
        mask &= ~((k_best == seg.shape[1] - 1) & (t_best >= 1.0))
        if not mask.any():
            return gap, lead_speed
        bumper = s_other - s_now[:, None] - (a.length[slots][:, None] + a.length[others][None]) / 2.0
        bumper = np.where(mask, bumper, np.inf)
        j = bumper.argmin(1)
        rows = np.arange(n)
        gap = bumper[rows, j]
        k = k_best[rows, j]
        tangent = ahead[rows, np.minimum(k + 1, ahead.shape[1] - 1)] - ahead[rows, np.maximum(k - 1, 0)]
        path_yaw = np.arctan2(tangent[:, 1], tangent[:, 0])
        lead = others[j]
        lead_speed = np.where(np.isfinite(gap), a.speed[lead] * np.cos(a.yaw[lead] - path_yaw), 0.0)
        return gap, lead_speed


def advance_on_path(path: RoutePath | None, s_now: float, speed: float, accel: float, dt_s: float,
                    xy: np.ndarray, yaw: float, lateral_m: float = 0.0) -> tuple[np.ndarray, float, float]:
    """Move along the path with constant ``accel`` for one step: new (xy, yaw, speed).

    An agent ``lateral_m`` off the centreline (+ left) converges to it smoothly (about 1.5 m of offset
    removed per 10 m travelled), never by a sideways jump.
    """
    v_next = max(0.0, speed + accel * dt_s)
    ds = v_next * dt_s  # semi-implicit Euler: the engine reads the new speed back as ds / dt
    if ds <= 1e-6:
        return xy, yaw, v_next
    if path is None:  # no lane to follow: brake straight ahead
        return xy + ds * np.array([np.cos(yaw), np.sin(yaw)]), yaw, v_next
    s_next = min(s_now + ds, path.length_m)
    lat_next = lateral_m * max(0.0, 1.0 - 0.15 * ds) if abs(lateral_m) > 0.02 else 0.0
    pts = geometry.interpolate_polyline(path.points, path.s, np.array([max(s_next - 0.5, 0.0), s_next,
                                                                        s_next + 0.5]))
    tangent = pts[2] - pts[0]
    if np.linalg.norm(tangent) < 1e-6:
        return xy + ds * np.array([np.cos(yaw), np.sin(yaw)]), yaw, v_next
    path_yaw = float(np.arctan2(tangent[1], tangent[0]))
    normal = np.array([-np.sin(path_yaw), np.cos(path_yaw)])
    target = pts[1] + lat_next * normal
    step = target - xy
    dist = float(np.linalg.norm(step))
    # Move exactly ds towards the target (so the speed read back is v_next), turning at most at the
    # yaw-rate and lateral-acceleration limits.
    target_yaw = float(np.arctan2(step[1], step[0])) if dist > 1e-6 else path_yaw
    max_turn = min(MAX_YAW_RATE_RPS, MAX_LAT_ACCEL_MPS2 / max(v_next, 1e-3)) * dt_s
    turn = float(np.clip(geometry.wrap_angle(target_yaw - yaw), -max_turn, max_turn))
    mid = yaw + 0.5 * turn
    return xy + ds * np.array([np.cos(mid), np.sin(mid)]), yaw + turn, v_next


def pose_delta(xy: np.ndarray, yaw: float, xy_next: np.ndarray, yaw_next: float) -> np.ndarray:
    """Body-frame delta (3,) from pose (xy, yaw) to (xy_next, yaw_next)."""
    local = geometry.to_local(xy_next[None], xy, yaw)[0]
    return np.array([local[0], local[1], float(geometry.wrap_angle(yaw_next - yaw))])


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
        for row, slot in enumerate(slots):
            xy_next, yaw_next, _ = advance_on_path(plan.paths[row], plan.s[row], a.speed[slot], plan.accel[row],
                                                   inp.dt_s, a.xy[slot], a.yaw[slot], plan.lateral[row])
            actions[slot] = pose_delta(a.xy[slot], a.yaw[slot], xy_next, yaw_next)
        return actions
