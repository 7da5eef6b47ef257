"""Recordings: round trip, byte-identical for the same seed, truncated files, wrong magic / version."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator
from tests.recorded_session import record_session
from vectorworld.errors import RecordingError
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.wire.recording import MAGIC, RecordingWriter, read_recording

CONFIG = SessionConfig(generator="test-straight", target_km=0.05, seed=7)


def record(path: Path, config: SessionConfig = CONFIG, **options: bool) -> tuple[Session, list]:
    session = Session(config)
    frames, _, _ = record_session(session, path, **options)
    return session, frames


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "run.vwrec"
    session, frames = record(path, include_timings=True, include_history=True)
    rec = read_recording(path)
    assert not rec.truncated and rec.header.config == CONFIG and rec.header.seed == 7
    assert rec.header.has_timings and rec.header.has_history
    assert len(rec.frames) == len(frames) == session.step_index + 1
    for got, want in zip(rec.frames, frames, strict=True):
        valid = want.agents.valid
        np.testing.assert_array_equal(got.agents.valid, valid)
        for name in ("id", "agent_type", "xy", "yaw", "speed", "length", "width", "history",
                     "history_valid"):
            np.testing.assert_array_equal(getattr(got.agents, name)[valid], getattr(want.agents, name)[valid])
        np.testing.assert_array_equal(got.policy_of, want.policy_of)
        np.testing.assert_array_equal(got.ego_plan, want.ego_plan)
        assert got.step_metrics == want.step_metrics and got.end_reason == want.end_reason
        assert got.removed_lane_ids == want.removed_lane_ids and got.km == want.km
        assert [t.id for t in got.new_tiles] == [t.id for t in want.new_tiles]
        assert [t.latency_ms for t in got.new_tiles] == [t.latency_ms for t in want.new_tiles]
        assert got.tile_ms == want.tile_ms and got.npc_policy_ms == want.npc_policy_ms
        for a, b in zip(got.new_lanes, want.new_lanes, strict=True):
            np.testing.assert_array_equal(a.points, b.points)
            assert (a.id, a.successors, a.left_neighbors, a.tile_id) == \
                (b.id, b.successors, b.left_neighbors, b.tile_id)
    assert sum(len(f.new_tiles) for f in rec.frames) == rec.report["tiles"]
    assert rec.report["completed"] and rec.report["steps"] == session.step_index


def test_same_seed_gives_identical_bytes_without_timings(tmp_path: Path) -> None:
    a, b = tmp_path / "a.vwrec", tmp_path / "b.vwrec"
    record(a)
    record(b)
    assert a.read_bytes() == b.read_bytes()
    rec = read_recording(a)
    assert not rec.header.has_timings and rec.report["wall_s"] == 0.0
    assert all(f.tile_ms == 0.0 for f in rec.frames)
    c = tmp_path / "c.vwrec"
    record(c, dataclasses.replace(CONFIG, seed=8))
    assert c.read_bytes() != a.read_bytes()


def test_truncated_file_returns_complete_frames(tmp_path: Path) -> None:
    path = tmp_path / "run.vwrec"
    _, frames = record(path)
    data = path.read_bytes()
    cut = tmp_path / "cut.vwrec"
    cut.write_bytes(data[: len(data) * 2 // 3])
    rec = read_recording(cut)
    assert rec.truncated and 0 < len(rec.frames) < len(frames) and rec.report is None
    assert [f.step for f in rec.frames] == list(range(len(rec.frames)))


def test_wrong_magic_version_missing_and_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "run.vwrec"
    record(path)
    data = path.read_bytes()
    with pytest.raises(RecordingError, match="does not exist"):
        read_recording(tmp_path / "missing.vwrec")
    (tmp_path / "magic").write_bytes(b"NOTAREC!" + data[8:])
    with pytest.raises(RecordingError, match="magic"):
        read_recording(tmp_path / "magic")
    (tmp_path / "version").write_bytes(MAGIC + (99).to_bytes(4, "little") + data[12:])
    with pytest.raises(RecordingError, match="version 99"):
        read_recording(tmp_path / "version")
    corrupt = bytearray(data)
    corrupt[len(data) // 2] ^= 0xFF
    (tmp_path / "corrupt").write_bytes(bytes(corrupt))
    with pytest.raises(RecordingError, match="corrupt|decoded"):
        read_recording(tmp_path / "corrupt")
    (tmp_path / "header").write_bytes(data[:20])
    with pytest.raises(RecordingError, match="header"):
        read_recording(tmp_path / "header")


def test_writer_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "run.vwrec"
    session = Session(CONFIG)
    session.reset()
    with pytest.raises(RuntimeError), RecordingWriter(path, CONFIG) as writer:
        writer.write_frame(session.frame())
        assert not path.exists()  # only the temporary file exists while writing
        raise RuntimeError("crash mid-episode")
    assert not path.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(RecordingError, match="does not exist"):
        RecordingWriter(tmp_path / "no" / "dir.vwrec", CONFIG)
