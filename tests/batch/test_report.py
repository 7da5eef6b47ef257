"""The report directory (summary with CIs, CSV, plots) and ``vectorworld report [--compare]``."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from vectorworld.batch import compare_runs, load_run
from vectorworld.batch.plots import PLOT_FILES
from vectorworld.batch.report_dir import CSV_FILE, SUMMARY_FILE, write_report_dir
from vectorworld.batch.store import EpisodeStore
from vectorworld.cli import app


def synthetic_records(n: int, collisions_per_km: float, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"index": i, "seed": i, "km": 1.0, "completed": bool(i % 4), "ego_collisions": int(i % 4 == 0),
             "npc_collisions_per_km": float(rng.normal(collisions_per_km, 0.1)), "npc_offroad_per_km": 0.0,
             "rtf": float(rng.uniform(20, 30)), "wall_s": 5.0, "tiles": 3, "tile_ms_p50": 1.0, "tile_ms_p95": 2.0,
             "tile_ms_samples": [1.0, 1.5, 2.0], "end_reason": "goal_reached"} for i in range(n)]


def write_run(directory, records, plots=False):
    store = EpisodeStore(directory)
    for r in records:
        store.append(r)
    store.close()
    return write_report_dir(directory, records, len(records), plots=plots)


def test_report_directory_contents(tmp_path):
    records = synthetic_records(12, 1.0, 0)
    records.append({"index": 12, "seed": 12, "error": "RuntimeError: boom", "traceback": "..."})
    summary, warnings = write_run(tmp_path, records, plots=True)
    assert warnings == []
    on_disk = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert on_disk["succeeded"] == 12 and on_disk["failed"] == 1
    km = on_disk["metrics"]["npc_collisions_per_km"]
    assert km["n"] == 12 and km["ci95"][0] < km["mean"] < km["ci95"][1]
    completed = on_disk["metrics"]["completed"]
    assert completed["mean"] == pytest.approx(9 / 12) and 0.0 <= completed["ci95"][0] < completed["ci95"][1] <= 1.0
    assert on_disk["totals"]["ego_collisions"] == 3 and on_disk["totals"]["tiles"] == 36
    assert on_disk["metrics"]["ego_collisions_per_km"]["mean"] == pytest.approx(0.25)
    rows = (tmp_path / CSV_FILE).read_text().splitlines()
    assert len(rows) == 14 and rows[0].startswith("index,seed,completed,km") and "tile_ms_samples" not in rows[0]
    assert rows[-1].endswith("RuntimeError: boom")
    for name in PLOT_FILES:
        png = (tmp_path / "plots" / name).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 1000


def test_compare_flags_a_real_difference_only():
    base = synthetic_records(20, 1.0, 1)
    worse = synthetic_records(20, 2.0, 2)
    diffs = {d.name: d for d in compare_runs(worse, base)}
    assert diffs["npc_collisions_per_km"].marker == "***"
    assert diffs["npc_collisions_per_km"].test.diff == pytest.approx(1.0, abs=0.15)
    assert diffs["km"].marker == "" and diffs["km"].test.p_value == 1.0
    same = {d.name: d for d in compare_runs(base, base)}
    assert all(d.marker == "" for d in same.values())


def test_report_command_table_and_compare(tmp_path):
    write_run(tmp_path / "base", synthetic_records(20, 1.0, 1))
    write_run(tmp_path / "new", synthetic_records(20, 2.0, 2))
    runner = CliRunner()
    res = runner.invoke(app, ["report", str(tmp_path / "base")])
    assert res.exit_code == 0, res.output
    assert "npc_collisions_per_km" in res.output and "95% CI" in res.output
    res = runner.invoke(app, ["report", str(tmp_path / "new"), "--compare", str(tmp_path / "base")])
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if "npc_collisions_per_km" in ln)
    assert "***" in line
    assert len(load_run(tmp_path / "new").records) == 20


def test_report_command_bad_input(tmp_path):
    res = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 2 and "not a batch report directory" in res.output
