"""Evaluation of NPC policies: DeltaSim (shaped / unshaped) against IDM and constant velocity.

* :func:`evaluate_npc_session` -- the same seeds through the engine's :class:`~vectorworld.sim.session.Session`
  (streaming world, ego planner): NPC collisions and off-road events per ego km, kinematic
  infeasibility rate, mean NPC speed, NPC policy ms per step, real-time factor. Episodes run their full
  distance (an NPC touching the ego is reported, not terminal), and some policies may run on fewer seeds
  (``seeds_by_policy``: the ablations are slower to evaluate and matter less).
* :func:`evaluate_npc_synthetic` -- dense traffic on synthetic roads where *every* agent is driven by the
  policy under test (no streaming world): the same metrics from the engine's MetricTracker, per NPC km.
* :func:`evaluate_womd` -- held-out real log: one-step behaviour-cloning accuracy (top-1 primitive, step
  error) along the log, and an 8 s closed-loop rollout from the current time that replaces log replay
  (displacement error vs the log at 1 s, 3 s and 8 s, infeasible steps).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from policies.base import Policy, PolicyInput, make_policy
from policies.deltasim.feasibility import realised_infeasible
from policies.deltasim.kdisks import body_delta
from policies.deltasim.observation import ObservationBuilder
from policies.deltasim.scenes import drive, synthetic_input
from vectorworld.errors import DataFormatError
from vectorworld.scene import AgentType, LaneGraph
from vectorworld.signals import SignalBoard
from vectorworld.sim.metrics import MetricTracker
from vectorworld.world.drivable import DrivableGrid
from vectorworld.world.routes import RouteBook

DEFAULT_POLICIES = ("deltasim", "deltasim-unshaped", "idm", "constant-velocity")


class MeasuredPolicy(Policy):
    """Wraps a policy; records wall ms per call, the mean speed (m/s) of the agents it controls, and the
    kinematic infeasibility of the vehicles it moved in the previous call (matched by id in the next
    input, i.e. the motion the engine actually realised)."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = inner.name
        self.ms: list[float] = []
        self.speeds: list[float] = []
        self.infeasible_steps = 0
        self.vehicle_steps = 0
        self._previous: PolicyInput | None = None

    def reset(self) -> None:
        self.inner.reset()
        self._previous = None

    def act(self, inp: PolicyInput, rng: np.random.Generator) -> np.ndarray:
        self._count_realised(inp)
        t0 = time.perf_counter()
        out = self.inner.act(inp, rng)
        self.ms.append((time.perf_counter() - t0) * 1e3)
        mask = inp.controlled & inp.agents.valid
        if mask.any():
            self.speeds.append(float(inp.agents.speed[mask].mean()))
        self._previous = inp
        return out

    @property
    def infeasibility_rate(self) -> float:
        return self.infeasible_steps / max(self.vehicle_steps, 1)

    def _count_realised(self, inp: PolicyInput) -> None:
        prev = self._previous
        if prev is None:
            return
        a0, a1 = prev.agents, inp.agents
        moved = prev.controlled & a0.valid & (a0.agent_type == AgentType.VEHICLE)
        ids0 = a0.id[moved]
        slots0 = np.nonzero(moved)[0]
        live = a1.valid & np.isin(a1.id, ids0)
        if not live.any():
            return
        slots1 = np.nonzero(live)[0]
        order = np.argsort(ids0)
        s0 = slots0[order[np.searchsorted(ids0, a1.id[slots1], sorter=order)]]
        bad = realised_infeasible(a0.xy[s0], a0.yaw[s0], a0.speed[s0], a1.xy[slots1], a1.yaw[slots1],
                                  a1.speed[slots1], inp.dt_s)
        self.infeasible_steps += int(bad.sum())
        self.vehicle_steps += len(slots1)


