"""The typer app and its command groups (``train``, ``eval``, ``dataset``), shared by command modules."""

from __future__ import annotations

import re

import typer

from vectorworld.errors import ConfigError, VectorWorldError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="VectorWorld: a closed-loop driving simulator that never runs out of road.")
train_app = typer.Typer(no_args_is_help=True, help="Train the shipped models.")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluate generators and NPC policies.")
dataset_app = typer.Typer(no_args_is_help=True, help="Build training datasets.")
app.add_typer(train_app, name="train")
app.add_typer(eval_app, name="eval")
app.add_typer(dataset_app, name="dataset")


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error and return the Exit to raise (exit code 2 = bad input)."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


CONFIG_FLAGS = {"target_km": "--km", "seed": "--seed", "npc_policy": "--npc", "planner": "--planner",
                "generator": "--generator", "max_steps": "--max-steps", "scenario": "--scenario",
                "nuplan_maps_dir": "--nuplan-maps", "episodes": "--episodes", "workers": "--workers",
                "resume": "--resume", "out_dir": "--out-dir", "cpus_per_task": "--ray-cpus-per-task",
                "gpus_per_task": "--ray-gpus-per-task", "address": "--ray"}
"""Config field (SessionConfig, batch) -> the flag that sets it: the library's errors name fields, the CLI
words them as its flags."""
_FIELD_WORDS = re.compile(r"\b(" + "|".join(CONFIG_FLAGS) + r")\b")


def bad_input(err: VectorWorldError | ValueError) -> typer.Exit:
    """Exit code 2 with the error's message; a config field the message names is worded as its flag."""
    message = str(err)
    if isinstance(err, ConfigError) and err.field in CONFIG_FLAGS:
        message = _FIELD_WORDS.sub(lambda m: CONFIG_FLAGS[m.group(1)], message)
    return fail(message, 2)
