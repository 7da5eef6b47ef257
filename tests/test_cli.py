"""The CLI: bad input exits 2 with a one-line error and writes nothing; a short rollout writes a report."""

import json

import pytest
from typer.testing import CliRunner

import tests.straight_world  # noqa: F401 - registers "test-straight"
from vectorworld.cli import app

runner = CliRunner()


@pytest.mark.parametrize("args, needle", [
    (["--km", "0"], "--km"),
    (["--km", "-1"], "--km"),
    (["--km", "nan"], "--km"),
    (["--km", "inf"], "--km"),
    (["--episodes", "0"], "--episodes"),
    (["--npc", "nope"], "NPC policy"),
    (["--planner", "nope"], "planner"),
    (["--planner", "no_such_module:X"], "cannot import"),
    (["--generator", "nope"], "generator"),
    (["--out", "/nonexistent-dir/report.json"], "--out"),
    (["--record", "/nonexistent-dir/run.vwrec"], "--record"),
])
def test_bad_input_exit_2(tmp_path, args, needle):
    result = runner.invoke(app, ["rollout", *args])
    assert result.exit_code == 2, result.output
    assert needle in result.output
    assert list(tmp_path.iterdir()) == []


def test_short_rollout_writes_report(tmp_path):
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["rollout", "--km", "0.1", "--episodes", "2", "--generator", "test-straight",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert [e["seed"] for e in report["episodes"]] == [0, 1]
    assert all(e["completed"] and e["km"] >= 0.1 for e in report["episodes"])
    assert report["summary"]["completed_rate"] == 1.0
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temp files left
