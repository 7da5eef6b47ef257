"""Benchmark DeltaSim inference: ms per sim step for N NPCs (default 32) on a 2-thread CPU budget.

    python tools/bench_deltasim.py [--agents 8 32 64] [--threads 2] [--policy-threads 1] [--steps 100]
                                   [--repeats 3] [--checkpoint STEM] [--no-collision] [--no-trace]

``--threads`` is the process-wide torch setting (the budget); ``--policy-threads`` the most the policy
uses while acting (``DeltaSimConfig.threads``, default 1).

Drives a synthetic road scene in closed loop with the policy, records the inputs of every step, then times
``DeltaSimPolicy.act`` (observation, network, shaping, collision check, sampling) on the recorded steps
``--repeats`` times. Prints one JSON line per agent count: wall-clock p50/p95/mean, the process CPU time
per step (less sensitive to other load on a shared machine), the split per stage (p50 of
``DeltaSimPolicy.last_timing``) and the 1-minute load average at the start and end of the run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from policies.base import PolicyInput  # noqa: E402
from policies.deltasim.policy import STAGES, DeltaSimConfig, DeltaSimPolicy  # noqa: E402
from policies.deltasim.scenes import drive, synthetic_input  # noqa: E402

WARMUP_STEPS = 10


def record_steps(policy: DeltaSimPolicy, agents: int, steps: int, seed: int = 0) -> list[PolicyInput]:
    """Inputs of ``steps`` closed-loop steps of ``agents`` agents (ego included) driven by ``policy``."""
    inp = synthetic_input(agents - 1, np.random.default_rng(seed), num_lanes=3, segments=10)
    rng = np.random.default_rng(seed)
    return [cur for cur, _, _ in drive(inp, policy, rng, steps + WARMUP_STEPS)][WARMUP_STEPS:]


def bench(policy: DeltaSimPolicy, inputs: list[PolicyInput], repeats: int) -> dict:
    """Time ``policy.act`` over ``inputs``, ``repeats`` times; figures in ms per step."""
    rng = np.random.default_rng(1)
    for inp in inputs[:WARMUP_STEPS]:
        policy.act(inp, rng)
    wall, cpu = [], []
    stages: dict[str, list[float]] = {name: [] for name in STAGES}
    load_start = os.getloadavg()[0]
    for _ in range(repeats):
        for inp in inputs:
            t0, c0 = time.perf_counter(), time.process_time()
            policy.act(inp, rng)
            cpu.append((time.process_time() - c0) * 1e3)
            wall.append((time.perf_counter() - t0) * 1e3)
            for name, ms in policy.last_timing.items():
                stages[name].append(ms)
    w = np.array(wall)
    return {"act_ms_p50": round(float(np.percentile(w, 50)), 3),
            "act_ms_p95": round(float(np.percentile(w, 95)), 3),
            "act_ms_mean": round(float(w.mean()), 3),
            "cpu_ms_p50": round(float(np.percentile(cpu, 50)), 3),
            "stages_ms_p50": {name: round(float(np.percentile(v, 50)), 3) for name, v in stages.items() if v},
            "load_avg_1min": [round(load_start, 2), round(os.getloadavg()[0], 2)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, nargs="+", default=[32])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--policy-threads", type=int, default=DeltaSimConfig.threads)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--checkpoint", type=str, default=None)
    parser.add_argument("--no-collision", action="store_true")
    parser.add_argument("--no-trace", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = DeltaSimConfig(checkpoint=args.checkpoint, collision_avoidance=not args.no_collision,
                            threads=args.policy_threads, trace=not args.no_trace)
    for agents in args.agents:
        policy = DeltaSimPolicy(config)
        inputs = record_steps(policy, agents, args.steps)
        result = {"agents": agents, "threads": args.threads, "policy_threads": args.policy_threads,
                  "steps": len(inputs) * args.repeats,
                  "collision_check": not args.no_collision, "trace": not args.no_trace}
        result.update(bench(policy, inputs, args.repeats))
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
