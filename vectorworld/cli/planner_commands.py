"""``vectorworld eval planner``: the planner leaderboard (a thin wrapper over
:func:`vectorworld.batch.leaderboard.evaluate_planners`)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import typer

from vectorworld.cli.groups import GENERATOR_FORMS, bad_input, eval_app, fail
from vectorworld.errors import ConfigError, VectorWorldError


def _cell(mean: float | None, ci: list[float | None] | None) -> str:
    if mean is None:
        return "-"
    if not ci or ci[0] is None or ci[1] is None:
        return f"{mean:.3f}"
    return f"{mean:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def print_leaderboard(board: dict[str, Any]) -> None:
    """One row per planner: CLS, driving score, infractions/km (95% CIs), paired CLS difference."""
    from rich.console import Console
    from rich.table import Table

    base = board["baseline"]
    table = Table(title=f"planners: {board['episodes']} paired episodes x {board['km']} km (seed {board['seed']}+)")
    for column in ("planner", "CLS", "driving score", "infractions/km", f"CLS - {base}", f"DS - {base}", "rtf", "n"):
        table.add_column(column, justify="left" if column == "planner" else "right")
    for name, row in board["planners"].items():
        table.add_row(name, _cell(row.get("cls"), row.get("cls_ci95")),
                      _cell(row.get("driving_score"), row.get("driving_score_ci95")),
                      _cell(row.get("infractions_per_km"), row.get("infractions_per_km_ci95")),
                      _cell(row.get(f"cls_diff_vs_{base}"), row.get("cls_diff_ci95")) if name != base else "-",
                      _cell(row.get(f"driving_score_diff_vs_{base}"), row.get("driving_score_diff_ci95"))
                      if name != base else "-",
                      f"{row['rtf']:.1f}" if "rtf" in row else "-", str(row["succeeded"]))
    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 160)
    console.print(table)
    typer.echo("95% CIs: Student t over episodes; differences are paired by seed (paired t).")


def register(app: typer.Typer) -> None:
    @eval_app.command("planner")
    def eval_planner(
        planners: str = typer.Option("idm,pdm,constant-velocity", "--planners",
                                     help="Ego planners: idm | pdm | constant-velocity | module:Class."),
        episodes: int = typer.Option(20, "--episodes", help="Seeds seed..seed+N-1, the same for every planner."),
        km: float = typer.Option(1.0, "--km", help="Target distance per episode."),
        seed: int = typer.Option(0, "--seed"),
        npc: str = typer.Option("deltasim", "--npc", help="NPC policy of every episode."),
        generator: str = typer.Option("procedural", "--generator", help=f"Tile generator: {GENERATOR_FORMS}."),
        workers: int = typer.Option(1, "--workers", help="Local worker processes per planner batch."),
        out: Path | None = typer.Option(None, "--out", help="Report directory: one batch per planner + plots."),
        as_json: bool = typer.Option(False, "--json", help="Print only the JSON (one object per planner)."),
        resume: bool = typer.Option(False, "--resume", help="Continue the planner batches already in --out."),
    ) -> None:
        """Score planners on the same seeds: nuPlan CLS, CARLA-style driving score, infractions per km."""
        from policies.base import make_policy
        from vectorworld.batch.backends import LocalPoolBackend, SerialBackend
        from vectorworld.batch.leaderboard import evaluate_planners, parse_planners
        from vectorworld.generation import make_generator

        if episodes < 1:
            raise fail(f"--episodes must be >= 1, got {episodes}")
        if not (math.isfinite(km) and km > 0):
            raise fail(f"--km must be a positive finite number, got {km}")
        if workers < 1:
            raise fail(f"--workers must be >= 1, got {workers}")
        if resume and out is None:
            raise fail("--resume needs --out (the leaderboard to continue)")
        if out is not None and not resume and out.exists() and any(out.iterdir()):
            raise fail(f"--out: {out} is not empty (choose a new directory, or --resume)")
        try:
            names = parse_planners(planners)
            make_policy(npc)
            make_generator(generator)
        except ConfigError as err:
            raise bad_input(err, {"planners": "--planners"} if err.field == "planners" else None) from None
        done = {"n": 0}

        def on_record(name: str, record: dict[str, Any]) -> None:
            done["n"] += 1
            if sys.stderr.isatty():
                status = "failed" if "error" in record else f"cls {record.get('cls', 0.0):.3f}"
                typer.echo(f"[{done['n']}/{episodes * len(names)}] {name} episode {record['index']}: {status}",
                           err=True)

        def backend():  # noqa: ANN202 - batch types stay lazy
            return LocalPoolBackend(workers) if workers > 1 else SerialBackend()

        try:
            board = evaluate_planners(names, episodes, km, seed, npc, generator, backend, out, on_record,
                                      resume=resume)
        except VectorWorldError as err:
            raise fail(str(err), 1) from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        if as_json:
            typer.echo(json.dumps(board["planners"], indent=1))
            return
        print_leaderboard(board)
        if out is not None:
            typer.echo(f"report directory: {out}")
        failed = sum(row["episodes"] - row["succeeded"] for row in board["planners"].values())
        if failed:
            raise fail(f"{failed} episodes failed", 1)
