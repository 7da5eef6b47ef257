"""A failing episode is recorded with its error and seed, the rest of the batch completes, exit code 1."""

import json

import pytest
from typer.testing import CliRunner

from tests.batch.seeded_world import FAILING_SEED, batch_config, fail_on_seed
from vectorworld.batch import LocalPoolBackend, run_batch
from vectorworld.batch.tasks import run_batch_episode
from vectorworld.cli import app

EPISODES = 5


@pytest.mark.slow
def test_failing_episode_is_recorded_and_the_rest_complete(tmp_path):
    result = run_batch(batch_config(), EPISODES, LocalPoolBackend(2), out_dir=tmp_path / "run",
                       episode_fn=fail_on_seed, plots=False)
    assert len(result.records) == EPISODES
    (failed,) = result.failed
    assert failed["index"] == FAILING_SEED and failed["seed"] == FAILING_SEED
    assert "injected failure for seed 3" in failed["error"] and "RuntimeError" in failed["traceback"]
    assert all(r["completed"] for r in result.records if "error" not in r)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["failed"] == 1 and summary["succeeded"] == EPISODES - 1
    assert summary["failures"] == [{"index": 3, "seed": 3, "error": failed["error"]}]
    assert summary["metrics"]["km"]["n"] == EPISODES - 1
    csv_rows = (tmp_path / "run" / "episodes.csv").read_text().splitlines()
    assert len(csv_rows) == EPISODES + 1 and "injected failure" in csv_rows[1 + FAILING_SEED]


@pytest.mark.slow
def test_cli_exit_code_1_then_resume_reruns_only_the_failed_episode(tmp_path, monkeypatch):
    runner = CliRunner()
    out = tmp_path / "run"
    args = ["rollout", "--generator", "test-seeded-straight", "--km", "0.05", "--episodes", str(EPISODES),
            "--out-dir", str(out), "--out", str(tmp_path / "report.json")]
    monkeypatch.setattr("vectorworld.batch.tasks.run_batch_episode", fail_on_seed)  # serial: in-process
    monkeypatch.setattr("vectorworld.batch.plots.write_plots", lambda directory, records: [])
    res = runner.invoke(app, args)
    assert res.exit_code == 1, res.output
    assert f"episode 3 (seed {FAILING_SEED}) failed" in res.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report["episodes"]) == EPISODES and report["summary"]["failed"] == 1

    monkeypatch.setattr("vectorworld.batch.tasks.run_batch_episode", run_batch_episode)
    res = runner.invoke(app, [*args, "--resume"])
    assert res.exit_code == 0, res.output
    assert f"resumed: {EPISODES - 1} episodes already in" in res.output
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [r["index"] for r in records] == list(range(EPISODES)) and not any("error" in r for r in records)


def test_plain_rollout_reports_a_failing_episode_and_runs_the_others(tmp_path, monkeypatch):
    """Without --workers/--out-dir the episodes run in this process through the same runner: a failure is
    one line and exit code 1, the report holds every episode."""
    out = tmp_path / "report.json"
    monkeypatch.setattr("vectorworld.batch.tasks.run_batch_episode", fail_on_seed)
    res = CliRunner().invoke(app, ["rollout", "--generator", "test-seeded-straight", "--km", "0.05",
                                   "--seed", str(FAILING_SEED - 1), "--episodes", "2", "--out", str(out)])
    assert res.exit_code == 1, res.output
    assert f"episode 1 (seed {FAILING_SEED}) failed: RuntimeError: injected failure" in res.output
    report = json.loads(out.read_text())
    assert report["execution"] == {"backend": "serial", "workers": 1}
    assert [e["index"] for e in report["episodes"]] == [0, 1] and "error" in report["episodes"][1]
    assert report["episodes"][0]["completed"] and report["summary"]["failed"] == 1


def test_serial_backend_reports_every_step_of_every_episode():
    from vectorworld.batch import SerialBackend
    from vectorworld.batch.tasks import make_tasks

    steps: list[tuple[int, float]] = []
    records = list(SerialBackend(on_step=lambda i, km: steps.append((i, km))).run(make_tasks(batch_config(), [0, 1])))
    assert [r["index"] for r in records] == [0, 1]
    for index, record in enumerate(records):
        kms = [km for i, km in steps if i == index]
        assert len(kms) == record["steps"] and kms == sorted(kms) and kms[-1] == pytest.approx(record["km"], abs=1e-6)


def test_batch_recordings_hold_no_wall_clock_values(tmp_path):
    """The batch keeps every tile latency in its records (for the histogram), never in the recording: two
    runs of one seed write byte-identical recordings."""
    from vectorworld.batch import SerialBackend

    digests = []
    for k in range(2):
        path = tmp_path / f"run{k}.vwrec"
        result = run_batch(batch_config(), 1, SerialBackend(), record_path=path, plots=False)
        assert result.records[0]["tile_ms_samples"]
        digests.append(path.read_bytes())
    assert digests[0] == digests[1]
