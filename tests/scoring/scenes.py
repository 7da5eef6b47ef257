"""Constructed scenes for the scoring tests: straight lanes and agents placed by hand, stepped by hand."""

from __future__ import annotations

import dataclasses

import numpy as np

from vectorworld.scene import Agents, AgentType, Lane, LaneGraph
from vectorworld.scoring import EpisodeScorer

DT = 0.1


def road(speed_limit: float = 12.0, reverse: bool = False) -> LaneGraph:
    """One 400 m lane along y = 0 (direction +x, or -x with ``reverse``)."""
    xs = np.linspace(-100.0, 300.0, 81)
    pts = np.stack([xs, np.zeros_like(xs)], -1)
    graph = LaneGraph()
    graph.add([Lane(1, pts[::-1] if reverse else pts, speed_limit_mps=speed_limit)])
    return graph


def agents(rows: list[tuple[float, float, float, float]], types: list[int] | None = None) -> Agents:
    """Agents (x, y, yaw, speed) with ids 0.. (the ego is row 0), 4.8 m x 2 m boxes."""
    a = Agents.empty(len(rows))
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][:] = np.arange(len(rows))
    arrays["valid"][:] = True
    arrays["agent_type"][:] = types if types is not None else [AgentType.VEHICLE] * len(rows)
    arrays["xy"][:] = [(r[0], r[1]) for r in rows]
    arrays["yaw"][:] = [r[2] for r in rows]
    arrays["speed"][:] = [r[3] for r in rows]
    arrays["length"][:], arrays["width"][:] = 4.8, 2.0
    return Agents(**arrays)


def drive(graph: LaneGraph, start: list[tuple[float, float, float, float]], steps: int,
          types: list[int] | None = None, accel: list[float] | None = None,
          offroad: bool = False, route: tuple[int, ...] = (1,)) -> tuple[EpisodeScorer, list[Agents]]:
    """Move every agent at constant heading (speed + accel * t) for ``steps`` steps and score the ego (row 0);
    the ego collides with the agents whose boxes overlap it (as the engine reports them)."""
    from vectorworld import geometry

    state = agents(start, types)
    accel_k = np.zeros(len(start)) if accel is None else np.array(accel)
    scorer = EpisodeScorer(DT)
    scorer.prime(state, 0, graph)
    frames = [state]
    for k in range(1, steps + 1):
        speed = np.maximum(state.speed + accel_k * DT, 0.0)
        xy = state.xy + DT * speed[:, None] * np.stack([np.cos(state.yaw), np.sin(state.yaw)], -1)
        state = state.with_state(xy, state.yaw, speed)
        overlap = geometry.pairwise_box_overlap(state.xy, state.yaw, state.length, state.width, state.valid)
        hits = tuple(int(state.id[j]) for j in np.nonzero(overlap[0])[0])
        scorer.step(k, state, 0, graph, route, hits, offroad)
        frames.append(state)
    return scorer, frames
