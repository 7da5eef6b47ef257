"""Scoring the PDM planner's forecasts with the CLS sub-metrics of :mod:`vectorworld.scoring.metrics`.

The forecast ego states (P, T, 4) of P proposals are sampled every :data:`SCORE_EVERY` steps against the other
agents moved at constant velocity: at-fault collisions (stricter than the episode score: every contact but
one by a car following us now counts), the drivable area, driving direction (an offset proposal whose centre
enters a lane going the other way), time to collision, speed limit, comfort (nuPlan's smoothed signals over
the recent history and the forecast, judged on the forecast), and progress along the route relative to the
best proposal without a contact (as PDM-Closed normalises it).
"""

from __future__ import annotations

import numpy as np

from policies.base import PolicyInput
from vectorworld import geometry
from vectorworld.scene import Lane, LaneGraph
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
from vectorworld.scoring.signals import JERK_WINDOW, EgoKinematics
from vectorworld.scoring.ttc import relevant_agents
from vectorworld.world.drivable import DrivableGrid

SCORE_EVERY = 3
"""Forecast samples scored: every 0.3 s."""
NEAR_M = 60.0
TTC_TIMES_S = (0.3, 0.6, 0.9)
AGAINST_RAD = np.deg2rad(135.0)
WITH_RAD = np.deg2rad(45.0)
"""A point is in a lane going the other way when inside a lane more than 135 deg off its heading and in none
within 45 deg."""
LANE_SEARCH_M = 60.0
HISTORY_TAIL = JERK_WINDOW
"""History samples the comfort signals start from (so a jump at the start of a proposal counts)."""
MULTIPLIERS = ("no_at_fault_collisions", "drivable_area_compliance", "driving_direction_compliance")
TTC = "time_to_collision_within_bound"


