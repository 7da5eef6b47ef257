"""``--planner pdm``: a PDM-Closed-style reference planner (Dauner et al., "Parting with Misconceptions about
Learning-based Vehicle Motion Planning", CoRL 2023), built on the simulator's own parts.

Each step it

1. builds proposals along the route centreline: IDM longitudinal profiles towards 20/40/60/80/100 % of the
   speed cap (behind what the shared IDM core says the ego follows: a leader, a held junction entry, the end
   of the known road), each at lateral offsets -1/0/+1 m, plus one comfortable stop;
2. forecasts each one 4 s with the simulator's own dynamics (the trajectory tracker and the kinematic
   bicycle, :func:`vectorworld.vehicle.dynamics.rollout_tracked`), the other agents at constant velocity;
3. scores the forecasts with the CLS sub-metrics of :mod:`vectorworld.scoring.metrics` (at-fault collision,
   drivable area, driving direction, making progress; progress relative to the best proposal, TTC, speed
   limit, comfort) and returns the best one as a :class:`TrajectoryCommand`.

It subclasses the IDM route planner, so it shares the IDM core (junction right of way) with the NPC policy
exactly as ``--planner idm`` does. :meth:`PdmPlanner.plan` needs only a :class:`PolicyInput`, so an external
planner can run it on a served session's observation (``tools/example_planner_client.py --planner pdm``).
"""

from __future__ import annotations

import numpy as np

from policies.base import PolicyInput
from policies.ego import HORIZON_STEPS, IdmRoutePlanner
from policies.idm import IdmParams, idm_accel
from vectorworld import geometry
from vectorworld.scene import LaneGraph
from vectorworld.scoring import metrics as m
from vectorworld.scoring.collisions import (
    BEHIND_ANGLE_RAD,
    CollisionType,
    ObjectClass,
    at_fault,
    classify_collisions,
    object_class,
    rear_axle,
    relative_angle,
)
from vectorworld.scoring.signals import EgoKinematics
from vectorworld.scoring.ttc import relevant_agents
from vectorworld.vehicle.commands import EgoCommand, TrajectoryCommand
from vectorworld.vehicle.dynamics import rollout_tracked
from vectorworld.world.drivable import DrivableGrid
from vectorworld.world.uniform_paths import UniformPathBatch

SPEED_FRACTIONS = (1.0, 0.8, 0.6, 0.4, 0.2)
"""Of the speed cap; the first is preferred on ties (so is the centreline)."""
OFFSETS_M = (0.0, -1.0, 1.0)
FORECAST_STEPS = 40
SCORE_EVERY = 3
"""Forecast samples scored: every 0.3 s."""
LATERAL_BLEND_M = 15.0
"""Distance over which a proposal moves to its lateral offset."""
STOP_DECEL_MPS2 = 3.0
NEAR_M = 60.0
TTC_TIMES_S = (0.3, 0.6, 0.9)
PDM_IDM = IdmParams(time_headway_s=1.0, max_accel_mps2=2.2, comfort_decel_mps2=3.0)
"""IDM of the proposals: livelier than the NPCs' (the forecast check, not the headway, keeps it safe)."""


