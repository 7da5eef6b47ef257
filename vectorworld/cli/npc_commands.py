"""CLI commands for NPC policies: ``train deltasim`` and ``eval npc`` (thin wrappers over
:func:`policies.deltasim_recipe.train_from_dir` and :func:`policies.deltasim_eval.evaluate_npc`).

Add ``"vectorworld.cli.npc_commands"`` to the command modules; ``register(app)`` puts the commands into
the shared ``train`` and ``eval`` groups.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from vectorworld.cli.groups import bad_input, eval_app, train_app
from vectorworld.errors import VectorWorldError


def register(app: typer.Typer) -> None:
    """Add ``deltasim`` to the ``train`` group and ``npc`` to the ``eval`` group (``app`` holds both)."""

    @train_app.command("deltasim")
    def train_deltasim(
        data: Path = typer.Option(Path("build/deltasim_data"), "--data", help="Sample cache directory."),
        out: Path = typer.Option(Path("policies/weights"), "--out", help="Where the checkpoint goes."),
        epochs: int = typer.Option(8, "--epochs", min=1),
        seed: int = typer.Option(0, "--seed"),
        workers: int = typer.Option(1, "--workers", min=1, help="Processes recording data."),
    ) -> None:
        """Record IDM teacher traffic (cached in --data) and train DeltaSim by behaviour cloning."""
        from policies.deltasim_recipe import DataRecipe, train_from_dir
        from policies.deltasim_train import TrainConfig

        try:
            record = train_from_dir(data, out, DataRecipe(seed=seed), TrainConfig(seed=seed, epochs=epochs),
                                    log=lambda entry: typer.echo(json.dumps(entry)), workers=workers)
        except VectorWorldError as err:
            raise bad_input(err) from err
        typer.echo(json.dumps({"val": record["val"], "seconds": record["seconds"], "out": str(out)}))

    @eval_app.command("npc")
    def eval_npc(
        km: float = typer.Option(1.0, "--km", min=0.001),
        episodes: int = typer.Option(20, "--episodes", min=1, help="Seeds 0..N-1 per policy."),
        steps: int = typer.Option(300, "--steps", min=1, help="Steps of the synthetic dense-traffic runs."),
        workers: int = typer.Option(1, "--workers", min=1),
        womd: Path | None = typer.Option(None, "--womd", help="WOMD file for the held-out log check."),
        as_json: bool = typer.Option(False, "--json", help="Print the JSON report."),
    ) -> None:
        """Compare DeltaSim (shaped, unshaped), IDM and constant velocity on the same seeds."""
        from policies.deltasim_eval import evaluate_npc

        try:
            report = evaluate_npc(episodes, km, womd_path=womd, synthetic_steps=steps, workers=workers)
        except VectorWorldError as err:
            raise bad_input(err) from err
        if as_json:
            typer.echo(json.dumps(report, indent=1))
            return
        for section in ("session", "synthetic"):
            for name, row in report.get(section, {}).items():
                typer.echo(f"{section:9s} {name:18s} " + " ".join(
                    f"{k}={v:.4g}" for k, v in row.items() if isinstance(v, float)))
