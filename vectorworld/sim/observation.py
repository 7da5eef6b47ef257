"""What a planner gets back each step, and what a recording stores per step.

Everything is in the global world frame, SI units. Agents are given as arrays (struct of arrays).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from vectorworld.scene import Agents, Crosswalk, Lane, Tile
from vectorworld.signals import SignalView
from vectorworld.sim.metrics import StepMetrics


class EndReason(str, Enum):
    """Why an episode ended (``NONE`` while it runs)."""

    NONE = "none"
    GOAL_REACHED = "goal_reached"
    COLLISION = "collision"
    MAX_STEPS = "max_steps"
    LOG_ENDED = "log_ended"
    NO_ROAD = "no_road"


@dataclass(frozen=True)
class Observation:
    """A planner's view after a step.

    ego_slot: slot of the ego in ``agents``; agents: the ego and every agent within the observation
    radius (slots compacted, all valid); lanes: lanes with a point within the radius; route: the ego's
    route lanes and their centreline (P, 2); step_metrics: what happened in the step that led here;
    signals: the traffic lights over the lanes in view; crosswalks: the crosswalks in view, with
    ``occupied_crosswalks`` the ids of those a pedestrian is on.
    """

    step: int
    sim_time_us: int
    agents: Agents
    ego_slot: int
    lanes: tuple[Lane, ...]
    route_lane_ids: tuple[int, ...]
    route_polyline: np.ndarray
    step_metrics: StepMetrics
    terminated: bool
    truncated: bool
    end_reason: EndReason
    km: float
    signals: SignalView = field(default_factory=SignalView.empty)
    crosswalks: tuple[Crosswalk, ...] = ()
    occupied_crosswalks: frozenset[int] = frozenset()

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


@dataclass(frozen=True)
class Frame:
    """One step of a recording: the full world state plus what changed in the world's map.

    new_tiles: tiles generated in this step, with their lanes in ``new_lanes``; removed_lane_ids: lanes
    retired this step; ego_plan: (T, 3) the ego's commanded trajectory (empty if none);
    policy_of: (C,) int8 per slot, 0 ego, 1 NPC policy, 2 log replay; signals: every traffic light of the
    known world at this step; crosswalks: every crosswalk of the known world, with ``occupied`` the ids of
    those a pedestrian is crossing.
    """

    step: int
    sim_time_us: int
    agents: Agents
    ego_slot: int
    policy_of: np.ndarray
    new_tiles: tuple[Tile, ...]
    new_lanes: tuple[Lane, ...]
    removed_lane_ids: tuple[int, ...]
    ego_plan: np.ndarray
    step_metrics: StepMetrics
    km: float
    tile_ms: float
    npc_policy_ms: float
    end_reason: EndReason
    signals: SignalView = field(default_factory=SignalView.empty)
    crosswalks: tuple[Crosswalk, ...] = ()
    occupied_crosswalks: frozenset[int] = frozenset()
