"""Every command takes every format through one source parser: detection, inspect, dataset build, rollout
and view; unknown, truncated and wrong-type files give one line and exit code 2."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vectorworld.cli import app
from vectorworld.data.sources import FORMAT_NAMES, count_scenarios, detect_kind, parse_source
from vectorworld.errors import DataFormatError

FORMATS = ("womd-example", "gpudrive", "scenarionet")
runner = CliRunner()


def one_line_error(result, needle: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], result.output


def test_detection_and_prefixes(format_files, womd_path: Path, nuplan_files, womd_message, tmp_path: Path) -> None:
    from vectorworld.data.womd_example import write_womd_example

    write_womd_example(tmp_path / "z.tfrecord.gz", [womd_message], compress=True)
    assert detect_kind(tmp_path / "z.tfrecord.gz") == "womd-example"
    for kind, path in format_files.items():
        assert detect_kind(path) == kind and parse_source(str(path)).kind == kind
        assert parse_source(f"{kind}:{path}#0").selector == "0"
    assert detect_kind(womd_path) == "womd" and detect_kind(nuplan_files[0]) == "nuplan"
    assert parse_source(f"womd-example:{womd_path}").kind == "womd-example"  # the prefix wins over content
    glob = f"{format_files['gpudrive'].parent}/*.json"
    assert parse_source(glob).kind == "gpudrive" and count_scenarios(glob) == 1


@pytest.mark.parametrize("kind", FORMATS)
def test_inspect_names_the_format(kind: str, format_files) -> None:
    result = runner.invoke(app, ["inspect", str(format_files[kind]), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["format"] == kind and summary["format_name"] == FORMAT_NAMES[kind]
    assert summary["map"]["lanes"] == 199 and summary["map"]["successor_edges"] == 193
    assert summary["tracks_by_type"] == {"vehicle": 70, "pedestrian": 10, "cyclist": 3}
    table = runner.invoke(app, ["inspect", str(format_files[kind])])
    assert table.exit_code == 0 and FORMAT_NAMES[kind] in table.stdout


def _bad_files(tmp_path: Path, format_files) -> dict[str, tuple[Path, str]]:
    """name -> (file, expected words in the one-line error)."""
    pkl = next(Path(format_files["scenarionet"]).glob("sd_*.pkl"))
    cases = {
        "random bytes": (b"\x13\x37not a scenario at all" * 10, "not a scenario file of a known format"),
        "empty": (b"", "not a scenario file of a known format"),
        "truncated tf.Example": (format_files["womd-example"].read_bytes()[:50_000], "truncated record 0"),
        "truncated json": (format_files["gpudrive"].read_bytes()[:50_000], "not valid JSON"),
        "truncated pickle": (pkl.read_bytes()[:50_000], "not a readable pickle"),
        "json list": (b"[1, 2, 3]", "not a scenario file"),
        "json without objects": (json.dumps({"roads": []}).encode(), "missing field 'objects'"),
        "pickle of a list": (pickle.dumps([1, 2]), "expected a dict"),
        "pickle without tracks": (pickle.dumps({"metadata": {}, "map_features": {}}), "missing field 'tracks'"),
    }
    out = {}
    for i, (name, (data, needle)) in enumerate(cases.items()):
        path = tmp_path / f"bad{i}"
        path.write_bytes(data)
        out[name] = (path, needle)
    return out


@pytest.mark.parametrize("command", ["inspect", "rollout", "dataset", "view"])
def test_bad_files_give_one_line_and_exit_2(command: str, tmp_path: Path, format_files) -> None:
    pytest.importorskip("pygame") if command == "view" else None
    for name, (path, needle) in _bad_files(tmp_path, format_files).items():
        args = {"inspect": ["inspect", str(path)],
                "rollout": ["rollout", "--scenario", str(path), "--km", "0.1"],
                "dataset": ["dataset", "build", str(path), str(tmp_path / "out")],
                "view": ["view", "--drive", "--scenario", str(path), "--screenshot", str(tmp_path / "x.png")]}[command]
        result = runner.invoke(app, args)
        try:
            one_line_error(result, needle)
        except AssertionError as exc:
            raise AssertionError(f"{command} on {name}: {exc}") from exc
    written = list((tmp_path / "out").rglob("*")) if (tmp_path / "out").exists() else []
    assert not written and not (tmp_path / "x.png").exists()  # nothing written (an empty output folder at most)


def test_unknown_format_lists_the_formats_tried(tmp_path: Path) -> None:
    path = tmp_path / "mystery.bin"
    path.write_bytes(b"\x00" * 64)
    with pytest.raises(DataFormatError) as info:
        parse_source(str(path))
    assert all(kind in str(info.value) for kind in FORMAT_NAMES)


@pytest.mark.parametrize("kind", FORMATS)
def test_dataset_build_from_each_format(kind: str, format_files, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    result = runner.invoke(app, ["dataset", "build", f"{kind}:{format_files[kind]}", str(out), "--ego-only"])
    assert result.exit_code == 0, result.output
    assert "from 1 scenarios in 1 shards" in result.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["num_tiles"] >= 1


def test_rollout_and_view_from_a_converted_file(format_files, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    result = runner.invoke(app, ["rollout", "--scenario", str(format_files["womd-example"]), "--km", "0.02",
                                 "--npc", "idm", "--out", str(report)])
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text())
    pytest.importorskip("pygame")
    shot = tmp_path / "v.png"
    result = runner.invoke(app, ["view", "--drive", "--scenario", f"gpudrive:{format_files['gpudrive']}",
                                 "--screenshot", str(shot), "--size", "320x200", "--step", "2"])
    assert result.exit_code == 0, result.output
    assert shot.is_file()
