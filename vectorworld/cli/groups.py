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


SOURCE_FORMS = ("womd:FILE[#N|#ID], womd-example:FILE[#N|#ID], nuplan:LOG.db[#SCENE], gpudrive:SCENE.json, "
                "scenarionet:DIR_OR_PKL[#N|#NAME] or a plain path (format detected)")
"""How every command that takes a scenario source spells it (vectorworld.data.sources parses them all)."""
GENERATOR_FORMS = "procedural | learned | learned:CHECKPOINT_DIR"
"""How every command that takes a tile generator spells it (vectorworld.generation.make_generator)."""


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error and return the Exit to raise (exit code 2 = bad input)."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


CONFIG_FLAGS = {"target_km": "--km", "seed": "--seed", "npc_policy": "--npc", "planner": "--planner",
                "generator": "--generator", "max_steps": "--max-steps", "scenario": "--scenario",
                "nuplan_maps_dir": "--nuplan-maps", "episodes": "--episodes", "workers": "--workers",
                "resume": "--resume", "out_dir": "--out-dir", "cpus_per_task": "--ray-cpus-per-task",
                "gpus_per_task": "--ray-gpus-per-task", "address": "--ray", "size_px": "--size"}
"""Config field (SessionConfig, batch, viewer) -> the flag that sets it: the library's errors name fields, the CLI
words them as its flags."""
_FIELD_WORDS = re.compile(r"\b(" + "|".join(CONFIG_FLAGS) + r")\b")


def bad_input(err: VectorWorldError | ValueError, flags: dict[str, str] | None = None) -> typer.Exit:
    """Exit code 2 with the error's message; a config field the message names is worded as its flag
    (``flags``: the command's own field -> flag table, default :data:`CONFIG_FLAGS`)."""
    message = str(err)
    table = CONFIG_FLAGS if flags is None else flags
    if isinstance(err, ConfigError) and err.field in table:
        words = _FIELD_WORDS if flags is None else re.compile(r"\b(" + "|".join(map(re.escape, table)) + r")\b")
        message = words.sub(lambda m: table[m.group(1)], message)
    return fail(message, 2)
