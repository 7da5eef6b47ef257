"""``vectorworld inspect`` and ``vectorworld dataset build``: thin wrappers over vectorworld.data."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from vectorworld.cli.groups import SOURCE_FORMS, bad_input, dataset_app
from vectorworld.errors import VectorWorldError


def _print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{summary['dataset']} scenario {summary['scenario_id']}", show_header=False)
    table.add_column("field")
    table.add_column("value")
    rows = {
        "format": f"{summary['format']} ({summary['format_name']})",
        "file": f"{summary['file']} (#{summary['index']} of {summary['scenarios_in_file']})",
        "steps": f"{summary['num_steps']} (current {summary['current_index']}, dt {summary['dt_s']:.2f} s, "
                 f"{summary['duration_s']:.1f} s)",
        "tracks": f"{summary['num_tracks']} " + ", ".join(f"{k} {v}" for k, v in summary["tracks_by_type"].items()),
        "ego": "-" if summary["ego"] is None else f"track {summary['ego']['track_index']} "
                                                    f"(id {summary['ego']['track_id']})",
    }
    m = summary["map"]
    rows["lanes"] = (f"{m['lanes']} ({m['lane_length_km']:.2f} km, {m['successor_edges']} successor edges, "
                     f"max gap {m['successor_gap_max_m']:.2f} m)")
    rows["map features"] = (f"road lines {m['road_lines']}, road edges {m['road_edges']}, crosswalks "
                            f"{m['crosswalks']}, stop signs {m['stop_signs']}, speed bumps {m['speed_bumps']}, "
                            f"driveways {m['driveways']}")
    if m["extent"] is not None:
        x0, y0, x1, y1 = m["extent"]
        rows["map extent"] = f"x [{x0:.1f}, {x1:.1f}] y [{y0:.1f}, {y1:.1f}] ({x1 - x0:.0f} x {y1 - y0:.0f} m)"
    s = summary["signals"]
    rows["signals"] = f"{s['controlled_lanes']} lanes, {s['lanes_per_step_min']}-{s['lanes_per_step_max']} per step"
    if summary.get("inferred"):
        rows["inferred"] = ", ".join(summary["inferred"]) + " (not in the file)"
    for k, v in rows.items():
        table.add_row(k, v)
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``inspect`` to ``app`` and ``build`` to the ``dataset`` group."""

    @app.command()
    def inspect(
        source: str = typer.Argument(..., help=f"Scenario source: {SOURCE_FORMS}."),
        nuplan_maps: Path | None = typer.Option(None, "--nuplan-maps", help="nuPlan maps root (or a map.gpkg)."),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    ) -> None:
        """Summarise one recorded scenario: tracks by type, duration, map features and extent."""
        from vectorworld.data.summary import inspect_scenario

        try:
            summary = inspect_scenario(source, nuplan_maps)
        except (VectorWorldError, ValueError) as err:
            raise bad_input(err) from err
        if as_json:
            typer.echo(json.dumps(summary, indent=2))
        else:
            _print_summary(summary)

    @dataset_app.command("build")
    def build(
        source: str = typer.Argument(..., help=f"Scenarios: {SOURCE_FORMS}; PATH may be a "
                                  "glob, every record / scene / file is used."),
        out: Path = typer.Argument(..., help="Output folder (shards + manifest.json); reruns resume."),
        nuplan_maps: Path | None = typer.Option(None, "--nuplan-maps", help="nuPlan maps root."),
        scenarios_per_shard: int = typer.Option(64, "--scenarios-per-shard", help="Scenarios per shard."),
        agent_centric: bool = typer.Option(True, "--agent-centric/--ego-only",
                                           help="Also cut a tile around every vehicle."),
        step_stride: int = typer.Option(0, "--step-stride", help="0: current step only; k: every k steps."),
        limit: int | None = typer.Option(None, "--limit", help="Use at most this many scenarios."),
    ) -> None:
        """Cut 64 m training tiles from recorded scenarios into resumable .npz shards."""
        from vectorworld.data.dataset import BuildProgress, DatasetConfig, build_dataset
        from vectorworld.data.sources import count_scenarios, iter_scenario_loaders
        from vectorworld.data.tiles import TileConfig

        config = DatasetConfig(tiles=TileConfig(agent_centric=agent_centric, step_stride=step_stride),
                               scenarios_per_shard=scenarios_per_shard)
        try:
            total = count_scenarios(source)
            total = min(total, limit) if limit is not None else total
            loaders = iter_scenario_loaders(source, nuplan_maps)
            if sys.stderr.isatty():
                from rich.progress import Progress

                with Progress(transient=True) as bar:
                    task = bar.add_task("tiles", total=total)

                    def report(p: BuildProgress) -> None:
                        bar.update(task, completed=p.scenarios_done,
                                   description=f"{p.tiles_done} tiles, {p.shards_skipped} shards skipped")

                    result = build_dataset(loaders, out, config, source=source, progress=report, limit=limit)
            else:
                result = build_dataset(loaders, out, config, source=source, limit=limit)
        except (VectorWorldError, ValueError) as err:
            raise bad_input(err) from err
        typer.echo(f"{result.num_tiles} tiles from {result.num_scenarios} scenarios in {result.num_shards} shards "
                   f"({result.shards_skipped} already done) -> {result.manifest_path} [{result.seconds:.1f} s]")
