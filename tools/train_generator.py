"""Training recipe of the shipped learned tile generator (VAE + EGR-DiT, MeanFlow), and its ablations.

Stages: (1) a procedural tile corpus (``vectorworld.train.tile_corpus``; built in parallel processes, or
loaded with ``--corpus``), 5% of worlds held out as the reference set; (2) the gated VAE (or taken from a
checkpoint with ``--vae-from``); (3) DiTs on its frozen latents, in parallel processes: ``main`` (MeanFlow,
edge gating: shipped), ``nogate`` (MeanFlow, no edge gating) and ``fm`` (plain flow matching, edge gating),
optionally started from ``--init-dit``. Each stage stops at its step count or its share of
``--max-minutes``. Outputs: ``<out>/<variant>/`` checkpoints and ``<out>/train_log.json``; the corpus,
reference set and ``vae_only/`` go to ``--data-dir``.

Exact recipe of the shipped checkpoint (``vectorworld/generation/learned/weights/``, its config.json "metadata"
repeats it), in two runs because the session had 4 minutes of GPU time and a busy 2-core CPU:

    # 1. one H200, 3.4 minutes: corpus of 300 procedural worlds, VAE, and the three DiT variants
    python tools/train_generator.py --out runs/gpu --data-dir /tmp/gdata --build-worlds 300 \
        --tiles-per-world 12 --workers 15 --vae-steps 20000 --dit-steps 60000 --batch-size 512 \
        --device cuda --max-minutes 3.4
    # 2. CPU, 24 minutes: fine-tune the main DiT with port hints on a fresh corpus (36 worlds, seed 11)
    python -c "from vectorworld.train.tile_corpus import *; save_corpus('runs/gen_cpu2/corpus.npz', \
        build_corpus(CorpusConfig(worlds=36, tiles_per_world=12, seed=11)))"
    python tools/train_generator.py --out runs/gen_hint --data-dir runs/gen_hint/data \
        --corpus runs/gen_cpu2/corpus.npz --vae-from runs/gpu/main --init-dit runs/gpu/main --port-hints \
        --variants main --dit-steps 40000 --batch-size 24 --max-minutes 20 --threads 1

With a real budget, run stage 1 alone with ``--port-hints``, ``--one-step-ratio 0.25`` and ``--max-minutes`` of
an hour or more. Without ``--one-step-ratio`` (the shipped checkpoint) MeanFlow never trains the interval
(r, t) = (0, 1) that one-step sampling queries, and one-step candidates decode almost no lane.

Candidate (not shipped) stage 3, 10 CPU minutes: the same fine-tune from the shipped weights with the one-step
share (one-step fallback 100% -> 62%, 4-step 50% -> 28% on 40 tiles):

    python tools/train_generator.py --out runs/gen_onestep --data-dir runs/gen_onestep/data \
        --corpus runs/gen_cpu2/corpus.npz --vae-from vectorworld/generation/learned/weights \
        --init-dit vectorworld/generation/learned/weights --port-hints --variants main --dit-steps 1200 \
        --batch-size 24 --max-minutes 10 --threads 1 --one-step-ratio 0.25
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vectorworld.generation.learned.egr_dit import DiTConfig  # noqa: E402
from vectorworld.generation.learned.meanflow import MeanFlowConfig  # noqa: E402
from vectorworld.generation.learned.vae import VAEConfig  # noqa: E402
from vectorworld.train.tile_corpus import CorpusConfig, build_corpus, load_corpus, save_corpus  # noqa: E402
from vectorworld.train.tile_data import load_training_tiles  # noqa: E402

VARIANTS = {
    "main": (True, MeanFlowConfig()),
    "nogate": (False, MeanFlowConfig()),
    "fm": (True, MeanFlowConfig(flow_matching_only=True)),
}


def _corpus_part(args: tuple[int, int, int, str]) -> dict[str, np.ndarray]:
    worlds, tiles, seed, generator = args
    try:
        return build_corpus(CorpusConfig(worlds=worlds, tiles_per_world=tiles, seed=seed, generator=generator))
    except Exception as err:  # noqa: BLE001 -- one broken world must not stop the corpus; it is reported
        print(f"world seed {seed} failed: {type(err).__name__}: {err}", flush=True)
        return {}


def build_parallel(worlds: int, tiles: int, workers: int, seed: int, generator: str) -> list[dict[str, np.ndarray]]:
    """Build corpus parts in ``workers`` processes (one world per task, seeds seed + k)."""
    jobs = [(1, tiles, seed + k, generator) for k in range(worlds)]
    if workers <= 1:
        return [_corpus_part(j) for j in jobs]
    with mp.get_context("spawn").Pool(workers) as pool:
        return pool.map(_corpus_part, jobs, chunksize=4)


def _concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    parts = [p for p in parts if len(p.get("lane_valid", ())) > 0]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _train_variant(args: tuple[str, str, dict, dict, str, dict]) -> dict[str, object]:
    """Worker: train one DiT variant on the frozen VAE and save its checkpoint."""
    name, data_dir, train_kw, dit_kw, out, meta = args
    import torch

    from vectorworld.generation.learned.outpaint import OutpaintModel
    from vectorworld.train.generator_training import TrainConfig, train_dit

    torch.set_num_threads(int(meta.get("threads", 2)))
    gating, flow = VARIANTS[name]
    flow = replace(flow, one_step_ratio=float(meta.get("one_step_ratio", 0.0)))
    vae = OutpaintModel.load(Path(data_dir) / "vae_only").vae
    tiles = load_corpus(Path(data_dir) / "corpus.npz")
    log: list[tuple[int, dict[str, float]]] = []
    init = None
    if meta.get("init_dit"):
        init = OutpaintModel.load(meta["init_dit"]).dit.state_dict()
    model, result = train_dit(vae, tiles, DiTConfig(**{**dit_kw, "edge_gating": gating}), TrainConfig(**train_kw),
                              flow, log=lambda s, p: (log.append((s, p)), print(name, s, p, flush=True)),
                              init=init)
    model.save(Path(out) / name, metadata={**meta, "variant": name, "dit_train": train_kw,
                                            "flow": flow.__dict__, "dit_steps_done": result.steps_done,
                                            "dit_seconds": result.seconds})
    return {"variant": name, "steps": result.steps_done, "seconds": result.seconds, "history": log}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "generator")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="train on these tiles instead of building a corpus: a corpus .npz, a folder with "
                        "corpus.npz, or a `vectorworld dataset build` folder (real WOMD/nuPlan tiles)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where corpus.npz, reference.npz and vae_only/ go (default: --out)")
    parser.add_argument("--build-worlds", type=int, default=400)
    parser.add_argument("--tiles-per-world", type=int, default=12)
    parser.add_argument("--generator", default="procedural")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--vae-steps", type=int, default=6000)
    parser.add_argument("--dit-steps", type=int, default=12000)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-minutes", type=float, default=7.5)
    parser.add_argument("--variants", default="main,nogate,fm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dit-dim", type=int, default=96)
    parser.add_argument("--dit-depth", type=int, default=4)
    parser.add_argument("--vae-from", type=Path, default=None, help="take the VAE from this checkpoint")
    parser.add_argument("--init-dit", type=Path, default=None, help="start the DiTs from this checkpoint")
    parser.add_argument("--port-hints", action="store_true", help="condition lane tokens on port hints")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per DiT process")
    parser.add_argument("--one-step-ratio", type=float, default=0.0,
                        help="share of MeanFlow pairs at long intervals r = 0, t in [0.5, 1] (the one-step map)")
    args = parser.parse_args()

    import torch

    from vectorworld.train.generator_training import TrainConfig, train_vae

    start = time.perf_counter()
    budget_s = args.max_minutes * 60.0
    args.out.mkdir(parents=True, exist_ok=True)
    data_dir = args.data_dir or args.out
    data_dir.mkdir(parents=True, exist_ok=True)
    if args.corpus is not None:
        tiles = load_training_tiles(args.corpus)
        reference = None
    else:
        parts = build_parallel(args.build_worlds, args.tiles_per_world, args.workers, args.seed, args.generator)
        held = max(1, len(parts) // 20)
        reference = _concat(parts[:held])
        tiles = _concat(parts[held:])
        save_corpus(data_dir / "reference.npz", reference)
    save_corpus(data_dir / "corpus.npz", tiles)
    corpus_s = time.perf_counter() - start
    print(f"corpus: {len(tiles['lane_valid'])} tiles in {corpus_s:.0f} s", flush=True)

    remaining = budget_s - corpus_s
    from vectorworld.generation.learned.outpaint import OutpaintModel
    from vectorworld.train.generator_training import TrainResult

    vae_train = TrainConfig(steps=args.vae_steps, batch_size=args.batch_size, lr=2e-3, warmup_steps=200,
                            seed=args.seed, device=args.device, log_every=100, max_seconds=0.3 * remaining)
    if args.vae_from is not None:
        vae = OutpaintModel.load(args.vae_from).vae
        vae_config = vae.config
        vae_result = TrainResult()
    else:
        vae_config = VAEConfig()
        torch.set_num_threads(min(8, torch.get_num_threads()))
        vae, vae_result = train_vae(tiles, vae_config, vae_train, log=lambda s, p: print(
            "vae", s, {k: round(v, 4) for k, v in p.items()}, flush=True))
    holder = OutpaintModel(vae_config, DiTConfig(latent=vae_config.latent, max_lanes=vae_config.max_lanes,
                                                 max_agents=vae_config.max_agents, depth=1, dim=32))
    holder.vae.load_state_dict(vae.state_dict())
    holder.save(data_dir / "vae_only", metadata={"vae_train": vae_train.to_dict(),
                                                 "vae_from": str(args.vae_from)})

    remaining = budget_s - (time.perf_counter() - start) - 12.0
    dit_kw = {"latent": vae_config.latent, "max_lanes": vae_config.max_lanes, "max_agents": vae_config.max_agents,
              "dim": args.dit_dim, "depth": args.dit_depth, "port_hints": args.port_hints}
    dit_train = replace(vae_train, steps=args.dit_steps, lr=1e-3, max_seconds=max(30.0, remaining),
                        seed=args.seed + 7).to_dict()
    meta = {"recipe": " ".join(sys.argv[1:]), "corpus_tiles": int(len(tiles["lane_valid"])),
            "vae_train": vae_train.to_dict(), "vae_steps_done": vae_result.steps_done,
            "vae_final": vae_result.history[-1][1] if vae_result.history else {}}
    meta["threads"] = args.threads
    meta["one_step_ratio"] = args.one_step_ratio
    init = None if args.init_dit is None else str(args.init_dit)
    jobs = [(name, str(data_dir), dit_train, dit_kw, str(args.out), {**meta, "init_dit": init})
            for name in args.variants.split(",")]
    if len(jobs) == 1:
        results = [_train_variant(jobs[0])]
    else:
        with mp.get_context("spawn").Pool(len(jobs)) as pool:
            results = pool.map(_train_variant, jobs)
    log = {"corpus_seconds": corpus_s, "vae": vae_result.history, "vae_seconds": vae_result.seconds,
           "dits": results, "total_seconds": time.perf_counter() - start,
           "reference_tiles": 0 if reference is None else int(len(reference["lane_valid"]))}
    (args.out / "train_log.json").write_text(json.dumps(log, indent=1, default=float))
    for r in results:
        last = r["history"][-1][1] if r["history"] else {}
        print(f"dit {r['variant']}: {r['steps']} steps in {r['seconds']:.0f} s, last {last}", flush=True)
    print(f"total {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
