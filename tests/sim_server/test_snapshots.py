"""Session snapshots: a restored snapshot continues exactly as the uninterrupted run (recording bytes, report,
state digests), recovery starts from a snapshot and replays only the steps after it, and an unusable
snapshot falls back to replaying the whole journal (never a lost session)."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from sim_server import snapshots
from sim_server.client import SimClient
from sim_server.journal import JournalStore, state_digest
from sim_server.server import create_server
from tests.sim_server.conftest import TEST_DEFAULTS, server_config
from tests.sim_server.test_durability import canonical, untimed
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.v1 import session_pb2
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.vehicle.commands import ControlCommand, EgoCommand
from vectorworld.wire.recording import RecordingWriter

EVERY = 5


def command(k: int) -> EgoCommand | None:
    """Built-in planner steps mixed with explicit controls (a replay that skipped or doubled one would show)."""
    return ControlCommand(0.4, 0.02) if k % 4 == 1 else None


def record_from(session: Session, steps: range, path: Path) -> tuple[Path, list[int]]:
    """Step ``session`` through ``steps`` (commands by index), recording every frame from the current one."""
    digests = []
    with RecordingWriter(path, session.config) as writer:
        writer.write_frame(session.frame())
        for k in steps:
            session.step(command(k))
            writer.write_frame(session.frame())
            digests.append(state_digest(session))
        writer.close(session.report())
    return path, digests


@pytest.mark.parametrize("config", [
    dataclasses.replace(TEST_DEFAULTS, target_km=5.0),
    SessionConfig(generator="procedural", npc_policy="idm", target_km=5.0, seed=3),  # city plan (lru caches)
    SessionConfig(generator="procedural", npc_policy="deltasim", target_km=5.0, seed=1),  # Static Runtime scorer
    SessionConfig(generator="learned", npc_policy="idm", target_km=5.0, seed=2),  # the generator's frozen graph
], ids=["test-straight", "procedural-idm", "procedural-deltasim", "learned-idm"])
def test_a_restored_snapshot_continues_byte_identical_to_the_uninterrupted_run(config: SessionConfig,
                                                                                 tmp_path: Path) -> None:
    at, end = 12, 24
    live = Session(config)
    live.reset()
    for k in range(at):
        live.step(command(k))
    capture = snapshots.capture(live, state_digest(live), (at - 1, b"cmd", b"reply"))
    capture.write(tmp_path / "s.snap")
    header, snap = snapshots.read_snapshot(tmp_path / "s.snap")
    assert header["step"] == snap.step == at and snap.reply == (at - 1, b"cmd", b"reply")
    restored = snap.session
    assert state_digest(restored) == header["digest"] == state_digest(live)

    uninterrupted, live_digests = record_from(live, range(at, end), tmp_path / "live.vwr")
    resumed, restored_digests = record_from(restored, range(at, end), tmp_path / "restored.vwr")
    assert restored_digests == live_digests
    assert resumed.read_bytes() == uninterrupted.read_bytes()  # every frame after the snapshot, byte for byte
    assert untimed(restored.report()) == untimed(live.report())
    assert canonical(restored.observe()) == canonical(live.observe())


def test_a_damaged_snapshot_is_refused(tmp_path: Path) -> None:
    session = Session(TEST_DEFAULTS)
    session.reset()
    path = tmp_path / "s.snap"
    snapshots.capture(session, state_digest(session), None).write(path)
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(snapshots.SnapshotUnusable, match="damaged"):
        snapshots.read_snapshot(path)


def _served_run(tmp_path: Path, steps: int) -> tuple[object, str, bytes, pb.StepRequest]:
    """A journaled session stepped ``steps`` times (snapshots every EVERY steps), then a graceful stop.
    Returns (config, id, the last step's reply bytes, the request of that step)."""
    config = server_config(state_dir=tmp_path, snapshot_every=EVERY)
    srv = create_server(config)
    try:
        with SimClient(f"127.0.0.1:{srv.port}") as c:
            session = c.create_session(seed=2, lane_delivery="delta", history_delivery="delta")
            for k in range(steps - 1):
                session.step(command(k))
            request = pb.StepRequest(session_id=session.id, expected_step=steps - 1, command=session_pb2.EgoCommand(
                control=session_pb2.ControlCommand(accel_mps2=0.3)))
            last = c.stub.Step(request).SerializeToString()
    finally:
        srv.stop(grace_s=1.0)
    return config, session.id, last, request


def _local(steps: int) -> Session:
    local = Session(dataclasses.replace(TEST_DEFAULTS, seed=2))
    local.reset()
    for k in range(steps - 1):
        local.step(command(k))
    local.step(ControlCommand(0.3, 0.0))
    return local


@pytest.mark.parametrize("steps", [12, 10], ids=["steps-after-the-snapshot", "snapshot-at-the-last-step"])
def test_recovery_starts_from_the_snapshot_and_replays_only_the_steps_after_it(tmp_path: Path, steps: int) -> None:
    config, session_id, last, request = _served_run(tmp_path, steps)
    assert (tmp_path / f"{session_id}.snap").exists()
    srv = create_server(dataclasses.replace(config, port=0))
    try:
        assert srv.metrics.sessions_recovered.value() == 1 and srv.metrics.recovery_snapshots.value() == 1
        assert srv.metrics.recovery_replayed_steps.value() == steps % EVERY  # not all `steps`
        with SimClient(f"127.0.0.1:{srv.port}") as c:
            assert c.stub.Step(request).SerializeToString() == last  # the kept reply survives, byte for byte
            remote, local = c.session(session_id), _local(steps)
            assert remote.step_index == steps
            for k in range(steps, steps + 6):
                assert canonical(remote.step(command(k))) == canonical(local.step(command(k)))
            report = remote.close()
            assert untimed(report) == untimed(local.report())
        assert not (tmp_path / f"{session_id}.snap").exists()  # closed: journal and snapshot removed
        assert not (tmp_path / f"{session_id}.journal").exists()
    finally:
        srv.stop(grace_s=1.0)


def test_an_unusable_snapshot_falls_back_to_the_whole_journal(tmp_path: Path) -> None:
    config, session_id, last, request = _served_run(tmp_path, 12)
    snap = tmp_path / f"{session_id}.snap"
    snap.write_bytes(snap.read_bytes()[:-100])  # cut short
    (tmp_path / "0123456789abcdef0123456789abcdef.snap").write_bytes(b"an orphan")  # no journal
    srv = create_server(dataclasses.replace(config, port=0))
    try:
        assert srv.metrics.sessions_recovered.value() == 1 and srv.metrics.sessions_lost.value() == 0
        assert srv.metrics.recovery_snapshots.value() == 0
        assert srv.metrics.recovery_replayed_steps.value() == 12
        assert not (tmp_path / "0123456789abcdef0123456789abcdef.snap").exists()
        with SimClient(f"127.0.0.1:{srv.port}") as c:
            assert c.stub.Step(request).SerializeToString() == last
            remote, local = c.session(session_id), _local(12)
            for k in range(12, 15):
                assert canonical(remote.step(command(k))) == canonical(local.step(command(k)))
    finally:
        srv.stop(grace_s=1.0)


class _SlowCapture:
    """A snapshot whose write waits for ``release`` (a large state being compressed)."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()

    def write(self, path: Path) -> int:
        self.started.set()
        self.release.wait(10.0)
        path.write_bytes(b"state")
        return 5


def test_a_session_closed_while_its_snapshot_is_written_leaves_no_file(tmp_path: Path) -> None:
    """Closing waits for the snapshot being written, then deletes it with the journal: the closed
    session's files are gone when the close returns (a client saw the snapshot after its close)."""
    store, capture = JournalStore(tmp_path, snapshot_every=EVERY), _SlowCapture()
    store.start()
    try:
        journal = store.create("s1", "{}", {})
        assert journal.snapshot(capture) and capture.started.wait(10.0)
        closing = threading.Thread(target=journal.remove)
        closing.start()
        closing.join(0.2)
        assert closing.is_alive()             # waits for the write in progress
        capture.release.set()
        closing.join(10.0)
        assert not closing.is_alive()
        assert not journal.snapshot_path.exists() and not journal.path.exists()
    finally:
        capture.release.set()
        store.stop()
