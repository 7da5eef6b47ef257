"""Results do not depend on how a batch runs: --workers 1, --workers 2 and --ray give identical episodes."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.batch.seeded_world import batch_config
from vectorworld.batch import strip_timing
from vectorworld.batch.tasks import make_tasks, plugin_modules
from vectorworld.cli import app

EPISODES = 8
ARGS = ["rollout", "--generator", "test-seeded-straight", "--km", "0.05", "--seed", "10",
        "--episodes", str(EPISODES)]


def episodes_of(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "episodes.jsonl").read_text().splitlines()]


def test_tasks_carry_seed_and_plugin_module():
    tasks = make_tasks(batch_config(seed=5), [0, 3])
    assert [t.config.seed for t in tasks] == [5, 8] and [t.index for t in tasks] == [0, 3]
    assert plugin_modules(batch_config())[0] == "tests.batch.seeded_world"


@pytest.mark.slow  # ~3 min on a loaded 2-core machine (starts a local Ray cluster)
def test_workers_and_ray_give_identical_episodes(tmp_path, monkeypatch):
    monkeypatch.setattr("vectorworld.batch.plots.write_plots", lambda directory, records: [])  # test_report
    runner = CliRunner()
    runs = {"serial": ["--workers", "1"], "pool": ["--workers", "2"]}
    if importlib.util.find_spec("ray") is not None:
        runs["ray"] = ["--ray", "local", "--workers", "2"]
    results = {}
    for name, extra in runs.items():
        out = runner.invoke(app, [*ARGS, *extra, "--out-dir", str(tmp_path / name)])
        assert out.exit_code == 0, out.output
        results[name] = [strip_timing(r) for r in episodes_of(tmp_path / name)]
        config = json.loads((tmp_path / name / "config.json").read_text())
        assert config["session"]["seed"] == 10 and config["episodes"] == EPISODES
    serial = results["serial"]
    assert [r["index"] for r in serial] == list(range(EPISODES))
    assert [r["seed"] for r in serial] == [10 + i for i in range(EPISODES)]
    assert len({r["km"] for r in serial}) > 1  # the seeds really differ, so a seed mix-up would show
    assert all(0.0 <= r["cls"] <= 1.0 and "driving_score" in r and "cls_ego_progress_along_route" in r
               for r in serial)  # the planner scores are part of every record compared below
    assert len({r["reference_progress_m"] for r in serial}) > 1
    assert all(len(r["tile_ms_samples"]) == r["tiles"] for r in episodes_of(tmp_path / "serial"))
    for name, records in results.items():
        assert records == serial, name
    if "ray" not in results:
        pytest.skip("ray is not installed: checked --workers 1 and 2 only")


ORPHAN_PARENT = """
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from vectorworld.batch.backends import init_worker

if __name__ == "__main__":
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=init_worker,
                               initargs=(1,))
    print(pool.submit(os.getpid).result(), flush=True)
    pool.submit(time.sleep, 120)
    time.sleep(120)
"""


def test_workers_exit_when_the_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(ORPHAN_PARENT)
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    worker = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(worker, signal.SIGKILL)
    raise AssertionError("the pool worker kept running after its parent was killed")
