"""Small synthetic scenes for DeltaSim tests, training and benchmarks: a curved multi-lane road with
traffic, and a closed loop that drives it without the streaming world.

Independent of the streaming world, so tests and ``tools/bench_deltasim.py`` can build a realistic
:class:`PolicyInput` (lane graph with successor and neighbour edges, routes, agents with 1 s of
consistent history) in milliseconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from policies.base import Policy, PolicyInput
from vectorworld import geometry
from vectorworld.scene import HISTORY_STEPS, Agents, AgentType, Lane, LaneGraph
from vectorworld.vehicle.dynamics import apply_deltas
from vectorworld.world.routes import RouteBook


def road_graph(num_lanes: int = 3, segments: int = 6, segment_m: float = 40.0, lane_width_m: float = 3.5,
               curvature: float = 0.004, speed_limit_mps: float = 13.9) -> LaneGraph:
    """Parallel lanes along a gentle arc, cut into ``segments`` pieces. Lane id = 100 * lane + segment."""
    graph = LaneGraph()
    total = segments * segment_m
    s = np.linspace(0.0, total, segments * 8 + 1)
    yaw = curvature * s
    centre = np.stack([np.cumsum(np.r_[0, np.cos(yaw[:-1]) * np.diff(s)]),
                       np.cumsum(np.r_[0, np.sin(yaw[:-1]) * np.diff(s)])], -1)
    normal = np.stack([-np.sin(yaw), np.cos(yaw)], -1)
    lanes = []
    for lane in range(num_lanes):
        offset = (lane - (num_lanes - 1) / 2.0) * lane_width_m
        pts = centre + offset * normal
        for seg in range(segments):
            piece = pts[seg * 8:(seg + 1) * 8 + 1]
            lid = 100 * lane + seg
            lanes.append(Lane(
                id=lid, points=piece, width_m=lane_width_m, speed_limit_mps=speed_limit_mps,
                successors=(lid + 1,) if seg + 1 < segments else (),
                predecessors=(lid - 1,) if seg > 0 else (),
                left_neighbors=(lid + 100,) if lane + 1 < num_lanes else (),
                right_neighbors=(lid - 100,) if lane > 0 else ()))
    graph.add(lanes)
    return graph


def synthetic_input(num_agents: int, rng: np.random.Generator, num_lanes: int = 3, capacity: int | None = None,
                    segments: int = 6, curvature: float = 0.004, speed_limit_mps: float = 13.9,
                    safe_start: bool = False) -> PolicyInput:
    """A PolicyInput with ``num_agents`` NPCs (+ the ego in slot 0) driving along ``road_graph`` lanes.

    Agents sit on lane centrelines with small offsets, 9-22 m apart, speeds 0-14 m/s (with ``safe_start``
    capped so each can stop behind its leader at 3 m/s^2: no collision is unavoidable at the start), and a
    constant-speed history of 1 s; the routes follow the lane to the end of the road.
    """
    graph = road_graph(num_lanes=num_lanes, segments=segments, curvature=curvature,
                       speed_limit_mps=speed_limit_mps)
    total = num_agents + 1
    capacity = capacity or total
    agents = Agents.empty(capacity)
    lane_idx = rng.integers(0, num_lanes, total)
    seg_m = 40.0
    cursor = rng.uniform(0.0, 6.0, num_lanes)  # m along each lane where the next agent goes
    xy = np.zeros((total, 2))
    yaw = np.zeros(total)
    routes: dict[int, tuple[int, ...]] = {}
    lane_of = np.zeros(total, np.int64)
    for i in range(total):
        lane = int(lane_idx[i])
        cursor[lane] += rng.uniform(9.0, 22.0)
        s_along = float(cursor[lane])
        seg = min(int(s_along // seg_m), segments - 1)
        lid = 100 * lane + seg
        pts = graph[lid].points
        local_s = s_along - seg * seg_m
        arc = geometry.polyline_lengths(pts)
        p = geometry.interpolate_polyline(pts, arc, np.array([local_s]))[0]
        head = geometry.polyline_headings(pts)
        yaw[i] = float(np.interp(local_s, arc, head)) + rng.normal(0, 0.02)
        xy[i] = p + rng.normal(0, 0.2, 2)
        lane_of[i] = lid
        routes[i + 1] = tuple(range(lid, 100 * lane + segments))
    speed = rng.uniform(0.0, min(14.0, speed_limit_mps), total)
    speed[rng.random(total) < 0.15] = 0.0
    along = np.zeros(total)
    for i in range(total if safe_start else 0):
        along[i] = float(lane_of[i] % 100) * seg_m + float(geometry.project_to_polyline(
            xy[i][None], graph[int(lane_of[i])].points)[0][0])
    for i in range(total if safe_start else 0):
        ahead = (lane_idx == lane_idx[i]) & (along > along[i])
        if ahead.any():
            gap = float(along[ahead].min() - along[i]) - 6.0
            speed[i] = min(speed[i], float(np.sqrt(2.0 * 3.0 * max(gap, 0.0))))
    types = np.where(rng.random(total) < 0.1, AgentType.CYCLIST, AgentType.VEHICLE).astype(np.int8)
    types[0] = AgentType.VEHICLE
    back = (np.arange(HISTORY_STEPS) - (HISTORY_STEPS - 1)) * 0.1  # -1.0 ... 0 s
    hist_xy = xy[:, None] + back[None, :, None] * (speed[:, None, None] * np.stack(
        [np.cos(yaw), np.sin(yaw)], -1)[:, None])
    history = np.concatenate([hist_xy, np.repeat(yaw[:, None, None], HISTORY_STEPS, 1),
                              np.repeat(speed[:, None, None], HISTORY_STEPS, 1)], -1)
    sl = slice(0, total)
    agents.id[sl] = np.arange(1, total + 1)
    agents.valid[sl] = True
    agents.agent_type[sl] = types
    agents.xy[sl] = xy
    agents.yaw[sl] = yaw
    agents.speed[sl] = speed
    agents.length[sl] = np.where(types == AgentType.VEHICLE, rng.uniform(4.2, 5.2, total), 1.8)
    agents.width[sl] = np.where(types == AgentType.VEHICLE, rng.uniform(1.8, 2.2, total), 0.7)
    agents.history[sl] = history
    agents.history_valid[sl] = True
    controlled = np.zeros(capacity, bool)
    controlled[1:total] = True
    return PolicyInput(agents=dataclasses.replace(agents), controlled=controlled, graph=graph, routes=routes,
                       ego_slot=0, step=0)


def drive(inp: PolicyInput, policy: Policy, rng: np.random.Generator, steps: int,
          action_noise: tuple[float, float, float] | None = None,
          route_rng: np.random.Generator | None = None) -> Iterator[tuple[PolicyInput, np.ndarray, Agents]]:
    """Closed loop without the streaming world: ``policy`` moves every valid agent of ``inp`` for
    ``steps`` steps through the engine's clipping (:func:`vectorworld.vehicle.dynamics.apply_deltas`); routes
    advance and extend as in a Session.

    Yields (input of the step, the policy's deltas (C, 3), agents after the step). ``action_noise``
    (m, m, rad std per step) perturbs the executed motion of moving agents.
    """
    agents = inp.agents
    book = RouteBook()
    book.routes = {k: list(v) for k, v in inp.routes.items()}
    route_rng = route_rng or rng
    policy.reset()
    for step in range(steps):
        cur = dataclasses.replace(inp, agents=agents, controlled=agents.valid.copy(), routes=book.routes,
                                  step=step)
        deltas = policy.act(cur, rng)
        executed = deltas
        if action_noise is not None:
            moving = (agents.speed > 0.5)[:, None]
            executed = deltas + moving * rng.normal(0.0, 1.0, deltas.shape) * np.asarray(action_noise)
        xy, yaw, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, executed, cur.dt_s)
        nxt = agents.with_state(xy, yaw, speed)
        yield cur, deltas, nxt
        slots = np.nonzero(agents.valid)[0]
        book.advance(inp.graph, agents.id[slots], nxt.xy[slots], nxt.yaw[slots])
        for agent_id in agents.id[slots].tolist():
            book.extend(inp.graph, route_rng, int(agent_id))
        agents = nxt
