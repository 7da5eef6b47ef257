"""Benchmark of the learned tile generator (DESIGN §8): every variant, the procedural generator and the
naive baseline, printed as a table and written as JSON.

    python tools/eval_generator.py --reference runs/generator/reference.npz --ablations runs/generator \
        --worlds 10 --tiles-per-world 12 --workers 1 --json runs/generator/eval.json

The same as ``vectorworld eval generator`` (``--steps``, ``--tiles``, ``--k-steps`` as there), except that
``--json`` names a file here. Each variant runs with torch limited to ``--threads`` threads; with
``--workers`` > 1 variants run in parallel processes (keep workers x threads below the core count or the
latencies are inflated). Without ``--reference`` a held-out procedural corpus is grown (seed 20000).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vectorworld.eval.generator_report import format_table, generator_report, json_ready, plan_tiles  # noqa: E402
from vectorworld.generation.learned.generator import WEIGHTS_DIR  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", type=Path, default=WEIGHTS_DIR)
    parser.add_argument("--ablations", type=Path, default=None)
    parser.add_argument("--reference", type=Path, default=None)
    parser.add_argument("--worlds", type=int, default=None, help="default 10")
    parser.add_argument("--tiles-per-world", type=int, default=None, help="default 12")
    parser.add_argument("--tiles", type=int, default=None, help="evaluated tiles per variant, in all")
    parser.add_argument("--steps", type=int, default=None, help="only learned variants with this step count")
    parser.add_argument("--k-steps", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="torch threads per variant (spec: 2)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    worlds, tiles_per_world = plan_tiles(args.tiles, args.worlds, args.tiles_per_world)
    report = generator_report(args.weights, args.reference, args.ablations, worlds, tiles_per_world,
                              args.seed, k_steps=args.k_steps, workers=args.workers, threads=args.threads,
                              steps=args.steps, max_tiles=args.tiles)
    if args.json is not None:
        args.json.write_text(json.dumps(json_ready(report), indent=1, allow_nan=False))
    print(format_table(report))


if __name__ == "__main__":
    main()
