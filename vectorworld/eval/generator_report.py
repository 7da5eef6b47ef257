"""The generator comparison of DESIGN §8: learned variants, the procedural generator and a naive baseline.

Variants (each grows the same worlds, same seeds): MeanFlow 1 step and K steps (shipped checkpoint),
the flow-matching baseline (``fm`` checkpoint, Euler, 1 and K steps), MeanFlow without edge gating
(``nogate`` checkpoint, 1 step), the procedural generator itself, and the naive baseline (random agent
placement on the lanes the shipped model generated). Variants can run in parallel processes; each one
limits torch to 2 threads, so ``tile_ms`` is the 2-thread latency as long as cores are not oversubscribed.
"""

from __future__ import annotations

from pathlib import Path

from vectorworld.eval.generator_metrics import evaluate_generator, grow_worlds, naive_baseline_metrics
from vectorworld.generation.tile_tensors import TileTensors

Spec = dict[str, object]


def reference_tiles(path: str | Path) -> list[TileTensors]:
    """Reference crops from a corpus file written by ``vectorworld.train.tile_corpus.save_corpus``."""
    from vectorworld.train.tile_corpus import load_corpus

    data = load_corpus(path)
    return [TileTensors(**{k: v[i] for k, v in data.items()}) for i in range(len(data["lane_valid"]))]


def variant_specs(weights: str | Path, ablations: str | Path | None = None, k_steps: int = 4,
                  include_procedural: bool = True) -> dict[str, Spec]:
    """Generator settings per variant name (``kind`` learned / procedural / naive)."""
    specs: dict[str, Spec] = {
        "meanflow_1step": {"kind": "learned", "checkpoint": str(weights), "steps": 1},
        f"meanflow_{k_steps}step": {"kind": "learned", "checkpoint": str(weights), "steps": k_steps},
    }
    if ablations is not None:
        ablations = Path(ablations)
        if (ablations / "fm").is_dir():
            for steps in (1, k_steps):
                specs[f"flow_matching_{steps}step"] = {"kind": "learned", "checkpoint": str(ablations / "fm"),
                                                       "sampler": "flow_matching", "steps": steps}
        if (ablations / "nogate").is_dir():
            specs["meanflow_1step_no_edge_gating"] = {"kind": "learned", "checkpoint": str(ablations / "nogate"),
                                                      "steps": 1}
    if include_procedural:
        specs["procedural"] = {"kind": "procedural"}
    specs["naive_agents_on_learned_lanes"] = {"kind": "naive", "checkpoint": str(weights), "steps": 1}
    return specs


def evaluate_variant(spec: Spec, reference: list[TileTensors], worlds: int, tiles_per_world: int,
                     seed: int, threads: int = 2) -> dict[str, float]:
    """Metrics of one variant (see :func:`variant_specs`)."""
    from vectorworld.generation import make_generator
    from vectorworld.generation.learned import LearnedTileGenerator

    if spec["kind"] == "procedural":
        return evaluate_generator(make_generator("procedural"), reference, worlds, tiles_per_world, seed,
                                  threads)
    kwargs = {k: v for k, v in spec.items() if k != "kind"}
    generator = LearnedTileGenerator(**kwargs)  # type: ignore[arg-type]
    if spec["kind"] == "naive":
        grown = grow_worlds(generator, worlds, tiles_per_world, seed)
        return naive_baseline_metrics(grown, reference, seed)
    return evaluate_generator(generator, reference, worlds, tiles_per_world, seed, threads)


def _worker(args: tuple[Spec, str, int, int, int, int]) -> dict[str, float]:
    spec, reference_path, worlds, tiles_per_world, seed, threads = args
    return evaluate_variant(spec, reference_tiles(reference_path), worlds, tiles_per_world, seed, threads)


def generator_report(weights: str | Path, reference: str | Path, ablations: str | Path | None = None,
                     worlds: int = 10, tiles_per_world: int = 12, seed: int = 1000, k_steps: int = 4,
                     workers: int = 1, include_procedural: bool = True, threads: int = 2
                     ) -> dict[str, dict[str, float]]:
    """Metrics per variant name, variants evaluated in ``workers`` processes, torch on ``threads``."""
    specs = variant_specs(weights, ablations, k_steps, include_procedural)
    jobs = [(spec, str(reference), worlds, tiles_per_world, seed, threads) for spec in specs.values()]
    if workers <= 1:
        results = [_worker(job) for job in jobs]
    else:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(workers) as pool:
            results = pool.map(_worker, jobs, chunksize=1)
    return dict(zip(specs, results, strict=True))
