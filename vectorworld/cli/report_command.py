"""``vectorworld report DIR [--compare OTHER]``: a batch's metrics with 95% CIs, or the difference of two runs.

DIR and OTHER are report directories (``rollout --out-dir``) or single-file reports (``rollout --out``).
With ``--compare``, each metric shows DIR's mean, OTHER's mean, the difference DIR - OTHER with its 95%
CI (Welch) and a significance marker: * p < 0.05, ** p < 0.01, *** p < 0.001.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from vectorworld.cli.groups import fail
from vectorworld.errors import VectorWorldError


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    magnitude = abs(value)
    if magnitude != 0 and (magnitude >= 1e5 or magnitude < 1e-3):
        return f"{value:.3g}"
    return f"{value:.4g}" if magnitude >= 100 else f"{value:.4f}"


def _ci(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{_fmt(low)}, {_fmt(high)}]"


def _console():  # noqa: ANN202 - rich stays lazy
    """A rich console; wide when writing to a file or pipe so metric names are never cut."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 160)
    return console


def print_run_table(records: list[dict[str, Any]], title: str) -> None:
    """Per-metric mean, 95% CI, min/max over the successful episodes; then the failed ones."""
    from rich.table import Table

    from vectorworld.batch.compare import describe_run

    table = Table(title=title)
    for column in ("metric", "mean", "95% CI", "min", "max", "n"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for name, est in describe_run(records):
        table.add_row(name, _fmt(est.mean), _ci(est.ci_low, est.ci_high), _fmt(est.minimum), _fmt(est.maximum),
                      str(est.n))
    _console().print(table)
    failed = [r for r in records if "error" in r]
    typer.echo(f"episodes {len(records)}  succeeded {len(records) - len(failed)}  failed {len(failed)}")
    print_failures(records)


def print_failures(records: list[dict[str, Any]]) -> None:
    """One line per failed episode: index, seed and the error."""
    for r in records:
        if "error" in r:
            typer.echo(f"  episode {r['index']} (seed {r.get('seed')}) failed: {r['error']}")


def print_compare_table(run: list[dict[str, Any]], baseline: list[dict[str, Any]], run_name: str,
                        baseline_name: str) -> None:
    """Per-metric means of both runs, difference (run - baseline), its 95% CI, p-value and marker."""
    from rich.table import Table

    from vectorworld.batch.compare import compare_runs

    table = Table(title=f"{run_name} vs {baseline_name} (diff = {run_name} - {baseline_name})")
    for column in ("metric", run_name, baseline_name, "diff", "95% CI", "p", "sig"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for d in compare_runs(run, baseline):
        p = "-" if d.test.p_value is None else ("<1e-4" if d.test.p_value < 1e-4 else f"{d.test.p_value:.3g}")
        table.add_row(d.name, _fmt(d.run.mean), _fmt(d.baseline.mean), _fmt(d.test.diff),
                      _ci(d.test.ci_low, d.test.ci_high), p, d.marker)
    _console().print(table)
    typer.echo("Welch t-test, two-sided: * p<0.05  ** p<0.01  *** p<0.001 "
               "(timing metrics depend on the machine and its load)")


def register(app: typer.Typer) -> None:
    @app.command()
    def report(
        run_dir: Path = typer.Argument(..., help="Report directory (rollout --out-dir) or report.json."),
        compare: Path | None = typer.Option(None, "--compare", help="Baseline run to compare against."),
    ) -> None:
        """Print a batch's metrics with 95% confidence intervals, or its difference to another run."""
        from vectorworld.batch.report_dir import load_run

        try:
            run = load_run(run_dir)
            baseline = load_run(compare) if compare is not None else None
        except VectorWorldError as err:
            raise fail(str(err), 2) from None
        if not run.records:
            raise fail(f"{run_dir} holds no episodes", 2)
        if baseline is None:
            print_run_table(run.records, f"{run.name} ({len(run.records)} episodes)")
            return
        run_name, base_name = run.name, baseline.name
        if run_name == base_name:
            run_name, base_name = "run", "baseline"
        print_compare_table(run.records, baseline.records, run_name, base_name)
