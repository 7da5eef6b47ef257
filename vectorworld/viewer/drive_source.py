"""Drive mode: a local :class:`~vectorworld.sim.session.Session` whose ego follows the keyboard.

Arrow keys become a :class:`~vectorworld.vehicle.commands.ControlCommand` (up: accelerate, down: brake,
left/right: steer); with the autopilot on, the session's built-in planner drives. Every step's
``Session.frame()`` (plus the ego's route, which frames do not carry) goes into the frame store.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from vectorworld.sim.config import SessionConfig
from vectorworld.sim.observation import Frame
from vectorworld.sim.session import Session
from vectorworld.vehicle.commands import ControlCommand
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.world.routes import build_path

ACCEL_MPS2 = 2.0
BRAKE_MPS2 = -5.0
COAST_DRAG_MPS2 = -0.3
STEER_RAD = 0.25


@dataclass(frozen=True)
class DriveKeys:
    """Which driving keys are held."""

    up: bool = False
    down: bool = False
    left: bool = False
    right: bool = False


def command_from_keys(keys: DriveKeys, speed_mps: float) -> ControlCommand:
    """Up accelerates, down brakes (never into reverse), left/right steer; no key: gentle coasting.

    Steering is reduced at speed so that keyboard driving stays within comfortable lateral acceleration.
    """
    if keys.up and not keys.down:
        accel = ACCEL_MPS2
    elif keys.down:
        accel = BRAKE_MPS2 if speed_mps > 0.05 else 0.0
    else:
        accel = COAST_DRAG_MPS2 if speed_mps > 0.05 else 0.0
    steer = STEER_RAD * (int(keys.left) - int(keys.right)) / (1.0 + max(speed_mps, 0.0) / 8.0)
    return ControlCommand(accel_mps2=accel, steering_rad=steer)


class DriveSource:
    """A local session stepped on demand; episodes do not end on collision so the driver can carry on."""

    def __init__(self, config: SessionConfig, store: FrameStore | None = None) -> None:
        self.session = Session(config)
        self.store = store if store is not None else FrameStore()
        self.autopilot = False
        self.session.reset()
        self._record()

    @property
    def title(self) -> str:
        c = self.session.config
        who = "autopilot" if self.autopilot else "keyboard"
        return f"drive ({who})  seed {c.seed}  {c.generator} / {c.npc_policy}"

    @property
    def done(self) -> bool:
        return self.session.done

    def step(self, keys: DriveKeys) -> None:
        """One 0.1 s step with the keyboard's command (or the built-in planner on autopilot)."""
        if self.session.done:
            return
        a = self.session.agents
        speed = float(a.speed[self.session.ego_slot])
        command = None if self.autopilot else command_from_keys(keys, speed)
        self.session.step(command)
        self._record()

    def _record(self) -> None:
        self.store.append(self._synced(self.session.frame()))
        route = tuple(i for i in self.session.routes.get(0) if i in self.session.world.graph)
        if route:
            self.store.routes[self.store.last_index] = build_path(self.session.world.graph, route).points
        else:
            self.store.routes[self.store.last_index] = np.zeros((0, 2))

    def _synced(self, frame: Frame) -> Frame:
        """The frame with its map delta completed from the session's lane graph.

        Frames carry only what the session reported as new or removed; lanes that entered the graph
        another way (a log's real map at reset) are added here, so the drawn map is always the world's.
        """
        graph = self.session.world.graph.lanes
        shown = set(self.store.map_at(self.store.last_index).lanes) if len(self.store) else set()
        shown |= {lane.id for lane in frame.new_lanes}
        shown -= set(frame.removed_lane_ids)
        missing = tuple(graph[i] for i in sorted(set(graph) - shown))
        stale = tuple(sorted(shown - set(graph)))
        if not missing and not stale:
            return frame
        return dataclasses.replace(frame, new_lanes=frame.new_lanes + missing,
                                   removed_lane_ids=frame.removed_lane_ids + stale)
