"""Benchmark DeltaSim inference: ms per sim step for N NPCs (default 32) on T torch threads (default 2).

    python tools/bench_deltasim.py [--agents 32] [--threads 2] [--steps 200] [--checkpoint STEM]

Drives a synthetic road scene in closed loop and times ``DeltaSimPolicy.act`` (observation, network,
shaping, collision check, sampling) per step; prints p50/p95/mean and the split per stage as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from policies.deltasim import DeltaSimConfig, DeltaSimPolicy  # noqa: E402
from policies.deltasim_net import observation_tensors  # noqa: E402
from policies.deltasim_scenes import drive, synthetic_input  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--checkpoint", type=str, default=None)
    parser.add_argument("--no-collision", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    policy = DeltaSimPolicy(DeltaSimConfig(checkpoint=args.checkpoint, collision_avoidance=not args.no_collision))
    inp = synthetic_input(args.agents - 1, np.random.default_rng(0), num_lanes=3, segments=10)
    rng = np.random.default_rng(0)
    times, obs_ms, net_ms = [], [], []
    builder, _, _ = policy._setup()
    for k, (cur, _, _) in enumerate(drive(inp, policy, rng, args.steps + 10)):
        if k < 10:
            continue
        t0 = time.perf_counter()
        policy.act(cur, rng)
        times.append((time.perf_counter() - t0) * 1e3)
        t1 = time.perf_counter()
        obs = builder(cur)
        t2 = time.perf_counter()
        with torch.inference_mode():
            policy.checkpoint.net(**observation_tensors(obs))
        t3 = time.perf_counter()
        obs_ms.append((t2 - t1) * 1e3)
        net_ms.append((t3 - t2) * 1e3)
    t = np.array(times)
    print(json.dumps({"agents": args.agents, "threads": args.threads, "steps": len(t),
                      "act_ms_p50": round(float(np.percentile(t, 50)), 3),
                      "act_ms_p95": round(float(np.percentile(t, 95)), 3),
                      "act_ms_mean": round(float(t.mean()), 3),
                      "observation_ms_p50": round(float(np.percentile(obs_ms, 50)), 3),
                      "network_ms_p50": round(float(np.percentile(net_ms, 50)), 3),
                      "collision_check": not args.no_collision}))


if __name__ == "__main__":
    main()
