"""``vectorworld eval planner``: paired seeds, the leaderboard JSON (one object per planner), bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator
from vectorworld.batch.leaderboard import leaderboard, parse_planners
from vectorworld.batch.statistics import paired_test
from vectorworld.cli import app
from vectorworld.errors import ConfigError


def test_paired_test_by_hand():
    a, b = np.array([0.5, 0.6, 0.7, 0.4]), np.array([0.6, 0.8, 0.8, 0.5])
    d = b - a
    result = paired_test(a, b)
    half = 3.182446305284263 * d.std(ddof=1) / 2.0  # t(0.975, df=3) * sd / sqrt(4)
    assert result.diff == pytest.approx(d.mean())
    assert result.ci_low == pytest.approx(d.mean() - half) and result.ci_high == pytest.approx(d.mean() + half)
    assert result.p_value < 0.05
    with pytest.raises(ValueError):
        paired_test(a, b[:2])


def test_leaderboard_pairs_by_episode_index():
    rec = lambda i, cls: {"index": i, "cls": cls, "driving_score": cls, "infractions_per_km": 0.0}  # noqa: E731
    board = leaderboard({"a": [rec(0, 0.5), rec(1, 0.7), {"index": 2, "error": "x"}],
                         "b": [rec(1, 0.9), rec(0, 0.6), rec(2, 0.1)]})
    row = board["planners"]["b"]
    assert board["baseline"] == "a" and row["paired_episodes"] == 2  # episode 2 failed for a: not paired
    assert row["cls_diff_vs_a"] == pytest.approx(0.15)
    assert board["planners"]["a"]["succeeded"] == 2


def test_parse_planners_names_the_bad_one():
    assert parse_planners("idm, pdm,constant-velocity") == ("idm", "pdm", "constant-velocity")
    with pytest.raises(ConfigError, match="nope"):
        parse_planners("idm,nope")
    with pytest.raises(ConfigError, match="twice"):
        parse_planners("idm,idm")


def test_eval_planner_json_one_object_per_planner(tmp_path, monkeypatch):
    monkeypatch.setattr("vectorworld.batch.plots.write_plots", lambda directory, records: [])
    monkeypatch.setattr("vectorworld.batch.leaderboard_plots.write_leaderboard_plot", lambda directory, board: [])
    runner = CliRunner()
    out = runner.invoke(app, ["eval", "planner", "--planners", "idm,constant-velocity", "--episodes", "2",
                              "--km", "0.03", "--npc", "idm", "--json", "--out", str(tmp_path / "lb"),
                              "--generator", "test-straight"])
    assert out.exit_code == 0, out.output
    board = json.loads(out.output)
    assert list(board) == ["idm", "constant-velocity"]
    for row in board.values():
        assert 0.0 <= row["cls"] <= 1.0 and len(row["cls_ci95"]) == 2 and len(row["driving_score_ci95"]) == 2
    assert "cls_diff_vs_idm" in board["constant-velocity"]
    stored = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert stored["planners"] == board and stored["episodes"] == 2
    for name in board:  # one ordinary batch report directory per planner, same seeds
        seeds = [json.loads(line)["seed"] for line in (tmp_path / "lb" / name / "episodes.jsonl").open()]
        assert seeds == [0, 1]


def test_eval_planner_bad_input_exits_2(tmp_path):
    runner = CliRunner()
    for args in (["--planners", "idm,bogus"], ["--episodes", "0"], ["--km", "nan"], ["--npc", "nope"]):
        out = runner.invoke(app, ["eval", "planner", *args])
        assert out.exit_code == 2, (args, out.output)
    for spec, words in ((",", "--planners needs at least one planner name"),
                        ("idm,idm", "--planners lists a planner twice")):
        out = runner.invoke(app, ["eval", "planner", "--planners", spec])
        assert out.exit_code == 2 and words in out.output, out.output
        with pytest.raises(ConfigError, match="^planners") as err:  # the library names the field
            parse_planners(spec)
        assert err.value.field == "planners"


def test_planners_run_separately_are_tabled_together_with_resume(tmp_path, monkeypatch):
    monkeypatch.setattr("vectorworld.batch.plots.write_plots", lambda directory, records: [])
    monkeypatch.setattr("vectorworld.batch.leaderboard_plots.write_leaderboard_plot", lambda directory, board: [])
    runner = CliRunner()
    base = ["eval", "planner", "--episodes", "2", "--km", "0.03", "--npc", "idm", "--generator", "test-straight",
            "--out", str(tmp_path / "lb"), "--json"]
    first = runner.invoke(app, [*base, "--planners", "idm"])
    assert first.exit_code == 0, first.output
    refused = runner.invoke(app, [*base, "--planners", "constant-velocity"])
    assert refused.exit_code == 2 and "--resume" in refused.output
    second = runner.invoke(app, [*base, "--planners", "constant-velocity", "--resume"])
    assert second.exit_code == 0, second.output
    lines_before = (tmp_path / "lb" / "idm" / "episodes.jsonl").read_text()
    both = runner.invoke(app, [*base, "--planners", "idm,constant-velocity", "--resume"])
    assert both.exit_code == 0, both.output
    board = json.loads(both.output)
    assert list(board) == ["idm", "constant-velocity"] and board["constant-velocity"]["paired_episodes"] == 2
    assert board["idm"]["cls"] == json.loads(first.output)["idm"]["cls"]  # not run again
    assert (tmp_path / "lb" / "idm" / "episodes.jsonl").read_text() == lines_before
