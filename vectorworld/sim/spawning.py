"""Placing generated agents into the simulation: free slots, clearance, ids and warm-start history."""

from __future__ import annotations

import dataclasses

import numpy as np

from vectorworld import DT_S, geometry
from vectorworld.generation.base import AgentSpawns
from vectorworld.generation.procedural.spawning import STOP_MARGIN_M
from vectorworld.scene import Agents, AgentType, Lane

EGO_CLEARANCE_M = 30.0
"""Agents are never spawned closer than this to the ego (no collision caused by spawning)."""
AGENT_CLEARANCE_M = 3.0
"""Spawns closer than this (centre to centre) to an agent already in the world are skipped."""
PEDESTRIAN_CLEARANCE_M = 1.0
"""The same between two pedestrians (people walk in groups)."""
SPAWN_BRAKE_MPS2 = 2.0
"""A moving spawn is slowed so that it can stop at this deceleration behind any agent ahead of it (within
``AHEAD_HALF_WIDTH_M`` of its heading line), with ``STOP_MARGIN_M`` to spare: spawning never forces hard braking."""
AHEAD_HALF_WIDTH_M = 2.0


class SpawnBook:
    """Agent ids (the ego is 0) and the generator's motion codes of spawned agents."""

    def __init__(self) -> None:
        self.next_id = 1
        self.motion_codes: dict[int, np.ndarray] = {}
        self.dropped = 0


def pseudo_history(xy: np.ndarray, yaw: float, speed: float, motion_code: np.ndarray,
                   steps: int) -> tuple[np.ndarray, np.ndarray]:
    """History (steps, 4) ending at the current state, walked back along the motion code path.

    motion_code: (6, 2) m, body frame, oldest first. Zeros (a static agent) or a zero speed give a
    standing history. Returns the history and its validity (steps,).
    """
    back = np.arange(steps)[::-1] * max(speed, 0.0) * DT_S
    code = np.asarray(motion_code, dtype=np.float64)
    if speed > 0.1 and np.abs(code).sum() > 1e-6:
        path = np.vstack([code, [[0.0, 0.0]]])
        s = geometry.polyline_lengths(path[::-1])
        local = geometry.interpolate_polyline(path[::-1], s, back)
        # Extrapolate straight back beyond the code's length.
        over = np.maximum(back - s[-1], 0.0)
        local = local - np.stack([over, np.zeros_like(over)], -1)
    else:
        local = np.stack([-back, np.zeros_like(back)], -1)
    pts = geometry.to_global(local, xy, yaw)
    d = np.gradient(pts, axis=0) if steps > 1 else np.zeros_like(pts)
    yaws = np.where(np.linalg.norm(d, axis=-1) > 1e-6, np.arctan2(d[:, 1], d[:, 0]), yaw)
    yaws[-1] = yaw
    hist = np.concatenate([pts, yaws[:, None], np.full((steps, 1), max(speed, 0.0))], -1)
    return hist, np.ones(steps, bool)


def place_spawns(agents: Agents, spawns: AgentSpawns, ego_xy: np.ndarray,
                 book: SpawnBook) -> tuple[Agents, list[tuple[int, int]]]:
    """Put spawns into free slots, skipping any too close to the ego or to an existing agent.

    Returns the new Agents and [(agent_id, lane_id)] of the agents placed.
    """
    if len(spawns) == 0:
        return agents, []
    arrays = {f.name: getattr(agents, f.name).copy() for f in dataclasses.fields(Agents)}
    free = list(np.nonzero(~agents.valid)[0])
    placed: list[tuple[int, int]] = []
    steps = agents.history.shape[1]
    for k in range(len(spawns)):
        xy = spawns.xy[k]
        if np.linalg.norm(xy - ego_xy) < EGO_CLEARANCE_M:
            continue
        live = arrays["valid"]
        if live.any():
            both_walk = (arrays["agent_type"][live] == AgentType.PEDESTRIAN) & (
                spawns.agent_type[k] == AgentType.PEDESTRIAN)
            clearance = np.where(both_walk, PEDESTRIAN_CLEARANCE_M, AGENT_CLEARANCE_M)
            if np.any(np.linalg.norm(arrays["xy"][live] - xy, axis=-1) < clearance):
                continue
        if not free:
            book.dropped += len(spawns) - k
            break
        slot = free.pop(0)
        agent_id = book.next_id
        book.next_id += 1
        speed = _stoppable_speed(arrays, xy, float(spawns.yaw[k]), float(spawns.speed[k]), float(spawns.length[k]))
        hist, hist_valid = pseudo_history(xy, float(spawns.yaw[k]), speed, spawns.motion_code[k], steps)
        arrays["id"][slot], arrays["valid"][slot] = agent_id, True
        arrays["agent_type"][slot] = spawns.agent_type[k]
        arrays["xy"][slot], arrays["yaw"][slot] = xy, spawns.yaw[k]
        arrays["speed"][slot] = speed
        arrays["length"][slot], arrays["width"][slot] = spawns.length[k], spawns.width[k]
        arrays["history"][slot], arrays["history_valid"][slot] = hist, hist_valid
        book.motion_codes[agent_id] = spawns.motion_code[k]
        placed.append((agent_id, int(spawns.lane_id[k])))
    return Agents(**arrays), placed