class PdmPlanner(IdmRoutePlanner):
    """PDM-Closed-style planner; see the module docstring."""

    name = "pdm"

    def __init__(self, params: IdmParams = IdmParams(), proposal_idm: IdmParams = PDM_IDM) -> None:
        super().__init__(params)
        self.proposal_idm = proposal_idm
        self._drivable = DrivableGrid()
        self._painted: dict[int, object] = {}
        self._graph_version = -1
        self.last_scores: np.ndarray = np.zeros(0)

    def reset(self) -> None:
        super().reset()
        self._drivable, self._painted, self._graph_version = DrivableGrid(), {}, -1

    def _sync_drivable(self, graph: LaneGraph) -> DrivableGrid:
        """The drivable area of ``graph`` (painted lane by lane as lanes come and go)."""
        if graph.version != self._graph_version:
            for lane_id in [i for i, lane in self._painted.items() if graph.lanes.get(i) is not lane]:
                self._drivable.remove(lane_id)
                del self._painted[lane_id]
            for lane_id, lane in graph.lanes.items():
                if lane_id not in self._painted:
                    self._drivable.add(lane)
                    self._painted[lane_id] = lane
            self._graph_version = graph.version
        return self._drivable

    def plan(self, inp: PolicyInput) -> EgoCommand:
        a, e = inp.agents, inp.ego_slot
        plan = self.core.plan(inp, np.array([e]))
        row = plan.row(e)
        profile = self.core.profile(inp, int(a.id[e]))
        if profile is None or plan.gap is None:
            return super().plan(inp)
        dt = inp.dt_s
        s0, lat0 = float(plan.s[row]), float(plan.lateral[row])
        v_now = max(float(a.speed[e]), 0.0)
        path = UniformPathBatch.of([profile.uniform])
        s_k, v_k = self._longitudinal(path, s0, v_now, float(plan.gap[row]), float(plan.lead_speed[row]), dt)
        poses, offsets = self._poses(path, s0, lat0, s_k)
        states = rollout_tracked(np.repeat(a.xy[e][None], len(poses), 0), np.full(len(poses), a.yaw[e]),
                                 np.full(len(poses), v_now), poses, FORECAST_STEPS, dt)
        limits = np.array([lane.speed_limit_mps for lane in profile.lanes])
        lane_of = profile.path.lane_index[np.clip(np.searchsorted(profile.path.s, s_k), 0, len(profile.path.s) - 1)]
        speed_limit = np.concatenate([limits[lane_of]] * len(OFFSETS_M))[:, :FORECAST_STEPS]
        scores = self.score(inp, states, offsets, np.tile(s_k, (len(OFFSETS_M), 1)), speed_limit, s0)
        self.last_scores = scores
        best = int(np.argmax(scores))
        return TrajectoryCommand(poses[best, :HORIZON_STEPS])

    def _longitudinal(self, path: UniformPathBatch, s0: float, v0: float, gap: float, lead_speed: float,
                      dt: float) -> tuple[np.ndarray, np.ndarray]:
        """(F + 1, H) arc positions and speeds: IDM towards each speed fraction, then a comfortable stop."""
        fractions = np.array(SPEED_FRACTIONS)
        f = len(fractions)
        horizon = FORECAST_STEPS + 3
        grid = np.arange(len(path.values)) * path.spacing_m[0]
        length = float(path.length_m[0])
        s, v = np.full(f + 1, s0), np.full(f + 1, v0)
        s_out, v_out = np.zeros((f + 1, horizon)), np.zeros((f + 1, horizon))
        lead = np.full(f, lead_speed)
        brake = np.array([-STOP_DECEL_MPS2])
        for k in range(horizon):
            cap = np.interp(s[:f], grid, path.values)
            gap_k = (s0 + gap + lead_speed * k * dt) - s[:f]
            accel = idm_accel(v[:f], np.maximum(fractions * cap, 0.5), gap_k, lead, self.proposal_idm)
            v = np.maximum(v + np.concatenate([accel, brake]) * dt, 0.0)
            s = np.minimum(s + v * dt, length)
            s_out[:, k], v_out[:, k] = s, v
        return s_out, v_out

    def _poses(self, path: UniformPathBatch, s0: float, lat0: float, s_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(P, H, 3) poses of every (profile, offset) pair (offsets outer), and each proposal's offset (P,)."""
        n, h = s_k.shape
        offsets = np.repeat(np.array(OFFSETS_M), n)
        s_all = np.tile(s_k, (len(OFFSETS_M), 1))
        blend = np.clip((s_all - s0) / LATERAL_BLEND_M, 0.0, 1.0)
        blend = 0.5 - 0.5 * np.cos(np.pi * blend)
        lateral = lat0 + (offsets[:, None] - lat0) * blend
        length = path.length_m[0]
        pts, _ = path.at(s_all.reshape(1, -1))
        ahead, _ = path.at(np.minimum(s_all + 0.5, length).reshape(1, -1))
        back, _ = path.at(np.maximum(s_all - 0.5, 0.0).reshape(1, -1))
        d = (ahead - back)[0]
        yaw = np.arctan2(d[:, 1], d[:, 0])
        xy = pts[0] + lateral.reshape(-1, 1) * np.stack([-np.sin(yaw), np.cos(yaw)], -1)
        return np.concatenate([xy, yaw[:, None]], -1).reshape(len(offsets), h, 3), offsets

    def score(self, inp: PolicyInput, states: np.ndarray, offsets: np.ndarray, s_k: np.ndarray,
              speed_limit: np.ndarray, s0: float) -> np.ndarray:
        """(P,) CLS of the forecast ego states (P, H, 4) against the constant-velocity forecast of the others."""
        a, e = inp.agents, inp.ego_slot
        dt = inp.dt_s
        p = len(states)
        idx = np.arange(SCORE_EVERY - 1, FORECAST_STEPS, SCORE_EVERY)
        t = (idx + 1) * dt
        ego = states[:, idx]  # (P, K, 4)
        others = a.valid.copy()
        others[e] = False
        others &= np.linalg.norm(a.xy - a.xy[e], axis=-1) < NEAR_M
        o = np.nonzero(others)[0]
        vel = a.speed[o, None] * np.stack([np.cos(a.yaw[o]), np.sin(a.yaw[o])], -1)
        lengths, widths = np.full(1, a.length[e]), np.full(1, a.width[e])
        ego_corners = geometry.box_corners(ego[..., :2], ego[..., 2], lengths, widths)  # (P, K, 4, 2)
        vru = np.zeros(p)
        vehicle = np.zeros(p)
        obj = np.zeros(p)
        min_ttc = np.full(p, np.inf)
        if len(o):
            at_xy = a.xy[o][None] + t[:, None, None] * vel[None]  # (K, N, 2)
            corners = geometry.box_corners(at_xy, a.yaw[o][None], a.length[o][None], a.width[o][None])  # (K, N, 4, 2)
            reach = 0.5 * (np.hypot(a.length[e], a.width[e]) + np.hypot(a.length[o], a.width[o]))  # (N,)
            hit = _overlaps(ego[..., :2], ego_corners, at_xy, corners, reach)  # (P, K, N)
            first = np.argmax(hit.any(-1), 1)
            collides = hit.any((1, 2))
            classes = object_class(a.agent_type[o])
            follower = relative_angle(rear_axle(a.xy[e], a.yaw[e]), a.yaw[e], a.xy[o]) > BEHIND_ANGLE_RAD
            for q in np.nonzero(collides)[0]:
                k = first[q]
                n_hit = np.nonzero(hit[q, k])[0]
                kinds = classify_collisions(ego[q, k, :2], ego[q, k, 2], ego[q, k, 3], a.length[e], a.width[e],
                                            at_xy[k, n_hit], a.yaw[o][n_hit], a.speed[o][n_hit], a.length[o][n_hit],
                                            a.width[o][n_hit], a.agent_type[o][n_hit])
                # Stricter than the episode score: in a forecast every contact counts as one to avoid (the
                # crossing car that would hit our side or rear quarter too) but one by a car following us
                # now (braking cannot avoid it) or with the ego standing.
                fault = (at_fault(kinds, offsets[q] != 0.0) | (kinds == CollisionType.ACTIVE_LATERAL)
                         | ((kinds == CollisionType.ACTIVE_REAR) & ~follower[n_hit]))
                for cls in classes[n_hit][fault]:
                    (vru if cls == ObjectClass.VRU else vehicle if cls == ObjectClass.VEHICLE else obj)[q] += 1
                if fault.any():
                    min_ttc[q] = 0.0
            # TTC: each sample projected ahead at constant velocity against the agents' forecast.
            ego_vel = ego[..., 3:4] * np.stack([np.cos(ego[..., 2]), np.sin(ego[..., 2])], -1)
            for dt_ttc in TTC_TIMES_S:
                ego_at = ego[..., :2] + dt_ttc * ego_vel
                c_ego = geometry.box_corners(ego_at, ego[..., 2], lengths, widths)
                c_oth = geometry.box_corners(at_xy + dt_ttc * vel[None], a.yaw[o][None], a.length[o][None],
                                             a.width[o][None])
                near = _overlaps(ego_at, c_ego, at_xy + dt_ttc * vel[None], c_oth, reach) & ~hit  # (P, K, N)
                wide = (offsets != 0.0)[:, None, None]
                relevant = relevant_agents(ego[..., None, :2], ego[..., None, 2], at_xy[None], wide)
                breach = (near & relevant & (ego[..., None, 3] > m.EGO_STOPPED_TTC_MPS)).any((1, 2))
                min_ttc = np.where(breach, np.minimum(min_ttc, dt_ttc), min_ttc)
        offroad = ~self._sync_drivable(inp.graph).contains(ego_corners).all(-1)  # (P, K)
        progress = s_k[:, FORECAST_STEPS - 1] - s0
        ratio = m.ego_progress_along_route(progress, np.full(p, max(progress.max(), m.PROGRESS_FLOOR_M)))
        history = a.history[e][a.history_valid[e]]
        full = np.concatenate([np.broadcast_to(history[None], (p, *history.shape)), states], 1)
        kin = EgoKinematics.of(full[..., :2], full[..., 2], full[..., 3], dt)
        overspeed = np.maximum(states[..., 3] - speed_limit, 0.0)
        scores = {
            "no_at_fault_collisions": m.no_at_fault_collisions(vru, vehicle, obj),
            "drivable_area_compliance": m.drivable_area_compliance(offroad),
            "driving_direction_compliance": m.driving_direction_compliance(np.diff(s_k, axis=1), dt),
            "ego_is_making_progress": m.ego_is_making_progress(ratio),
            "ego_progress_along_route": ratio,
            "time_to_collision_within_bound": m.time_to_collision_within_bound(min_ttc),
            "speed_limit_compliance": m.speed_limit_compliance(overspeed, dt),
            "ego_is_comfortable": m.ego_is_comfortable(kin),
        }
        return m.closed_loop_score(scores)


def _overlaps(ego_xy: np.ndarray, ego_corners: np.ndarray, xy: np.ndarray, corners: np.ndarray,
              reach: np.ndarray) -> np.ndarray:
    """(P, K, N) overlap of ego boxes (P, K) with agent boxes (K, N); the exact test only where the centres
    are closer than ``reach`` (N,) (the sum of the half diagonals)."""
    d = ego_xy[:, :, None] - xy[None]
    near = np.einsum("pkni,pkni->pkn", d, d) < reach[None, None] ** 2
    out = np.zeros(near.shape, bool)
    q, k, n = np.nonzero(near)
    if len(q):
        out[q, k, n] = geometry.boxes_overlap(ego_corners[q, k], corners[k, n])
    return out
