"""Time the learned generator's validity filter on the calls of one evaluation, replayed.

Grows the worlds of ``vectorworld eval generator --tiles N --seed S`` once (one torch thread) while
recording every ``choose_candidate`` call (decoded candidates, hints, ports, known lanes), then replays the
recorded calls ``--reps`` times on one BLAS thread (as ``generate`` runs them). Prints ms per call (min and
median over the reps, wall and process CPU) and a fingerprint of the decisions: the chosen candidate, its
kept lanes, port links, successors and verdict, and its stitched lanes to 1e-9 m. A change that only makes
the filter faster must leave the fingerprint as it was; a replay is steadier than whole-tile timings on a
shared machine, since the network and the world's growth are left out.

    python tools/bench_filter.py --weights docs/generator_runs/world_plan/checkpoint --tiles 200 --seed 1000
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vectorworld.generation.learned.candidates import Choice  # noqa: E402

Call = tuple[tuple[object, ...], dict[str, object]]


def record_calls(weights: Path | None, tiles: int, seed: int) -> list[Call]:
    """The ``choose_candidate`` calls (deep copies of their arguments) of one evaluation's growth."""
    import torch

    import vectorworld.generation.learned.generator as generator_module
    from vectorworld.eval.generator_metrics import grow_worlds
    from vectorworld.eval.generator_report import plan_tiles

    calls: list[Call] = []
    choose = generator_module.choose_candidate

    def recording(*args: object, **kwargs: object) -> Choice:
        calls.append(copy.deepcopy((args, kwargs)))
        return choose(*args, **kwargs)

    torch.set_num_threads(1)
    worlds, per_world = plan_tiles(tiles, None, None)
    generator_module.choose_candidate = recording
    try:
        gen = generator_module.LearnedTileGenerator(checkpoint=weights, steps=1)
        grow_worlds(gen, worlds, per_world, seed, tiles)
    finally:
        generator_module.choose_candidate = choose
    return calls


def fingerprint(choices: list[Choice]) -> str:
    """A short hash of the decisions of the filter calls (see the module)."""
    digest = hashlib.sha1()
    for choice in choices:
        check = choice.check
        digest.update(np.asarray([choice.index, choice.checked], np.int64).tobytes())
        digest.update(np.asarray(check.keep, np.int64).tobytes())
        digest.update(repr((sorted(check.port_links), sorted(check.successors), check.dangling,
                            check.unmatched_ports, check.knotted)).encode())
        for lane in choice.stitched:
            digest.update(np.round(np.asarray(lane, np.float64), 9).tobytes())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", type=Path, default=None, help="generator checkpoint (default: shipped)")
    parser.add_argument("--tiles", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()

    from vectorworld.generation.learned.candidates import choose_candidate
    from vectorworld.math_threads import math_threads

    calls = record_calls(args.weights, args.tiles, args.seed)
    print(f"{len(calls)} filter calls recorded over {args.tiles} tiles (seed {args.seed})")
    print(f"fingerprint {fingerprint([choose_candidate(*a, **k) for a, k in calls])}")
    wall, cpu = [], []
    with math_threads(1):   # as the generator runs the filter: numpy's BLAS on one thread
        for _ in range(args.reps):
            t0, c0 = time.perf_counter(), time.process_time()
            for a, k in calls:
                choose_candidate(*a, **k)
            wall.append((time.perf_counter() - t0) * 1e3 / len(calls))
            cpu.append((time.process_time() - c0) * 1e3 / len(calls))
    print(f"ms per call: wall min {min(wall):.3f} median {np.median(wall):.3f}; "
          f"cpu min {min(cpu):.3f} median {np.median(cpu):.3f} ({args.reps} reps)")


if __name__ == "__main__":
    main()
