"""Exactly-once stepping: a lost reply resent gets the identical reply; no step is ever applied twice or lost
(hypothesis over drop / resend / stale / conflicting / cancelled-stream patterns)."""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim_server.journal import read_journal
from sim_server.server import SimServer, create_server
from tests.sim_server.conftest import TEST_DEFAULTS, server_config
from tests.sim_server.test_lifecycle import _BlockingPlanner
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.session import Session
from vectorworld.v1 import session_pb2
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.vehicle.commands import ControlCommand, EgoCommand
from vectorworld.wire import codec

METHOD = "/vectorworld.v1.SimulatorService/"
COMMANDS: tuple[EgoCommand | None, ...] = (None, ControlCommand(0.5, 0.0), ControlCommand(-0.5, 0.0),
                                           ControlCommand(0.0, 0.0))


@pytest.fixture(scope="module")
def durable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimServer, grpc.Channel, Path]]:
    state = tmp_path_factory.mktemp("state")
    srv = create_server(server_config(state_dir=state, max_sessions=64))
    channel = grpc.insecure_channel(f"127.0.0.1:{srv.port}")
    try:
        yield srv, channel, state
    finally:
        channel.close()
        srv.stop(grace_s=1.0)


def raw_step(channel: grpc.Channel) -> grpc.UnaryUnaryMultiCallable:
    """Step with the reply as bytes, exactly as the server sent them."""
    return channel.unary_unary(METHOD + "Step", request_serializer=lambda b: b, response_deserializer=lambda b: b)


def step_request(session_id: str, expected: int, command: EgoCommand | None) -> bytes:
    request = pb.StepRequest(session_id=session_id, expected_step=expected)
    codec.command_to_proto(command, request.command)
    return request.SerializeToString()


def current_step(channel: grpc.Channel, session_id: str) -> int:
    stub = channel.unary_unary(METHOD + "GetSession", request_serializer=pb.GetSessionRequest.SerializeToString,
                               response_deserializer=pb.GetSessionResponse.FromString)
    return stub(pb.GetSessionRequest(session_id=session_id), timeout=30).step


def cancelled_stream(channel: grpc.Channel, request: bytes) -> None:
    """Send ``request`` on a stream and cancel the stream at once (the step may or may not be applied)."""
    stream = channel.stream_stream(METHOD + "StreamSession", request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
    gate: queue.Queue[bytes | None] = queue.Queue()
    gate.put(request)
    call = stream(iter(gate.get, None), timeout=30)
    call.cancel()
    gate.put(None)


PATTERNS = ("once", "drop", "stale", "conflict", "cancel")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(st.tuples(st.sampled_from(PATTERNS), st.integers(0, len(COMMANDS) - 1)),
                     min_size=1, max_size=10))
def test_no_step_is_ever_applied_twice_or_lost(durable: tuple[SimServer, grpc.Channel, Path],
                                               plan: list[tuple[str, int]]) -> None:
    srv, channel, state = durable
    create = channel.unary_unary(METHOD + "CreateSession", request_serializer=pb.CreateSessionRequest.SerializeToString,
                                 response_deserializer=pb.CreateSessionResponse.FromString)
    session_id = create(pb.CreateSessionRequest(config=session_pb2.SessionConfig(seed=5)), timeout=60).session_id
    step = raw_step(channel)
    local = Session(dataclasses.replace(TEST_DEFAULTS, seed=5))
    local.reset()
    sent: list[EgoCommand | None] = []
    for k, (pattern, which) in enumerate(plan):
        command = COMMANDS[which]
        request = step_request(session_id, k, command)
        if pattern == "cancel":
            cancelled_stream(channel, request)
        reply = step(request, timeout=60)
        if pattern == "drop":  # the reply was lost: the resend answers the same bytes
            assert step(request, timeout=60) == reply
        elif pattern == "stale" and k > 0:  # a request from before the last step is refused
            with pytest.raises(grpc.RpcError) as info:
                step(step_request(session_id, k - 1, sent[-1]), timeout=60)
            assert info.value.code() == grpc.StatusCode.ABORTED
        elif pattern == "conflict":  # the step just applied, asked for with another command
            other = COMMANDS[(which + 1) % len(COMMANDS)]
            with pytest.raises(grpc.RpcError) as info:
                step(step_request(session_id, k, other), timeout=60)
            assert info.value.code() == grpc.StatusCode.ABORTED
            assert step(request, timeout=60) == reply  # and the kept reply is still there
        sent.append(command)
        expected = local.step(command)
        assert pb.StepResponse.FromString(reply).observation.SerializeToString() == \
            codec.observation_to_proto(expected).SerializeToString()
        assert current_step(channel, session_id) == k + 1
    journal = read_journal(state / f"{session_id}.journal")
    assert [s.expected_step for s in journal.steps] == list(range(len(plan)))  # one record per step
    assert [codec.command_from_proto(session_pb2.EgoCommand.FromString(s.command)) for s in journal.steps] == sent
    srv.manager.close(session_id)


def test_a_cancelled_stream_step_is_answered_to_the_resend(tmp_path: Path) -> None:
    """The issue's case: a stream cancelled while its step runs. The step completes; the client, which
    never saw its reply, resends the request and gets exactly that reply (the session is not stepped twice)."""
    entered, release = threading.Event(), threading.Event()

    def factory(config: SessionConfig) -> Session:
        return Session(config, planner=_BlockingPlanner(entered, release))

    srv = create_server(server_config(state_dir=tmp_path), factory=factory)
    channel = grpc.insecure_channel(f"127.0.0.1:{srv.port}")
    try:
        create = channel.unary_unary(METHOD + "CreateSession",
                                     request_serializer=pb.CreateSessionRequest.SerializeToString,
                                     response_deserializer=pb.CreateSessionResponse.FromString)
        session_id = create(pb.CreateSessionRequest(), timeout=60).session_id
        step = raw_step(channel)
        step(step_request(session_id, 0, None), timeout=60)
        request = step_request(session_id, 1, None)  # step 1 blocks in the planner
        stream = channel.stream_stream(METHOD + "StreamSession", request_serializer=lambda b: b,
                                       response_deserializer=lambda b: b)
        gate: queue.Queue[bytes | None] = queue.Queue()
        gate.put(request)
        call = stream(iter(gate.get, None), timeout=60)
        assert entered.wait(30)
        call.cancel()  # the client goes away mid-step
        gate.put(None)
        release.set()
        reply = step(request, timeout=60)  # the resend: the reply of the step the stream had applied
        assert pb.StepResponse.FromString(reply).step == 2
        assert current_step(channel, session_id) == 2
        assert srv.metrics.replayed_steps.value() == 1
        assert [s.expected_step for s in read_journal(tmp_path / f"{session_id}.journal").steps] == [0, 1]
    finally:
        channel.close()
        srv.stop(grace_s=1.0)
