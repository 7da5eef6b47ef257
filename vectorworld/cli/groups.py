"""The typer app and its command groups (``train``, ``eval``, ``dataset``), shared by command modules."""

from __future__ import annotations

import typer

from vectorworld.errors import VectorWorldError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="VectorWorld: a closed-loop driving simulator that never runs out of road.")
train_app = typer.Typer(no_args_is_help=True, help="Train the shipped models.")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluate generators and NPC policies.")
dataset_app = typer.Typer(no_args_is_help=True, help="Build training datasets.")
app.add_typer(train_app, name="train")
app.add_typer(eval_app, name="eval")
app.add_typer(dataset_app, name="dataset")


SOURCE_FORMS = ("womd:FILE[#N|#ID], womd-example:FILE[#N|#ID], nuplan:LOG.db[#SCENE], gpudrive:SCENE.json, "
                "scenarionet:DIR_OR_PKL[#N|#NAME] or a plain path (format detected)")
"""How every command that takes a scenario source spells it (vectorworld.data.sources parses them all)."""


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error and return the Exit to raise (exit code 2 = bad input)."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def bad_input(err: VectorWorldError | ValueError) -> typer.Exit:
    return fail(str(err), 2)
