"""The per-episode scorer: the engine hands it each step's state, it keeps what the sub-metrics need and
reports the nuPlan CLS, the CARLA-style driving score and every infraction as a step-stamped event.

One episode is scored as one nuPlan scenario (nuPlan's are 15 s; ours run until the target distance), so
the whole-episode booleans (comfort, TTC) are stricter than over 15 s windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vectorworld import geometry
from vectorworld.scene import Agents, AgentType, LaneGraph
from vectorworld.scoring import driving_score as carla
from vectorworld.scoring.collisions import ObjectClass, at_fault, classify_collisions, object_class
from vectorworld.scoring.lanes import locate
from vectorworld.scoring.metrics import (
    DIRECTION_COMPLIANT_M,
    DIRECTION_WINDOW_S,
    SUB_METRICS,
    TTC_BOUND_S,
    closed_loop_score,
    drivable_area_compliance,
    driving_direction_compliance,
    ego_is_comfortable,
    ego_is_making_progress,
    ego_progress_along_route,
    no_at_fault_collisions,
    speed_limit_compliance,
    time_to_collision_within_bound,
)
from vectorworld.scoring.signals import EgoKinematics
from vectorworld.scoring.ttc import relevant_agents, time_to_collision
from vectorworld.world.routes import RoutePath, build_path

OFF_ROUTE_M = 4.0
LANE_JUMP_M = 0.5
"""Per-step progress along a lane can exceed the distance moved only by this much; more is a projection jump."""
TRAFFIC_RADIUS_M = 40.0
TRAFFIC_HEADING_RAD = np.pi / 4
"""The reference driver moves with the traffic going the ego's way: vehicles in traffic (on a route, not
parked) within 40 m whose heading is within 45 deg of the ego's."""
_COLLISION_NAMES = ("stopped_ego", "stopped_track", "active_front", "active_rear", "active_lateral")
_CARLA_COLLISION = {ObjectClass.VRU: "collision_pedestrian", ObjectClass.VEHICLE: "collision_vehicle",
                    ObjectClass.OBJECT: "collision_static"}


