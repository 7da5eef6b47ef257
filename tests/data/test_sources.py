"""Source strings, load_scenario, inspect_scenario and the CLI commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vectorworld.data.sources import (
    count_scenarios,
    iter_scenario_loaders,
    iter_scenarios,
    load_scenario,
    parse_source,
)
from vectorworld.data.summary import inspect_scenario
from vectorworld.data.tfrecord import write_records
from vectorworld.errors import DataFormatError


def test_parse_source(nuplan_files, womd_path: Path) -> None:
    db = nuplan_files[0]
    assert parse_source(f"womd:{womd_path}#3") == parse_source(f"{womd_path}#3")
    spec = parse_source(f"womd:{womd_path}#3")
    assert (spec.kind, spec.path, spec.selector) == ("womd", str(womd_path), "3")
    assert parse_source(f"{db}#scene_b").kind == "nuplan"  # sniffed: SQLite
    assert parse_source("nuplan:logs/*.db").selector is None
    assert parse_source("logs/*.db").kind == "nuplan" and parse_source("x/*.tfrecord").kind == "womd"
    assert str(parse_source(f"nuplan:{db}#2")) == f"nuplan:{db}#2"
    with pytest.raises(DataFormatError, match="no such file"):
        parse_source("/nowhere/file.tfrecord")


def test_load_and_iterate(nuplan_files, tmp_path: Path, womd_path: Path) -> None:
    db, maps, _ = nuplan_files
    assert load_scenario(f"nuplan:{db}#1", maps).source.name == "scene_b"
    assert len(load_scenario(f"nuplan:{db}").map.lanes) == 0  # no maps dir: no map
    assert load_scenario(str(womd_path)).scenario_id == "637f20cafde22ff8"
    assert count_scenarios(f"nuplan:{db}") == 2 and count_scenarios(f"womd:{womd_path}") == 1
    assert [s.source.index for s in iter_scenarios(f"nuplan:{db}")] == [0, 1]
    loaders = list(iter_scenario_loaders(f"nuplan:{db}#scene_b", maps))
    assert len(loaders) == 1 and loaders[0]().source.index == 1
    with pytest.raises(DataFormatError, match="no file matches"):
        list(iter_scenario_loaders(f"womd:{tmp_path}/*.tfrecord"))
    with pytest.raises(DataFormatError, match="not a glob"):
        load_scenario(f"womd:{tmp_path}/*.tfrecord")


def test_glob_of_womd_files(tmp_path: Path, womd_path: Path) -> None:
    payload = next(iter(__import__("vectorworld.data.tfrecord", fromlist=["x"]).iter_records(womd_path))).payload
    for name in ("a", "b"):
        write_records(tmp_path / f"{name}.tfrecord", [payload, payload])
    assert count_scenarios(f"womd:{tmp_path}/*.tfrecord") == 4
    got = [(Path(s.source.path).name, s.source.index) for s in iter_scenarios(f"womd:{tmp_path}/*.tfrecord")]
    assert got == [("a.tfrecord", 0), ("a.tfrecord", 1), ("b.tfrecord", 0), ("b.tfrecord", 1)]


def test_inspect(nuplan_files, womd_path: Path) -> None:
    db, maps, _ = nuplan_files
    womd = inspect_scenario(f"womd:{womd_path}#0")
    assert womd["tracks_by_type"] == {"vehicle": 70, "pedestrian": 10, "cyclist": 3}
    assert womd["map"]["lanes"] == 199 and womd["num_steps"] == 91 and womd["scenarios_in_file"] == 1
    assert womd["map"]["successor_gap_max_m"] < 1.0 and womd["signals"]["lanes_per_step_max"] == 12
    json.dumps(womd)
    nup = inspect_scenario(f"nuplan:{db}#scene_b", maps)
    assert nup["scenarios_in_file"] == 2 and nup["map"]["lanes"] == 6 and nup["ego"]["track_id"] == 0
    assert nup["map_file"].endswith("map.gpkg") and nup["duration_s"] == pytest.approx(4.9)
    json.dumps(nup)


def test_cli_commands(nuplan_files, tmp_path: Path) -> None:
    typer = pytest.importorskip("typer")
    from typer.testing import CliRunner

    from vectorworld.cli.data_commands import register
    from vectorworld.cli.groups import app

    if not any(getattr(c, "name", None) == "inspect" or getattr(c.callback, "__name__", "") == "inspect"
               for c in app.registered_commands):
        register(app)
    assert isinstance(app, typer.Typer)
    db, maps, _ = nuplan_files
    runner = CliRunner()
    result = runner.invoke(app, ["inspect", f"nuplan:{db}#1", "--nuplan-maps", str(maps), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["name"] == "scene_b"
    result = runner.invoke(app, ["inspect", f"nuplan:{db}#1"])
    assert result.exit_code == 0 and "nuplan scenario" in result.stdout and "lanes" in result.stdout
    result = runner.invoke(app, ["inspect", str(tmp_path / "missing.tfrecord")])
    assert result.exit_code == 2 and "no such file" in result.output
    out = tmp_path / "ds"
    result = runner.invoke(app, ["dataset", "build", f"nuplan:{db}", str(out), "--nuplan-maps", str(maps),
                                 "--scenarios-per-shard", "1"])
    assert result.exit_code == 0, result.output
    assert "2 scenarios in 2 shards" in result.stdout and (out / "manifest.json").is_file()
    result = runner.invoke(app, ["dataset", "build", f"nuplan:{db}", str(out), "--nuplan-maps", str(maps),
                                 "--scenarios-per-shard", "1"])
    assert "(2 already done)" in result.stdout
