"""``vectorworld rollout``: drive N episodes of --km each and write a report."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from policies import DEFAULT_NPC_POLICY
from vectorworld.cli.groups import GENERATOR_FORMS, SOURCE_FORMS, bad_input, fail
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


SUMMARY_COLUMNS = {  # report key -> short header, so the table fits an 80-column terminal
    "seed": "seed", "km": "km", "completed": "done", "end_reason": "end", "ego_collisions": "ego hits",
    "ego_offroad_rate": "offroad", "npc_collisions_per_km": "npc hits/km",
    "kinematic_infeasibility_rate": "infeasible", "ego_comfort_rate": "comfort", "tiles": "tiles",
    "tile_ms_p95": "tile p95 ms", "rtf": "rtf"}


def _cell(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def print_summary(report: dict[str, Any]) -> None:
    """One episode: every metric, one per row. Several: one row per episode, then the totals. Then the
    failed episodes, one line each."""
    from rich.console import Console
    from rich.table import Table

    from vectorworld.cli.report_command import print_failures

    episodes = [e for e in report["episodes"] if "error" not in e]
    if len(report["episodes"]) == 1 and episodes:
        table = Table(title="rollout", show_header=False)
        table.add_column("metric")
        table.add_column("value", justify="right")
        for key, value in episodes[0].items():
            if key != "index" and not isinstance(value, (list, dict)):
                table.add_row(key, _cell(value))
    else:
        table = Table(title="rollout")
        for header in SUMMARY_COLUMNS.values():
            table.add_column(header, justify="right")
        for e in episodes:
            table.add_row(*[_cell(e[key]) for key in SUMMARY_COLUMNS])
    if episodes:
        Console(stderr=False).print(table)
    print_failures(report["episodes"])
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
        npc: str = typer.Option(DEFAULT_NPC_POLICY, "--npc", help="NPC policy: deltasim | idm | constant-velocity."),
        planner: str = typer.Option("idm", "--planner", help="Ego planner: idm | module:Class."),
        generator: str = typer.Option("procedural", "--generator", help=f"Tile generator: {GENERATOR_FORMS}."),
        max_steps: int | None = typer.Option(None, "--max-steps", help="Step limit per episode."),
        scenario: str | None = typer.Option(None, "--scenario", help=f"Start from a log: {SOURCE_FORMS}; "
                                            "the world outpaints past its map."),
        nuplan_maps: Path | None = typer.Option(None, "--nuplan-maps", help="nuPlan maps root (for nuplan:)."),
        workers: int = typer.Option(1, "--workers", help="Run episodes in this many local processes."),
        ray: str | None = typer.Option(None, "--ray", metavar="ADDRESS",
                                       help="Run episodes as Ray tasks: local (start Ray here) | auto | "
                                            "ray://HOST:PORT."),
        ray_cpus: float = typer.Option(1.0, "--ray-cpus-per-task", help="CPUs Ray reserves per episode."),
        ray_gpus: float = typer.Option(0.0, "--ray-gpus-per-task", help="GPUs Ray reserves per episode."),
        out_dir: Path | None = typer.Option(None, "--out-dir", help="Stream episodes and write a report "
                                            "directory here (summary, CSV, plots)."),
        resume: bool = typer.Option(False, "--resume", help="Skip the episodes --out-dir already holds."),
    ) -> None:
        """Drive closed-loop episodes through a streaming generated world and report metrics."""
        from policies import make_policy
        from policies.ego import load_planner
        from vectorworld.generation import make_generator
        from vectorworld.sim.config import SessionConfig

        if episodes < 1:
            raise fail(f"--episodes must be >= 1, got {episodes}")
        check_writable("--out", out)
        check_writable("--record", record)
        try:
            config = SessionConfig(seed=seed, target_km=km, generator=generator, npc_policy=npc, scenario=scenario,
                                   nuplan_maps_dir=None if nuplan_maps is None else str(nuplan_maps),
                                   planner=planner, max_steps=max_steps).validate()
            if npc != "log-replay":  # replay is built into the Session (it needs the log's tracks)
                make_policy(npc)
            load_planner(planner)
            make_generator(generator)
            if scenario is not None:
                from vectorworld.data.sources import load_scenario

                load_scenario(scenario, nuplan_maps_dir=config.nuplan_maps_dir)
        except (VectorWorldError, ValueError) as err:
            raise bad_input(err) from None
        in_process = workers == 1 and ray is None
        bar = _Progress(episodes, km, per_step=in_process)
        backend = _batch_backend(workers, ray, ray_cpus, ray_gpus, record, out_dir, resume, bar.step)
        _run_batch(config, episodes, backend, bar, out_dir, resume, record, out)


def _batch_backend(workers: int, ray: str | None, ray_cpus: float, ray_gpus: float, record: Path | None,
                   out_dir: Path | None, resume: bool,
                   on_step: Callable[[int, float], None]):  # noqa: ANN202 - batch types stay lazy
    """Check the batch options (exit 2 naming the option) and build the backend (``on_step``: the
    per-step progress of episodes run in this process)."""
    from vectorworld.batch.backends import LocalPoolBackend, SerialBackend

    if workers < 1:
        raise fail(f"--workers must be >= 1, got {workers}")
    if resume and out_dir is None:
        raise fail("--resume needs --out-dir (the batch to continue)")
    if out_dir is not None:
        if out_dir.exists() and not out_dir.is_dir():
            raise fail(f"--out-dir: {out_dir} is not a directory")
        check_writable("--out-dir", out_dir / "episodes.jsonl" if out_dir.is_dir() else out_dir)
    if ray is None:
        return LocalPoolBackend(workers) if workers > 1 else SerialBackend(on_step)
    from vectorworld.batch.ray_backend import RayBackend

    if ray.startswith("-") or not ray:
        raise fail(f"--ray needs an address: local | auto | ray://HOST:PORT, got {ray!r}")
    if record is not None:
        raise fail("--record is not supported with --ray (recordings would stay on the worker nodes)")
    if not (math.isfinite(ray_cpus) and ray_cpus > 0 and math.isfinite(ray_gpus) and ray_gpus >= 0):
        raise fail(f"--ray-cpus-per-task must be > 0 and --ray-gpus-per-task >= 0, got {ray_cpus}, {ray_gpus}")
    try:
        RayBackend.check_available()
    except VectorWorldError as err:
        raise bad_input(err) from None
    return RayBackend(ray, ray_cpus, ray_gpus, max_workers=workers if workers > 1 else None)


def _run_batch(config, episodes: int, backend, bar: _Progress, out_dir: Path | None,  # noqa: ANN001
               resume: bool, record: Path | None, out: Path | None) -> None:
    """Run the episodes, print the table, write the reports, set the exit code: 1 if an episode failed,
    130 if interrupted. Episodes run in this process without --out-dir get the per-episode table, others
    the per-metric table (mean, 95% CI)."""
    from vectorworld.batch.runner import run_batch
    from vectorworld.cli.report_command import print_run_table
    from vectorworld.errors import ConfigError
    from vectorworld.files import write_json_atomic

    try:
        result = run_batch(config, episodes, backend, out_dir, resume, record, on_result=bar.advance,
                           on_start=bar.start)
    except ConfigError as err:
        raise bad_input(err) from None
    except VectorWorldError as err:
        raise fail(str(err), 1) from None
    finally:
        bar.stop()
    if result.skipped:
        typer.echo(f"resumed: {len(result.skipped)} episodes already in {out_dir}, ran {len(result.ran)}")
    report = result.report()
    if bar.per_step and out_dir is None:
        print_summary(report)
    else:
        print_run_table(result.records, f"rollout ({backend.describe()['backend']})")
    for warning in result.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if out is not None:
        write_json_atomic(out, report)
        typer.echo(f"report written to {out}")
    if out_dir is not None:
        typer.echo(f"report directory: {out_dir}")
    if result.interrupted:
        resume_hint = " (continue with --resume)" if out_dir is not None else ""
        typer.echo(f"interrupted: kept the episodes already finished{resume_hint}", err=True)
        raise typer.Exit(130)
    if result.failed:
        raise fail(f"{len(result.failed)} of {episodes} episodes failed", 1)


class _Progress:
    """A progress bar on stderr (only on a TTY): over km, step by step, when the episodes run in this process
    (``per_step``); over whole episodes, with failures and ETA, when they run on workers."""

    def __init__(self, episodes: int, km: float, per_step: bool) -> None:
        self.episodes, self.km, self.per_step = episodes, km, per_step
        self.finished = 0
        self.failed = 0
        self.progress = None
        self.task = None

    def start(self, done: int, to_run: int) -> None:
        self.finished = done
        if not sys.stderr.isatty():
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        if self.per_step:
            columns = [TextColumn("rollout"), BarColumn(), TextColumn("{task.completed:.2f}/{task.total:.2f} km")]
            total, completed = self.episodes * self.km, done * self.km
        else:
            columns = [TextColumn("episodes"), BarColumn(), MofNCompleteColumn()]
            total, completed = self.episodes, done
        self.progress = Progress(*columns, TextColumn("{task.fields[failed]} failed"), TimeRemainingColumn(),
                                 transient=True)
        self.task = self.progress.add_task("rollout", total=total, completed=completed, failed=0)
        self.progress.start()

    def step(self, index: int, episode_km: float) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=self.finished * self.km + min(episode_km, self.km))

    def advance(self, record: dict[str, Any]) -> None:
        self.finished += 1
        self.failed += "error" in record
        if self.progress is not None:
            completed = self.finished * self.km if self.per_step else self.finished
            self.progress.update(self.task, completed=completed, failed=self.failed)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