class EpisodeScorer:
    """Accumulates one episode. Call :meth:`prime` with the first state, :meth:`step` after every step."""

    def __init__(self, dt_s: float) -> None:
        self.dt_s = dt_s
        self.events: list[dict[str, Any]] = []
        self._xy: list[np.ndarray] = []
        self._yaw: list[float] = []
        self._speed: list[float] = []
        self._lane_progress: list[float] = []
        self._overspeed: list[float] = []
        self._offroad: list[bool] = []
        self._lane = -1
        self._lane_s = 0.0
        self._collided: set[int] = set()
        self._at_fault = np.zeros(3, np.int64)  # by ObjectClass
        self._carla: dict[str, int] = {}
        self.route_progress_m = 0.0
        self.reference_progress_m = 0.0
        self.on_road_m = 0.0
        self.min_ttc_s = float("inf")
        self._ttc_breach = False
        self._still_s = 0.0
        self._wrong_way = False
        self._direction_samples = int(round(DIRECTION_WINDOW_S / dt_s))
        self._paths: dict[tuple[int, ...], RoutePath] = {}

    def prime(self, agents: Agents, ego_slot: int, graph: LaneGraph) -> None:
        """Remember the starting state (and the agents overlapping the ego already: not events)."""
        e = ego_slot
        self._record_pose(agents, e)
        pos = locate(graph, agents.xy[e], float(agents.yaw[e]), float(agents.length[e]), float(agents.width[e]))
        self._lane, self._lane_s = pos.lane_id, pos.s_m
        self._lane_progress.append(0.0)
        self._overspeed.append(max(0.0, float(agents.speed[e]) - pos.speed_limit_mps))
        self._offroad.append(False)

    def _record_pose(self, agents: Agents, e: int) -> None:
        self._xy.append(agents.xy[e].copy())
        self._yaw.append(float(agents.yaw[e]))
        self._speed.append(float(agents.speed[e]))

    def step(self, step: int, agents: Agents, ego_slot: int, graph: LaneGraph, route: Sequence[int],
             collided_ids: Sequence[int], ego_offroad: bool, traffic: np.ndarray | None = None) -> None:
        """The state after step ``step``. ``route``: the ego's route lanes before the step; ``collided_ids``:
        agents whose box the ego's overlaps now; ``ego_offroad``: a corner > 0.3 m off the drivable area;
        ``traffic``: (C,) bool, the agents in traffic (routed, not parked; None: every vehicle)."""
        e, a = ego_slot, agents
        xy, yaw, speed = a.xy[e], float(a.yaw[e]), float(a.speed[e])
        length, width = float(a.length[e]), float(a.width[e])
        before = self._xy[-1]
        self._record_pose(a, e)
        pos = locate(graph, xy, yaw, length, width, self._lane)
        between = pos.between_lanes or ego_offroad
        # Driving direction: progress along the lane the ego is in (0 on entering a lane).
        progress = pos.s_m - self._lane_s if pos.lane_id == self._lane and pos.lane_id >= 0 else 0.0
        if abs(progress) > float(np.linalg.norm(xy - before)) + LANE_JUMP_M:
            progress = 0.0  # the projection jumped (a lane bending back on itself, or re-drawn): not driving
        self._lane, self._lane_s = pos.lane_id, pos.s_m
        self._lane_progress.append(progress)
        window = sum(self._lane_progress[-(self._direction_samples + 1):])
        if window <= -DIRECTION_COMPLIANT_M and not self._wrong_way:
            self._event(step, "wrong_way", f"{-window:.1f} m against lane {pos.lane_id} in 1 s")
        self._wrong_way = window <= -DIRECTION_COMPLIANT_M
        over = max(0.0, speed - pos.speed_limit_mps) if pos.lane_id >= 0 else 0.0
        if over > 0.0 and (self._overspeed[-1] == 0.0 or len(self._overspeed) == 1):
            self._event(step, "overspeed", f"{speed:.1f} m/s in a {pos.speed_limit_mps:.1f} m/s lane")
        self._overspeed.append(over)
        if ego_offroad and not self._offroad[-1]:
            self._event(step, "offroad", "ego box corner off the drivable area")
        self._offroad.append(bool(ego_offroad))
        moved = float(np.linalg.norm(xy - before))
        if not ego_offroad:
            self.on_road_m += moved
        self._route_progress(graph, route, before, xy, self._reference_speed(a, e, pos.speed_limit_mps, graph,
                                                                            route, traffic))
        fault_now = self._collisions(step, a, e, collided_ids, between)
        ttc = 0.0 if fault_now else self._ttc(a, e, between or pos.in_junction)
        self.min_ttc_s = min(self.min_ttc_s, ttc)
        if ttc <= TTC_BOUND_S and not self._ttc_breach and not fault_now:
            self._event(step, "ttc", f"time to collision {ttc:.1f} s")
        self._ttc_breach = ttc <= TTC_BOUND_S
        self._still_s = self._still_s + self.dt_s if speed < carla.BLOCKED_SPEED_MPS else 0.0
        if abs(self._still_s - carla.BLOCKED_S) < self.dt_s / 2:
            self._carla["agent_blocked"] = self._carla.get("agent_blocked", 0) + 1
            self._event(step, "agent_blocked", f"ego still for {carla.BLOCKED_S:g} s")

    def events_at(self, step: int) -> tuple[str, ...]:
        """Kinds of the events of ``step`` (they are appended in step order, so only the tail is read)."""
        kinds = []
        for event in reversed(self.events):
            if event["step"] != step:
                break
            kinds.append(event["kind"])
        return tuple(reversed(kinds))

    def red_light(self, step: int, lane_id: int) -> None:
        """The ego entered signalised lane ``lane_id`` on red in ``step`` (detected by the Session): a CARLA
        ``red_light`` infraction and a ``red_light`` event."""
        self._carla["red_light"] = self._carla.get("red_light", 0) + 1
        self._event(step, "red_light", f"entered lane {lane_id} on red")

    def _event(self, step: int, kind: str, detail: str) -> None:
        self.events.append({"step": int(step), "kind": kind, "detail": detail})

    def _reference_speed(self, a: Agents, e: int, limit_mps: float, graph: LaneGraph, route: Sequence[int],
                         traffic: np.ndarray | None) -> float:
        """The reference driver's speed this step: the mean speed of the traffic going the ego's way (see
        :data:`TRAFFIC_RADIUS_M`), at most the lane's speed limit; the limit itself on an empty road."""
        if not np.isfinite(limit_mps):
            known = [i for i in route if i in graph]
            limit_mps = graph[known[0]].speed_limit_mps if known else 0.0
        near = a.valid & (a.agent_type == AgentType.VEHICLE) & (np.arange(a.capacity) != e)
        if traffic is not None:
            near &= traffic
        near &= np.einsum("ij,ij->i", a.xy - a.xy[e], a.xy - a.xy[e]) < TRAFFIC_RADIUS_M**2
        near &= np.abs(geometry.wrap_angle(a.yaw - a.yaw[e])) < TRAFFIC_HEADING_RAD
        if not near.any():
            return float(limit_mps)
        return float(min(limit_mps, max(0.0, float(a.speed[near].mean()))))

    def _route_progress(self, graph: LaneGraph, route: Sequence[int], before: np.ndarray, after: np.ndarray,
                        reference_mps: float) -> None:
        known = tuple(i for i in route[:3] if i in graph)
        if not known:
            return
        path = self._paths.get(known)
        if path is None:
            if len(self._paths) > 256:
                self._paths.clear()
            path = self._paths[known] = build_path(graph, known)
        s, lat, _ = geometry.project_to_polyline(np.stack([before, after]), path.points)
        if abs(float(lat[1])) <= OFF_ROUTE_M:
            self.route_progress_m += float(s[1] - s[0])
        self.reference_progress_m += reference_mps * self.dt_s

    def _collisions(self, step: int, a: Agents, e: int, collided_ids: Sequence[int], between: bool) -> bool:
        new = [i for i in collided_ids if i not in self._collided]
        if not new:
            return False
        self._collided.update(new)
        slots = np.array([a.slot_of(i) for i in new])
        kinds = classify_collisions(a.xy[e], float(a.yaw[e]), float(a.speed[e]), float(a.length[e]),
                                    float(a.width[e]), a.xy[slots], a.yaw[slots], a.speed[slots], a.length[slots],
                                    a.width[slots], a.agent_type[slots])
        fault = at_fault(kinds, between)
        classes = object_class(a.agent_type[slots])
        for agent_id, kind, f, cls in zip(new, kinds, fault, classes, strict=True):
            if f:
                self._at_fault[cls] += 1
            name = _CARLA_COLLISION[ObjectClass(int(cls))]
            self._carla[name] = self._carla.get(name, 0) + 1
            self._event(step, "at_fault_collision" if f else "collision",
                        f"{_COLLISION_NAMES[int(kind)]} with {ObjectClass(int(cls)).name.lower()} {agent_id}")
        return bool(fault.any())

    def _ttc(self, a: Agents, e: int, wide: bool) -> float:
        others = a.valid.copy()
        others[e] = False
        if self._collided:
            others &= ~np.isin(a.id, list(self._collided))
        slots = np.nonzero(others)[0]
        if len(slots) == 0:
            return float("inf")
        keep = slots[relevant_agents(a.xy[e], float(a.yaw[e]), a.xy[slots], wide)]
        return time_to_collision(a.xy[e], float(a.yaw[e]), float(a.speed[e]), float(a.length[e]), float(a.width[e]),
                                 a.xy[keep], a.yaw[keep], a.speed[keep], a.length[keep], a.width[keep])

    # ----------------------------------------------------------------- results
    def sub_scores(self) -> dict[str, float]:
        """Each registered sub-metric's score for the episode so far."""
        progress_ratio = float(ego_progress_along_route(self.route_progress_m, self.reference_progress_m))
        kin = EgoKinematics.of(np.array(self._yaw), np.array(self._speed), self.dt_s)
        scores = {
            "no_at_fault_collisions": float(no_at_fault_collisions(*self._at_fault)),
            "drivable_area_compliance": float(drivable_area_compliance(np.array(self._offroad))),
            "driving_direction_compliance": float(driving_direction_compliance(np.array(self._lane_progress),
                                                                               self.dt_s)),
            "ego_is_making_progress": float(ego_is_making_progress(progress_ratio)),
            "ego_progress_along_route": progress_ratio,
            "time_to_collision_within_bound": float(time_to_collision_within_bound(self.min_ttc_s)),
            "speed_limit_compliance": float(speed_limit_compliance(np.array(self._overspeed), self.dt_s)),
            "ego_is_comfortable": float(ego_is_comfortable(kin)),
        }
        assert set(scores) == set(SUB_METRICS)
        return scores

    def report(self, end_reason: str, target_km: float, km: float) -> dict[str, Any]:
        """Report fields: ``cls`` and ``cls_<sub-metric>``, the driving score and its parts, the infractions."""
        scores = self.sub_scores()
        counts = dict(self._carla)
        if end_reason == "max_steps":
            counts["route_timeout"] = 1
        completion = carla.route_completion(self.on_road_m / 1000.0, target_km)
        infractions = int(sum(counts.values()))
        events = list(self.events)
        if end_reason == "max_steps":
            events.append({"step": len(self._xy) - 1, "kind": "route_timeout", "detail": "step limit reached"})
        out: dict[str, Any] = {"cls": float(closed_loop_score(scores))}
        out.update({f"cls_{name}": value for name, value in scores.items()})
        out.update({
            "at_fault_collisions": int(self._at_fault.sum()),
            "min_ttc_s": min(self.min_ttc_s, 10.0),
            "route_progress_m": round(self.route_progress_m, 3),
            "reference_progress_m": round(self.reference_progress_m, 3),
            "driving_score": carla.driving_score(completion, counts),
            "route_completion": completion,
            "infraction_penalty": carla.infraction_penalty(counts),
            "infractions": infractions,
            "infractions_per_km": infractions / km if km > 1e-6 else 0.0,
            "infraction_counts": counts,
            "score_events": sorted(events, key=lambda ev: ev["step"]),
        })
        return out
