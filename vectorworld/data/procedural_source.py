"""Scenarios from the simulator itself: closed-loop rollouts in procedural worlds, logged like real data.

Each scenario is one Session run with rule-based traffic (IDM with per-scenario randomised driver
parameters), recorded at 10 Hz into the same :class:`Scenario` type the WOMD and nuPlan readers
produce, so the dataset builder, the world model and the NPC policy train on it unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from vectorworld import DT_S
from vectorworld.data.scenario import RoadMap, Scenario, ScenarioSource, Tracks, TrafficSignals
from vectorworld.scene import Lane, LaneGraph


def procedural_scenarios(count: int, seed: int = 0, num_steps: int = 91, current_index: int = 10,
                         warmup_steps: int = 30, generator: str = "procedural") -> Iterator[Scenario]:
    """Yield ``count`` scenarios of ``num_steps`` steps; scenario i uses seed ``seed + i``.

    ``warmup_steps`` are simulated first (not logged) so traffic has settled when the log starts.
    """
    for i in range(count):
        yield procedural_scenario(seed + i, num_steps, current_index, warmup_steps, generator)


def procedural_scenario(seed: int, num_steps: int = 91, current_index: int = 10, warmup_steps: int = 30,
                        generator: str = "procedural") -> Scenario:
    """Run one Session and log every agent it ever holds over ``num_steps`` steps."""
    from policies.idm import IdmParams, IdmPolicy
    from vectorworld.sim.session import Session, SessionConfig

    rng = np.random.default_rng(seed)
    params = IdmParams(time_headway_s=float(rng.uniform(1.0, 2.0)), min_gap_m=float(rng.uniform(2.0, 3.5)),
                       max_accel_mps2=float(rng.uniform(1.2, 2.5)), speed_factor=float(rng.uniform(0.8, 1.1)),
                       max_lat_accel_mps2=float(rng.uniform(1.5, 2.8)))
    config = SessionConfig(seed=seed, target_km=100.0, generator=generator,
                           max_steps=warmup_steps + num_steps + 5, terminate_on_collision=False)
    session = Session(config, npc_policy=IdmPolicy(params))
    session.reset()
    for _ in range(warmup_steps):
        session.step()
    lanes: dict[int, Lane] = dict(session.world.graph.lanes)
    states: list[dict[int, tuple[np.ndarray, ...]]] = []
    for k in range(num_steps):
        if k > 0:
            session.step()
        lanes.update(session.world.graph.lanes)
        a = session.agents
        states.append({int(a.id[s]): (a.xy[s].copy(), float(a.yaw[s]), float(a.speed[s]), int(a.agent_type[s]),
                                      float(a.length[s]), float(a.width[s]))
                       for s in np.nonzero(a.valid)[0]})
    ids = sorted(set().union(*[set(s) for s in states]))
    tracks = _tracks(ids, states)
    graph = LaneGraph()
    graph.add([dataclasses.replace(lane, successors=tuple(i for i in lane.successors if i in lanes),
                                   predecessors=tuple(i for i in lane.predecessors if i in lanes),
                                   left_neighbors=tuple(i for i in lane.left_neighbors if i in lanes),
                                   right_neighbors=tuple(i for i in lane.right_neighbors if i in lanes))
               for lane in lanes.values()])
    return Scenario(scenario_id=f"procedural-{seed}", timestamps_s=np.arange(num_steps) * DT_S,
                    current_index=current_index, tracks=tracks, map=RoadMap(lanes=graph),
                    signals=TrafficSignals.empty(num_steps),
                    source=ScenarioSource(dataset="procedural", index=seed, name=generator),
                    sdc_index=ids.index(session.ego_id), metadata={"seed": seed, "idm": dataclasses.asdict(params)})


def _tracks(ids: list[int], states: list[dict[int, tuple[np.ndarray, ...]]]) -> Tracks:
    t, s = len(ids), len(states)
    row = {agent_id: k for k, agent_id in enumerate(ids)}
    xy, yaw, speed = np.zeros((t, s, 2)), np.zeros((t, s)), np.zeros((t, s))
    valid = np.zeros((t, s), bool)
    types, length, width = np.zeros(t, np.int8), np.zeros(t), np.zeros(t)
    for step, snapshot in enumerate(states):
        for agent_id, (p, h, v, kind, ln, wd) in snapshot.items():
            r = row[agent_id]
            xy[r, step], yaw[r, step], speed[r, step], valid[r, step] = p, h, v, True
            types[r], length[r], width[r] = kind, ln, wd
    velocity = speed[..., None] * np.stack([np.cos(yaw), np.sin(yaw)], -1)
    return Tracks(ids=np.asarray(ids, np.int64), types=types, xy=xy, yaw=yaw, velocity=velocity, length=length,
                  width=width, height=np.full(t, 1.6), valid=valid)
