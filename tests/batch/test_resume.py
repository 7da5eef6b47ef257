"""A batch killed mid-way continues with --resume: exactly N episodes at the end, none run twice."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.batch.seeded_world import batch_config
from vectorworld.batch import run_batch
from vectorworld.batch.store import EpisodeStore
from vectorworld.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
EPISODES = 6
FINISHED_BEFORE_KILL = 3

# Episodes 0-2 run normally; episode 3 stands in for a long episode and blocks until the process is killed.
BATCH_SCRIPT = """
import sys, threading
from pathlib import Path
from tests.batch.seeded_world import batch_config
from vectorworld.batch import SerialBackend, run_batch
from vectorworld.batch.tasks import run_batch_episode

def episode(config, record_path=None, on_progress=None):
    if config.seed >= {blocked}:
        threading.Event().wait()
    return run_batch_episode(config, record_path, on_progress)

run_batch(batch_config(), {episodes}, SerialBackend(), out_dir=Path(sys.argv[1]), episode_fn=episode)
"""


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def start_and_kill(out_dir: Path) -> None:
    script = BATCH_SCRIPT.format(blocked=FINISHED_BEFORE_KILL, episodes=EPISODES)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", script, str(out_dir)], cwd=ROOT, env=env,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240  # generous: only bounds a hang, the test never measures time
        while len(lines(out_dir / "episodes.jsonl")) < FINISHED_BEFORE_KILL:
            assert proc.poll() is None, "the batch process exited early"
            assert time.monotonic() < deadline, "the batch never got going"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_killed_batch_resumes_without_rerunning(tmp_path):
    out = tmp_path / "run"
    start_and_kill(out)
    before = {json.loads(line)["index"]: json.loads(line) for line in lines(out / "episodes.jsonl")}
    assert sorted(before) == list(range(FINISHED_BEFORE_KILL))
    with open(out / "episodes.jsonl", "a") as f:  # a line cut short by the kill
        f.write('{"index": 5, "seed": 5, "km": 0.0')

    result = run_batch(batch_config(), EPISODES, out_dir=out, resume=True, plots=False)

    assert result.skipped == tuple(range(FINISHED_BEFORE_KILL))
    assert sorted(result.ran) == list(range(FINISHED_BEFORE_KILL, EPISODES))
    after = [json.loads(line) for line in lines(out / "episodes.jsonl")]
    assert [r["index"] for r in after] == list(range(EPISODES))
    assert all("error" not in r for r in after)
    for index, record in before.items():  # identical timings too: these episodes were not run again
        assert after[index] == record
    summary = json.loads((out / "summary.json").read_text())
    assert summary["succeeded"] == EPISODES and summary["failed"] == 0


def test_existing_batch_needs_resume_and_same_config(tmp_path):
    out = tmp_path / "run"
    run_batch(batch_config(), 1, out_dir=out, plots=False)
    with pytest.raises(ConfigError, match="^out_dir .* set resume") as info:
        run_batch(batch_config(), 2, out_dir=out, plots=False)
    assert info.value.field == "out_dir"
    with pytest.raises(ConfigError, match="target_km"):
        run_batch(batch_config(target_km=0.07), 2, out_dir=out, resume=True, plots=False)
    done = run_batch(batch_config(), 2, out_dir=out, resume=True, plots=False)
    assert done.skipped == (0,) and done.ran == (1,)
    assert sorted(EpisodeStore(out, resume=True).done_indices()) == [0, 1]
    with pytest.raises(ConfigError, match="already holds episode 1"):
        run_batch(batch_config(), 1, out_dir=out, resume=True, plots=False)
