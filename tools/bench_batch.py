"""Benchmark batch evaluation throughput: episodes/hour and km/hour at several worker counts.

Usage: python tools/bench_batch.py [--km 1] [--episodes 8] [--workers 1 2] [--ray] [--generator procedural]
       python tools/bench_batch.py --plugin tests.straight_world --generator test-straight

Every worker count runs the same seeds (``--seed``, ``--seed + 1``, ...), so the figures differ only by
parallelism; it also checks that the per-episode metrics are identical across worker counts. Wall time
includes starting the worker processes. The load average is printed because a shared machine skews it;
``cpu_s_per_episode`` (this process plus its pool workers) does not depend on the load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (local pool workers; not Ray's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(label: str, backend, config, episodes: int) -> tuple[dict, list[dict]]:  # noqa: ANN001
    from vectorworld.batch import run_batch, strip_timing

    load_before = os.getloadavg()[0]
    cpu0 = _cpu_s()
    t0 = time.perf_counter()
    result = run_batch(config, episodes, backend)
    wall = time.perf_counter() - t0
    cpu = _cpu_s() - cpu0
    ok = [r for r in result.records if "error" not in r]
    km = sum(r["km"] for r in ok)
    sim_s = sum(r["sim_s"] for r in ok)
    row = {"backend": label, "episodes": episodes, "failed": len(result.failed), "wall_s": round(wall, 1),
           "episodes_per_hour": round(len(ok) * 3600.0 / wall, 1), "km_per_hour": round(km * 3600.0 / wall, 2),
           "sim_s_per_wall_s": round(sim_s / wall, 2),
           "mean_episode_wall_s": round(sum(r["wall_s"] for r in ok) / max(len(ok), 1), 2),
           "cpu_s_per_episode": round(cpu / max(len(ok), 1), 2),
           "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    return row, [strip_timing(r) for r in result.records]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--km", type=float, default=1.0)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--ray", action="store_true", help="also run on a local Ray instance (max workers)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generator", default="procedural")
    parser.add_argument("--npc", default="idm")
    parser.add_argument("--plugin", action="append", default=[],
                        help="import this module first (e.g. tests.straight_world registers 'test-straight')")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    import importlib

    for module in args.plugin:
        importlib.import_module(module)

    from vectorworld.batch import LocalPoolBackend, SerialBackend
    from vectorworld.sim.config import SessionConfig

    config = SessionConfig(seed=args.seed, target_km=args.km, generator=args.generator, npc_policy=args.npc)
    print(f"machine: {os.cpu_count()} CPUs; {args.episodes} episodes of {args.km} km, generator "
          f"{args.generator}, npc {args.npc}")
    rows, reference = [], None
    runs = [(f"workers={w}", SerialBackend() if w == 1 else LocalPoolBackend(w)) for w in args.workers]
    if args.ray:
        from vectorworld.batch.ray_backend import RayBackend

        runs.append((f"ray(local, {max(args.workers)} cpus)", RayBackend(max_workers=max(args.workers))))
    for label, backend in runs:
        row, records = measure(label, backend, config, args.episodes)
        reference = reference or records
        row["identical_to_first"] = records == reference
        rows.append(row)
        print(json.dumps(row), flush=True)
    base = rows[0]["episodes_per_hour"]
    print("\nbackend                     episodes/h   km/h   speed-up  identical")
    for row in rows:
        print(f"{row['backend']:<27} {row['episodes_per_hour']:>10.1f} {row['km_per_hour']:>6.1f} "
              f"{row['episodes_per_hour'] / base:>9.2f}x  {row['identical_to_first']}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["identical_to_first"] and not r["failed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
