"""Server lifecycle: auth on/off, TLS, health, reflection, idle reaping, graceful shutdown mid-step."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from sim_server.client import SimClient
from sim_server.server import create_server
from sim_server.sessions import SessionManager, SessionNotFoundError
from tests.sim_server.conftest import TEST_DEFAULTS, server_config
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session


def test_token_required_when_configured() -> None:
    srv = create_server(server_config(token="s3cret"))
    try:
        target = f"127.0.0.1:{srv.port}"
        for bad in (None, "wrong"):
            with SimClient(target, token=bad) as c, pytest.raises(grpc.RpcError) as info:
                c.create_session(seed=0)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with SimClient(target, token="wrong") as c, pytest.raises(grpc.RpcError) as info:
            list(c.stub.StreamSession(iter(()), metadata=c.metadata))
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with SimClient(target, token="s3cret") as c:
            session = c.create_session(seed=0)
            assert session.step().step == 1
        # Health stays open for probes.
        with grpc.insecure_channel(target) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        srv.stop(grace_s=1.0)


def test_no_token_means_open(client: SimClient) -> None:
    assert client.create_session(seed=0).step().step == 1


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not available")
def test_tls(tmp_path: Path) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    srv = create_server(server_config(tls_cert=cert, tls_key=key, token="t"))
    try:
        with SimClient(f"localhost:{srv.port}", token="t", root_certificates=cert) as c:
            assert c.create_session(seed=0).step().step == 1
        with SimClient(f"localhost:{srv.port}", token="t", timeout_s=5.0) as plain, \
                pytest.raises(grpc.RpcError) as info:
            plain.create_session(seed=0)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        srv.stop(grace_s=1.0)


def test_health_and_reflection_answer(server) -> None:  # noqa: ANN001
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", "vectorworld.v1.SimulatorService"):
            assert health.Check(health_pb2.HealthCheckRequest(service=name)).status == \
                health_pb2.HealthCheckResponse.SERVING
        db = ProtoReflectionDescriptorDatabase(channel)
        assert "vectorworld.v1.SimulatorService" in db.get_services()
        service = db.FindFileContainingSymbol("vectorworld.v1.SimulatorService")
        assert service.package == "vectorworld.v1"


def test_idle_sessions_are_reaped_with_a_fake_clock() -> None:
    now = [100.0]
    manager = SessionManager(max_sessions=4, idle_timeout_s=60.0, clock=lambda: now[0])
    config = SessionConfig(generator="test-straight", target_km=0.05)
    a, _ = manager.create(config)
    b, _ = manager.create(config)
    now[0] = 150.0
    manager.step(b.id, None, 0)  # b used recently
    now[0] = 170.0
    assert manager.reap() == [a.id]
    with pytest.raises(SessionNotFoundError):
        manager.step(a.id, None, 0)
    assert [m.id for m in manager.list()] == [b.id]
    # A session busy with a call is never reaped.
    now[0] = 1000.0
    with b.lock:
        assert manager.reap() == []
    assert manager.reap() == [b.id]


def test_reaped_session_answers_not_found_over_grpc() -> None:
    srv = create_server(server_config(idle_timeout_s=0.05))
    try:
        with SimClient(f"127.0.0.1:{srv.port}") as c:
            session = c.create_session(seed=0)
            srv.manager.reap(now=srv.manager.clock() + 1.0)
            with pytest.raises(grpc.RpcError) as info:
                session.step()
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            assert srv.metrics.sessions_closed.value("reaped") == 1
    finally:
        srv.stop(grace_s=1.0)


class _BlockingPlanner:
    """The built-in planner, except that step ``block_at`` waits until released."""

    name = "blocking"

    def __init__(self, entered: threading.Event, release: threading.Event) -> None:
        from policies.ego import IdmRoutePlanner

        self.inner = IdmRoutePlanner()
        self.entered, self.release = entered, release

    def reset(self) -> None:
        self.inner.reset()

    def plan(self, inp):  # noqa: ANN001, ANN201
        if inp.step == 1:
            self.entered.set()
            assert self.release.wait(20.0)
        return self.inner.plan(inp)


def test_graceful_shutdown_finishes_the_step_in_flight() -> None:
    entered, release = threading.Event(), threading.Event()

    def factory(config: SessionConfig) -> Session:
        return Session(config, planner=_BlockingPlanner(entered, release))

    srv = create_server(server_config(grace_s=20.0), factory=factory)
    target = f"127.0.0.1:{srv.port}"
    client = SimClient(target, retries=0)
    session = client.create_session(seed=0)
    session.step()
    results: dict[str, object] = {}
    stepper = threading.Thread(target=lambda: results.setdefault("obs", session.step()))
    stepper.start()
    assert entered.wait(10.0)
    stopper = threading.Thread(target=srv.stop)
    stopper.start()
    for _ in range(200):  # wait until stop() has flipped health (no wall-clock assertion)
        if not srv.ready:
            break
        stopper.join(0.01)
    reply = srv.health.Check(health_pb2.HealthCheckRequest(service=""), None)
    assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
    assert srv.manager.draining
    release.set()
    stepper.join(20.0)
    stopper.join(20.0)
    assert not stopper.is_alive() and srv.wait(0)
    assert results["obs"].step == 2  # the step in flight completed
    with pytest.raises(grpc.RpcError) as info:
        SimClient(target, retries=0, timeout_s=2.0).create_session(seed=1)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    client.close()


def test_server_config_defaults_bind_loopback() -> None:
    assert server_config().host == "127.0.0.1"
    assert TEST_DEFAULTS.generator == "test-straight"


def test_serve_stops_cleanly_on_sigterm() -> None:
    import os
    import signal
    import socket
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("import tests.straight_world; from sim_server.config import ServerConfig; "
            "from sim_server.server import serve; from tests.sim_server.conftest import TEST_DEFAULTS; "
            f"serve(ServerConfig(port={port}, http_port=None, grace_s=2.0, session_defaults=TEST_DEFAULTS))")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
            with SimClient(f"127.0.0.1:{port}") as c:
                assert c.create_session(seed=0).step().step == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
