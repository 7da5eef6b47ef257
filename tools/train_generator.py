"""Training recipe of the shipped learned tile generator (Bézier gated VAE + EGR-DiT, one-step MeanFlow).

One resumable run (``vectorworld.train.generator_run``): the motion-aware gated VAE, then the EGR-DiT
with interval-conditioned MeanFlow on its frozen latents. Every ``--checkpoint-minutes`` the whole state
goes to ``<out>/run_state.pt``; run the same command with ``--resume`` to continue (a killed run loses at
most that much). Every ``--eval-every`` DiT steps the model outpaints ``--eval-tiles`` held-out tiles at one
step and the validity filter judges them: the curve, in ``<out>/train_log.json`` and ``<out>/curve.png``;
the model of the last curve point is ``<out>/latest/`` (evaluate it while the run goes on).

The corpus: procedural worlds grown tile by tile (``vectorworld.train.tile_corpus``), either built here
(``--build-worlds``) or loaded (``--corpus``, a corpus .npz / folder / dataset-build folder); the held-out
tiles come from other seeds (``--heldout``, or built from seed 50000). Uses CUDA when present (``--device
auto``), never needs it.

Exact recipe of the shipped checkpoint (``vectorworld/generation/learned/weights/``; its config.json
"metadata" holds the run config, corpus size, steps, wall time and the curve):

    python -c "from vectorworld.train.tile_corpus import *; \
        save_corpus('runs/gen/data/corpus.npz', build_corpus(CorpusConfig(worlds=400, seed=0, context='halves'))); \
        save_corpus('runs/gen/data/heldout.npz', build_corpus(CorpusConfig(worlds=20, seed=50000, context='halves')))"
    nice python tools/train_generator.py --corpus runs/gen/data/corpus.npz \
        --heldout runs/gen/data/heldout.npz --out runs/gen/run --threads 1 --max-minutes 50
    # ... later, the same command with --resume continues it

Junction fine-tune (issue 15, candidate, not shipped): a copy of a finished run's ``run_state.pt`` (DiT
step 12000) resumed with ``--dit-steps 17000 --junction-weight 0.035`` for ~1100 steps, then from that
state with ``--junction-weight 0.1``; the curve point at DiT step 14250 measured best (eval generator, 200
held-out tiles, one step: fallback 8%, against 38.5% for the run it started from).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from vectorworld.generation.learned.egr_dit import DiTConfig  # noqa: E402
from vectorworld.generation.learned.meanflow import PAIRS, TARGETS, MeanFlowConfig  # noqa: E402
from vectorworld.generation.learned.outpaint import OutpaintModel  # noqa: E402
from vectorworld.generation.learned.tile_tensors import TileTensors  # noqa: E402
from vectorworld.generation.learned.vae import VAEConfig  # noqa: E402
from vectorworld.train.generator_run import RunConfig, run_training, write_record  # noqa: E402
from vectorworld.train.tile_corpus import CorpusConfig, build_corpus, save_corpus  # noqa: E402
from vectorworld.train.tile_data import concat_tiles, load_training_tiles  # noqa: E402

VARIANTS = {"main": {}, "nogate": {"edge_gating": False}, "fm": {"flow_matching_only": True}}
"""The shipped model and its ablations (edge gating off; plain flow matching)."""


def plot_curve(curve: list[dict[str, float]], history: list[tuple[int, dict[str, float]]], path: Path
               ) -> Path | None:
    """Held-out validity / lanes per tile and the logged DiT loss against DiT steps, to PNG (None without
    matplotlib or curve points)."""
    if not curve:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    steps = [p["dit_step"] for p in curve]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    ax1.plot(steps, [p["valid_share"] for p in curve], "o-", color="C0")
    ax1.set_ylabel("valid share (1 step, 2 candidates)", color="C0")
    ax1.set_xlabel("DiT step")
    ax1.set_ylim(0, 1.02)
    ax1.set_title("held-out tiles")
    twin = ax1.twinx()
    twin.plot(steps, [p["lanes_per_tile"] for p in curve], "s--", color="C1")
    twin.set_ylabel("new lanes kept per tile", color="C1")
    twin.set_ylim(bottom=0)
    if history:
        ax2.plot([h[0] for h in history], [h[1]["loss"] for h in history], "-", color="C2")
    ax2.set_xlabel("DiT step")
    ax2.set_title("DiT MeanFlow loss (adaptive-weighted)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "generator")
    parser.add_argument("--corpus", type=Path, action="append", default=None,
                        help="training tiles (corpus .npz / folder / dataset); repeat to train on several")
    parser.add_argument("--heldout", type=Path, default=None, help="held-out tiles for the curve")
    parser.add_argument("--build-worlds", type=int, default=400, help="procedural worlds when no --corpus")
    parser.add_argument("--resume", action="store_true", help="continue <out>/run_state.pt")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="main")
    parser.add_argument("--init-from", type=Path, default=None,
                        help="fine-tune this generator checkpoint folder (its VAE and DiT configs; no VAE stage)")
    parser.add_argument("--vae-from", type=Path, default=None,
                        help="use this generator checkpoint folder's VAE (no VAE stage); train a new DiT")
    parser.add_argument("--dit-lr", type=float, default=RunConfig.dit_lr, help="peak learning rate of the DiT stage")
    parser.add_argument("--dit-ema", type=float, default=RunConfig.dit_ema,
                        help="decay of the DiT weight average the run exports (0 = none)")
    parser.add_argument("--flow-target", choices=TARGETS, default=MeanFlowConfig.target,
                        help="target of an interval r < t: the JVP identity or two half-steps of the network")
    parser.add_argument("--flow-pairs", choices=PAIRS, default=MeanFlowConfig.pairs,
                        help="distribution of the interval pairs (uniform covers the midpoint target's halves)")
    parser.add_argument("--one-step-ratio", type=float, default=MeanFlowConfig.one_step_ratio,
                        help="share of the DiT batch on long intervals (0, t), t in [0.5, 1]")
    parser.add_argument("--exact-one-step-ratio", type=float, default=MeanFlowConfig.exact_one_step_ratio,
                        help="share of the DiT batch on the one-step interval (0, 1) itself")
    parser.add_argument("--vae-steps", type=int, default=3000)
    parser.add_argument("--dit-steps", type=int, default=40000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--dit-dim", type=int, default=96)
    parser.add_argument("--dit-depth", type=int, default=4)
    parser.add_argument("--road-plan", action="store_true",
                        help="condition the DiT on where new roads cross the tile's sides (DiTConfig.border_hints); "
                             "held-out checks give each tile its own plan, inference draws one (road_plan.py)")
    parser.add_argument("--slot-ranks", action="store_true",
                        help="embed each free token's rank among the free tokens (DiTConfig.slot_ranks)")
    parser.add_argument("--decode-weight", type=float, default=RunConfig.decode_weight,
                        help="weight of the one-step decode loss (0 = MeanFlow alone)")
    parser.add_argument("--junction-weight", type=float, default=RunConfig.junction_weight,
                        help="weight of the one-step junction loss (m; 0 = off)")
    parser.add_argument("--straight-weight", type=float, default=RunConfig.straight_weight,
                        help="weight of the one-step straightness loss (0 = off)")
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--eval-tiles", type=int, default=32)
    parser.add_argument("--checkpoint-minutes", type=float, default=3.0)
    parser.add_argument("--max-minutes", type=float, default=150.0, help="stop (and checkpoint) after this")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto (cuda when available)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (CPU)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.corpus is not None:
        tiles = concat_tiles([load_training_tiles(path) for path in args.corpus])
    else:
        tiles = build_corpus(CorpusConfig(worlds=args.build_worlds, seed=args.seed))
        save_corpus(args.out / "corpus.npz", tiles)
    if args.heldout is not None:
        held = load_training_tiles(args.heldout)
    else:
        held = build_corpus(CorpusConfig(worlds=20, seed=50_000))
    heldout = [TileTensors(**{k: v[i] for k, v in held.items()}) for i in range(len(held["lane_valid"]))]
    variant = VARIANTS[args.variant]
    vae = VAEConfig()
    dit = DiTConfig(dim=args.dit_dim, depth=args.dit_depth, edge_gating=variant.get("edge_gating", True),
                    slot_ranks=args.slot_ranks, border_hints=args.road_plan)
    if args.init_from is not None:  # a fine-tune keeps the checkpoint's architecture
        vae, dit, _ = OutpaintModel.configs(args.init_from)
    elif args.vae_from is not None:  # its VAE, this run's DiT
        vae = OutpaintModel.configs(args.vae_from)[0]
    config = RunConfig(vae=vae, dit=dit,
                       flow=MeanFlowConfig(flow_matching_only=variant.get("flow_matching_only", False),
                                           target=args.flow_target, pairs=args.flow_pairs,
                                           one_step_ratio=args.one_step_ratio,
                                           exact_one_step_ratio=args.exact_one_step_ratio),
                       vae_steps=args.vae_steps, dit_steps=args.dit_steps, batch_size=args.batch_size,
                       decode_weight=args.decode_weight, junction_weight=args.junction_weight,
                       straight_weight=args.straight_weight,
                       dit_lr=args.dit_lr, init_from=str(args.init_from or ""),
                       vae_from=str(args.vae_from or ""), dit_ema=args.dit_ema,
                       seed=args.seed, eval_every=args.eval_every, eval_tiles=args.eval_tiles,
                       checkpoint_every_s=args.checkpoint_minutes * 60.0, device=device)

    def log(stage: str, step: int, figures: dict[str, float]) -> None:
        shown = {k: round(v, 4) for k, v in figures.items()}
        print(f"[{time.perf_counter() - start:7.0f} s] {stage} {step} {shown}", flush=True)

    print(f"corpus {len(tiles['lane_valid'])} tiles, held-out {len(heldout)}, device {device}, "
          f"threads {torch.get_num_threads()}", flush=True)
    run = run_training(tiles, heldout, config, args.out, resume=args.resume,
                       max_seconds=args.max_minutes * 60.0 - (time.perf_counter() - start), log=log)
    write_record(run, " ".join(sys.argv[1:]))
    png = plot_curve(run.state.curve, [] if run.dit_trainer is None else run.dit_trainer.history,
                     args.out / "curve.png")
    dit_steps = 0 if run.dit_trainer is None else run.dit_trainer.step
    print(f"stopped at stage {run.state.stage}: vae {run.vae_trainer.step} / dit {dit_steps} steps, "
          f"{run.state.wall_s:.0f} s of training; curve {png}", flush=True)


if __name__ == "__main__":
    main()
