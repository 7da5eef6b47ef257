"""NPC evaluation plumbing: realised infeasibility, synthetic runs, WOMD hold-out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from policies.deltasim.feasibility import realised_infeasible
from policies.deltasim.scenes import drive, synthetic_input
from policies.idm import IdmPolicy
from vectorworld.eval.npc_eval import (
    MeasuredPolicy,
    evaluate_npc_synthetic,
    evaluate_womd,
    session_jobs,
    summarize_sessions,
)

WOMD = Path(__file__).resolve().parents[2] / "../shared/data/womd/motion_data_one_scenario.tfrecord"


def test_realised_infeasible_matches_the_metric_definition() -> None:
    xy0 = np.zeros((5, 2))
    yaw0 = np.zeros(5)
    v0 = np.array([10.0, 10.0, 10.0, 0.0, 10.0])
    xy1 = np.array([[1.0, 0.0], [0.2, 0.0], [1.0, 0.0], [-0.1, 0.0], [1.0, 0.0]])
    yaw1 = np.array([0.0, 0.0, 0.2, 0.0, 0.05])
    v1 = np.array([10.0, 2.0, 10.0, -1.0, 10.0])
    bad = realised_infeasible(xy0, yaw0, v0, xy1, yaw1, v1)
    assert bad.tolist() == [False, True, True, True, False]


def test_measured_policy_counts_realised_steps() -> None:
    inp = synthetic_input(6, np.random.default_rng(0), num_lanes=2)
    measured = MeasuredPolicy(IdmPolicy())
    for _ in drive(inp, measured, np.random.default_rng(0), 5):
        pass
    assert len(measured.ms) == 5 and len(measured.speeds) == 5
    assert measured.vehicle_steps > 0


def test_synthetic_evaluation_reports_every_policy() -> None:
    report = evaluate_npc_synthetic(("constant-velocity", "idm"), seeds=1, steps=15)
    assert set(report) == {"constant-velocity", "idm"}
    for row in report.values():
        assert row["npc_km"] > 0 and 0.0 <= row["kinematic_infeasibility_rate"] <= 1.0


@pytest.mark.skipif(not WOMD.is_file(), reason="WOMD sample not available")
def test_womd_rollout_reports_displacement_errors() -> None:
    report = evaluate_womd(WOMD, policies=("constant-velocity",), horizon_steps=30)
    row = report["rollout"]["constant-velocity"]
    assert row["agents"] > 10
    assert 0.0 <= row["de_1s_m"] < row["de_3s_m"] < 5.0


def test_eval_npc_cli_runs_the_session_comparison_with_fewer_ablation_seeds() -> None:
    import json

    from typer.testing import CliRunner

    from vectorworld.cli import app

    result = CliRunner().invoke(app, ["eval", "npc", "--km", "0.01", "--episodes", "2", "--ablation-episodes", "1",
                                      "--policies", "idm,constant-velocity", "--no-synthetic", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["seeds_by_policy"] == {"idm": 2, "constant-velocity": 1}
    session = report["session"]
    assert session["idm"]["episodes"] == 2 and session["constant-velocity"]["episodes"] == 1
    assert [row["seed"] for row in session["idm"]["per_episode"]] == [0, 1]
    assert "synthetic" not in report


def test_session_jobs_run_seed_major_and_summaries_group_by_policy() -> None:
    """An evaluation cut short (or resumed from per-episode reports) still compares policies on the same seeds."""
    jobs = session_jobs(("a", "b"), seeds=3, km=1.0, seeds_by_policy={"b": 1})
    assert [(name, seed) for name, seed, *_ in jobs] == [("a", 0), ("b", 0), ("a", 1), ("a", 2)]
    row = {"km": 1.0, "npc_collisions_per_km": 2.0, "npc_offroad_per_km": 0.0, "kinematic_infeasibility_rate": 0.0,
           "realised_infeasibility_rate": 0.0, "npc_vehicle_steps": 10, "npc_mean_speed_mps": 5.0,
           "npc_policy_ms": 1.0, "ego_collisions": 0, "completed": True, "end_reason": "goal_reached", "rtf": 20.0}
    reports = [{**row, "policy": name, "seed": seed} for name, seed, *_ in jobs]
    summary = summarize_sessions(reports, ("a", "b"))
    assert summary["a"]["episodes"] == 3 and summary["a"]["seeds"] == [0, 1, 2]
    assert summary["b"]["npc_collision_events"] == 2 and summary["b"]["km"] == 1.0


def test_eval_npc_refuses_a_missing_womd_file_before_running_any_episode(tmp_path: Path, monkeypatch) -> None:
    """A mistyped --womd path used to be skipped silently after the whole comparison had run."""
    from typer.testing import CliRunner

    from vectorworld.cli import app
    from vectorworld.errors import DataFormatError
    from vectorworld.eval import npc_eval

    def no_episodes(*args: object, **kwargs: object) -> dict:
        raise AssertionError("episodes ran before the WOMD path was checked")

    monkeypatch.setattr(npc_eval, "evaluate_npc_session", no_episodes)
    missing = tmp_path / "missing.tfrecord"
    with pytest.raises(DataFormatError, match="missing.tfrecord"):
        npc_eval.evaluate_npc(1, 0.01, ("idm",), womd_path=missing, synthetic=False)
    result = CliRunner().invoke(app, ["eval", "npc", "--policies", "idm", "--no-synthetic", "--womd", str(missing)])
    assert result.exit_code == 2 and "missing.tfrecord" in result.output


@pytest.mark.skipif(not WOMD.is_file(), reason="shared WOMD sample not present")
def test_eval_npc_table_shows_the_womd_rows() -> None:
    from typer.testing import CliRunner

    from vectorworld.cli import app

    result = CliRunner().invoke(app, ["eval", "npc", "--km", "0.01", "--episodes", "1", "--policies", "idm",
                                      "--no-synthetic", "--womd", str(WOMD)])
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line for line in result.output.splitlines() if line.startswith("womd")}
    assert set(rows) == {"idm", "deltasim-bc"}
    assert "de_8s_m=" in rows["idm"] and "agents=49" in rows["idm"]
    assert "top1=" in rows["deltasim-bc"]
