"""Build a tile corpus for tools/train_generator.py: procedural worlds, or a student's own worlds answered by a
teacher (``--student``: vectorworld.train.taught_corpus), grown at random open ends or ahead of a virtual ego.

Usage: python tools/build_corpus.py --out runs/gen/data_drive/corpus.npz --worlds 160 --tiles-per-world 30 \
           --growth drive --seed 7
       python tools/build_corpus.py --out runs/gen/data_taught/corpus.npz --worlds 150 --tiles-per-world 30 \
           --growth drive --student learned:docs/generator_runs/world_plan/checkpoint --seed 11
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vectorworld.train.tile_corpus import CorpusConfig, build_corpus, save_corpus  # noqa: E402
from vectorworld.world.growth import GROWTHS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="corpus .npz to write")
    parser.add_argument("--worlds", type=int, default=400)
    parser.add_argument("--tiles-per-world", type=int, default=12)
    parser.add_argument("--growth", choices=GROWTHS, default="ends")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--student", default=None,
                        help="a generator spec whose own worlds are cropped, with --teacher's answers as targets")
    parser.add_argument("--teacher", default="procedural", help="the generator that answers --student's requests")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    start = time.perf_counter()
    tiles = build_corpus(CorpusConfig(worlds=args.worlds, tiles_per_world=args.tiles_per_world, seed=args.seed,
                                      growth=args.growth, generator=args.student or "procedural",
                                      teacher=args.teacher if args.student else ""))
    path = save_corpus(args.out, tiles)
    print(f"{len(tiles['lane_valid'])} tiles -> {path} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
