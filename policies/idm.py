"""IDM lane following, batched: car following, curve speed, stop at open ends and where right of way holds.

Each controlled agent drives along the centreline of its route. Its speed follows the Intelligent
Driver Model (Treiber et al., 2000) towards a desired speed capped by the lane speed limit and by the
curvature ahead (|a_lat| <= max_lat_accel), behind the nearest obstacle in its corridor: another agent, a
standing box its own box would swing into (:mod:`policies.sweep`), the end of the known road, or the stop
point where the step's right-of-way decision holds it (a connector it was not granted, a red light:
:mod:`policies.right_of_way`). IDM itself decides no right of way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from policies.base import Policy, PolicyInput, register_policy
from policies.right_of_way import RightOfWay, RightOfWayDecision
from policies.route_paths import PathProfile, RoutePaths
from policies.sweep import swept_clearance
from vectorworld import geometry
from vectorworld.scene import Agents
from vectorworld.world.routes import RoutePath
from vectorworld.world.uniform_paths import UniformPathBatch

__all__ = ["IdmCore", "IdmParams", "IdmPlan", "IdmPolicy", "PathProfile", "advance_on_paths", "idm_accel"]

LOOKAHEAD_M = 70.0
MAX_YAW_RATE_RPS = 1.2
MAX_LAT_ACCEL_MPS2 = 6.0
MAX_CURVATURE_PER_M = 0.25  # a 4 m turning radius
SAMPLE_M = 2.0
MOVING_MARGIN_M = 0.6
STANDING_MARGIN_M = 0.2
STANDING_MPS = 0.1
_EDGE_STEPS = (np.linspace(0.0, 1.0, 10), np.array([1 / 3, 2 / 3]), np.linspace(0.0, 1.0, 10), np.array([1 / 3, 2 / 3]))
"""Where :func:`box_outline` puts points along each edge of a box (side, rear, side, front), as fractions."""


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
    return geometry.clamp(accel, -p.max_decel_mps2, p.max_accel_mps2)


class IdmCore:
    """The batched IDM computation of the NPC policy and the default ego planner: car following behind the
    nearest obstacle, and stops where the step's right-of-way decision holds the agent (``inp.right_of_way``,
    taken by the Session's :class:`policies.right_of_way.RightOfWay`; without one, from a private service)."""

    def __init__(self, params: IdmParams = IdmParams()) -> None:
        self.params = params
        self.paths = RoutePaths(params)
        self.right_of_way = RightOfWay(params)
        """Decides when the input carries no decision (a policy driven without a Session)."""

    def reset(self) -> None:
        self.paths.reset()
        self.right_of_way.reset()

    def path(self, inp: PolicyInput, agent_id: int) -> RoutePath | None:
        return self.paths.path(inp, agent_id)

    def profile(self, inp: PolicyInput, agent_id: int) -> PathProfile | None:
        """The agent's route path with its speed caps and first junction entry (cached per route)."""
        return self.paths.profile(inp, agent_id)

    def profiles(self, inp: PolicyInput, agent_ids: Iterable[int]) -> list[PathProfile | None]:
        """``profile`` of each of ``agent_ids``."""
        return self.paths.profiles(inp, agent_ids)

    def decision(self, inp: PolicyInput) -> RightOfWayDecision:
        """The right of way of this step: the Session's, else this core's own."""
        return inp.right_of_way if inp.right_of_way is not None else self.right_of_way.decide(inp)

    def plan(self, inp: PolicyInput, slots: np.ndarray) -> IdmPlan:
        """IDM acceleration for ``slots`` (find a slot's row with ``IdmPlan.row``) given every agent in
        ``inp`` as a potential obstacle."""
        return self._plan(inp, slots)

    def _plan(self, inp: PolicyInput, slots: np.ndarray) -> IdmPlan:
        p, a = self.params, inp.agents
        slots = np.asarray(slots, dtype=np.int64)
        n = len(slots)
        profiles = self.profiles(inp, a.id[slots].tolist())
        routed = np.array([pr is not None for pr in profiles], bool)
        rows = np.nonzero(routed)[0]
        uniform = UniformPathBatch.of([profiles[r].uniform for r in rows])
        s_now, lateral = self.paths.positions(inp, slots, profiles)
        # Sampled corridor ahead of each agent: (N, K, 2) points, arc lengths, speed caps.
        ahead_s = s_now[:, None] + np.arange(int(LOOKAHEAD_M / SAMPLE_M) + 1)[None] * SAMPLE_M
        ahead = np.repeat(a.xy[slots][:, None], ahead_s.shape[1], 1)
        ahead_cap = np.full(ahead_s.shape, np.inf)
        stop_at = np.zeros(n)  # arc length of a virtual stopped obstacle (m); agents without a route stop
        if len(rows):
            ahead[rows], cap = uniform.at(ahead_s[rows])
            ahead_cap[rows] = np.where(ahead_s[rows] > uniform.length_m[:, None], np.inf, cap)
            stop_at[rows] = uniform.length_m  # the road is not known past here (yet)
        held = self.decision(inp).held
        for row in rows:
            lane = held.get(int(a.id[slots[row]]))
            start = None if lane is None else profiles[row].lane_start_s.get(lane)
            if start is not None and start >= s_now[row] - a.length[slots[row]] / 2.0:
                # IDM stands min_gap_m behind an obstacle: this one puts the front 0.5 m before the entry,
                # whatever the length (a bus held at a crosswalk does not stand on it).
                stop_at[row] = min(stop_at[row], start - 0.5 + p.min_gap_m)
        gap, lead_speed = np.full(n, np.inf), np.zeros(n)  # agents without a route stop anyway
        gap[rows], lead_speed[rows] = self._leaders(inp, slots[rows], ahead[rows], ahead_s[rows], s_now[rows])
        # A standing box the agent's own box would swing into (turning) is an obstacle too: IDM then stands
        # min_gap_m behind it, which puts the agent at its last clear pose.
        swept = np.full(n, np.inf)
        swept[rows] = swept_clearance(a, slots[rows], uniform, s_now[rows], STANDING_MPS) \
            + p.min_gap_m
        lead_speed = np.where(swept < gap, 0.0, lead_speed)
        gap = np.minimum(gap, swept)
        virtual_gap = stop_at - s_now - a.length[slots] / 2.0
        v = np.maximum(a.speed[slots], 0.0)
        # Desired speed: the tightest cap ahead, reachable with comfortable braking.
        reach = np.sqrt(ahead_cap**2 + 2.0 * p.comfort_decel_mps2 * np.maximum(ahead_s - s_now[:, None], 0))
        v0 = np.maximum(reach.min(1), 0.5)
        # The leader and the virtual stop (a held entry, a light, the road's end) each ask for an acceleration;
        # the lower one binds. (The nearer of the two is not enough: a leader driving through a light that
        # turns red is nearer than the stop line but asks for no braking.)
        accel_leader = idm_accel(v, v0, gap, lead_speed, p)
        accel_stop = idm_accel(v, v0, virtual_gap, np.zeros(n), p)
        use_virtual = accel_stop < accel_leader
        gap = np.where(use_virtual, virtual_gap, gap)
        lead_speed = np.where(use_virtual, 0.0, lead_speed)
        accel = np.minimum(accel_leader, accel_stop)
        paths = [None if pr is None else pr.path for pr in profiles]
        return IdmPlan(slots, accel, paths, s_now, lateral, routed, uniform, gap, lead_speed)

    def _leaders(self, inp: PolicyInput, slots: np.ndarray, ahead: np.ndarray, ahead_s: np.ndarray,
                 s_now: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bumper gap (N,) m to the nearest agent box reaching into each corridor, and its speed along the path.

        The corridor is the sampled path ahead, as wide as the agent plus a margin (wide for moving agents,
        which may drift in; narrow for standing ones, so traffic passes cars parked at the curb; adjacent
        lanes, >= 3.2 m apart, stay out either way). An agent is in the way when a point of its box outline
        lies in the corridor ahead of our centre (:func:`box_outline`); the gap runs to the first such
        point. The outline, not the centre: inside a bend, a long box lying along the road can keep its
        centre clear of the band while its ends reach across the path, which curves towards them.
        """
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
        margin = np.where(a.speed[o] < STANDING_MPS, STANDING_MARGIN_M, MOVING_MARGIN_M)
        half = a.width[slots[pn]] / 2.0 + margin
        # Each candidate's outline points against each segment of its corridor: (Q, M, K-1).
        outline = box_outline(a.xy[o], a.yaw[o], a.length[o], a.width[o])
        seg_a, seg = ahead[pn, :-1], np.diff(ahead[pn], axis=1)
        seg_len2 = np.maximum(np.einsum("qki,qki->qk", seg, seg), 1e-9)
        rel = outline[:, :, None] - seg_a[:, None]
        t = geometry.clamp(np.einsum("qmki,qki->qmk", rel, seg) / seg_len2[:, None], 0.0, 1.0)
        off = rel - t[..., None] * seg[:, None]
        k_best = np.einsum("qmki,qmki->qmk", off, off).argmin(2)
        q, m = np.ix_(np.arange(len(pn)), np.arange(outline.shape[1]))
        d_best = np.linalg.norm(off[q, m, k_best], axis=-1)
        t_best = t[q, m, k_best]
        s_point = ahead_s[pn][q, k_best] + t_best * SAMPLE_M
        # In the corridor, ahead of our centre and not past the corridor's end.
        in_way = (d_best < half[:, None]) & (s_point > s_now[pn, None]) \
            & ~((k_best == seg.shape[1] - 1) & (t_best >= 1.0))
        s_first = np.where(in_way, s_point, np.inf)
        first = s_first.argmin(1)
        s_first = s_first[np.arange(len(pn)), first]
        bumper = np.full((n, len(others)), np.inf)
        bumper[pn, pm] = s_first - s_now[pn] - a.length[slots[pn]] / 2.0
        k_full = np.zeros((n, len(others)), np.int64)
        k_full[pn, pm] = k_best[np.arange(len(pn)), first]
        j = bumper.argmin(1)
        rows = np.arange(n)
        gap = bumper[rows, j]
        k = k_full[rows, j]
        tangent = ahead[rows, np.minimum(k + 1, ahead.shape[1] - 1)] - ahead[rows, np.maximum(k - 1, 0)]
        path_yaw = np.arctan2(tangent[:, 1], tangent[:, 0])
        lead = others[j]
        lead_speed = np.where(np.isfinite(gap), a.speed[lead] * np.cos(a.yaw[lead] - path_yaw), 0.0)
        return gap, lead_speed


def box_outline(xy: np.ndarray, yaw: np.ndarray, length: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Points (Q, M, 2) on the outline of Q boxes: 10 along each side (corners included), 2 inside each end.
    On boxes up to 18 m long and 6 m wide they lie at most 2 m apart, so a box edge crossing a car's corridor
    (half width 1.2 m or more) has a point inside it."""
    corners = geometry.box_corners(xy, yaw, length, width)  # front-left, rear-left, rear-right, front-right
    following = np.roll(corners, -1, axis=1)
    return np.concatenate([corners[:, i, None] + u[None, :, None] * (following[:, i, None] - corners[:, i, None])
                           for i, u in enumerate(_EDGE_STEPS)], 1)


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
        wanted = geometry.clamp(geometry.wrap_angle(target_yaw - yaw[rows]), -max_turn, max_turn)
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
