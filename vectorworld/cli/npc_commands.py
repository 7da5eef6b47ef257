"""CLI commands for NPC policies: ``train deltasim`` and ``eval npc`` (thin wrappers over
:func:`vectorworld.train.deltasim_recipe.train_from_dir` and :func:`vectorworld.eval.npc_eval.evaluate_npc`).

Add ``"vectorworld.cli.npc_commands"`` to the command modules; ``register(app)`` puts the commands into
the shared ``train`` and ``eval`` groups.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from vectorworld.cli.groups import bad_input, eval_app, train_app
from vectorworld.errors import VectorWorldError

DEFAULT_POLICIES = ("deltasim", "deltasim-unshaped", "idm", "constant-velocity")
"""Compared by ``eval npc`` (as :data:`vectorworld.eval.npc_eval.DEFAULT_POLICIES`, without importing torch)."""
ABLATIONS = ("deltasim-unshaped", "constant-velocity")
"""Policies that ``--ablation-episodes`` runs on fewer seeds."""


def _figures(row: dict, kinds: tuple[type, ...] = (float,)) -> str:
    """``key=value`` for the numbers of a report row (of ``kinds``; booleans never), in the row's order."""
    return " ".join(f"{k}={v:.4g}" for k, v in row.items() if isinstance(v, kinds) and not isinstance(v, bool))


def register(app: typer.Typer) -> None:
    """Add ``deltasim`` to the ``train`` group and ``npc`` to the ``eval`` group (``app`` holds both)."""

    @train_app.command("deltasim")
    def train_deltasim(
        data: Path = typer.Option(Path("build/deltasim_data"), "--data", help="Sample cache directory."),
        out: Path = typer.Option(Path("policies/deltasim/weights"), "--out", help="Where the checkpoint goes."),
        epochs: int | None = typer.Option(None, "--epochs", min=1, help="Default: the recipe's."),
        seed: int = typer.Option(0, "--seed", help="Seeds the corpus Sessions and the training."),
        workers: int = typer.Option(1, "--workers", min=1, help="Processes recording data."),
        max_seconds: float | None = typer.Option(
            None, "--max-seconds", min=1.0, help="Training time cap (the schedule anneals within it); "
            "default: the recipe's."),
    ) -> None:
        """Record IDM teacher traffic in Session rollouts (cached in --data) and train DeltaSim by
        behaviour cloning (the defaults are the shipped checkpoint's recipe)."""
        from vectorworld.train.deltasim_recipe import DataRecipe, train_from_dir
        from vectorworld.train.deltasim_training import TrainConfig

        given = {"epochs": epochs, "max_seconds": max_seconds}
        config = TrainConfig(seed=seed, **{k: v for k, v in given.items() if v is not None})
        try:
            record = train_from_dir(data, out, DataRecipe(seed=seed), config,
                                    log=lambda entry: typer.echo(json.dumps(entry)), workers=workers)
        except VectorWorldError as err:
            raise bad_input(err, {"data_dir": "--data"}) from err
        typer.echo(json.dumps({"val": record["val"], "seconds": record["seconds"], "out": str(out)}))

    @eval_app.command("npc")
    def eval_npc(
        km: float = typer.Option(1.0, "--km", min=0.001),
        episodes: int = typer.Option(20, "--episodes", min=1, help="Seeds 0..N-1 per policy."),
        ablation_episodes: int | None = typer.Option(
            None, "--ablation-episodes", min=1,
            help="Seeds for deltasim-unshaped and constant-velocity (default: --episodes)."),
        policies: str = typer.Option(",".join(DEFAULT_POLICIES), "--policies", help="Comma-separated NPC policies."),
        synthetic: bool = typer.Option(True, "--synthetic/--no-synthetic",
                                       help="Also run the synthetic dense-traffic comparison."),
        steps: int = typer.Option(300, "--steps", min=1, help="Steps of the synthetic dense-traffic runs."),
        workers: int = typer.Option(1, "--workers", min=1),
        womd: Path | None = typer.Option(None, "--womd", help="WOMD file for the held-out log check."),
        as_json: bool = typer.Option(False, "--json", help="Print the JSON report."),
    ) -> None:
        """Compare DeltaSim (shaped, unshaped), IDM and constant velocity on the same seeds."""
        from vectorworld.eval.npc_eval import evaluate_npc

        names = tuple(name.strip() for name in policies.split(",") if name.strip())
        fewer = {name: ablation_episodes for name in ABLATIONS if ablation_episodes is not None}
        try:
            report = evaluate_npc(episodes, km, names, womd_path=womd, synthetic_steps=steps, workers=workers,
                                  synthetic=synthetic, seeds_by_policy=fewer)
        except VectorWorldError as err:
            raise bad_input(err) from err
        if as_json:
            typer.echo(json.dumps(report, indent=1))
            return
        for section in ("session", "synthetic"):
            for name, row in report.get(section, {}).items():
                typer.echo(f"{section:9s} {name:18s} episodes={row['episodes']} " + _figures(row))
        womd = report.get("womd", {})
        rows = {**womd.get("rollout", {}), **({"deltasim-bc": womd["bc"]} if "bc" in womd else {})}
        for name, row in rows.items():  # the real log: displacement per policy, ΔSim's one-step accuracy
            typer.echo(f"{'womd':9s} {name:18s} " + _figures(row, (int, float)))
