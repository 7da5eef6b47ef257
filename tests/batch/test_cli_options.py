"""Bad batch options: one line naming the option, exit code 2, nothing simulated."""

import pytest
from typer.testing import CliRunner

import tests.batch.seeded_world  # noqa: F401 - registers "test-seeded-straight"
from vectorworld.cli import app

BASE = ["rollout", "--generator", "test-seeded-straight", "--km", "0.05"]


@pytest.mark.parametrize("extra, message", [
    (["--workers", "0"], "--workers must be >= 1"),
    (["--resume"], "--resume needs --out-dir"),
    (["--ray", "-x"], "--ray needs an address"),
    (["--out-dir", "/nonexistent/dir/run"], "--out-dir: directory /nonexistent/dir does not exist"),
])
def test_bad_batch_options_exit_2(extra, message):
    res = CliRunner().invoke(app, [*BASE, *extra])
    assert res.exit_code == 2, res.output
    assert message in res.output and len(res.output.strip().splitlines()) == 1


def test_existing_batch_without_resume_is_refused(tmp_path):
    (tmp_path / "episodes.jsonl").write_text('{"index": 0, "seed": 0, "km": 0.05}\n')
    res = CliRunner().invoke(app, [*BASE, "--out-dir", str(tmp_path)])
    assert res.exit_code == 2 and "error: --out-dir " in res.output and "set --resume to continue" in res.output
    assert (tmp_path / "episodes.jsonl").read_text().count("\n") == 1  # untouched
    assert not (tmp_path / "summary.json").exists()