def _stoppable_speed(arrays: dict[str, np.ndarray], xy: np.ndarray, yaw: float, speed: float, length: float) -> float:
    """``speed`` lowered so that a spawn at pose (xy, yaw) can stop behind every agent ahead of it (``arrays``:
    the world's agents so far) at ``SPAWN_BRAKE_MPS2``, given how fast that one moves along our heading."""
    live = arrays["valid"]
    if speed <= 0.0 or not live.any():
        return speed
    rel = geometry.to_local(arrays["xy"][live], xy, yaw)
    gap = rel[:, 0] - (arrays["length"][live] + length) / 2.0 - STOP_MARGIN_M
    ahead = (rel[:, 0] > 0.0) & (np.abs(rel[:, 1]) < AHEAD_HALF_WIDTH_M)
    if not ahead.any():
        return speed
    along = np.maximum(arrays["speed"][live] * np.cos(arrays["yaw"][live] - yaw), 0.0)
    reachable = np.sqrt(along[ahead] ** 2 + 2.0 * SPAWN_BRAKE_MPS2 * np.maximum(gap[ahead], 0.0))
    return float(min(speed, reachable.min()))


def slow_for_lights(agents: Agents, slots: np.ndarray, red_ahead_m: np.ndarray) -> Agents:
    """``agents`` with the spawns at ``slots`` (N,) slowed so that they can stop at ``SPAWN_BRAKE_MPS2``,
    ``STOP_MARGIN_M`` before a red or yellow light ``red_ahead_m`` (N,) m ahead (inf: none); their warm-start
    history keeps its path at the new speed."""
    slots = np.asarray(slots, np.int64)
    gap = np.maximum(red_ahead_m - agents.length[slots] / 2.0 - STOP_MARGIN_M, 0.0)
    cap = np.sqrt(2.0 * SPAWN_BRAKE_MPS2 * gap)  # inf where no light holds them
    speed, history = agents.speed.copy(), agents.history.copy()
    speed[slots] = np.minimum(speed[slots], cap)
    history[slots, :, 3] = np.minimum(history[slots, :, 3], speed[slots, None])
    return dataclasses.replace(agents, speed=speed, history=history)


PASSING_CLEARANCE_M = 1.4
"""Lane followers need this much room either side of the lane centreline (half of a wide car plus a
margin): a parked car or standing pedestrian closer than this to a new lane is in its way. Cars parked
at the curb by the generator keep 1.45 m."""


def parked_in_the_way(agents: Agents, routed: set[int], lanes: list[Lane]) -> np.ndarray:
    """(C,) parked cars and pedestrians (agents off every route) that ``lanes`` (new lanes and those near
    them) run into.

    They are placed clear of their own tile's lanes; a later tile may lay a junction connector across the
    curb or sidewalk they stand on, and a sidewalk of a new tile may lie on a neighbouring tile's road.
    The road wins: they are removed.
    """
    out = np.zeros(agents.capacity, bool)
    if not lanes:
        return out
    parked = agents.valid & np.array([int(i) not in routed for i in agents.id])
    slots = np.nonzero(parked)[0]
    if len(slots) == 0:
        return out
    a = np.concatenate([lane.points[:-1] for lane in lanes])
    b = np.concatenate([lane.points[1:] for lane in lanes])
    # Candidate (agent, segment) pairs: the segment's circle reaches the agent's circle plus the clearance.
    mid, half = 0.5 * (a + b), 0.5 * np.linalg.norm(b - a, axis=-1)
    reach = half[None] + 0.5 * np.hypot(agents.length[slots], agents.width[slots])[:, None] + PASSING_CLEARANCE_M
    delta = agents.xy[slots][:, None] - mid[None]
    rows, segs = np.nonzero(np.einsum("smk,smk->sm", delta, delta) < reach * reach)
    if len(rows) == 0:
        return out
    corners = geometry.box_corners(agents.xy[slots], agents.yaw[slots], agents.length[slots], agents.width[slots])
    points = np.concatenate([corners, agents.xy[slots][:, None]], 1)[rows]  # (Q, 5, 2)
    ab = (b - a)[segs][:, None]
    t = np.clip(np.einsum("qpk,qpk->qp", points - a[segs][:, None], ab)
                / np.maximum(np.einsum("qpk,qpk->qp", ab, ab), 1e-12), 0.0, 1.0)
    dist = np.linalg.norm(points - (a[segs][:, None] + t[..., None] * ab), axis=-1)
    out[slots[np.unique(rows[(dist < PASSING_CLEARANCE_M).any(1)])]] = True
    return out
