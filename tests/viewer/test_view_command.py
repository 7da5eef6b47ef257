"""``vectorworld view`` through the typer runner: headless screenshots, clamping, and exit code 2 with one
clear line for missing, wrong-magic, wrong-version and truncated recordings."""

import struct

import pygame
import pytest
from typer.testing import CliRunner

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator
from vectorworld.cli import app
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.viewer import style
from vectorworld.wire.recording import MAGIC, RecordingWriter

runner = CliRunner()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "run.vwrec"
    config = SessionConfig(generator="test-straight", target_km=0.05, seed=3)
    session = Session(config)
    obs = session.reset()
    with RecordingWriter(path, config) as writer:
        writer.write_frame(session.frame())
        while not obs.done:
            obs = session.step()
            writer.write_frame(session.frame())
        steps = session.step_index
    return path, steps


def view(*args):
    return runner.invoke(app, ["view", *map(str, args)])


def test_screenshot_of_a_step(recording, tmp_path):
    path, steps = recording
    out = tmp_path / "shot.png"
    result = view(path, "--screenshot", out, "--step", 10, "--size", "640x400")
    assert result.exit_code == 0, result.output
    assert "step 10" in result.output
    img = pygame.image.load(str(out))
    assert img.get_size() == (640, 400)
    assert tuple(img.get_at((320, 200)))[:3] == style.EGO_FILL  # the camera follows the ego


def test_step_past_the_end_clamps(recording, tmp_path):
    path, steps = recording
    result = view(path, "--screenshot", tmp_path / "end.png", "--step", 10_000, "--size", "320x200")
    assert result.exit_code == 0, result.output
    assert f"(step {steps})" in result.output and "past the end" in result.output


def test_truncated_recording_opens_to_its_last_complete_step_with_a_warning(recording, tmp_path):
    path, steps = recording
    cut = tmp_path / "cut.vwrec"
    data = path.read_bytes()
    cut.write_bytes(data[:int(len(data) * 0.6)])
    result = view(cut, "--screenshot", tmp_path / "cut.png", "--step", 10_000, "--size", "320x200")
    assert result.exit_code == 0, result.output
    assert "warning: recording truncated" in result.output
    assert f"(step {steps})" not in result.output


@pytest.mark.parametrize("case", ["missing", "wrong-magic", "wrong-version", "header-only-cut", "directory",
                                  "empty"])
def test_bad_recordings_exit_2_with_one_line(recording, tmp_path, case):
    path, _ = recording
    bad = tmp_path / f"{case}.vwrec"
    if case == "wrong-magic":
        bad.write_bytes(b"PK\x03\x04 not a recording at all")
    elif case == "wrong-version":
        data = bytearray(path.read_bytes())
        data[len(MAGIC):len(MAGIC) + 4] = struct.pack("<I", 99)
        bad.write_bytes(bytes(data))
    elif case == "header-only-cut":
        bad.write_bytes(path.read_bytes()[:40])
    elif case == "directory":
        bad.mkdir()
    elif case == "empty":
        bad.write_bytes(b"")
    result = view(bad, "--screenshot", tmp_path / "x.png")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and "Traceback" not in result.output
    assert not (tmp_path / "x.png").exists()
    if case == "wrong-version":
        assert "version 99" in result.output


@pytest.mark.parametrize("args", [[], ["--drive", "--connect", "h:1"], ["--connect", "localhost:1"],
                                  ["--connect", "nohost", "--session", "s"], ["--drive", "--size", "big"],
                                  ["--drive", "--scale", "0"], ["--drive", "--step", "-1"]])
def test_bad_options_exit_2(args):
    result = view(*args)
    assert result.exit_code == 2, result.output
    assert "error:" in result.output


@pytest.mark.parametrize("size", ["big", "10x10"])
def test_bad_size_is_worded_as_the_flag_by_the_cli_and_as_the_field_by_the_library(size):
    from vectorworld.errors import ConfigError
    from vectorworld.viewer.headless import parse_size

    result = view("--drive", "--size", size)
    assert result.exit_code == 2 and "--size" in result.output and "size_px" not in result.output
    with pytest.raises(ConfigError, match="size_px") as err:
        parse_size(size)
    assert err.value.field == "size_px" and "--" not in str(err.value)


def test_drive_mode_headless_screenshot(tmp_path):
    out = tmp_path / "drive.png"
    result = view("--drive", "--generator", "test-straight", "--screenshot", out, "--step", 15,
                  "--size", "640x400")
    assert result.exit_code == 0, result.output
    assert "step 15" in result.output
    assert tuple(pygame.image.load(str(out)).get_at((320, 200)))[:3] == style.EGO_FILL


def test_unknown_generator_for_drive_is_bad_input(tmp_path):
    result = view("--drive", "--generator", "no-such-generator", "--screenshot", tmp_path / "x.png")
    assert result.exit_code == 2, result.output
