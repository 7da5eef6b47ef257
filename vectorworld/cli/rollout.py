"""``vectorworld rollout``: drive N episodes of --km each and write a report."""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from pathlib import Path
from typing import Any

import typer

from vectorworld.cli.groups import bad_input, fail
from vectorworld.errors import VectorWorldError


def check_writable(option: str, path: Path | None) -> None:
    """Raise typer.Exit(2) naming ``option`` if ``path``'s directory does not exist or is not writable."""
    if path is None:
        return
    parent = path.resolve().parent
    if not parent.is_dir():
        raise fail(f"{option}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise fail(f"{option}: directory {parent} is not writable")
    if path.is_dir():
        raise fail(f"{option}: {path} is a directory")


def print_summary(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="rollout")
    columns = ["seed", "km", "completed", "end_reason", "ego_collisions", "ego_offroad_rate",
               "npc_collisions_per_km", "kinematic_infeasibility_rate", "ego_comfort_rate", "tiles",
               "tile_ms_p95", "rtf"]
    for c in columns:
        table.add_column(c, justify="right")
    for e in report["episodes"]:
        table.add_row(*[f"{e[c]:.3f}" if isinstance(e[c], float) else str(e[c]) for c in columns])
    Console(stderr=False).print(table)
    s = report["summary"]
    if "completed_rate" in s:
        typer.echo(f"episodes {s['episodes']}  completed {s['completed_rate']:.0%}  km {s['total_km']:.3f}  "
                   f"ego collisions {s['ego_collisions']}  mean rtf {s['mean_rtf']:.1f}x")


def register(app: typer.Typer) -> None:
    @app.command()
    def rollout(
        km: float = typer.Option(1.0, "--km", help="Distance the ego must drive per episode (km)."),
        seed: int = typer.Option(0, "--seed", help="Seed of episode 0; episode i uses seed + i."),
        episodes: int = typer.Option(1, "--episodes", help="Number of episodes."),
        out: Path | None = typer.Option(None, "--out", help="Write the JSON report here (atomic)."),
        record: Path | None = typer.Option(None, "--record", help="Write a recording for the debugger."),
        npc: str = typer.Option("idm", "--npc", help="NPC policy: idm | constant-velocity | ..."),
        planner: str = typer.Option("idm", "--planner", help="Ego planner: idm | module:Class."),
        generator: str = typer.Option("procedural", "--generator", help="Tile generator."),
        max_steps: int | None = typer.Option(None, "--max-steps", help="Step limit per episode."),
    ) -> None:
        """Drive closed-loop episodes through a streaming generated world and report metrics."""
        from policies import make_policy
        from policies.ego import load_planner
        from vectorworld.generation import make_generator
        from vectorworld.sim.rollout import run_rollouts, write_json_atomic
        from vectorworld.sim.session import SessionConfig

        if not math.isfinite(km) or km <= 0:
            raise fail(f"--km must be a positive finite number, got {km}")
        if episodes < 1:
            raise fail(f"--episodes must be >= 1, got {episodes}")
        check_writable("--out", out)
        check_writable("--record", record)
        try:
            config = SessionConfig(seed=seed, target_km=km, generator=generator, npc_policy=npc,
                                   planner=planner, max_steps=max_steps).validate()
            make_policy(npc)
            load_planner(planner)
            make_generator(generator)
        except (VectorWorldError, ValueError) as err:
            raise bad_input(err) from None

        progress, task = _progress(episodes * km)
        done_km = [0.0]

        def on_progress(ep_km: float) -> None:
            if progress is not None:
                progress.update(task, completed=done_km[0] + ep_km)

        def on_episode(i: int, result: dict[str, Any]) -> None:
            done_km[0] += km

        try:
            if progress is not None:
                progress.start()
            report = run_rollouts(config, episodes, record, on_episode, on_progress)
        except VectorWorldError as err:
            raise fail(str(err), 1) from None
        finally:
            if progress is not None:
                progress.stop()
        report["config"] = dataclasses.asdict(config) | {"episodes": episodes}
        print_summary(report)
        if out is not None:
            write_json_atomic(out, report)
            typer.echo(f"report written to {out}")
        if report["interrupted"]:
            typer.echo("interrupted: kept the episodes already finished", err=True)
            raise typer.Exit(130)


def _progress(total_km: float):  # noqa: ANN202 - rich types stay lazy
    if not sys.stderr.isatty():
        return None, None
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    progress = Progress(TextColumn("rollout"), BarColumn(), TextColumn("{task.completed:.2f}/{task.total} km"),
                        TimeRemainingColumn(), transient=True)
    return progress, progress.add_task("rollout", total=total_km)
