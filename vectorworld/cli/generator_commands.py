"""CLI commands of the learned tile generator: ``train vae``, ``train dit`` and ``eval generator``.

Thin wrappers over :mod:`vectorworld.train.generator_training`, :mod:`vectorworld.train.tile_corpus` and
:mod:`vectorworld.eval.generator_report`. The full recipe of the shipped checkpoint is
``tools/train_generator.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from vectorworld.cli.groups import bad_input, eval_app, train_app
from vectorworld.errors import VectorWorldError


def _corpus(corpus: Path | None, worlds: int, seed: int) -> dict:
    from vectorworld.train.tile_corpus import CorpusConfig, build_corpus, load_corpus

    if corpus is not None:
        return load_corpus(corpus)
    return build_corpus(CorpusConfig(worlds=worlds, seed=seed))


def register(app: typer.Typer) -> None:
    """Add ``vae`` and ``dit`` to the ``train`` group and ``generator`` to the ``eval`` group."""

    @train_app.command("vae")
    def train_vae_cmd(
        out: Path = typer.Option(Path("runs/generator/vae_only"), "--out", help="Checkpoint folder."),
        corpus: Path | None = typer.Option(None, "--corpus", help="Tile corpus .npz (else built)."),
        worlds: int = typer.Option(20, "--worlds", min=1, help="Procedural worlds if building a corpus."),
        steps: int = typer.Option(2000, "--steps", min=1),
        batch_size: int = typer.Option(64, "--batch-size", min=1),
        device: str = typer.Option("cpu", "--device"),
        seed: int = typer.Option(0, "--seed"),
    ) -> None:
        """Train the motion-aware gated VAE on a procedural tile corpus."""
        from vectorworld.generation.egr_dit import DiTConfig
        from vectorworld.generation.outpaint import OutpaintModel
        from vectorworld.generation.vae import VAEConfig
        from vectorworld.train.generator_training import TrainConfig, train_vae

        try:
            tiles = _corpus(corpus, worlds, seed)
            config = VAEConfig()
            train = TrainConfig(steps=steps, batch_size=batch_size, device=device, seed=seed)
            vae, result = train_vae(tiles, config, train,
                                    log=lambda s, p: typer.echo(json.dumps({"step": s, **p})))
            holder = OutpaintModel(config, DiTConfig(latent=config.latent, max_lanes=config.max_lanes,
                                                     max_agents=config.max_agents, depth=1, dim=32))
            holder.vae.load_state_dict(vae.state_dict())
            holder.save(out, metadata={"vae_train": train.to_dict()})
        except VectorWorldError as err:
            raise bad_input(err) from err
        typer.echo(json.dumps({"out": str(out), "steps": result.steps_done, "seconds": result.seconds}))

    @train_app.command("dit")
    def train_dit_cmd(
        vae: Path = typer.Option(Path("runs/generator/vae_only"), "--vae", help="Checkpoint with the VAE."),
        out: Path = typer.Option(Path("runs/generator/main"), "--out", help="Checkpoint folder."),
        corpus: Path | None = typer.Option(None, "--corpus", help="Tile corpus .npz (else built)."),
        worlds: int = typer.Option(20, "--worlds", min=1),
        steps: int = typer.Option(4000, "--steps", min=1),
        batch_size: int = typer.Option(64, "--batch-size", min=1),
        edge_gating: bool = typer.Option(True, "--edge-gating/--no-edge-gating"),
        flow_matching: bool = typer.Option(False, "--flow-matching", help="Plain FM baseline (r = t)."),
        device: str = typer.Option("cpu", "--device"),
        seed: int = typer.Option(0, "--seed"),
    ) -> None:
        """Train the EGR-DiT with MeanFlow (or the flow-matching baseline) on the frozen VAE's latents."""
        from vectorworld.generation.egr_dit import DiTConfig
        from vectorworld.generation.meanflow import MeanFlowConfig
        from vectorworld.generation.outpaint import OutpaintModel
        from vectorworld.train.generator_training import TrainConfig, train_dit

        try:
            vae_model = OutpaintModel.load(vae).vae
            tiles = _corpus(corpus, worlds, seed)
            cfg = vae_model.config
            dit_config = DiTConfig(latent=cfg.latent, max_lanes=cfg.max_lanes, max_agents=cfg.max_agents,
                                   edge_gating=edge_gating)
            train = TrainConfig(steps=steps, batch_size=batch_size, device=device, seed=seed)
            model, result = train_dit(vae_model, tiles, dit_config, train,
                                      MeanFlowConfig(flow_matching_only=flow_matching),
                                      log=lambda s, p: typer.echo(json.dumps({"step": s, **p})))
            model.save(out, metadata={"dit_train": train.to_dict(), "flow_matching": flow_matching})
        except VectorWorldError as err:
            raise bad_input(err) from err
        typer.echo(json.dumps({"out": str(out), "steps": result.steps_done, "seconds": result.seconds}))

    @eval_app.command("generator")
    def eval_generator_cmd(
        reference: Path = typer.Option(..., "--reference", help="Held-out reference corpus .npz."),
        weights: Path | None = typer.Option(None, "--weights", help="Checkpoint (default: shipped)."),
        ablations: Path | None = typer.Option(None, "--ablations", help="Folder with nogate/ and fm/."),
        worlds: int = typer.Option(10, "--worlds", min=1),
        tiles_per_world: int = typer.Option(12, "--tiles-per-world", min=2),
        seed: int = typer.Option(1000, "--seed"),
        workers: int = typer.Option(1, "--workers", min=1, help="Variants evaluated in parallel."),
        out: Path | None = typer.Option(None, "--out", help="Write the JSON report here too."),
    ) -> None:
        """DESIGN §8 fidelity metrics of the learned generator, its ablations and the baselines."""
        from vectorworld.eval.generator_report import generator_report
        from vectorworld.generation.learned import WEIGHTS_DIR

        try:
            report = generator_report(weights or WEIGHTS_DIR, reference, ablations, worlds, tiles_per_world,
                                      seed, workers=workers)
        except VectorWorldError as err:
            raise bad_input(err) from err
        text = json.dumps(report, indent=1)
        if out is not None:
            out.write_text(text)
        typer.echo(text)
