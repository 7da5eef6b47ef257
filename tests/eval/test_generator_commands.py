"""The generator CLI commands, driven through typer's runner on a tiny corpus / dataset and a few tiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tests.straight_world  # noqa: F401  (registers "test-straight")
from tests.train.log_dataset import build_log_dataset
from vectorworld.cli import app
from vectorworld.train.tile_corpus import CorpusConfig, build_corpus, save_corpus

SECTION_8 = ("raw_epd_m_mean", "epd_m_mean", "epd_m_p95", "dangling_rate", "init_overlap_rate", "offlane_rate",
             "jsd_nn_dist_m", "jsd_lateral_m", "jsd_heading_rad", "jsd_length_m", "jsd_width_m", "jsd_speed_mps",
             "lane_frechet", "tile_ms_p50", "tile_ms_p95", "fallback_rate", "tiles")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_log_dataset(tmp_path_factory.mktemp("log"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_corpus(tmp_path_factory.mktemp("corpus") / "c.npz",
                       build_corpus(CorpusConfig(worlds=1, tiles_per_world=3, generator="test-straight")))


def test_train_vae_and_dit_commands(tmp_path: Path, corpus: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["train", "vae", "--corpus", str(corpus), "--steps", "2", "--batch-size", "2",
                                 "--out", str(tmp_path / "vae")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "vae" / "model.safetensors").is_file()
    result = runner.invoke(app, ["train", "dit", "--vae", str(tmp_path / "vae"), "--corpus", str(corpus),
                                 "--steps", "2", "--batch-size", "2", "--out", str(tmp_path / "dit")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dit" / "config.json").is_file()
    bad = runner.invoke(app, ["train", "dit", "--vae", str(tmp_path / "missing"), "--corpus", str(corpus)])
    assert bad.exit_code == 2 and "not found" in bad.output


def test_train_generator_run_stops_and_resumes(tmp_path: Path, corpus: Path) -> None:
    runner = CliRunner()
    args = ["train", "generator", "--corpus", str(corpus), "--heldout", str(corpus), "--vae-steps", "2",
            "--dit-steps", "2", "--batch-size", "2", "--eval-every", "1", "--out", str(tmp_path / "run"),
            "--device", "cpu"]
    first = runner.invoke(app, [*args, "--vae-steps", "2", "--max-minutes", "0"])   # stops at once
    assert first.exit_code == 0, first.output
    assert json.loads(first.output.strip().splitlines()[-1])["stage"] == "vae"
    assert (tmp_path / "run" / "run_state.pt").is_file()
    done = runner.invoke(app, [*args, "--resume"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output.strip().splitlines()[-1])
    assert summary["stage"] == "done" and summary["vae_steps"] == 2 and summary["dit_steps"] == 2
    record = json.loads((tmp_path / "run" / "train_log.json").read_text())
    assert record["corpus_tiles"] > 0 and [p["dit_step"] for p in record["curve"]] == [1.0, 2.0]
    assert (tmp_path / "run" / "latest" / "model.safetensors").is_file()


def test_train_on_a_dataset_folder(tmp_path: Path, dataset: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["train", "vae", "--data", str(dataset), "--steps", "2", "--batch-size", "2",
                                 "--out", str(tmp_path / "vae")])
    assert result.exit_code == 0, result.output
    first = json.loads(result.stdout.splitlines()[0])
    assert first == {"data": str(dataset), "tiles": 8}
    result = runner.invoke(app, ["train", "dit", "--vae", str(tmp_path / "vae"), "--data", str(dataset),
                                 "--steps", "2", "--batch-size", "2", "--out", str(tmp_path / "dit")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[0])["tiles"] == 8
    assert (tmp_path / "dit" / "model.safetensors").is_file()


def test_train_data_without_tiles_is_a_clear_error(tmp_path: Path) -> None:
    from vectorworld.generation.learned.generator import WEIGHTS_DIR

    (tmp_path / "empty").mkdir()
    for command in (["vae"], ["dit", "--vae", str(WEIGHTS_DIR)]):
        result = CliRunner().invoke(app, ["train", *command, "--data", str(tmp_path / "empty"), "--steps", "1",
                                          "--out", str(tmp_path / "out")])
        assert result.exit_code == 2, result.output
        assert str(tmp_path / "empty") in result.stderr and "no training tiles" in result.stderr
    assert not (tmp_path / "out").exists()


def test_eval_generator_json_one_step(dataset: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "generator", "--reference", str(dataset), "--steps", "1",
                                      "--tiles", "3", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)                     # stdout is the JSON report and nothing else
    assert set(report) == {"meanflow_1step", "procedural", "naive_agents_on_learned_lanes"}   # 1 step only
    for name in ("meanflow_1step", "procedural"):
        assert set(SECTION_8) <= set(report[name]) and report[name]["tiles"] == 3
        assert report[name]["curvature_mean"] > 0.0 and report[name]["reference_curvature_mean"] > 0.0
    assert "[3/3]" in result.stderr                        # progress went to stderr


def test_eval_generator_table_other_steps_and_out(tmp_path: Path, corpus: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "generator", "--reference", str(corpus), "--steps", "2",
                                      "--tiles", "2", "--worlds", "2", "--ablations", str(tmp_path / "none"),
                                      "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["metric", "meanflow_2step", "procedural", "naive_agents_on_learned_lanes"]
    assert lines[1].split()[:3] == ["tiles", "2.0000", "2.0000"]
    saved = json.loads((tmp_path / "r.json").read_text())
    assert set(saved) == {"meanflow_2step", "procedural", "naive_agents_on_learned_lanes"}


def test_eval_generator_rejects_an_overdetermined_tile_count(corpus: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "generator", "--reference", str(corpus), "--tiles", "4",
                                      "--worlds", "2", "--tiles-per-world", "3"])
    assert result.exit_code == 2 and "at most one of" in result.stderr


def test_eval_generator_grows_worlds_ahead_of_a_virtual_ego_or_refuses_an_unknown_growth(corpus: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "generator", "--reference", str(corpus), "--steps", "1",
                                      "--tiles", "3", "--growth", "drive", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["procedural"]["tiles"] == 3 and report["meanflow_1step"]["tiles"] == 3
    result = CliRunner().invoke(app, ["eval", "generator", "--reference", str(corpus), "--tiles", "3",
                                      "--growth", "spiral"])
    assert result.exit_code == 2 and "growth" in result.stderr and "spiral" in result.stderr