def _mean(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")


def _pool_map(fn: Callable, jobs: list, workers: int) -> list:
    if workers <= 1:
        return [fn(job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(fn, jobs))


def session_episode(job: tuple[str, int, float, str, int | None]) -> dict:
    """One Session episode (policy name, seed, km, generator, max steps) -> its report plus NPC speed and
    the realised infeasibility measured by :class:`MeasuredPolicy`.

    The episode does not stop when an NPC touches the ego (the ego's collisions are still reported): every
    policy drives the same distance, so per-km rates compare like with like."""
    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    name, seed, km, generator, max_steps = job
    torch_threads_one()
    measured = MeasuredPolicy(make_policy(name))
    session = Session(SessionConfig(seed=seed, target_km=km, generator=generator, npc_policy=name,
                                    max_steps=max_steps, terminate_on_collision=False), npc_policy=measured)
    session.reset()
    while not session.done:
        session.advance()  # no per-step observation: the evaluation reads the report only
    report = session.report()
    session.close()
    report["policy"] = name
    report["npc_mean_speed_mps"] = float(np.mean(measured.speeds)) if measured.speeds else 0.0
    report["realised_infeasibility_rate"] = measured.infeasibility_rate
    report["npc_vehicle_steps"] = measured.vehicle_steps
    report["npc_policy_calls"] = len(measured.ms)
    return report


def session_jobs(policies: Sequence[str], seeds: int, km: float, generator: str = "procedural",
                 max_steps: int | None = None, seeds_by_policy: Mapping[str, int] | None = None
                 ) -> list[tuple[str, int, float, str, int | None]]:
    """The :func:`session_episode` jobs of an evaluation, seed-major (seed 0 of every policy first), so an
    evaluation cut short still compares the policies on the same seeds."""
    counts = {name: (seeds_by_policy or {}).get(name, seeds) for name in policies}
    return [(name, seed, km, generator, max_steps) for seed in range(max(counts.values(), default=0))
            for name in policies if seed < counts[name]]


def summarize_sessions(reports: Sequence[dict], policies: Sequence[str]) -> dict[str, dict]:
    """Per policy name: means over its :func:`session_episode` reports; ``per_episode`` lists each seed's
    event counts, km and real-time factor."""
    results: dict[str, dict] = {}
    for name in policies:
        rows = [r for r in reports if r["policy"] == name]
        results[name] = {
            "episodes": len(rows),
            "seeds": [r["seed"] for r in rows],
            "km": float(sum(r["km"] for r in rows)),
            "npc_collisions_per_km": _mean(rows, "npc_collisions_per_km"),
            "npc_offroad_per_km": _mean(rows, "npc_offroad_per_km"),
            "kinematic_infeasibility_rate": _mean(rows, "kinematic_infeasibility_rate"),
            "realised_infeasibility_rate": _mean(rows, "realised_infeasibility_rate"),
            "npc_vehicle_steps": int(sum(r["npc_vehicle_steps"] for r in rows)),
            "npc_mean_speed_mps": _mean(rows, "npc_mean_speed_mps"),
            "npc_policy_ms": _mean(rows, "npc_policy_ms"),
            "ego_collisions": int(sum(r["ego_collisions"] for r in rows)),
            "completed_rate": _mean(rows, "completed"),
            "npc_collision_events": int(round(sum(r["npc_collisions_per_km"] * r["km"] for r in rows))),
            "npc_offroad_events": int(round(sum(r["npc_offroad_per_km"] * r["km"] for r in rows))),
            "end_reasons": sorted({r["end_reason"] for r in rows}),
            "rtf_mean": _mean(rows, "rtf"),
            "rtf_min": float(min(r["rtf"] for r in rows)) if rows else float("nan"),
            "per_episode": [{"seed": r["seed"], "km": r["km"], "rtf": r["rtf"],
                             "npc_collisions": int(round(r["npc_collisions_per_km"] * r["km"])),
                             "npc_offroad": int(round(r["npc_offroad_per_km"] * r["km"])),
                             "ego_collisions": r["ego_collisions"], "npc_policy_ms": r["npc_policy_ms"]}
                            for r in rows],
        }
    return results


def evaluate_npc_session(policies: Sequence[str] = DEFAULT_POLICIES, seeds: int = 20, km: float = 1.0,
                         generator: str = "procedural", workers: int = 1,
                         max_steps: int | None = None,
                         seeds_by_policy: Mapping[str, int] | None = None) -> dict[str, dict]:
    """Per policy name: means over ``seeds`` Session episodes of ``km`` each (seeds 0..seeds-1, or
    ``seeds_by_policy[name]`` of them), each truncated after ``max_steps`` steps if given (the default is
    the Session's own limit); see :func:`summarize_sessions`."""
    jobs = session_jobs(policies, seeds, km, generator, max_steps, seeds_by_policy)
    return summarize_sessions(_pool_map(session_episode, jobs, workers), policies)


def torch_threads_one() -> None:
    """Worker processes use one torch thread each (many small ops; threads only add contention)."""
    import torch

    torch.set_num_threads(1)


def synthetic_episode(job: tuple[str, int, int]) -> dict:
    """One synthetic dense-traffic episode (policy name, seed, steps) -> event totals."""
    name, seed, steps = job
    torch_threads_one()
    scene_rng = np.random.default_rng(seed)
    lanes = int(scene_rng.integers(1, 5))
    inp = synthetic_input(int(scene_rng.integers(6, 10 * lanes + 1)), scene_rng, num_lanes=lanes,
                          segments=12, curvature=float(scene_rng.uniform(-0.01, 0.01)), safe_start=True)
    grid = DrivableGrid()
    for lane in inp.graph.lanes.values():
        grid.add(lane)
    tracker = MetricTracker(inp.agents.capacity, inp.dt_s)
    measured = MeasuredPolicy(make_policy(name))
    rng = np.random.default_rng(1000 + seed)
    totals = {"policy": name, "km": 0.0, "collisions": 0, "offroad": 0, "infeasible": 0, "vehicle_steps": 0}
    for cur, _, nxt in drive(inp, measured, rng, steps):
        before = cur.agents
        # No ego here: every agent is an NPC; the tracker gets a free slot as its ego.
        m = tracker.step(before, nxt, _dummy_ego(before), before.valid & nxt.valid, grid)
        totals["collisions"] += m.npc_collision_events
        totals["offroad"] += m.npc_offroad_events
        veh = before.valid & nxt.valid & (before.agent_type == AgentType.VEHICLE)
        totals["infeasible"] += int(realised_infeasible(
            before.xy[veh], before.yaw[veh], before.speed[veh], nxt.xy[veh], nxt.yaw[veh],
            nxt.speed[veh], cur.dt_s).sum())
        totals["vehicle_steps"] += int(veh.sum())
        totals["km"] += float(np.linalg.norm(nxt.xy - before.xy, axis=-1)[before.valid].sum()) / 1e3
    totals["speeds"] = measured.speeds
    totals["ms"] = measured.ms
    return totals


def evaluate_npc_synthetic(policies: Sequence[str] = DEFAULT_POLICIES, seeds: int = 20, steps: int = 300,
                           workers: int = 1, seeds_by_policy: Mapping[str, int] | None = None) -> dict[str, dict]:
    """Every agent of a randomised synthetic road scene (1-4 lanes, 6-40 agents, no unavoidable collision at
    the start) driven by the policy for
    ``steps`` steps; seed i builds the same scene for every policy. Rates are per NPC km driven; the
    infeasibility rate is :func:`policies.deltasim.feasibility.realised_infeasible` over realised vehicle steps.
    (Capacity equals the agent count, so the tracker's ego slot is 0 and slot 0 is left out of the NPC
    event counts.)"""
    counts = {name: (seeds_by_policy or {}).get(name, seeds) for name in policies}
    jobs = [(name, seed, steps) for name in policies for seed in range(counts[name])]
    episodes = _pool_map(synthetic_episode, jobs, workers)
    results: dict[str, dict] = {}
    for name in policies:
        rows = [e for e in episodes if e["policy"] == name]
        km = max(sum(e["km"] for e in rows), 1e-9)
        results[name] = {
            "episodes": len(rows),
            "npc_km": km,
            "npc_collisions": int(sum(e["collisions"] for e in rows)),
            "npc_collisions_per_npc_km": sum(e["collisions"] for e in rows) / km,
            "npc_offroad_per_npc_km": sum(e["offroad"] for e in rows) / km,
            "kinematic_infeasibility_rate": sum(e["infeasible"] for e in rows) / max(
                sum(e["vehicle_steps"] for e in rows), 1),
            "infeasible_steps": int(sum(e["infeasible"] for e in rows)),
            "npc_mean_speed_mps": float(np.mean([s for e in rows for s in e["speeds"]])),
            "npc_policy_ms": float(np.mean([s for e in rows for s in e["ms"]])),
        }
    return results


def _dummy_ego(agents) -> int:  # noqa: ANN001 - Agents
    """A slot that is not a valid agent (the tracker needs an ego slot; ours has none)."""
    free = np.nonzero(~agents.valid)[0]
    return int(free[0]) if len(free) else 0


def _log_routes(graph, agents, rng: np.random.Generator) -> dict[int, list[int]]:  # noqa: ANN001
    """Routes for log agents as a Session would build them: nearest aligned lane, random successors."""
    book = RouteBook()
    for slot in np.nonzero(agents.valid)[0]:
        lane_id, dist = graph.nearest(agents.xy[slot], float(agents.yaw[slot]), radius_m=5.0)
        if lane_id >= 0:
            book.assign(int(agents.id[slot]), lane_id)
            book.extend(graph, rng, int(agents.id[slot]))
    return book.routes


def _with_lights(scenario, start_step: int) -> LaneGraph:  # noqa: ANN001 - Scenario
    """The scenario's lane graph with its logged traffic lights on the controlled lanes (replayed from
    ``start_step``, as a Session started from the log shows them)."""
    from vectorworld.data.signal_replay import replay_signals

    lights = replay_signals(scenario.signals, scenario.map.lanes, start_step)
    if not lights:
        return scenario.map.lanes
    graph = LaneGraph()
    graph.add([dataclasses.replace(lane, signal=lights[lane.id]) if lane.id in lights else lane
               for lane in scenario.map.lanes.lanes.values()])
    return graph


def evaluate_womd(path: Path, policies: Sequence[str] = DEFAULT_POLICIES, horizon_steps: int = 80,
                  seed: int = 0, factory: Callable[[str], Policy] = make_policy) -> dict:
    """Held-out evaluation on a real WOMD scenario (see module docstring)."""
    from vectorworld.data.womd import read_womd
    from vectorworld.vehicle.dynamics import apply_deltas

    scenario = read_womd(path)
    t0 = scenario.current_index
    graph = _with_lights(scenario, t0)
    board = SignalBoard()
    horizon = min(horizon_steps, scenario.num_steps - 1 - t0)
    out: dict = {"scenario": scenario.scenario_id, "start_step": t0, "horizon_steps": horizon, "rollout": {}}
    tr = scenario.tracks
    rows = np.nonzero(tr.valid[:, t0])[0]
    sdc_row = scenario.sdc_index
    for name in policies:
        policy = factory(name)
        policy.reset()
        rng = np.random.default_rng(seed)
        agents = scenario.agents_at(t0)
        controlled = agents.valid.copy()
        controlled[rows == sdc_row] = False
        routes = _log_routes(graph, agents, np.random.default_rng(seed))
        sim_xy = [agents.xy.copy()]
        bad, vehicle_steps = 0, 0
        for k in range(horizon):
            inp = PolicyInput(agents=agents, controlled=controlled, graph=graph, routes=routes, ego_slot=0,
                              step=k, signals=board.view(graph, k * 0.1))
            deltas = policy.act(inp, rng)
            xy, yaw, speed = apply_deltas(agents.xy, agents.yaw, agents.speed, deltas, inp.dt_s)
            # The SDC (and agents this policy does not control) replay the log.
            step = t0 + k + 1
            replay = ~controlled & agents.valid
            xy[replay] = tr.xy[rows[replay], step]
            yaw[replay] = tr.yaw[rows[replay], step]
            speed[replay] = tr.speed[rows[replay], step]
            nxt = agents.with_state(xy, yaw, speed)
            veh = controlled & (agents.agent_type == AgentType.VEHICLE)
            bad += int(realised_infeasible(agents.xy[veh], agents.yaw[veh], agents.speed[veh], nxt.xy[veh],
                                           nxt.yaw[veh], nxt.speed[veh], inp.dt_s).sum())
            vehicle_steps += int(veh.sum())
            agents = nxt
            sim_xy.append(agents.xy.copy())
        sim = np.stack(sim_xy, 1)[: len(rows)]                       # (A, horizon + 1, 2)
        log = tr.xy[rows, t0:t0 + horizon + 1]
        valid = tr.valid[rows, t0:t0 + horizon + 1] & controlled[: len(rows), None]
        err = np.linalg.norm(sim - log, axis=-1)
        moving = controlled[: len(rows)] & (tr.speed[rows, t0:t0 + horizon + 1].max(1) > 1.0)
        entry = {"agents": int(controlled.sum()), "moving_agents": int(moving.sum()),
                 "infeasible_steps": bad, "vehicle_steps": vehicle_steps,
                 "ade_m": float(err[valid].mean())}
        for label, h in (("1s", 10), ("3s", 30), ("8s", 80)):
            if h <= horizon and valid[:, h].any():
                entry[f"de_{label}_m"] = float(err[valid[:, h], h].mean())
                sel = valid[:, h] & moving
                entry[f"de_{label}_moving_m"] = float(err[sel, h].mean()) if sel.any() else None
        out["rollout"][name] = entry
    return out


def womd_bc_accuracy(path: Path, policy: Policy, seed: int = 0) -> dict:
    """One-step BC metrics of a DeltaSim policy along a real log: at each step from the current time, the
    greedy primitive (no shaping) vs the primitive nearest to the logged motion, and the position error
    of the predicted motion (primitive + residual) vs the log."""
    import torch

    from policies.deltasim.net import observation_tensors
    from policies.deltasim.policy import DeltaSimPolicy
    from vectorworld.data.womd import read_womd

    if not isinstance(policy, DeltaSimPolicy):
        raise TypeError("womd_bc_accuracy needs a DeltaSimPolicy")
    ckpt = policy.checkpoint
    scenario = read_womd(path)
    tr = scenario.tracks
    builder = ObservationBuilder(ckpt.observation)
    hits, total, errors, moving_hits, moving_total = 0, 0, [], 0, 0
    rng = np.random.default_rng(seed)
    for t in range(scenario.current_index, scenario.num_steps - 1):
        rows = np.nonzero(tr.valid[:, t])[0]
        agents = scenario.agents_at(t)
        nxt_ok = tr.valid[rows, t + 1]
        inp = PolicyInput(agents=agents, controlled=nxt_ok.copy(), graph=scenario.map.lanes,
                          routes=_log_routes(scenario.map.lanes, agents, rng), ego_slot=0, step=t)
        obs = builder(inp)
        if obs.size == 0:
            continue
        r = rows[obs.slots]
        before = np.concatenate([tr.xy[r, t], tr.yaw[r, t, None]], -1)
        after = np.concatenate([tr.xy[r, t + 1], tr.yaw[r, t + 1, None]], -1)
        target = ckpt.vocabulary.nearest(body_delta(before, after))
        with torch.no_grad():
            logits, residual = ckpt.net(**observation_tensors(obs))
        pick = logits.argmax(-1).numpy()
        motion = ckpt.vocabulary.primitives[pick] + residual.numpy()[np.arange(len(pick)), pick]
        hits += int((pick == target).sum())
        total += len(pick)
        errors.extend(np.linalg.norm(motion[:, :2] - body_delta(before, after)[:, :2], axis=-1).tolist())
        moving = tr.speed[r, t] > 1.0
        moving_hits += int((pick == target)[moving].sum())
        moving_total += int(moving.sum())
    return {"samples": total, "top1": hits / max(total, 1), "moving_samples": moving_total,
            "moving_top1": moving_hits / max(moving_total, 1),
            "step_error_m": float(np.mean(errors)) if errors else None}


def evaluate_npc(seeds: int = 20, km: float = 1.0, policies: Sequence[str] = DEFAULT_POLICIES,
                 womd_path: Path | None = None, synthetic_steps: int = 300, session: bool = True,
                 synthetic: bool = True, workers: int = 1, max_steps: int | None = None,
                 seeds_by_policy: Mapping[str, int] | None = None) -> dict:
    """Everything: Session episodes, synthetic dense traffic, and the WOMD hold-out when ``womd_path`` is
    given (DataFormatError before any episode runs if it is not a file). ``seeds_by_policy`` gives some
    policies fewer (or more) Session seeds than ``seeds``."""
    if womd_path is not None and not Path(womd_path).is_file():
        raise DataFormatError(f"WOMD file not found: {womd_path}")
    report: dict = {"policies": list(policies), "seeds": seeds, "km": km,
                    "seeds_by_policy": {name: (seeds_by_policy or {}).get(name, seeds) for name in policies},
                    "load_avg_start": list(os.getloadavg())}
    if session:
        report["session"] = evaluate_npc_session(policies, seeds, km, workers=workers, max_steps=max_steps,
                                                 seeds_by_policy=seeds_by_policy)
    if synthetic:
        report["synthetic"] = evaluate_npc_synthetic(policies, seeds, synthetic_steps, workers=workers,
                                                     seeds_by_policy=seeds_by_policy)
    if womd_path is not None:
        report["womd"] = evaluate_womd(Path(womd_path), policies)
        report["womd"]["bc"] = womd_bc_accuracy(Path(womd_path), make_policy("deltasim"))
    report["load_avg_end"] = list(os.getloadavg())
    return report


__all__ = ["DEFAULT_POLICIES", "MeasuredPolicy", "evaluate_npc", "evaluate_npc_session",
           "evaluate_npc_synthetic", "evaluate_womd", "session_episode", "session_jobs", "summarize_sessions",
           "womd_bc_accuracy"]
