"""``--planner pdm``: a PDM-Closed-style reference planner (Dauner et al., "Parting with Misconceptions about
Learning-based Vehicle Motion Planning", CoRL 2023), built on the simulator's own parts.

Each step it

1. builds longitudinal profiles along the route centreline, behind what the shared IDM core says the ego
   follows (a leader, a held junction entry, the end of the known road):

   * *comfortable* ones: IDM towards 20/40/60/80/100 % of the speed cap and a 3 m/s^2 stop, each starting
     from the ego's current acceleration with the jerk limited to :data:`JERK_MPS3` and the acceleration
     kept inside nuPlan's comfort bounds, so switching from one to another between steps stays smooth;
   * two *emergency* ones, centreline only: IDM at the full cap without those limits, and a hard stop,
     chosen only when no comfortable one avoids a forecast contact, leaving the road or a TTC breach;

2. forecasts them 4 s with the simulator's own dynamics (the trajectory tracker and the kinematic bicycle,
   :func:`vectorworld.vehicle.dynamics.rollout_tracked`), the other agents at constant velocity, and scores
   them with the CLS sub-metrics (:mod:`policies.pdm_scoring`);
3. only when no comfortable centreline proposal is clean (a forecast contact, a TTC breach, off the
   drivable area), or the ego is on an offset and the centreline has been clean for less than 1 s
   (:data:`RETURN_STEPS`), it adds the comfortable profiles at lateral offsets of -1 / +1 m (reached over
   3 s of driving), rejecting those that would put the ego into a lane going the other way;
4. returns the best as a :class:`TrajectoryCommand`, preferring last step's choice on near-ties
   (:data:`KEEP_BONUS`, :data:`KEEP_OFFSET_BONUS`: temporal consistency, so the ego does not flip between
   proposals of almost equal score).

It subclasses the IDM route planner, so like ``--planner idm`` it stops where the step's right-of-way
decision holds it (lights included). :meth:`PdmPlanner.plan` needs only a :class:`PolicyInput`, so an external
planner can run it on a served session's observation (``tools/example_planner_client.py --planner pdm``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.base import PolicyInput
from policies.ego import HORIZON_STEPS, IdmRoutePlanner
from policies.idm import IdmParams, idm_accel
from policies.pdm_scoring import MULTIPLIERS, TTC, ForecastScorer
from vectorworld.vehicle.commands import EgoCommand, TrajectoryCommand
from vectorworld.vehicle.dynamics import BicycleLimits, rollout_tracked
from vectorworld.world.uniform_paths import UniformPath, UniformPathBatch

SPEED_FRACTIONS = (1.0, 0.8, 0.6, 0.4, 0.2)
"""Of the speed cap; the first is preferred on ties (so is the centreline)."""
OFFSETS_M = (-1.0, 1.0)
"""Lateral offsets tried (besides the centreline) when the centreline is not clean."""
FORECAST_STEPS = 40
LATERAL_BLEND_M = 15.0
LATERAL_BLEND_S = 3.0
"""A proposal reaches its lateral offset over max(15 m, 3 s x speed), a cosine blend."""
STOP_DECEL_MPS2 = 3.0
JERK_MPS3 = 3.0
"""Jerk limit of the comfortable profiles (nuPlan's longitudinal-jerk bound is 4.13 m/s^3)."""
START_ACCEL_MPS2 = 1.0
"""From standstill the comfortable profiles may start at up to this acceleration at once (the tracker holds a
car whose plan starts slower than 0.05 m/s, which a jerk-limited ramp from 0 would be)."""
STANDSTILL_MPS = 0.5
PREVIEW_DECEL_MPS2 = 1.5
PREVIEW_M = 80.0
"""The comfortable profiles slow for a lower cap (a speed limit, a curve) up to 80 m ahead at 1.5 m/s^2, so
they enter it at its speed instead of braking inside it."""
COMFORT_ACCEL_MPS2 = (-3.8, 2.2)
"""Acceleration range of the comfortable profiles (inside nuPlan's [-4.05, 2.40] m/s^2)."""
EMERGENCY_PENALTY = 0.1
"""Subtracted from the emergency profiles' scores when they may be chosen at all (no comfortable profile
avoids a forecast contact, leaving the road or a TTC breach)."""
KEEP_BONUS = 0.01
KEEP_OFFSET_BONUS = 0.03
"""Score added to last step's proposal and to every proposal at last step's offset."""
RETURN_STEPS = 10
"""An ego on an offset goes back to the centreline once the centreline has been clean this many steps."""
PDM_IDM = IdmParams(time_headway_s=1.0, max_accel_mps2=2.2, comfort_decel_mps2=3.0)
"""IDM of the proposals: livelier than the NPCs' (the forecast check, not the headway, keeps it safe)."""


@dataclass(frozen=True)
class Profiles:
    """Longitudinal profiles (L, H): arc positions and speeds; ``comfortable`` (L,) marks the jerk-limited
    ones (the only ones also tried at lateral offsets)."""

    s: np.ndarray
    v: np.ndarray
    comfortable: np.ndarray


N_COMFORTABLE = len(SPEED_FRACTIONS) + 1
"""Comfortable profiles: the IDM speeds, then the stop."""
N_PROFILES = N_COMFORTABLE + 2
"""Then the emergency IDM and the hard stop."""


class PdmPlanner(IdmRoutePlanner):
    """PDM-Closed-style planner; see the module docstring."""

    name = "pdm"

    def __init__(self, params: IdmParams = IdmParams(), proposal_idm: IdmParams = PDM_IDM,
                 limits: BicycleLimits = BicycleLimits()) -> None:
        super().__init__(params)
        self.proposal_idm = proposal_idm
        self.limits = limits
        self.scorer = ForecastScorer(FORECAST_STEPS)
        self.last_scores: np.ndarray = np.zeros(0)
        self.last_offsets: np.ndarray = np.zeros(0)
        self.last_profiles: np.ndarray = np.zeros(0, np.int64)
        """Last step's scores, and each proposal's lateral offset and profile index (see :data:`N_PROFILES`)."""
        self.last_best = -1
        self._last: tuple[float, int] | None = None  # (offset, profile index) chosen last step
        self._routes: dict[int, tuple[UniformPath, UniformPathBatch, np.ndarray]] = {}
        self._clean_steps = 0

    def reset(self) -> None:
        super().reset()
        self.scorer.reset()
        self._last, self._clean_steps = None, 0
        self._routes.clear()

    def plan(self, inp: PolicyInput) -> EgoCommand:
        a, e = inp.agents, inp.ego_slot
        plan = self.core.plan(inp, np.array([e]))
        row = plan.row(e)
        profile = self.core.profile(inp, int(a.id[e]))
        if profile is None or plan.gap is None:
            self._last = None
            return super().plan(inp)
        dt = inp.dt_s
        s0, lat0 = float(plan.s[row]), float(plan.lateral[row])
        v_now = max(float(a.speed[e]), 0.0)
        path, preview = self._route(profile.uniform)
        prof = self._longitudinal(path, preview, s0, v_now, _current_accel(inp), float(plan.gap[row]),
                                  float(plan.lead_speed[row]), dt)
        limits = np.array([lane.speed_limit_mps for lane in profile.lanes])
        lane_of = profile.path.lane_index[np.clip(np.searchsorted(profile.path.s, prof.s), 0, len(profile.path.s) - 1)]
        speed_limit = limits[lane_of][:, :FORECAST_STEPS]
        blend_m = max(LATERAL_BLEND_M, LATERAL_BLEND_S * v_now)
        self.scorer.prepare(inp)

        # Stage 1: the centreline.
        offsets = np.zeros(N_PROFILES)
        index = np.arange(N_PROFILES)
        poses = self._poses(path, s0, lat0, prof.s, offsets, blend_m)
        states = self._forecast(inp, poses)
        limit_k = speed_limit
        scores = self.scorer.score(inp, states, offsets, limit_k, np.zeros((len(states), len(self.scorer.idx)), bool))
        clean = bool(self._clean()[:N_COMFORTABLE].any())
        self._clean_steps = self._clean_steps + 1 if clean else 0
        on_offset = self._last is not None and self._last[0] != 0.0
        try_offsets = not clean or (on_offset and self._clean_steps < RETURN_STEPS)
        if try_offsets:  # Stage 2: the comfortable profiles at each lateral offset (all rescored together).
            side = np.repeat(np.array(OFFSETS_M), N_COMFORTABLE)
            side_index = np.tile(np.arange(N_COMFORTABLE), len(OFFSETS_M))
            side_poses = self._poses(path, s0, lat0, prof.s[side_index], side, blend_m)
            states = np.concatenate([states, self._forecast(inp, side_poses)])
            poses = np.concatenate([poses, side_poses])
            offsets, index = np.concatenate([offsets, side]), np.concatenate([index, side_index])
            limit_k = speed_limit[index]
            against = self.scorer.against_lanes(inp.graph, states, offsets)
            scores = self.scorer.score(inp, states, offsets, limit_k, against)
        self.last_scores, self.last_offsets, self.last_profiles = scores, offsets, index
        safe = self._clean()
        emergency = index >= N_COMFORTABLE
        # The emergency profiles only when no comfortable one avoids a contact, leaving the road or a TTC breach.
        penalty = np.where(emergency, 1.0 if safe[~emergency].any() else EMERGENCY_PENALTY, 0.0)
        best = int(np.argmax(scores - penalty + self._keep_bonus(offsets, index)))
        self._last, self.last_best = (float(offsets[best]), int(index[best])), best
        return TrajectoryCommand(poses[best, :HORIZON_STEPS])

    def _clean(self) -> np.ndarray:
        """(P,) bool: the last scored proposals without a forecast contact, off-road or wrong-way sample, or
        TTC breach."""
        sub = self.scorer.last_sub_scores
        return (np.prod([sub[name] for name in MULTIPLIERS], axis=0) > 0.0) & (sub[TTC] > 0.0)

    def _keep_bonus(self, offsets: np.ndarray, index: np.ndarray) -> np.ndarray:
        """(P,) hysteresis: a small bonus for last step's offset and proposal."""
        if self._last is None:
            return np.zeros(len(offsets))
        same_offset = offsets == self._last[0]
        return KEEP_OFFSET_BONUS * same_offset + KEEP_BONUS * (same_offset & (index == self._last[1]))

    def _forecast(self, inp: PolicyInput, poses: np.ndarray) -> np.ndarray:
        a, e = inp.agents, inp.ego_slot
        n = len(poses)
        return rollout_tracked(np.repeat(a.xy[e][None], n, 0), np.full(n, a.yaw[e]), np.full(n, max(a.speed[e], 0.0)),
                               poses, FORECAST_STEPS, inp.dt_s, self.limits)

    def _route(self, uniform: UniformPath) -> tuple[UniformPathBatch, np.ndarray]:
        """The route path as a batch of one, and its previewed speed cap (cached per route path)."""
        hit = self._routes.get(id(uniform))
        if hit is not None and hit[0] is uniform:
            return hit[1], hit[2]
        if len(self._routes) > 64:
            self._routes.clear()
        path, preview = UniformPathBatch.of([uniform]), preview_cap(uniform.values, uniform.spacing_m)
        self._routes[id(uniform)] = (uniform, path, preview)
        return path, preview

    def _longitudinal(self, path: UniformPathBatch, preview: np.ndarray, s0: float, v0: float, a0: float, gap: float,
                      lead_speed: float, dt: float) -> Profiles:
        """The :data:`N_PROFILES` profiles over H = FORECAST_STEPS + 3 steps (the tracker reads 3 poses
        ahead): comfortable IDM speeds and stop, then the emergency IDM and hard stop. The comfortable ones
        aim at the previewed cap (slowing for a lower limit or a curve ahead in time), the emergency IDM at
        the cap where it is."""
        fractions = np.array([*SPEED_FRACTIONS, 0.0, 1.0, 0.0])
        idm_rows = np.array([True] * len(SPEED_FRACTIONS) + [False, True, False])
        comfortable = np.arange(N_PROFILES) < N_COMFORTABLE
        stop_target = np.array([0.0] * len(SPEED_FRACTIONS) + [-STOP_DECEL_MPS2, 0.0, -self.limits.max_decel_mps2])
        lo, hi = COMFORT_ACCEL_MPS2
        p = self.proposal_idm
        horizon = FORECAST_STEPS + 3
        grid = np.arange(len(path.values)) * path.spacing_m[0]
        length = float(path.length_m[0])
        s, v, accel = np.full(N_PROFILES, s0), np.full(N_PROFILES, v0), np.full(N_PROFILES, a0)
        lead = np.full(N_PROFILES, lead_speed)
        s_out, v_out = np.zeros((N_PROFILES, horizon)), np.zeros((N_PROFILES, horizon))
        step = JERK_MPS3 * dt
        for k in range(horizon):
            cap = np.where(comfortable, np.interp(s, grid, preview), np.interp(s, grid, path.values))
            gap_k = (s0 + gap + lead_speed * k * dt) - s
            target = np.where(idm_rows, idm_accel(v, np.maximum(fractions * cap, 0.5), gap_k, lead, p), stop_target)
            if k == 0 and v0 < STANDSTILL_MPS:
                accel = np.where(target > 0.0, np.maximum(accel, np.minimum(target, START_ACCEL_MPS2)), accel)
            # Braking is also held to what still ends at rest with the acceleration back at 0 (|a| <=
            # sqrt(2 j v)), so a comfortable stop does not end in a jerk.
            floor = np.maximum(lo, -np.sqrt(2.0 * JERK_MPS3 * v))
            smooth = np.minimum(np.maximum(target, np.maximum(accel - step, floor)), np.minimum(accel + step, hi))
            wanted = np.where(comfortable, smooth, target)
            if k == 2:
                # The engine's tracker takes the first step's speed as 2 v2 - v3 (from poses 1-3): that is v1
                # only if the acceleration of step 3 equals step 2's. Held here, the first step runs at the
                # planned a1; with a ramp through it the tracker would replay a0 forever (the ego could
                # never change its acceleration).
                wanted = accel
            v_next = np.maximum(v + wanted * dt, 0.0)
            accel = (v_next - v) / dt  # what was applied (a stopped car stops braking)
            v = v_next
            s = np.minimum(s + v * dt, length)
            s_out[:, k], v_out[:, k] = s, v
        return Profiles(s_out, v_out, comfortable)

    @staticmethod
    def _poses(path: UniformPathBatch, s0: float, lat0: float, s_k: np.ndarray, offsets: np.ndarray,
               blend_m: float) -> np.ndarray:
        """(P, H, 3) poses of the profiles ``s_k`` (P, H) at lateral ``offsets`` (P,), blended in from the
        ego's lateral position ``lat0`` over ``blend_m`` of arc."""
        p, h = s_k.shape
        blend = np.clip((s_k - s0) / blend_m, 0.0, 1.0)
        blend = 0.5 - 0.5 * np.cos(np.pi * blend)
        lateral = lat0 + (offsets[:, None] - lat0) * blend
        length = path.length_m[0]
        flat = s_k.reshape(1, -1)
        pts, _ = path.at(flat)
        ahead, _ = path.at(np.minimum(flat + 0.5, length))
        back, _ = path.at(np.maximum(flat - 0.5, 0.0))
        d = (ahead - back)[0]
        yaw = np.arctan2(d[:, 1], d[:, 0])
        xy = pts[0] + lateral.reshape(-1, 1) * np.stack([-np.sin(yaw), np.cos(yaw)], -1)
        return np.concatenate([xy, yaw[:, None]], -1).reshape(p, h, 3)


def preview_cap(cap: np.ndarray, spacing_m: float, decel: float = PREVIEW_DECEL_MPS2,
                window_m: float = PREVIEW_M) -> np.ndarray:
    """(J,) the speed at each point of a uniform path from which a lower cap up to ``window_m`` ahead is
    reached braking at ``decel``: min over j >= i of sqrt(cap_j^2 + 2 decel (s_j - s_i))."""
    n = len(cap)
    ahead = min(n, int(window_m / spacing_m) + 1)
    pad = np.concatenate([cap, np.full(ahead - 1, np.inf)])
    windows = np.lib.stride_tricks.sliding_window_view(pad, ahead)  # (J, ahead): cap_i .. cap_{i+ahead-1}
    reach = 2.0 * decel * spacing_m * np.arange(ahead)
    return np.sqrt(np.min(windows**2 + reach[None], axis=1))


def _current_accel(inp: PolicyInput) -> float:
    """The ego's acceleration over its last step (from the history; 0 without one)."""
    a, e = inp.agents, inp.ego_slot
    valid = a.history_valid[e]
    if valid.sum() < 2 or not (valid[-1] and valid[-2]):
        return 0.0
    return float(a.history[e, -1, 3] - a.history[e, -2, 3]) / inp.dt_s
