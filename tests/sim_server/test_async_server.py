"""The asyncio server: idle streams cost no thread, a slow step holds one engine worker only, and health /
readyz report NOT_SERVING while the engine pool is saturated."""

from __future__ import annotations

import json
import queue
import threading
import urllib.error
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sim_server.client import SimClient
from sim_server.engine_pool import EnginePool
from sim_server.server import create_server
from tests.sim_server.conftest import server_config
from tests.sim_server.test_lifecycle import _BlockingPlanner
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.v1 import simulator_service_pb2 as pb

BLOCKING_SEED = 99


def blocking_factory(entered: threading.Event, release: threading.Event):  # noqa: ANN201
    """Sessions of seed 99 block in their planner at step 1 until released; others run normally."""
    def factory(config: SessionConfig) -> Session:
        if config.seed == BLOCKING_SEED:
            return Session(config, planner=_BlockingPlanner(entered, release))
        return Session(config)

    return factory


def test_idle_streams_hold_no_thread() -> None:
    """More silent streams than the old server had threads: every other call is still served."""
    srv = create_server(server_config(engine_workers=2))
    target = f"127.0.0.1:{srv.port}"
    channel = grpc.insecure_channel(target)
    gates: list[queue.Queue[pb.StreamSessionRequest | None]] = []
    calls = []
    try:
        stream = channel.stream_stream("/vectorworld.v1.SimulatorService/StreamSession",
                                       request_serializer=pb.StreamSessionRequest.SerializeToString,
                                       response_deserializer=pb.StreamSessionResponse.FromString)
        for _ in range(40):
            gate: queue.Queue[pb.StreamSessionRequest | None] = queue.Queue()
            gates.append(gate)
            calls.append(stream(iter(gate.get, None)))
        with SimClient(target, timeout_s=20.0, retries=0, reconnect_s=0.0) as c:
            health = health_pb2_grpc.HealthStub(c.channel)
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=20).status == \
                health_pb2.HealthCheckResponse.SERVING
            session = c.create_session(seed=0)
            for k in range(3):
                assert session.step().step == k + 1
            assert len(c.list_sessions()) == 1
            # and one of the silent streams, when it finally speaks, is served too
            request = pb.StreamSessionRequest(session_id=session.id, expected_step=3)
            request.command.builtin_planner.SetInParent()
            gates[0].put(request)
            gates[0].put(None)
            assert [r.step for r in calls[0]] == [4]
    finally:
        for gate in gates:
            gate.put(None)
        channel.close()
        srv.stop(grace_s=1.0)


def test_a_slow_step_holds_one_worker_and_saturation_flips_health() -> None:
    entered, release = threading.Event(), threading.Event()
    srv = create_server(server_config(engine_workers=1, engine_saturation_s=0.2, http_port=0),
                        factory=blocking_factory(entered, release))
    target = f"127.0.0.1:{srv.port}"
    results: dict[str, object] = {}
    try:
        with SimClient(target, timeout_s=60.0) as c:
            slow, other = c.create_session(seed=BLOCKING_SEED), c.create_session(seed=1)
            slow.step()
            assert srv.health_status() == health_pb2.HealthCheckResponse.SERVING
            assert _readyz(srv.http_port)[0] == 200
            stepper = threading.Thread(target=lambda: results.setdefault("slow", slow.step()))
            stepper.start()
            assert entered.wait(30)  # the only engine worker is stuck in the slow session's step
            queued = threading.Thread(target=lambda: results.setdefault("other", other.step()))
            queued.start()
            assert _eventually(lambda: srv.health_status() == health_pb2.HealthCheckResponse.NOT_SERVING)
            status, body = _readyz(srv.http_port)
            assert status == 503 and body["ready"] is False
            health = health_pb2_grpc.HealthStub(c.channel)  # health itself still answers (event loop free)
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=10).status == \
                health_pb2.HealthCheckResponse.NOT_SERVING
            release.set()
            stepper.join(30), queued.join(30)
            assert results["slow"].step == 2 and results["other"].step == 1
            assert _eventually(lambda: srv.health_status() == health_pb2.HealthCheckResponse.SERVING)
            assert _readyz(srv.http_port)[0] == 200
    finally:
        release.set()
        srv.stop(grace_s=1.0)


def test_other_sessions_keep_stepping_while_one_step_is_slow() -> None:
    entered, release = threading.Event(), threading.Event()
    srv = create_server(server_config(engine_workers=2), factory=blocking_factory(entered, release))
    try:
        with SimClient(f"127.0.0.1:{srv.port}", timeout_s=30.0, retries=0, reconnect_s=0.0) as c:
            slow, other = c.create_session(seed=BLOCKING_SEED), c.create_session(seed=1)
            slow.step()
            stepper = threading.Thread(target=slow.step)
            stepper.start()
            assert entered.wait(30)
            for k in range(5):  # served by the second worker while the first is stuck
                assert other.step().step == k + 1
            assert not stepper.join(0) and stepper.is_alive()
            release.set()
            stepper.join(30)
            assert slow.step_index == 2
    finally:
        release.set()
        srv.stop(grace_s=1.0)


def test_engine_pool_cancelled_before_start_never_runs() -> None:
    import asyncio

    pool = EnginePool(1)
    gate, ran = threading.Event(), []

    async def main() -> None:
        blocker = asyncio.ensure_future(pool.run(lambda: gate.wait(10)))
        await asyncio.sleep(0.05)
        queued = asyncio.ensure_future(pool.run(lambda: ran.append(1)))
        await asyncio.sleep(0.05)
        assert pool.queued == 1 and pool.running == 1
        queued.cancel()
        await asyncio.sleep(0.05)  # the cancellation is delivered while the job still waits
        gate.set()
        await blocker
        with pytest.raises(asyncio.CancelledError):
            await queued

    asyncio.run(main())
    pool.shutdown()
    assert ran == [] and pool.queued == 0


def _eventually(check, tries: int = 400) -> bool:  # noqa: ANN001
    for _ in range(tries):
        if check():
            return True
        threading.Event().wait(0.025)
    return False


def _readyz(port: int | None) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_engine_threads_run_below_the_event_loop_priority() -> None:
    import asyncio
    import os

    pool = EnginePool(1, nice=3)
    try:
        mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        theirs = asyncio.run(pool.run(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        assert theirs == min(mine + 3, 19)
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # this thread untouched
    finally:
        pool.shutdown()


def test_the_server_sets_the_gil_switch_interval_it_is_configured_with() -> None:
    import sys

    before = sys.getswitchinterval()
    srv = create_server(server_config(gil_switch_interval_s=0.002))
    try:
        assert abs(sys.getswitchinterval() - 0.002) < 1e-9
    finally:
        srv.stop(grace_s=1.0)
        sys.setswitchinterval(before)
