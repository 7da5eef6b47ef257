"""Small synthetic frame sequences with known geometry, for pixel tests of the debugger.

World: two straight lanes along +x (centrelines y = 0 and y = 4 m, 3.5 m wide) from x = -50 to 250 m,
added in the first frame inside one 64 m tile; a second tile and a third lane (a connector going up at
x = 100 m) arrive at ``tile_step``. The ego (slot 0, id 0) drives along y = 0 at 10 m/s from x = 0; one
NPC vehicle (slot 1, id 7) sits parked at (30, 4) (removed as stuck at ``stuck_step``, if given); a pedestrian
(slot 2, id 9) stands at (20, -6).
"""

from __future__ import annotations

import numpy as np

from vectorworld.scene import Agents, AgentType, Lane, LaneType, Tile
from vectorworld.sim.metrics import StepMetrics, StuckRemoval
from vectorworld.sim.observation import EndReason, Frame

EGO_SPEED_MPS = 10.0
NPC_ID, PED_ID = 7, 9
NPC_XY = (30.0, 4.0)
PED_XY = (20.0, -6.0)


def lanes() -> tuple[Lane, Lane]:
    xs = np.linspace(-50.0, 250.0, 31)
    a = Lane(1, np.stack([xs, np.zeros_like(xs)], -1), left_neighbors=(2,), tile_id=0)
    b = Lane(2, np.stack([xs, np.full_like(xs, 4.0)], -1), right_neighbors=(1,), tile_id=0)
    return a, b


def connector() -> Lane:
    ys = np.linspace(4.0, 60.0, 8)
    return Lane(3, np.stack([np.full_like(ys, 100.0), ys], -1), lane_type=LaneType.CONNECTOR, tile_id=1)


def agents_at(step: int, npc_gone: bool = False) -> Agents:
    a = Agents.empty(8)
    ids, valid, types = a.id.copy(), a.valid.copy(), a.agent_type.copy()
    xy, yaw, speed, length, width = a.xy.copy(), a.yaw.copy(), a.speed.copy(), a.length.copy(), a.width.copy()
    ids[:3], valid[:3] = (0, NPC_ID, PED_ID), True
    if npc_gone:
        ids[1], valid[1] = -1, False
    types[:3] = (AgentType.VEHICLE, AgentType.VEHICLE, AgentType.PEDESTRIAN)
    xy[0] = (EGO_SPEED_MPS * 0.1 * step, 0.0)
    xy[1], xy[2] = NPC_XY, PED_XY
    yaw[2] = np.pi / 2
    speed[0] = EGO_SPEED_MPS
    length[:3], width[:3] = (4.8, 4.6, 0.8), (2.0, 2.0, 0.8)
    return Agents(ids, valid, types, xy, yaw, speed, length, width, a.history, a.history_valid)


def make_frames(num_steps: int = 60, tile_step: int = 20, collision_step: int | None = 40,
                offroad_step: int | None = 50, remove_step: int | None = None,
                stuck_step: int | None = None) -> list[Frame]:
    """Frames 0..num_steps-1; events at the given steps; lane 3 removed at ``remove_step``; the NPC removed as
    stuck (cause ``queued``) at the end of ``stuck_step``."""
    a, b = lanes()
    frames = []
    for step in range(num_steps):
        new_tiles, new_lanes, removed = (), (), ()
        if step == 0:
            new_tiles = (Tile(0, np.array([0.0, 0.0]), 0.0, 0, "test", (1, 2), 12.0),)
            new_lanes = (a, b)
        if step == tile_step:
            new_tiles = (Tile(1, np.array([100.0, 30.0]), np.pi / 2, 1, "test", (3,), 20.0),)
            new_lanes = (connector(),)
        if step == remove_step:
            removed = (3,)
        metrics = StepMetrics(ego_collided_ids=(NPC_ID,) if step == collision_step else (),
                              ego_offroad=step == offroad_step, ego_distance_m=1.0,
                              stuck_removals=(StuckRemoval(NPC_ID, "queued", *NPC_XY),) if step == stuck_step else ())
        plan = np.stack([np.arange(1, 11) * 1.0 + step, np.zeros(10), np.zeros(10)], -1)
        policy = np.array([0, 1, 1, -1, -1, -1, -1, -1], np.int8)
        gone = stuck_step is not None and step >= stuck_step
        frames.append(Frame(step=step, sim_time_us=step * 100_000, agents=agents_at(step, gone), ego_slot=0,
                            policy_of=policy, new_tiles=new_tiles, new_lanes=new_lanes, removed_lane_ids=removed,
                            ego_plan=plan, step_metrics=metrics, km=step / 1000.0, tile_ms=0.0,
                            npc_policy_ms=0.5, end_reason=EndReason.NONE))
    return frames
