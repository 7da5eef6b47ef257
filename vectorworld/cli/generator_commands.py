"""CLI commands of the learned tile generator: ``train generator`` (the whole resumable run), ``train vae``,
``train dit`` (one stage each) and ``eval generator``.

Thin wrappers over :mod:`vectorworld.train.generator_training`, :mod:`vectorworld.train.tile_data` and
:mod:`vectorworld.eval.generator_report`. The full recipe of the shipped checkpoint is
``tools/train_generator.py``.

``--data`` (alias ``--corpus``) takes a ``vectorworld dataset build`` folder, a folder with ``corpus.npz``
or a tile corpus ``.npz``; without it a procedural corpus of ``--worlds`` worlds is built. ``eval
generator`` prints a table (or, with ``--json``, only the JSON report) on stdout and its progress on stderr.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from vectorworld.cli.groups import bad_input, eval_app, train_app
from vectorworld.errors import VectorWorldError

DATA_HELP = ("Training tiles: a `vectorworld dataset build` folder, a folder with corpus.npz, or a tile corpus "
             ".npz (default: build a procedural corpus of --worlds worlds).")


def _tiles(data: Path | None, worlds: int, seed: int, max_lanes: int, max_agents: int) -> dict:
    from vectorworld.train.tile_corpus import CorpusConfig, build_corpus
    from vectorworld.train.tile_data import load_training_tiles

    if data is not None:
        tiles = load_training_tiles(data, max_lanes, max_agents)
    else:
        tiles = build_corpus(CorpusConfig(worlds=worlds, seed=seed, max_lanes=max_lanes, max_agents=max_agents))
    typer.echo(json.dumps({"data": str(data) if data is not None else f"procedural:{worlds}",
                           "tiles": int(len(tiles["lane_valid"]))}))
    return tiles


def register(app: typer.Typer) -> None:
    """Add ``vae`` and ``dit`` to the ``train`` group and ``generator`` to the ``eval`` group."""

    @train_app.command("vae")
    def train_vae_cmd(
        out: Path = typer.Option(Path("runs/generator/vae_only"), "--out", help="Checkpoint folder."),
        data: Path | None = typer.Option(None, "--data", "--corpus", help=DATA_HELP),
        worlds: int = typer.Option(20, "--worlds", min=1, help="Procedural worlds if building a corpus."),
        steps: int = typer.Option(2000, "--steps", min=1),
        batch_size: int = typer.Option(64, "--batch-size", min=1),
        device: str = typer.Option("cpu", "--device"),
        seed: int = typer.Option(0, "--seed"),
    ) -> None:
        """Train the motion-aware gated VAE on tiles from --data (or a procedural corpus)."""
        from vectorworld.generation.learned.egr_dit import DiTConfig
        from vectorworld.generation.learned.outpaint import OutpaintModel
        from vectorworld.generation.learned.vae import VAEConfig
        from vectorworld.train.generator_training import TrainConfig, train_vae

        try:
            config = VAEConfig()
            tiles = _tiles(data, worlds, seed, config.max_lanes, config.max_agents)
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
        data: Path | None = typer.Option(None, "--data", "--corpus", help=DATA_HELP),
        worlds: int = typer.Option(20, "--worlds", min=1, help="Procedural worlds if building a corpus."),
        steps: int = typer.Option(4000, "--steps", min=1),
        batch_size: int = typer.Option(64, "--batch-size", min=1),
        edge_gating: bool = typer.Option(True, "--edge-gating/--no-edge-gating"),
        flow_matching: bool = typer.Option(False, "--flow-matching", help="Plain FM baseline (r = t)."),
        device: str = typer.Option("cpu", "--device"),
        seed: int = typer.Option(0, "--seed"),
    ) -> None:
        """Train the EGR-DiT with MeanFlow (or the flow-matching baseline) on the frozen VAE's latents."""
        from vectorworld.generation.learned.egr_dit import DiTConfig
        from vectorworld.generation.learned.meanflow import MeanFlowConfig
        from vectorworld.generation.learned.outpaint import OutpaintModel
        from vectorworld.train.generator_training import TrainConfig, train_dit

        try:
            vae_model = OutpaintModel.load(vae).vae
            cfg = vae_model.config
            tiles = _tiles(data, worlds, seed, cfg.max_lanes, cfg.max_agents)
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

    @train_app.command("generator")
    def train_generator_cmd(
        out: Path = typer.Option(Path("runs/generator/run"), "--out", help="Run folder (run_state.pt, latest/)."),
        data: Path | None = typer.Option(None, "--data", "--corpus", help=DATA_HELP),
        heldout: Path | None = typer.Option(None, "--heldout", help="Held-out tiles for the validity curve "
                                            "(default: a procedural corpus of 4 worlds, seed 50000)."),
        worlds: int = typer.Option(20, "--worlds", min=1, help="Procedural worlds if building a corpus."),
        resume: bool = typer.Option(False, "--resume", help="Continue the run in --out from its checkpoint."),
        vae_steps: int = typer.Option(3000, "--vae-steps", min=1),
        dit_steps: int = typer.Option(40000, "--dit-steps", min=1),
        batch_size: int = typer.Option(32, "--batch-size", min=1),
        eval_every: int = typer.Option(500, "--eval-every", min=1, help="DiT steps between curve points."),
        checkpoint_minutes: float = typer.Option(3.0, "--checkpoint-minutes", min=0.0),
        max_minutes: float = typer.Option(150.0, "--max-minutes", min=0.0, help="Stop (and checkpoint) after."),
        device: str = typer.Option("auto", "--device", help="cpu, cuda or auto (cuda when available)."),
        threads: int = typer.Option(1, "--threads", min=1, help="Torch threads on the CPU."),
        road_plan: bool = typer.Option(False, "--road-plan/--no-road-plan",
                                       help="Condition the DiT on where new roads cross the tile's sides "
                                            "(drawn from the corpus at inference; its junctions still jam "
                                            "rollouts, see README)."),
        seed: int = typer.Option(0, "--seed"),
    ) -> None:
        """Train the whole learned generator (gated VAE, then EGR-DiT with MeanFlow) as one resumable run."""
        from dataclasses import replace

        import torch

        from vectorworld.generation.learned.tile_tensors import TileTensors
        from vectorworld.train.generator_run import RunConfig, run_training, write_record

        torch.set_num_threads(threads)
        chosen = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        try:
            config = RunConfig(vae_steps=vae_steps, dit_steps=dit_steps, batch_size=batch_size, seed=seed,
                               eval_every=eval_every, checkpoint_every_s=checkpoint_minutes * 60.0, device=chosen)
            config = replace(config, dit=replace(config.dit, border_hints=road_plan))
            tiles = _tiles(data, worlds, seed, config.vae.max_lanes, config.vae.max_agents)
            held = _tiles(heldout, 4, 50_000, config.vae.max_lanes, config.vae.max_agents)
            reference = [TileTensors(**{k: v[i] for k, v in held.items()}) for i in range(len(held["lane_valid"]))]
            run = run_training(tiles, reference, config, out, resume=resume, max_seconds=max_minutes * 60.0,
                               log=lambda stage, step, p: typer.echo(json.dumps({"stage": stage, "step": step, **p})))
            record = write_record(run, "vectorworld train generator")
        except VectorWorldError as err:
            raise bad_input(err) from err
        typer.echo(json.dumps({"out": str(out), "stage": run.state.stage, "vae_steps": run.vae_trainer.step,
                               "dit_steps": 0 if run.dit_trainer is None else run.dit_trainer.step,
                               "wall_s": run.state.wall_s, "record": str(record)}))

    @eval_app.command("generator")
    def eval_generator_cmd(
        reference: Path | None = typer.Option(
            None, "--reference", help="Held-out tiles: corpus .npz, folder with corpus.npz or dataset folder "
            "(default: a procedural corpus of 10 worlds, seed 20000)."),
        weights: Path | None = typer.Option(None, "--weights", help="Checkpoint (default: shipped)."),
        ablations: Path | None = typer.Option(
            None, "--ablations", help="Folder with nogate/ and fm/ (default: WEIGHTS/ablations if present)."),
        steps: int | None = typer.Option(
            None, "--steps", min=1, help="Only learned variants with this many sampling steps (default: 1 and "
            "--k-steps)."),
        k_steps: int = typer.Option(4, "--k-steps", min=1, help="The multi-step count K."),
        tiles: int | None = typer.Option(
            None, "--tiles", min=1, help="Outpainted tiles to evaluate per variant, in all. Split into "
            "ceil(N / (tiles-per-world - 1)) worlds, or over --worlds if given; overrides the default 10 x 11."),
        worlds: int | None = typer.Option(None, "--worlds", min=1, help="Worlds grown (default 10)."),
        tiles_per_world: int | None = typer.Option(
            None, "--tiles-per-world", min=2, help="Tiles per world, the first not evaluated (default 12)."),
        seed: int = typer.Option(1000, "--seed"),
        growth: str = typer.Option(
            "ends", "--growth", help="How worlds grow: 'ends' (at random open lane ends, as the default corpus) "
            "or 'drive' (ahead of a virtual ego, as in an episode)."),
        workers: int = typer.Option(1, "--workers", min=1, help="Variants evaluated in parallel."),
        out: Path | None = typer.Option(None, "--out", help="Write the JSON report here too."),
        as_json: bool = typer.Option(False, "--json", help="Print only the JSON report on stdout (no table)."),
    ) -> None:
        """DESIGN §8 fidelity metrics of the learned generator, its ablations and the baselines."""
        from vectorworld.eval.generator_report import format_table, generator_report, json_ready, plan_tiles
        from vectorworld.generation.learned.generator import WEIGHTS_DIR

        weights = weights or WEIGHTS_DIR
        if ablations is None and (weights / "ablations").is_dir():
            ablations = weights / "ablations"

        def progress(name: str, metrics: dict[str, float], done: int, total: int) -> None:
            line = f"[{done}/{total}] {name}"
            if "tiles" in metrics:
                line += f": {int(metrics['tiles'])} tiles, tile_ms p50 {metrics.get('tile_ms_p50', math.nan):.1f}"
                if "lane_frechet" in metrics:
                    line += (f", lane Fréchet {metrics['lane_frechet']:.3f}"
                             f" (sd {metrics.get('lane_frechet_sd', math.nan):.3f} over resampled worlds)")
                stages = {k[len("tile_ms_"):-len("_mean")]: v for k, v in metrics.items()
                          if k.startswith("tile_ms_") and k.endswith("_mean")}
                if stages:
                    line += " (mean ms per call: " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()) + ")"
            typer.echo(line, err=True)

        try:
            n_worlds, per_world = plan_tiles(tiles, worlds, tiles_per_world)
            typer.echo(f"evaluating {n_worlds} worlds x {per_world - 1} tiles"
                       + (f" (capped at {tiles})" if tiles is not None else "")
                       + ("" if reference is not None else ", building the procedural reference"), err=True)
            report = generator_report(weights, reference, ablations, n_worlds, per_world, seed, k_steps=k_steps,
                                      workers=workers, steps=steps, max_tiles=tiles, progress=progress,
                                      growth=growth)
        except VectorWorldError as err:
            raise bad_input(err) from err
        text = json.dumps(json_ready(report), indent=1, allow_nan=False)
        if out is not None:
            out.write_text(text)
        typer.echo(text if as_json else format_table(report))
