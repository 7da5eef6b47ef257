"""Durable sessions: journals, recovery after kill -9 and after a graceful restart, lost sessions, reasons."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest

from sim_server import RECOVERING_METADATA
from sim_server.client import SimClient
from sim_server.journal import read_journal
from sim_server.recovery import journal_to_recording
from sim_server.server import create_server
from tests.sim_server.conftest import TEST_DEFAULTS, server_config
from vectorworld.sim.observation import Observation
from vectorworld.sim.session import Session
from vectorworld.v1 import session_pb2
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.vehicle.commands import ControlCommand, EgoCommand
from vectorworld.wire import codec
from vectorworld.wire.recording import RecordingWriter

ROOT = Path(__file__).resolve().parents[2]
STEPS = 30


def commands(seed: int) -> list[EgoCommand | None]:
    """A fixed mix of built-in planner steps and explicit controls (so a step applied twice would show)."""
    return [ControlCommand(0.3 + 0.1 * seed, 0.0) if k % 3 == 1 else None for k in range(STEPS)]


def canonical(obs: Observation) -> bytes:
    """An observation as complete bytes (full lanes, agent messages): equal bytes = equal observations."""
    return codec.observation_to_proto(obs).SerializeToString()


def untimed(report: dict) -> bytes:  # noqa: ANN001 - the report dict
    return codec.report_to_proto(report, include_timings=False).SerializeToString()


def local_run(seed: int, recording: Path) -> tuple[list[bytes], dict]:
    session = Session(dataclasses.replace(TEST_DEFAULTS, seed=seed))
    session.reset()
    observations = []
    with RecordingWriter(recording, session.config) as writer:
        writer.write_frame(session.frame())
        for command in commands(seed):
            observations.append(canonical(session.step(command)))
            writer.write_frame(session.frame())
        writer.close(session.report())
    return observations, session.report()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server_process(port: int, state_dir: Path) -> subprocess.Popen:
    code = ("import tests.straight_world; from sim_server.config import ServerConfig; "
            "from sim_server.server import serve; from tests.sim_server.conftest import TEST_DEFAULTS; "
            f"serve(ServerConfig(port={port}, http_port=None, grace_s=2.0, state_dir={str(state_dir)!r}, "
            "snapshot_every=4, "
            "session_defaults=TEST_DEFAULTS))")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        grpc.channel_ready_future(channel).result(timeout=120)
    return proc


@pytest.mark.slow
def test_kill_9_mid_run_then_restart_continues_every_session_exactly(tmp_path: Path) -> None:
    port, state = free_port(), tmp_path / "state"
    seeds = (0, 1, 2)
    proc = start_server_process(port, state)
    progress = {seed: 0 for seed in seeds}
    received: dict[int, list[bytes]] = {seed: [] for seed in seeds}
    steps_seen: dict[int, list[int]] = {seed: [] for seed in seeds}
    errors: list[BaseException] = []
    client = SimClient(f"127.0.0.1:{port}", timeout_s=60.0, reconnect_s=120.0)
    sessions = {seed: client.create_session(seed=seed) for seed in seeds}

    def drive(seed: int) -> None:
        try:
            for obs in sessions[seed].stream(iter(commands(seed))):
                received[seed].append(canonical(obs))
                steps_seen[seed].append(obs.step)
                progress[seed] = obs.step
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=drive, args=(seed,)) for seed in seeds]
    try:
        for t in threads:
            t.start()
        while min(progress.values()) < 8 and not errors and any(t.is_alive() for t in threads):
            threading.Event().wait(0.02)
        proc.send_signal(signal.SIGKILL)  # in the middle of stepping: some reply may be in flight
        proc.wait(timeout=30)
        killed_at = dict(progress)
        proc = start_server_process(port, state)
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        assert max(killed_at.values()) < STEPS  # the kill did land mid-run
        for seed in seeds:
            assert steps_seen[seed] == list(range(1, STEPS + 1))  # no step lost, none twice
            expected, expected_report = local_run(seed, tmp_path / f"local{seed}.vwr")
            assert received[seed] == expected  # every observation, byte for byte
            journal = state / f"{sessions[seed].id}.journal"
            assert [s.expected_step for s in read_journal(journal).steps] == list(range(STEPS))
            served = journal_to_recording(journal, tmp_path / f"served{seed}.vwr")
            assert served.read_bytes() == (tmp_path / f"local{seed}.vwr").read_bytes()
            report = sessions[seed].close()
            assert untimed(report) == untimed(expected_report)
            assert not journal.exists()  # a closed session's journal is removed
    finally:
        client.close()
        proc.kill()
        proc.wait(timeout=30)


def test_graceful_restart_keeps_sessions_and_the_kept_reply(tmp_path: Path) -> None:
    config = server_config(state_dir=tmp_path)
    srv = create_server(config)
    with SimClient(f"127.0.0.1:{srv.port}") as c:
        session = c.create_session(seed=4, lane_delivery="delta", history_delivery="delta")
        for _ in range(5):
            session.step()
        request = pb.StepRequest(session_id=session.id, expected_step=5,
                                 command=session_pb2.EgoCommand(control=session_pb2.ControlCommand(accel_mps2=0.5)))
        before = c.stub.Step(request).SerializeToString()
    srv.stop(grace_s=1.0)
    assert (tmp_path / f"{session.id}.journal").exists()  # a shutdown keeps the journals
    srv = create_server(dataclasses.replace(config, port=0))
    try:
        assert srv.metrics.sessions_recovered.value() == 1
        with SimClient(f"127.0.0.1:{srv.port}") as c:
            assert c.stub.Step(request).SerializeToString() == before  # the reply lost in the restart, again
            remote = c.session(session.id)
            assert remote.step_index == 6
            local = Session(dataclasses.replace(TEST_DEFAULTS, seed=4))
            local.reset()
            for _ in range(5):
                local.step()
            local.step(ControlCommand(0.5, 0.0))
            for _ in range(4):
                assert canonical(remote.step()) == canonical(local.step())
    finally:
        srv.stop(grace_s=1.0)


def test_a_journal_that_diverges_is_reported_lost_not_silently_dropped(tmp_path: Path) -> None:
    config = server_config(state_dir=tmp_path)
    srv = create_server(config)
    with SimClient(f"127.0.0.1:{srv.port}") as c:
        session = c.create_session(seed=0)
        session.step(), session.step()
    srv.stop(grace_s=1.0)
    journal = tmp_path / f"{session.id}.journal"
    lines = journal.read_text().splitlines()
    last = json.loads(lines[-1])
    last["h"] ^= 1  # a wrong state digest for step 2: as if the engine had changed since
    journal.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    srv = create_server(dataclasses.replace(config, port=0))
    try:
        with SimClient(f"127.0.0.1:{srv.port}") as c, pytest.raises(grpc.RpcError) as info:
            c.get_session(session.id)
        assert info.value.code() == grpc.StatusCode.DATA_LOSS
        assert "lost when the server restarted" in info.value.details()
        assert "diverged at step 2" in info.value.details()
        assert not journal.exists() and journal.with_suffix(".lost").exists()
        assert srv.metrics.sessions_lost.value() == 1
    finally:
        srv.stop(grace_s=1.0)
    srv = create_server(dataclasses.replace(config, port=0))  # and after one more restart: still lost
    try:
        with pytest.raises(Exception, match="earlier restart"):
            srv.manager.get(session.id)
    finally:
        srv.stop(grace_s=1.0)


def test_not_found_says_why(tmp_path: Path) -> None:
    srv = create_server(server_config(state_dir=tmp_path))
    try:
        with SimClient(f"127.0.0.1:{srv.port}") as c:
            closed, reaped = c.create_session(seed=0), c.create_session(seed=1)
            closed.close()
            with srv.manager.locked(reaped.id):
                pass
            srv.manager.reap(now=srv.manager.clock() + 10_000.0)
            reasons = {}
            for name, sid in (("closed", closed.id), ("reaped", reaped.id), ("unknown", "0" * 32)):
                with pytest.raises(grpc.RpcError) as info:
                    c.get_session(sid)
                assert info.value.code() == grpc.StatusCode.NOT_FOUND
                reasons[name] = info.value.details()
        assert "closed by CloseSession" in reasons["closed"]
        assert "reaped after" in reasons["reaped"]
        assert "reaped after" not in reasons["unknown"] and "unknown to this server" in reasons["unknown"]
        assert list(tmp_path.iterdir()) == []  # closed and reaped sessions leave no journal
    finally:
        srv.stop(grace_s=1.0)


def test_without_a_journal_nothing_is_written_and_restarts_lose_sessions(tmp_path: Path) -> None:
    srv = create_server(server_config())
    try:
        assert srv.journals is None
        with SimClient(f"127.0.0.1:{srv.port}") as c, pytest.raises(grpc.RpcError) as info:
            c.get_session("f" * 32)
        assert "without a journal" in info.value.details()
    finally:
        srv.stop(grace_s=1.0)


class _Unavailable(grpc.RpcError):
    def __init__(self, trailing: tuple = ()) -> None:
        self._trailing = trailing

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def trailing_metadata(self) -> tuple:
        return self._trailing


def test_the_client_waits_out_a_recovery_longer_than_its_reconnect_window() -> None:
    client = SimClient("127.0.0.1:1", retries=3, backoff_s=0.0, reconnect_s=2.0, recovery_wait_s=600.0)
    try:
        long_ago = time.monotonic() - 5.0  # 5 s of retrying: past reconnect_s
        with pytest.raises(_Unavailable):  # a server that is simply gone: give up after reconnect_s
            client.backoff(_Unavailable(), 3, long_ago)
        client.backoff(_Unavailable(((RECOVERING_METADATA, "1"),)), 3, long_ago)  # rebuilding: keep waiting
        with pytest.raises(_Unavailable):  # but not for ever
            client.backoff(_Unavailable(((RECOVERING_METADATA, "1"),)), 3, long_ago - 600.0)
    finally:
        client.close()


def test_a_session_being_rebuilt_answers_unavailable_with_the_recovering_metadata(tmp_path: Path) -> None:
    srv = create_server(server_config(state_dir=tmp_path))
    try:
        srv.manager.begin_recovery("f" * 32)
        with SimClient(f"127.0.0.1:{srv.port}", retries=0) as c, pytest.raises(grpc.RpcError) as info:
            c.get_session("f" * 32)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE and "being rebuilt" in info.value.details()
        assert (RECOVERING_METADATA, "1") in tuple(info.value.trailing_metadata())
    finally:
        srv.stop(grace_s=1.0)
