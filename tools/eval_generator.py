"""Benchmark of the learned tile generator (DESIGN §8): every variant, the procedural generator and the
naive baseline, printed as a table and written as JSON.

    python tools/eval_generator.py --reference runs/generator/reference.npz --ablations runs/generator \
        --worlds 10 --tiles-per-world 12 --workers 1 --json runs/generator/eval.json

Each variant runs with torch limited to 2 threads; with ``--workers`` > 1 variants run in parallel
processes (keep workers x 2 below the core count or the latencies are inflated).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vectorworld.eval.generator_report import generator_report  # noqa: E402
from vectorworld.generation.learned import WEIGHTS_DIR  # noqa: E402

COLUMNS = ("tile_ms_p50", "tile_ms_p95", "tile_cpu_ms_p50", "tile_cpu_ms_p95", "fallback_rate",
           "raw_epd_m_mean", "raw_epd_m_p95", "epd_m_mean",
           "epd_m_p95", "dangling_rate", "init_overlap_rate", "offlane_rate", "agents_per_tile",
           "jsd_nn_dist_m", "jsd_lateral_m", "jsd_heading_rad", "jsd_length_m", "jsd_width_m",
           "jsd_speed_mps", "lane_frechet", "learned_only_tiles", "learned_only_epd_m_mean",
           "learned_only_dangling_rate", "learned_only_init_overlap_rate", "learned_only_offlane_rate",
           "learned_only_agents_per_tile", "learned_only_tile_ms_p50")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", type=Path, default=WEIGHTS_DIR)
    parser.add_argument("--ablations", type=Path, default=None)
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--worlds", type=int, default=10)
    parser.add_argument("--tiles-per-world", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="torch threads per variant (spec: 2)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    report = generator_report(args.weights, args.reference, args.ablations, args.worlds, args.tiles_per_world,
                              args.seed, workers=args.workers, threads=args.threads)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    print("metric".ljust(22) + "".join(name[:16].rjust(17) for name in report))
    for col in COLUMNS:
        row = [report[name].get(col, float("nan")) for name in report]
        print(col.ljust(22) + "".join(f"{v:17.4f}" for v in row))


if __name__ == "__main__":
    main()