class ForecastScorer:
    """Scores forecasts for one planner; :meth:`prepare` once per step, then :meth:`score`."""

    def __init__(self, forecast_steps: int) -> None:
        self.idx = np.arange(SCORE_EVERY - 1, forecast_steps, SCORE_EVERY)
        self._drivable = DrivableGrid()
        self._painted: dict[int, object] = {}
        self._graph_version = -1
        self._others = np.zeros(0, np.int64)
        self._at_xy = np.zeros((len(self.idx), 0, 2))
        self._vel = np.zeros((0, 2))
        self.last_sub_scores: dict[str, np.ndarray] = {}
        self._boxes: dict[int, tuple[Lane, np.ndarray, np.ndarray]] = {}

    def reset(self) -> None:
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

    def prepare(self, inp: PolicyInput) -> None:
        """The other agents near the ego, moved at constant velocity to the scored times."""
        a, e = inp.agents, inp.ego_slot
        others = a.valid.copy()
        others[e] = False
        d = a.xy - a.xy[e]
        others &= np.einsum("ij,ij->i", d, d) < NEAR_M**2
        o = np.nonzero(others)[0]
        self._others = o
        self._vel = a.speed[o, None] * np.stack([np.cos(a.yaw[o]), np.sin(a.yaw[o])], -1)
        t = (self.idx + 1) * inp.dt_s
        self._at_xy = a.xy[o][None] + t[:, None, None] * self._vel[None]  # (K, N, 2)
        self._sync_drivable(inp.graph)

    def against_lanes(self, graph: LaneGraph, states: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """(P, K) bool: the centre of an offset proposal at a scored sample is in a lane going the other way
        (centreline proposals follow the route: all False)."""
        out = np.zeros((len(states), len(self.idx)), bool)
        rows = np.nonzero(offsets != 0.0)[0]
        if len(rows) == 0:
            return out
        pts = states[rows][:, self.idx]  # (R, K, 4)
        xy, yaw = pts[..., :2].reshape(-1, 2), pts[..., 2].reshape(-1)
        against = np.zeros(len(xy), bool)
        with_ = np.zeros(len(xy), bool)
        lo, hi = xy.min(0), xy.max(0)
        for lane_id in graph.near(xy.mean(0), LANE_SEARCH_M):
            lane = graph[lane_id]
            box_lo, box_hi = self._lane_box(lane)
            if (box_lo > hi).any() or (box_hi < lo).any():
                continue  # no sample can be inside it
            s, lat, heading = geometry.project_to_polyline(xy, lane.points)
            inside = (np.abs(lat) <= lane.width_m / 2.0) & (s > 0.0) & (s < lane.length_m)
            if not inside.any():
                continue
            off = np.abs(geometry.wrap_angle(heading - yaw))
            against |= inside & (off > AGAINST_RAD)
            with_ |= inside & (off < WITH_RAD)
        out[rows] = (against & ~with_).reshape(len(rows), len(self.idx))
        return out

    def _lane_box(self, lane: Lane) -> tuple[np.ndarray, np.ndarray]:
        """A lane's bounding box grown by half its width (cached per lane object)."""
        hit = self._boxes.get(lane.id)
        if hit is None or hit[0] is not lane:
            if len(self._boxes) > 4096:
                self._boxes.clear()
            half = lane.width_m / 2.0
            hit = self._boxes[lane.id] = (lane, lane.points.min(0) - half, lane.points.max(0) + half)
        return hit[1], hit[2]

    def score(self, inp: PolicyInput, states: np.ndarray, offsets: np.ndarray, speed_limit: np.ndarray,
              against: np.ndarray) -> np.ndarray:
        """(P,) CLS of the forecast ego states (P, T, 4) at lateral ``offsets`` (P,); ``speed_limit`` (P, >= T)
        along each, ``against`` (P, K) from :meth:`against_lanes`."""
        a, e = inp.agents, inp.ego_slot
        dt = inp.dt_s
        p, steps = states.shape[:2]
        vru, vehicle, obj, min_ttc, offroad = self._contacts(inp, states, offsets)
        progress = states[..., 3].sum(1) * dt  # driven, as forecast (the plan may not be followed)
        # Relative to the best proposal without a contact or leaving the road (PDM-Closed's normalisation;
        # the best of all when every one fails).
        ok = ((vru + vehicle + obj) == 0) & ~offroad.any(-1)
        best = progress[ok].max() if ok.any() else progress.max()
        ratio = m.ego_progress_along_route(progress, np.full(p, max(best, m.PROGRESS_FLOOR_M)))
        history = a.history[e][a.history_valid[e]][-HISTORY_TAIL:]
        full = np.concatenate([np.broadcast_to(history[None], (p, *history.shape)), states], 1)
        kin = EgoKinematics.of(full[..., 2], full[..., 3], dt)
        forecast = slice(len(history), None)
        kin = EgoKinematics(**{name: getattr(kin, name)[:, forecast] for name in vars(kin)})
        overspeed = np.maximum(states[..., 3] - speed_limit[:, :steps], 0.0)
        lane_progress = np.where(against, -states[:, self.idx, 3] * dt * SCORE_EVERY, 0.0)
        scores = {
            "no_at_fault_collisions": m.no_at_fault_collisions(vru, vehicle, obj),
            "drivable_area_compliance": m.drivable_area_compliance(offroad),
            "driving_direction_compliance": m.driving_direction_compliance(lane_progress, dt * SCORE_EVERY),
            "ego_is_making_progress": m.ego_is_making_progress(ratio),
            "ego_progress_along_route": ratio,
            "time_to_collision_within_bound": m.time_to_collision_within_bound(min_ttc),
            "speed_limit_compliance": m.speed_limit_compliance(overspeed, dt),
            "ego_is_comfortable": m.ego_is_comfortable(kin),
        }
        self.last_sub_scores = scores
        return m.closed_loop_score(scores)

    def _contacts(self, inp: PolicyInput, states: np.ndarray,
                  offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per proposal: at-fault contacts by class (VRU, vehicle, object), min TTC (0 at a contact, inf if
        none), and (P, K) samples off the drivable area."""
        a, e = inp.agents, inp.ego_slot
        p = len(states)
        ego = states[:, self.idx]  # (P, K, 4)
        lengths, widths = np.full(1, a.length[e]), np.full(1, a.width[e])
        ego_corners = geometry.box_corners(ego[..., :2], ego[..., 2], lengths, widths)  # (P, K, 4, 2)
        offroad = ~self._drivable.contains(ego_corners).all(-1)  # (P, K)
        counts = np.zeros((3, p))
        min_ttc = np.full(p, np.inf)
        o = self._others
        if len(o) == 0:
            return counts[0], counts[1], counts[2], min_ttc, offroad
        at_xy, vel = self._at_xy, self._vel
        yaw_o, len_o, wid_o = a.yaw[o][None], a.length[o][None], a.width[o][None]
        corners = geometry.box_corners(at_xy, yaw_o, len_o, wid_o)  # (K, N, 4, 2)
        reach = 0.5 * (np.hypot(a.length[e], a.width[e]) + np.hypot(a.length[o], a.width[o]))  # (N,)
        hit = _overlaps(ego[..., :2], ego_corners, at_xy, corners, reach)  # (P, K, N)
        collides = hit.any((1, 2))
        if collides.any():
            first = np.argmax(hit.any(-1), 1)
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
                    counts[0 if cls == ObjectClass.VRU else 1 if cls == ObjectClass.VEHICLE else 2, q] += 1
                if fault.any():
                    min_ttc[q] = 0.0
        # TTC: each sample projected ahead at constant velocity against the agents' forecast.
        ego_vel = ego[..., 3:4] * np.stack([np.cos(ego[..., 2]), np.sin(ego[..., 2])], -1)
        wide = (offsets != 0.0)[:, None, None]
        relevant = relevant_agents(ego[..., None, :2], ego[..., None, 2], at_xy[None], wide)  # (P, K, N)
        moving = (ego[..., 3] > m.EGO_STOPPED_TTC_MPS)[..., None]
        for dt_ttc in TTC_TIMES_S:
            ego_at = ego[..., :2] + dt_ttc * ego_vel
            c_ego = geometry.box_corners(ego_at, ego[..., 2], lengths, widths)
            oth_at = at_xy + dt_ttc * vel[None]
            c_oth = geometry.box_corners(oth_at, yaw_o, len_o, wid_o)
            near = _overlaps(ego_at, c_ego, oth_at, c_oth, reach) & ~hit  # (P, K, N)
            breach = (near & relevant & moving).any((1, 2))
            min_ttc = np.where(breach, np.minimum(min_ttc, dt_ttc), min_ttc)
        return counts[0], counts[1], counts[2], min_ttc, offroad


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
