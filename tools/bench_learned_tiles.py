"""Time the learned generator's ``generate`` per tile: one-step sampling as a frozen graph against eager.

Frontier requests are captured from procedural worlds grown tile by tile (``--worlds`` seeds), then every
request is answered by both generators in turn (interleaved, so machine noise hits both alike) on one torch
thread. Prints p50 / p95 ms of the whole ``generate`` call (context, sampling, filter, stitching, spawns;
fallback tiles included), the fallback share, and whether both answered every request with the same lanes.

    python tools/bench_learned_tiles.py --worlds 6 --tiles 12 [--weights DIR]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from vectorworld.generation.base import TileRequest


def capture_requests(worlds: int, tiles: int) -> list[TileRequest]:
    """Frontier tile requests of procedural worlds grown at random open ends (deep copies, unanswered)."""
    from vectorworld.generation import make_generator
    from vectorworld.generation.base import IdAllocator, TileContent, TileFrame, TileGenerator
    from vectorworld.world.streaming import StreamingWorld, WorldConfig

    requests = []

    class Recorder(TileGenerator):
        name = "recorder"

        def __init__(self) -> None:
            self.inner = make_generator("procedural")

        def first_tile(self, frame: TileFrame, lane_ids: IdAllocator, rng: np.random.Generator) -> TileContent:
            return self.inner.first_tile(frame, lane_ids, rng)

        def generate(self, request: TileRequest) -> TileContent:
            requests.append(copy.deepcopy(request))
            return self.inner.generate(request)

    for seed in range(worlds):
        rng = np.random.default_rng(seed)
        world = StreamingWorld(Recorder(), rng, WorldConfig(max_tiles_per_update=1, retention_m=1e9))
        world.start(np.zeros(2), float(rng.uniform(-np.pi, np.pi)))
        for _ in range(tiles):
            if world.grow_at_random_end(rng) is None:
                break
    return requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", type=int, default=6)
    parser.add_argument("--tiles", type=int, default=12, help="tiles grown per world")
    parser.add_argument("--weights", type=Path, default=None, help="generator checkpoint (default: shipped)")
    args = parser.parse_args()

    import torch

    from vectorworld.generation.learned.generator import LearnedTileGenerator

    torch.set_num_threads(1)
    requests = capture_requests(args.worlds, args.tiles)
    gens = {"graph": LearnedTileGenerator(args.weights, frozen_graph=True),
            "eager": LearnedTileGenerator(args.weights, frozen_graph=False)}
    for gen in gens.values():  # load weights, build the graph
        gen.generate(copy.deepcopy(requests[0]))
    ms: dict[str, list[float]] = {name: [] for name in gens}
    fallback: dict[str, int] = dict.fromkeys(gens, 0)
    same = 0
    for i, request in enumerate(requests):
        order = list(gens) if i % 2 == 0 else list(gens)[::-1]
        answers = {}
        for name in order:
            req = copy.deepcopy(request)
            t0 = time.perf_counter()
            answers[name] = gens[name].generate(req)
            ms[name].append((time.perf_counter() - t0) * 1e3)
            fallback[name] += answers[name].used_fallback
        a, b = answers["graph"], answers["eager"]
        same += len(a.lanes) == len(b.lanes) and all(
            np.allclose(x.points, y.points, atol=1e-3) for x, y in zip(a.lanes, b.lanes, strict=True))
    for name, values in ms.items():
        print(f"{name}: tile_ms p50 {np.percentile(values, 50):.2f}, p95 {np.percentile(values, 95):.2f}, "
              f"mean {np.mean(values):.2f} over {len(values)} tiles; fallback {fallback[name] / len(values):.1%}")
    ratio = np.array(ms["graph"]) / np.array(ms["eager"])
    print(f"graph / eager per tile: median {np.median(ratio):.3f}; same lanes (1 mm) on {same} of {len(requests)}")


if __name__ == "__main__":
    main()
