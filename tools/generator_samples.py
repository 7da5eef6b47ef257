"""Where a generator checkpoint loses the lanes of held-out tiles, and what its samples look like.

Outpaints held-out ground-truth tiles (their known half as context, the ports as hints) and prints the
lane funnel per tile (:func:`vectorworld.train.generator_run.validity_on_tiles`): frontier lanes in the data,
in the VAE's decode of the tile's own latents, in a sample (decoded, before the filter), kept by the filter,
and the share of tiles with a valid candidate. A gap between data and VAE is the autoencoder's; between VAE
and decoded, the sampler's (too few lanes); between decoded and kept, the lanes the filter prunes, counted
by reason (``pruned_<reason>_per_tile``: duplicate, looped, isolated, spur). ``--png`` draws a grid of
tiles: known lanes grey, the data's new lanes green, the chosen candidate's kept lanes red and the connectors
junction completion added to it blue (arrows: direction of travel).

Usage: python tools/generator_samples.py --reference heldout.npz [--weights DIR] [--steps 1] [--tiles 80]
                                         [--sampler meanflow|flow_matching] [--candidates 2]
                                         [--png samples.png] [--drawn 12]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from vectorworld.generation.learned.outpaint import SAMPLERS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True, help="held-out tiles (corpus .npz / folder / dataset)")
    parser.add_argument("--weights", default=None, help="checkpoint folder (default: the shipped one)")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--sampler", choices=SAMPLERS, default=SAMPLERS[0])
    parser.add_argument("--candidates", type=int, default=2)
    parser.add_argument("--tiles", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--png", type=Path, default=None)
    parser.add_argument("--drawn", type=int, default=12, help="tiles drawn in the PNG (every k-th of --tiles)")
    args = parser.parse_args()

    from vectorworld.eval.generator_report import reference_tiles
    from vectorworld.generation.learned.generator import WEIGHTS_DIR
    from vectorworld.generation.learned.outpaint import OutpaintModel
    from vectorworld.train.generator_run import validity_on_tiles

    torch.set_num_threads(1)
    tiles = reference_tiles(args.reference)[:args.tiles]
    model = OutpaintModel.load(args.weights or WEIGHTS_DIR)
    every = max(len(tiles) // max(args.drawn, 1), 1)
    drawn: list[tuple[object, np.ndarray, np.ndarray]] = []

    def keep_drawing(i: int, tile: object, decoded: dict[str, torch.Tensor], choice: object) -> None:
        if i % every == 0 and len(drawn) < args.drawn:
            keep = choice.check.keep
            drawn.append((tile, choice.lanes[keep], choice.slots[keep] < 0))

    funnel = validity_on_tiles(model, tiles, args.candidates, args.steps, args.seed,
                               keep_drawing if args.png else None, args.sampler)
    print(json.dumps({"weights": str(args.weights or WEIGHTS_DIR), "tiles": len(tiles), "steps": args.steps,
                      "sampler": args.sampler,
                      **{k: round(v, 3) for k, v in funnel.items()}}))
    if args.png:
        print(draw(drawn, args.png))


def draw(drawn: list[tuple[object, np.ndarray, np.ndarray]], path: Path) -> Path:
    """Grid of (tile, kept lanes (n, P, 2), connector (n,) bool): known lanes grey, the data's new lanes
    green, the kept lanes red, the connectors blue."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vectorworld.generation.learned.tile_tensors import HALF_TILE_M

    cols = 4
    rows = max((len(drawn) + cols - 1) // cols, 1)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 4 * rows), squeeze=False)
    for ax in axes.ravel():
        ax.set_axis_off()
    for ax, (tile, lanes, connector) in zip(axes.ravel(), drawn, strict=False):
        for k in np.flatnonzero(tile.lane_valid & tile.lane_cond):
            ax.plot(*tile.lane_points[k].T, color="0.65", lw=1)
        new = np.flatnonzero(tile.lane_valid & ~tile.lane_cond)
        for k in new:
            ax.plot(*tile.lane_points[k].T, color="green", lw=3, alpha=0.35)
        for lane, added in zip(lanes, connector, strict=True):
            color = "blue" if added else "red"
            ax.plot(*lane.T, color=color, lw=1)
            ax.annotate("", lane[-1], lane[-3], arrowprops={"arrowstyle": "->", "color": color})
        ax.set_axis_on()
        ax.set_xlim(-HALF_TILE_M - 2, HALF_TILE_M + 2)
        ax.set_ylim(-HALF_TILE_M - 2, HALF_TILE_M + 2)
        ax.set_aspect("equal")
        ax.set_title(f"data {len(new)} new lanes, kept {len(lanes)} ({int(connector.sum())} connectors)",
                     fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=70)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
