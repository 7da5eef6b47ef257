"""Benchmark closed-loop rollouts: real-time factor, agent-steps/s, tile latency, peak memory.

The real-time factor times the engine step of a batch rollout (``Session.advance``, as `vectorworld rollout`);
``observe_ms`` is what building an observation adds per step for a served session (sampled every 10 steps).

Usage: python tools/bench_rollout.py [--km 1 10] [--seed 0] [--generator procedural] [--npc deltasim]
       [--planner idm|pdm|constant-velocity]
       python tools/bench_rollout.py --ab /work/main --km 1 --seeds 5   # interleaved A/B, one window
       python tools/bench_rollout.py --ab /work/main --km 1 --seeds 1 --repeat 10   # one seed, 10 pairs

Each distance runs in a fresh subprocess so peak RSS (ru_maxrss) is measured per rollout. ``--ab OTHER``
compares this checkout with another one (e.g. main, or a worktree of the commit before a change): for each
of ``--seeds`` seeds it runs this checkout's rollout and the other's back to back (alternating which goes
first), each in a fresh process with that checkout first on ``PYTHONPATH``, so both face the same machine
load; it prints both rows per seed and the means of RTF and wall seconds per km, and the median of the per-pair
RTF ratios (``--repeat R`` runs each seed's pair R times, alternating the order). Both modes end with the ms
per step of every stage of ``Session.advance`` (``Session.stages``: right of way, NPC policy, pedestrians, ego
planner, integrate, metrics, scoring, routes, world, retire) and of the NPC policy's own stages (ΔSim:
observation, scoring, sampling), so a slower commit shows where it is slower.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from policies import DEFAULT_NPC_POLICY


def one(km: float, seed: int, generator: str, npc: str, planner: str = "idm") -> dict:
    import numpy as np

    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    session = Session(SessionConfig(seed=seed, target_km=km, generator=generator, npc_policy=npc, planner=planner))
    session.reset()
    agent_steps, wall, observe_s, observed = 0, 0.0, 0.0, 0
    policy_ms: dict[str, float] = {}  # the NPC policy's own stages, where it times them (ΔSim)
    while not session.done:
        t0 = time.perf_counter()
        session.advance()  # what `vectorworld rollout` does per step
        wall += time.perf_counter() - t0
        agent_steps += int(session.agents.valid.sum())
        for stage, ms in (getattr(session.npc_policy, "last_timing", None) or {}).items():
            policy_ms[stage] = policy_ms.get(stage, 0.0) + ms
        if session.step_index % 10 == 0:  # what a served session adds: building the observation
            t0 = time.perf_counter()
            session.observe()
            observe_s += time.perf_counter() - t0
            observed += 1
    report = session.report()
    tiles = np.array(session.metrics.tile_ms)
    return {"km": report["km"], "end_reason": report["end_reason"], "steps": report["steps"],
            "sim_s": report["sim_s"], "wall_s": round(wall, 2), "rtf": round(report["sim_s"] / wall, 1),
            "agent_steps_per_s": round(agent_steps / wall), "mean_agents": round(agent_steps / report["steps"], 1),
            "tiles": len(tiles), "tile_ms_p50": round(float(np.percentile(tiles, 50)), 2),
            "tile_ms_p95": round(float(np.percentile(tiles, 95)), 2),
            "npc_policy_ms": round(report["npc_policy_ms"], 3),
            "observe_ms": round(observe_s / max(observed, 1) * 1e3, 3),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "stage_ms": {**{k: round(v, 3) for k, v in session.stages.per_step_ms(report["steps"]).items()},
                         **{f"npc_policy.{k}": round(v / report["steps"], 3) for k, v in policy_ms.items()}}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--km", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generator", default="procedural")
    parser.add_argument("--npc", default=DEFAULT_NPC_POLICY)
    parser.add_argument("--planner", default="idm")
    parser.add_argument("--one", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--ab", type=Path, default=None, help="Another checkout to compare with (interleaved).")
    parser.add_argument("--seeds", type=int, default=5, help="With --ab: seeds --seed ... --seed + N - 1.")
    parser.add_argument("--repeat", type=int, default=1, help="With --ab: run every seed's pair this many times.")
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.seed, args.generator, args.npc, args.planner)))
        return
    if args.ab is not None:
        ab(args)
        return
    rows = []
    for km in args.km:
        out = subprocess.run([sys.executable, __file__, "--one", str(km), "--seed", str(args.seed),
                              "--generator", args.generator, "--npc", args.npc, "--planner", args.planner],
                             check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    keys = [k for k in rows[0] if k != "stage_ms"]
    print(" | ".join(keys))
    for r in rows:
        print(" | ".join(str(r[k]) for k in keys))
    print_stages({f"{r['km']:.1f} km": [r] for r in rows})
    if len(rows) > 1:
        print(f"peak memory difference {rows[-1]['km']:.1f} km vs {rows[0]['km']:.1f} km: "
              f"{rows[-1]['peak_rss_mb'] - rows[0]['peak_rss_mb']:+.1f} MB")


def _run_in(checkout: Path, km: float, seed: int, generator: str, npc: str) -> dict:
    """One rollout in a fresh process of ``checkout`` (its own tools/bench_rollout.py and packages)."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    out = subprocess.run([sys.executable, str(checkout / "tools" / "bench_rollout.py"), "--one", str(km),
                          "--seed", str(seed), "--generator", generator, "--npc", npc],
                         check=True, capture_output=True, text=True, cwd=checkout, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def ab(args: argparse.Namespace) -> None:
    here, other = Path(__file__).resolve().parents[1], args.ab.resolve()
    km = args.km[0]
    rows: dict[str, list[dict]] = {"this": [], "other": []}
    pairs = [(args.seed + k, r) for k in range(args.seeds) for r in range(args.repeat)]
    for n, (seed, _) in enumerate(pairs):
        order = [("this", here), ("other", other)] if n % 2 == 0 else [("other", other), ("this", here)]
        for name, checkout in order:
            r = _run_in(checkout, km, seed, args.generator, args.npc)
            rows[name].append(r)
            print(f"seed {seed} {name:5s} ({checkout}): rtf {r['rtf']}, wall {r['wall_s']} s, sim {r['sim_s']} s, "
                  f"{1e3 * r['wall_s'] / r['steps']:.2f} ms/step, km {r['km']:.3f}, {r['end_reason']}, "
                  f"mean agents {r['mean_agents']}", flush=True)
    for name, checkout in (("this", here), ("other", other)):
        rtf = [r["rtf"] for r in rows[name]]
        per_km = [r["wall_s"] / max(r["km"], 1e-6) for r in rows[name]]
        sim_km = [r["sim_s"] / max(r["km"], 1e-6) for r in rows[name]]
        print(f"{name:5s} {checkout}: mean rtf {sum(rtf) / len(rtf):.1f}x (median {statistics.median(rtf):.1f}, "
              f"min {min(rtf)}), wall {sum(per_km) / len(per_km):.1f} s/km, simulated "
              f"{sum(sim_km) / len(sim_km):.0f} s/km")
    # Machine noise moves both halves of a pair together: the paired ratio is the steadier figure.
    ratios = [a["rtf"] / b["rtf"] for a, b in zip(rows["this"], rows["other"], strict=True)]
    print(f"rtf this / other per pair: median {statistics.median(ratios):.3f} (range {min(ratios):.3f} .. "
          f"{max(ratios):.3f}, {len(ratios)} pairs)")
    print_stages(rows)


def print_stages(columns: dict[str, list[dict]]) -> None:
    """ms per step of each stage of ``Session.advance`` (and the NPC policy's own stages), averaged over each
    column's runs; a checkout whose bench does not time stages shows '-'."""
    means: dict[str, dict[str, float]] = {}
    for name, runs in columns.items():
        timed = [r["stage_ms"] for r in runs if "stage_ms" in r]
        stages = dict.fromkeys(stage for t in timed for stage in t)
        means[name] = {stage: statistics.fmean(t.get(stage, 0.0) for t in timed) for stage in stages}
    stages = list(dict.fromkeys(stage for m in means.values() for stage in m))
    if not stages:
        return
    print("ms per step | " + " | ".join(columns))
    for stage in stages:
        print(f"{stage} | " + " | ".join(f"{means[name][stage]:.3f}" if stage in means[name] else "-"
                                         for name in columns))


if __name__ == "__main__":
    main()
