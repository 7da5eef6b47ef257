"""What the MeanFlow target of a generator checkpoint is made of, per time interval.

    python tools/meanflow_targets.py --weights runs/gen/run/latest --tiles runs/gen/data/heldout.npz

For each (r, t) the training loss would draw, on batches of held-out tiles (frontier tokens only, per
latent dimension): the loss's error |u - u_tgt|^2 (mean and median over tiles), the target's JVP term
|d/dt u|^2 (d/dt u = v . d_z u + d_t u, the total derivative along the path), its part |v . d_z u|^2 (how
fast the network's output moves with z along v) and, for scale, |v|^2. The target is u_tgt = v - (t - r)
d/dt u: at r = t plain flow matching (the JVP is not used), at r < t the network's own JVP. A JVP term
far above |v|^2 means the target is made by the network's own sensitivity, not by the data.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

INTERVALS = ((0.3, 0.3), (0.9, 0.9), (0.5, 0.7), (0.0, 0.6), (0.0, 1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", type=Path, required=True, help="generator checkpoint folder")
    parser.add_argument("--tiles", type=Path, required=True, help="held-out tiles (corpus .npz or folder)")
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import numpy as np
    import torch

    from vectorworld.generation.learned.meanflow import noisy_latents
    from vectorworld.generation.learned.outpaint import OutpaintModel
    from vectorworld.train.generator_training import sample_batch
    from vectorworld.train.tile_data import load_training_tiles

    torch.set_num_threads(1)
    model = OutpaintModel.load(args.weights).eval()
    tiles = load_training_tiles(args.tiles)
    rng, gen = np.random.default_rng(args.seed), torch.Generator().manual_seed(args.seed)
    print(f"{'r':>4} {'t':>4} {'error mean':>11} {'median':>8} {'|du/dt|^2':>10} {'|v.dz u|^2':>11} {'|v|^2':>6}")
    for r0, t0 in INTERVALS:
        errors, parts = [], []
        for _ in range(args.batches):
            batch = sample_batch(tiles, args.batch_size, rng, "cpu", 0.0)
            with torch.no_grad():
                x = model.latents(batch)
                cond = model.cond_mask(batch)

                def fn(z: torch.Tensor, r: torch.Tensor, t: torch.Tensor,
                       batch: dict = batch, cond: torch.Tensor = cond) -> torch.Tensor:
                    return model.dit(z, r, t, cond, batch["edges"], hints=batch["lane_hint"])

                r, t = torch.full((len(x),), r0), torch.full((len(x),), t0)
                z, v = noisy_latents(x, torch.randn(x.shape, generator=gen), t, cond)
                zero_z, zero_s, one_s = torch.zeros_like(v), torch.zeros_like(r), torch.ones_like(t)
                u, along_z = torch.func.jvp(fn, (z, r, t), (v, zero_s, zero_s))
                _, along_t = torch.func.jvp(fn, (z, r, t), (zero_z, zero_s, one_s))
            free = (~cond)[..., None].to(x.dtype)
            count = free.sum((1, 2)) * x.shape[-1]
            target = v - (t - r)[:, None, None] * (along_z + along_t)
            errors.append(((((u - target) ** 2) * free).sum((1, 2)) / count.clamp(min=1.0)).numpy())
            parts.append([float((a ** 2 * free).sum() / count.sum()) for a in (along_z + along_t, along_z, v)])
        err, (total, jz, vv) = np.concatenate(errors), np.mean(parts, 0)
        print(f"{r0:4.1f} {t0:4.1f} {err.mean():11.2f} {np.median(err):8.2f} {total:10.2f} {jz:11.2f} {vv:6.2f}")


if __name__ == "__main__":
    main()
