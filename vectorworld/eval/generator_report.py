"""The generator comparison of DESIGN §8: learned variants, the procedural generator and a naive baseline.

Variants (each grows the same worlds, same seeds): MeanFlow 1 step and K steps (shipped checkpoint),
the flow-matching baseline (``fm`` checkpoint, Euler, 1 and K steps), MeanFlow without edge gating
(``nogate`` checkpoint, 1 step), the procedural generator itself, and the naive baseline (random agent
placement on the lanes the shipped model generated). ``steps`` restricts the learned variants to one step
count (then the no-gating variant and the naive baseline use that count too). Variants can run in parallel
processes; each one limits torch to one thread (the learned generator's inference setting), so ``tile_ms``
is the one-thread latency as long as cores are not oversubscribed.

The reference (held-out) tiles are a corpus or dataset on disk (:func:`reference_tiles`) or, by default, a
procedural corpus grown from :data:`REFERENCE_SEED` (:func:`default_reference`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from vectorworld.errors import ConfigError
from vectorworld.eval.generator_metrics import evaluate_generator, grow_worlds, naive_baseline_metrics
from vectorworld.generation.learned.tile_tensors import TileTensors

Spec = dict[str, object]
Report = dict[str, dict[str, float]]
Progress = Callable[[str, dict[str, float], int, int], None]
"""Called after each variant: (variant name, its metrics, variants done, variants in all)."""

DEFAULT_WORLDS = 10
DEFAULT_TILES_PER_WORLD = 12
REFERENCE_SEED = 20_000
"""Seed of the default procedural reference corpus (the shipped checkpoint's corpora used seeds 0-299 and 11)."""
REFERENCE_WORLDS = 10

COLUMNS = ("tiles", "tile_ms_p50", "tile_ms_p95", "tile_cpu_ms_p50", "tile_cpu_ms_p95", "fallback_rate",
           "continued_ports_rate", "raw_epd_m_mean", "raw_epd_m_p95", "raw_edge_epd_m_mean", "raw_edge_links",
           "epd_m_mean", "epd_m_p95", "dangling_rate", "init_overlap_rate", "offlane_rate", "agents_per_tile",
           "jsd_nn_dist_m", "jsd_lateral_m", "jsd_heading_rad", "jsd_length_m", "jsd_width_m",
           "jsd_speed_mps", "lane_frechet", "lane_frechet_sd", "lanes_mean", "reference_lanes_mean",
           "lane_length_m_mean", "reference_lane_length_m_mean", "curvature_mean", "reference_curvature_mean",
           "degree_mean", "reference_degree_mean", "components_mean", "reference_components_mean",
           "straight_lane_share", "reference_straight_lane_share",
           "learned_only_tiles", "learned_only_epd_m_mean",
           "learned_only_dangling_rate", "learned_only_init_overlap_rate", "learned_only_offlane_rate",
           "learned_only_agents_per_tile", "learned_only_tile_ms_p50", "learned_only_lane_frechet")
"""Rows of the human-readable table (:func:`format_table`)."""


def reference_tiles(path: str | Path) -> list[TileTensors]:
    """Reference crops from a corpus ``.npz``, a folder with ``corpus.npz`` or a ``vectorworld dataset build``
    folder (:func:`vectorworld.train.tile_data.load_training_tiles`, capacity 40 lanes / 24 agents)."""
    from vectorworld.train.tile_data import load_training_tiles

    data = load_training_tiles(path)
    return [TileTensors(**{k: v[i] for k, v in data.items()}) for i in range(len(data["lane_valid"]))]


def default_reference(worlds: int = REFERENCE_WORLDS, seed: int = REFERENCE_SEED) -> list[TileTensors]:
    """A held-out procedural reference corpus (``worlds`` worlds of 12 tiles, grown from ``seed``)."""
    from vectorworld.train.tile_corpus import CorpusConfig, build_corpus

    data = build_corpus(CorpusConfig(worlds=worlds, seed=seed))
    return [TileTensors(**{k: v[i] for k, v in data.items()}) for i in range(len(data["lane_valid"]))]


def plan_tiles(tiles: int | None = None, worlds: int | None = None,
               tiles_per_world: int | None = None) -> tuple[int, int]:
    """(worlds, tiles_per_world) of an evaluation. A world of T tiles yields T - 1 evaluated (outpainted)
    tiles: its first tile is not an outpainting call.

    Without ``tiles``: the given values, else 10 worlds x 12 tiles (110 evaluated tiles). With ``tiles``
    N (the total to evaluate; pass it on as ``max_tiles`` so that exactly N are kept): with ``worlds`` W,
    each world grows ceil(N / W) + 1 tiles; otherwise W = ceil(N / (tiles_per_world - 1)) worlds (default
    tiles_per_world 12, i.e. up to 11 evaluated tiles per world) and each grows ceil(N / W) + 1 tiles.
    Giving all three is a ConfigError.
    """
    if tiles is None:
        return worlds or DEFAULT_WORLDS, tiles_per_world or DEFAULT_TILES_PER_WORLD
    if tiles < 1:
        raise ConfigError(f"tiles must be >= 1, got {tiles}")
    if worlds is not None and tiles_per_world is not None:
        raise ConfigError("give the tile count with at most one of worlds / tiles per world")
    if worlds is None:
        per_world = (tiles_per_world or DEFAULT_TILES_PER_WORLD) - 1
        if per_world < 1:
            raise ConfigError(f"tiles per world must be >= 2, got {tiles_per_world}")
        worlds = math.ceil(tiles / per_world)
    worlds = max(1, min(worlds, tiles))
    return worlds, math.ceil(tiles / worlds) + 1


def variant_specs(weights: str | Path, ablations: str | Path | None = None, k_steps: int = 4,
                  include_procedural: bool = True, steps: int | None = None) -> dict[str, Spec]:
    """Generator settings per variant name (``kind`` learned / procedural / naive).

    Learned step counts are (1, ``k_steps``), or only ``steps`` when given; the no-gating ablation and the
    naive baseline use the smallest of them.
    """
    if steps is not None and steps < 1:
        raise ConfigError(f"steps must be >= 1, got {steps}")
    counts = sorted({1, k_steps} if steps is None else {steps})
    specs: dict[str, Spec] = {f"meanflow_{n}step": {"kind": "learned", "checkpoint": str(weights), "steps": n}
                              for n in counts}
    if ablations is not None:
        ablations = Path(ablations)
        if (ablations / "fm").is_dir():
            for n in counts:
                specs[f"flow_matching_{n}step"] = {"kind": "learned", "checkpoint": str(ablations / "fm"),
                                                   "sampler": "flow_matching", "steps": n}
        if (ablations / "nogate").is_dir():
            specs[f"meanflow_{counts[0]}step_no_edge_gating"] = {
                "kind": "learned", "checkpoint": str(ablations / "nogate"), "steps": counts[0]}
    if include_procedural:
        specs["procedural"] = {"kind": "procedural"}
    specs["naive_agents_on_learned_lanes"] = {"kind": "naive", "checkpoint": str(weights), "steps": counts[0]}
    return specs


def evaluate_variant(spec: Spec, reference: list[TileTensors], worlds: int, tiles_per_world: int,
                     seed: int, threads: int = 1, max_tiles: int | None = None, growth: str = "ends"
                     ) -> dict[str, float]:
    """Metrics of one variant (see :func:`variant_specs`); ``max_tiles`` caps the evaluated tiles, ``growth``
    says how worlds grow (:func:`~vectorworld.eval.generator_metrics.grow_worlds`)."""
    from vectorworld.generation import make_generator
    from vectorworld.generation.learned.generator import LearnedTileGenerator

    if spec["kind"] == "procedural":
        return evaluate_generator(make_generator("procedural"), reference, worlds, tiles_per_world, seed,
                                  threads, max_tiles, growth)
    kwargs = {k: v for k, v in spec.items() if k != "kind"}
    generator = LearnedTileGenerator(**kwargs)  # type: ignore[arg-type]
    if spec["kind"] == "naive":
        grown = grow_worlds(generator, worlds, tiles_per_world, seed, max_tiles, growth)
        return naive_baseline_metrics(grown, reference, seed)
    return evaluate_generator(generator, reference, worlds, tiles_per_world, seed, threads, max_tiles, growth)


def _worker(args: tuple[Spec, list[TileTensors], int, int, int, int, int | None, str]) -> dict[str, float]:
    return evaluate_variant(*args)


def generator_report(weights: str | Path, reference: str | Path | list[TileTensors] | None = None,
                     ablations: str | Path | None = None, worlds: int = DEFAULT_WORLDS,
                     tiles_per_world: int = DEFAULT_TILES_PER_WORLD, seed: int = 1000, k_steps: int = 4,
                     workers: int = 1, include_procedural: bool = True, threads: int = 1,
                     steps: int | None = None, max_tiles: int | None = None,
                     progress: Progress | None = None, growth: str = "ends") -> Report:
    """Metrics per variant name, variants evaluated in ``workers`` processes, torch on ``threads``.

    ``reference``: held-out tiles (a path for :func:`reference_tiles`, the tiles themselves, or None for
    :func:`default_reference`); ``steps``: only learned variants of that step count; ``max_tiles``: cap on
    the evaluated tiles per variant; ``progress`` is called after each variant, in report order; ``growth``:
    how the worlds grow (:func:`~vectorworld.eval.generator_metrics.grow_worlds`).
    """
    specs = variant_specs(weights, ablations, k_steps, include_procedural, steps)
    if reference is None:
        tiles = default_reference()
    elif isinstance(reference, list):
        tiles = reference
    else:
        tiles = reference_tiles(reference)
    jobs = [(spec, tiles, worlds, tiles_per_world, seed, threads, max_tiles, growth) for spec in specs.values()]
    report: Report = {}

    def collect(results: object) -> Report:
        for name, metrics in zip(specs, results, strict=True):  # type: ignore[call-overload]
            report[name] = metrics
            if progress is not None:
                progress(name, metrics, len(report), len(specs))
        return report

    if workers <= 1:
        return collect(_worker(job) for job in jobs)
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(workers) as pool:
        return collect(pool.imap(_worker, jobs, chunksize=1))


def format_table(report: Report, columns: tuple[str, ...] = COLUMNS) -> str:
    """The report as a plain-text table: one row per metric, one column per variant (nan = not measured)."""
    names = list(report)
    widths = [max(len(name), 10) + 2 for name in names]
    first = max(len(c) for c in columns) + 2
    lines = ["metric".ljust(first) + "".join(name.rjust(w) for name, w in zip(names, widths, strict=True))]
    for col in columns:
        row = [report[name].get(col, float("nan")) for name in names]
        lines.append(col.ljust(first) + "".join(f"{v:{w}.4f}" for v, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def json_ready(report: Report) -> Report:
    """The report with non-finite values (metrics that could not be measured) replaced by None, so that
    strict JSON readers (``jq``) accept it."""
    return {name: {k: (v if math.isfinite(v) else None) for k, v in metrics.items()}  # type: ignore[misc]
            for name, metrics in report.items()}
