"""A minimal deterministic generator for engine tests: a straight two-lane one-way road along +x.

Every tile continues the out ports straight to 40 m past the tile centre and spawns one car per lane.
"""

from __future__ import annotations

import numpy as np

from vectorworld.generation.base import AgentSpawns, TileContent, TileGenerator, TileRequest, register_generator
from vectorworld.scene import Lane

LANE_OFFSETS_M = (-1.75, -5.25)


@register_generator("test-straight")
class StraightGenerator(TileGenerator):
    name = "test-straight"

    def __init__(self, spawn_gap_m: float = 30.0) -> None:
        self.spawn_gap_m = spawn_gap_m

    def generate(self, request: TileRequest) -> TileContent:
        frame = request.frame
        outs = [p for p in request.ports if p.is_out]
        if outs:
            starts = [(p.lane_id, p.xy) for p in outs]
        else:
            starts = [(None, frame.to_global(np.array([-32.0, off]))) for off in LANE_OFFSETS_M]
        lanes, links, spawn_xy, spawn_lane = [], [], [], []
        new_ids = [request.lane_ids() for _ in starts]
        for k, ((prev, start), lane_id) in enumerate(zip(starts, new_ids, strict=True)):
            end_x = frame.to_local(start[None])[0, 0]
            xs = np.linspace(0.0, 40.0 - end_x, 9)
            pts = start + np.stack([xs, np.zeros_like(xs)], -1) @ np.array(
                [[np.cos(frame.yaw), np.sin(frame.yaw)], [-np.sin(frame.yaw), np.cos(frame.yaw)]])
            left = tuple(new_ids[j] for j in range(len(new_ids)) if j == k - 1)
            right = tuple(new_ids[j] for j in range(len(new_ids)) if j == k + 1)
            lanes.append(Lane(lane_id, pts, speed_limit_mps=12.0, left_neighbors=left, right_neighbors=right))
            if prev is not None:
                links.append((prev, lane_id))
            if request.spawn_agents and xs[-1] > 20.0:
                spawn_xy.append(pts[len(pts) // 2])
                spawn_lane.append(lane_id)
        n = len(spawn_xy)
        agents = AgentSpawns(np.array(spawn_xy).reshape(n, 2), np.full(n, frame.yaw), np.full(n, 8.0),
                             np.full(n, 4.6), np.full(n, 2.0), np.ones(n, np.int8),
                             np.array(spawn_lane, np.int64), np.zeros((n, 6, 2)))
        return TileContent(tuple(lanes), tuple(links), agents)
