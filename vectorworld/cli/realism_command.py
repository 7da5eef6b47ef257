"""CLI: ``vectorworld eval realism`` -- generated worlds against real tiles (see :mod:`vectorworld.eval.realism`).

stdout is a table (or, with ``--json``, only the JSON report); progress goes to stderr on a terminal;
``--out FILE`` also writes the JSON, ``--png FILE`` the bird's-eye figure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from vectorworld.cli.groups import GENERATOR_FORMS, bad_input, eval_app
from vectorworld.errors import VectorWorldError

REALISM_FLAGS = {"worlds": "--worlds", "seconds": "--seconds", "every_s": "--every", "npc_policy": "--npc"}
"""DriveConfig field -> the flag that sets it (the library's errors name fields)."""
DEFAULT_REFERENCE = "womd:../shared/data/womd/motion_data_one_scenario.tfrecord"


def _print_table(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    from vectorworld.eval.realism import table_rows

    table = Table(title=f"realism: {report['generated']} ({report['generated_tiles']} tiles) vs "
                        f"{report['reference']} ({report['reference_tiles']} tiles)")
    for name in ("feature", "generated mean (p10-p90)", "reference mean (p10-p90)", "JSD", "floor", "W1"):
        table.add_column(name, justify="left" if name == "feature" else "right")
    for row in table_rows(report):
        table.add_row(*row)
    Console(width=140).print(table)


def register(app: typer.Typer) -> None:
    """Add ``realism`` to the ``eval`` group."""

    @eval_app.command("realism")
    def eval_realism_cmd(
        reference: str = typer.Option(DEFAULT_REFERENCE, "--reference",
                                      help="Real tiles: womd:GLOB, nuplan:DB or a `dataset build` folder."),
        generator: str = typer.Option("procedural", "--generator", help=f"Generator to judge: {GENERATOR_FORMS}."),
        worlds: int = typer.Option(8, "--worlds", min=1, help="Generated worlds (seeds --seed ...)."),
        seconds: float = typer.Option(60.0, "--seconds", help="Simulated seconds driven per world."),
        every: float = typer.Option(5.0, "--every", help="Seconds between snapshots."),
        npc: str = typer.Option("idm", "--npc", help="NPC policy of the driven worlds."),
        seed: int = typer.Option(0, "--seed"),
        max_scenarios: int | None = typer.Option(None, "--max-scenarios", min=1,
                                                 help="Read at most this many reference scenarios (tiles)."),
        nuplan_maps: str | None = typer.Option(None, "--nuplan-maps", help="nuPlan maps root."),
        out: Path | None = typer.Option(None, "--out", help="Also write the JSON report here."),
        png: Path | None = typer.Option(None, "--png", help="Write the bird's-eye figure here."),
        as_json: bool = typer.Option(False, "--json", help="Print only the JSON report on stdout."),
    ) -> None:
        """Statistics of generated worlds against real data: lanes, junctions, traffic (JSD and W1 per row)."""
        from vectorworld.eval.realism import compare
        from vectorworld.eval.realism_sources import DriveConfig, generated_samples, reference_samples

        try:
            drive = DriveConfig(worlds=worlds, seed=seed, seconds=seconds, every_s=every, npc_policy=npc).validate()
            if png is not None and not png.parent.is_dir():
                raise VectorWorldError(f"--png {png}: no such directory")
            tty = sys.stderr.isatty()
            if tty:
                typer.echo(f"reading {reference} ...", err=True)
            ref = reference_samples(reference, nuplan_maps, max_scenarios)
            if tty:
                from rich.progress import Progress

                with Progress(transient=True) as bar:
                    task = bar.add_task(f"driving {generator}", total=worlds)
                    gen = generated_samples(generator, drive,
                                            progress=lambda w: bar.update(task, completed=w))
            else:
                gen = generated_samples(generator, drive)
        except (VectorWorldError, ValueError) as err:
            raise bad_input(err, REALISM_FLAGS) from err
        report = compare(gen, ref)
        report["drive"] = {"worlds": worlds, "seed": seed, "seconds": seconds, "every_s": every, "npc": npc}
        if png is not None:
            from vectorworld.eval.realism_figure import save_birdseye

            save_birdseye(png, [(f"real: {Path(reference).name}", ref.examples[:2]),
                                (f"generated: {generator}", gen.examples[:2])])
            report["png"] = str(png)
        text = json.dumps(report, indent=2)
        if out is not None:
            out.write_text(text)
        if as_json:
            typer.echo(text)
        else:
            _print_table(report)
