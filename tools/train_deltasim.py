"""Train the shipped DeltaSim checkpoint (exact recipe).

    python tools/train_deltasim.py [--data DIR] [--out policies/deltasim/weights]
    python tools/train_deltasim.py --init-from policies/deltasim/weights --epochs 3 --lr 5e-4   # fine-tune

Records IDM-teacher traffic in procedural Session rollouts into DIR (cached as deltasim_samples.npz, with
the recipe beside it in deltasim_samples.json; reused on reruns only if the recipe is the same; about 8
minutes of one core, 1.4 GB), trains by behaviour cloning on one torch thread (17 minutes for the shipped
checkpoint; the schedule anneals within --max-seconds), and writes the checkpoint folder --out
(model.safetensors, config.json) and train_record.json.
The defaults are the exact recipe of the checkpoint in policies/deltasim/weights/ (its
train_record.json holds the resolved recipe and log). The corpus comes from the current Session, world and
IDM code: after changes there, a rerun records different traffic and trains a different checkpoint.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vectorworld.train.deltasim_recipe import DataRecipe, train_from_dir  # noqa: E402
from vectorworld.train.deltasim_training import TrainConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT / "build" / "deltasim_data")
    parser.add_argument("--out", type=Path, default=ROOT / "policies" / "deltasim" / "weights")
    parser.add_argument("--episodes", type=int, default=DataRecipe.episodes)
    parser.add_argument("--steps", type=int, default=DataRecipe.steps)
    parser.add_argument("--record-every", type=int, default=DataRecipe.record_every)
    parser.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-weight", type=int, default=TrainConfig.start_weight,
                        help="draw samples where the teacher sets a standing agent off this many times per epoch")
    parser.add_argument("--workers", type=int, default=1, help="processes recording data (same samples)")
    parser.add_argument("--max-seconds", type=float, default=TrainConfig.max_seconds,
                        help="stop training after this many seconds (the record says so)")
    parser.add_argument("--init-from", type=Path, default=None,
                        help="fine-tune this checkpoint folder (its network and vocabulary) instead of training "
                             "from scratch")
    parser.add_argument("--lr", type=float, default=TrainConfig.lr, help="peak learning rate")
    parser.add_argument("--speed-factor", type=float, nargs=2, default=DataRecipe.speed_factor, metavar=("LO", "HI"),
                        help="range of the teacher drivers' speed factor (one per recorded episode)")
    args = parser.parse_args()
    recipe = DataRecipe(episodes=args.episodes, steps=args.steps, record_every=args.record_every, seed=args.seed,
                        speed_factor=tuple(args.speed_factor))
    config = TrainConfig(seed=args.seed, epochs=args.epochs, max_seconds=args.max_seconds,
                         start_weight=args.start_weight, lr=args.lr)
    record = train_from_dir(args.data, args.out, recipe, config,
                            log=lambda entry: print(json.dumps(entry), flush=True), workers=args.workers,
                            init_from=args.init_from)
    print(json.dumps({"val": record["val"], "seconds": record["seconds"], "vocab_size": record["vocab_size"]}))


if __name__ == "__main__":
    main()
