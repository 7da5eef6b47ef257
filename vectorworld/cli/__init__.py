"""The ``vectorworld`` command. Each command is a thin wrapper over an importable, typed function.

Only this layer chooses exit codes: 0 success, 1 some episodes/checks failed, 2 bad input.
"""

from __future__ import annotations

import importlib
import sys

import typer

from vectorworld.cli.groups import app

_COMMAND_MODULES = (
    "vectorworld.cli.rollout",
    "vectorworld.cli.data_commands",
    "vectorworld.cli.generator_commands",
    "vectorworld.cli.realism_command",
    "vectorworld.cli.npc_commands",
    "vectorworld.cli.planner_commands",
    "vectorworld.cli.serve_command",
    "vectorworld.cli.view_command",
    "vectorworld.cli.report_command",
)


def _register_commands() -> None:
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:
                continue
            raise
        module.register(app)


_register_commands()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    try:
        app(args=argv, prog_name="vectorworld")
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)


__all__ = ["app", "main"]
