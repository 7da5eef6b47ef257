"""The generator CLI commands, driven through typer's runner on a tiny corpus."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import tests.straight_world  # noqa: F401  (registers "test-straight")
from vectorworld.cli import app
from vectorworld.train.tile_corpus import CorpusConfig, build_corpus, save_corpus


def test_train_vae_and_dit_commands(tmp_path: Path) -> None:
    corpus = save_corpus(tmp_path / "c.npz", build_corpus(CorpusConfig(worlds=1, tiles_per_world=3,
                                                                      generator="test-straight")))
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
