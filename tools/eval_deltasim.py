"""Evaluate NPC policies (DeltaSim shaped / unshaped, IDM, constant velocity) on the same seeds.

    python tools/eval_deltasim.py [--seeds 20] [--ablation-seeds N] [--km 1] [--steps 300] [--workers N]
                                  [--out report.json] [--no-session] [--no-synthetic] [--womd PATH]

Writes the JSON report of :func:`vectorworld.eval.npc_eval.evaluate_npc` (Session episodes of --km each,
synthetic dense traffic of --steps steps, and the WOMD hold-out when --womd names a file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vectorworld.eval.npc_eval import DEFAULT_POLICIES, evaluate_npc  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--ablation-seeds", type=int, default=None,
                        help="seeds for deltasim-unshaped and constant-velocity (default: --seeds)")
    parser.add_argument("--km", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--policies", type=str, default=",".join(DEFAULT_POLICIES))
    parser.add_argument("--womd", type=Path, default=None)
    parser.add_argument("--no-session", action="store_true")
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--max-steps", type=int, default=None, help="truncate Session episodes")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    fewer = ({name: args.ablation_seeds for name in ("deltasim-unshaped", "constant-velocity")}
             if args.ablation_seeds is not None else None)
    report = evaluate_npc(args.seeds, args.km, tuple(args.policies.split(",")), args.womd, args.steps,
                          session=not args.no_session, synthetic=not args.no_synthetic, workers=args.workers,
                          max_steps=args.max_steps, seeds_by_policy=fewer)
    text = json.dumps(report, indent=1)
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
