"""Rollout metrics (DESIGN.md section 7), accumulated step by step and summarised per episode.

Every metric is computed from consecutive agent states; see README "Metrics" for the definitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vectorworld import geometry
from vectorworld.scene import Agents, AgentType
from vectorworld.world.drivable import DrivableGrid

# Kinematic infeasibility thresholds for NPC vehicles.
INFEASIBLE_ACCEL_MPS2 = 6.0
INFEASIBLE_LAT_ACCEL_MPS2 = 8.0
INFEASIBLE_YAW_RATE_RPS = 1.5
INFEASIBLE_MIN_SPEED_MPS = 1.0
INFEASIBLE_BACKWARD_M = 0.05
EGO_STOPPED_MPS = 0.5
"""The ego counts as stopped in a step that ends below this speed (``ego_stopped_rate``)."""

# Ego comfort bounds (nuPlan).
COMFORT_ACCEL_RANGE_MPS2 = (-4.05, 2.40)
COMFORT_LAT_ACCEL_MPS2 = 4.89
COMFORT_YAW_RATE_RPS = 0.95
COMFORT_JERK_MPS3 = 4.13


@dataclass(frozen=True)
class StuckRemoval:
    """An NPC the Session removed as stuck in a step (:meth:`~vectorworld.sim.session.Session._stuck`): its
    id, why (one of :data:`vectorworld.sim.stuck_causes.CAUSES`) and where it stood (global frame, m, rad)."""

    agent_id: int
    cause: str
    x_m: float
    y_m: float
    yaw_rad: float = 0.0


@dataclass(frozen=True)
class StepMetrics:
    """What happened in one step: ids the ego touched, whether it was off-road, NPC events."""

    ego_collided_ids: tuple[int, ...] = ()
    ego_offroad: bool = False
    npc_collision_events: int = 0
    npc_offroad_events: int = 0
    npc_infeasible_steps: int = 0
    npc_vehicle_steps: int = 0
    ego_comfortable: bool = True
    ego_distance_m: float = 0.0
    score_events: tuple[str, ...] = ()
    """Kinds of the planner-score infractions that started in this step (vectorworld.scoring)."""
    ego_stopped: bool = False
    ego_red_light: bool = False
    """The ego entered a signalised lane on red in this step (:mod:`vectorworld.sim.red_lights`)."""
    stuck_removals: tuple[StuckRemoval, ...] = ()
    """NPCs removed as stuck at the end of this step (counted in the report's ``npc_removed_stuck``)."""


@dataclass
class EpisodeMetrics:
    """Accumulates StepMetrics into the per-episode report."""

    steps: int = 0
    distance_m: float = 0.0
    ego_collided_ids: set[int] = field(default_factory=set)
    ego_offroad_steps: int = 0
    npc_collision_events: int = 0
    npc_offroad_events: int = 0
    npc_infeasible_steps: int = 0
    npc_vehicle_steps: int = 0
    comfortable_steps: int = 0
    ego_stopped_steps: int = 0
    red_light_infractions: int = 0
    tile_ms: list[float] = field(default_factory=list)
    npc_policy_ms: list[float] = field(default_factory=list)

    def add(self, m: StepMetrics) -> None:
        self.steps += 1
        self.distance_m += m.ego_distance_m
        self.ego_collided_ids.update(m.ego_collided_ids)
        self.ego_offroad_steps += int(m.ego_offroad)
        self.npc_collision_events += m.npc_collision_events
        self.npc_offroad_events += m.npc_offroad_events
        self.npc_infeasible_steps += m.npc_infeasible_steps
        self.npc_vehicle_steps += m.npc_vehicle_steps
        self.comfortable_steps += int(m.ego_comfortable)
        self.ego_stopped_steps += int(m.ego_stopped)
        self.red_light_infractions += int(m.ego_red_light)

    def summary(self) -> dict[str, float | int]:
        km = self.distance_m / 1000.0
        per_km = 1.0 / km if km > 1e-6 else 0.0
        tile = np.array(self.tile_ms) if self.tile_ms else np.zeros(1)
        return {
            "km": round(km, 6),
            "steps": self.steps,
            "ego_collisions": len(self.ego_collided_ids),
            "ego_offroad_rate": self.ego_offroad_steps / max(self.steps, 1),
            "npc_collisions_per_km": self.npc_collision_events * per_km,
            "npc_offroad_per_km": self.npc_offroad_events * per_km,
            "kinematic_infeasibility_rate": self.npc_infeasible_steps / max(self.npc_vehicle_steps, 1),
            "ego_comfort_rate": self.comfortable_steps / max(self.steps, 1),
            "ego_stopped_rate": self.ego_stopped_steps / max(self.steps, 1),
            "red_light_infractions": self.red_light_infractions,
            "tile_ms_p50": float(np.percentile(tile, 50)),
            "tile_ms_p95": float(np.percentile(tile, 95)),
            "npc_policy_ms": float(np.mean(self.npc_policy_ms)) if self.npc_policy_ms else 0.0,
        }


class MetricTracker:
    """Computes StepMetrics from the agents before and after a step (pairs and events need memory)."""

    def __init__(self, capacity: int, dt_s: float) -> None:
        self.dt_s = dt_s
        self._npc_contact = np.zeros((capacity, capacity), bool)
        self._contacted: set[tuple[int, int]] = set()  # NPC id pairs that touched this episode
        self._npc_offroad = np.zeros(capacity, bool)
        self._seen = np.zeros(capacity, bool)  # slots whose state the previous step evaluated
        # Answers kept while the boxes (and the drivable area) stay as they were: most of a scene stands
        # still in any one step. Boxes as (x, y, yaw, length, width); NaN for a forgotten slot.
        self._box = np.full((capacity, 5), np.nan)
        self._overlap = np.zeros((capacity, capacity), bool)
        self._offroad = np.zeros(capacity, bool)
        self._offroad_box = np.full((capacity, 5), np.nan)
        self._offroad_version = -1
        self._ego_accel: float | None = None

    def reset_slots(self, slots: np.ndarray) -> None:
        """Forget pair/event memory of slots that were freed or re-used."""
        self._npc_contact[slots] = False
        self._npc_contact[:, slots] = False
        self._npc_offroad[slots] = False
        self._seen[slots] = False
        self._offroad_box[slots] = np.nan
        self._box[slots] = np.nan

    def prime(self, agents: Agents, ego_slot: int, drivable: DrivableGrid) -> None:
        """Remember the initial contacts and off-road agents (e.g. parked cars in a log) so that only
        events that happen during the episode count."""
        self.step(agents, agents, ego_slot, np.zeros(agents.capacity, bool), drivable)
        self._ego_accel = None

    def step(self, before: Agents, after: Agents, ego_slot: int, moved: np.ndarray,
             drivable: DrivableGrid) -> StepMetrics:
        """``moved``: (C,) bool, agents that existed before the step and still exist (kinematics apply).

        Contact and off-road events count transitions seen by two consecutive steps: an agent spawned
        since the previous step (a parked car at the curb, a tile's traffic) starts with its state
        remembered, so spawning is never counted as a policy's event. An off-road event needs the agent
        to drive off: a standing car whose lane was retired behind the ego does not count.
        """
        valid = after.valid
        seen = self._seen & valid
        self._seen = valid.copy()
        box = np.column_stack([after.xy, after.yaw, after.length, after.width])
        overlap = self._overlaps(after, box)
        ego_hits = tuple(int(after.id[j]) for j in np.nonzero(overlap[ego_slot])[0])
        npc = valid.copy()
        npc[ego_slot] = False
        npc_pairs = overlap & npc[:, None] & npc[None]
        new_contacts = self._new_contact_pairs(after, np.triu(npc_pairs & ~self._npc_contact & seen[:, None]
                                                               & seen[None]))
        self._npc_contact = npc_pairs
        vehicles = valid & (after.agent_type == AgentType.VEHICLE)
        offroad = self._offroad_of(after, box, vehicles, drivable)
        npc_veh = vehicles & npc
        driving = moved & (np.linalg.norm(after.xy - before.xy, axis=-1) > 0.01)
        new_offroad = int((offroad & ~self._npc_offroad & npc_veh & driving & seen).sum())
        self._npc_offroad = offroad & npc_veh
        infeasible, counted = self._infeasible(before, after, npc_veh & moved)
        ego_dist = float(np.linalg.norm(after.xy[ego_slot] - before.xy[ego_slot]))
        return StepMetrics(ego_hits, bool(offroad[ego_slot]), new_contacts, new_offroad, infeasible,
                           counted, self._comfortable(before, after, ego_slot), ego_dist,
                           ego_stopped=bool(abs(after.speed[ego_slot]) < EGO_STOPPED_MPS))

    def _new_contact_pairs(self, after: Agents, touching: np.ndarray) -> int:
        """How many of the NPC pairs ``touching`` (C, C) for the first time this step never touched before:
        one collision is one event even when the two boxes part and touch again (two cars standing
        jammed together, jittering)."""
        count = 0
        for i, j in np.argwhere(touching).tolist():
            a, b = int(after.id[i]), int(after.id[j])
            pair = (a, b) if a < b else (b, a)
            if pair not in self._contacted:
                self._contacted.add(pair)
                count += 1
        return count

    def _overlaps(self, after: Agents, box: np.ndarray) -> np.ndarray:
        """(C, C) bool: overlapping valid boxes. Only pairs with a box that changed are tested again."""
        valid = after.valid
        changed = np.any(box != self._box, 1) | ~valid  # NaN (forgotten slot) compares unequal
        fresh = geometry.pairwise_box_overlap(after.xy, after.yaw, after.length, after.width, valid, changed)
        kept = self._overlap & ~changed[:, None] & ~changed[None]
        self._overlap = kept | fresh
        self._box = np.where(valid[:, None], box, np.nan)
        return self._overlap

    def _offroad_of(self, after: Agents, box: np.ndarray, vehicles: np.ndarray, drivable: DrivableGrid) -> np.ndarray:
        """(C,) bool: vehicles with a box corner off the drivable area. Only boxes that moved (or all, when the
        drivable area changed) are tested again."""
        stale = vehicles & np.any(box != self._offroad_box, 1)
        if drivable.version != self._offroad_version:
            stale = vehicles.copy()
            self._offroad_version = drivable.version
        if stale.any():
            corners = geometry.box_corners(after.xy[stale], after.yaw[stale], after.length[stale], after.width[stale])
            self._offroad[stale] = ~drivable.contains(corners).all(-1)
            self._offroad_box[stale] = box[stale]
        return self._offroad & vehicles

    def _infeasible(self, before: Agents, after: Agents, mask: np.ndarray) -> tuple[int, int]:
        if not mask.any():
            return 0, 0
        dt = self.dt_s
        local = geometry.to_local(after.xy[mask], before.xy[mask], before.yaw[mask])  # row-wise frames
        speed_now = after.speed[mask]
        speed_before = before.speed[mask]
        a_long = (speed_now - speed_before) / dt
        yaw_rate = geometry.wrap_angle(after.yaw[mask] - before.yaw[mask]) / dt
        a_lat = np.abs(speed_now * yaw_rate)
        moving = np.maximum(np.abs(speed_now), np.abs(speed_before)) > INFEASIBLE_MIN_SPEED_MPS
        bad = ((np.abs(a_long) > INFEASIBLE_ACCEL_MPS2) | (a_lat > INFEASIBLE_LAT_ACCEL_MPS2)
               | (moving & (np.abs(yaw_rate) > INFEASIBLE_YAW_RATE_RPS))
               | (local[:, 0] < -INFEASIBLE_BACKWARD_M))
        return int(bad.sum()), int(mask.sum())

    def _comfortable(self, before: Agents, after: Agents, ego: int) -> bool:
        dt = self.dt_s
        accel = (after.speed[ego] - before.speed[ego]) / dt
        yaw_rate = float(geometry.wrap_angle(after.yaw[ego] - before.yaw[ego])) / dt
        jerk = 0.0 if self._ego_accel is None else (accel - self._ego_accel) / dt
        self._ego_accel = accel
        lo, hi = COMFORT_ACCEL_RANGE_MPS2
        return bool(lo <= accel <= hi and abs(after.speed[ego] * yaw_rate) <= COMFORT_LAT_ACCEL_MPS2
                    and abs(yaw_rate) <= COMFORT_YAW_RATE_RPS and abs(jerk) <= COMFORT_JERK_MPS3)
