"""The wire contract at its edges: malformed bytes, the resolved config, messages that name only real RPCs."""

from __future__ import annotations

import logging

import grpc
import pytest

from sim_server.client import SimClient
from sim_server.server import SimServer
from vectorworld.v1 import session_pb2
from vectorworld.v1 import simulator_service_pb2 as pb

METHOD = "/vectorworld.v1.SimulatorService/"
GARBAGE = b"\xff\xff\xff\xff\x0f"


@pytest.mark.parametrize("method", ["CreateSession", "Step", "GetSession", "ListSessions", "CloseSession"])
def test_garbage_bytes_are_invalid_argument_without_a_traceback(server: SimServer, method: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel, caplog.at_level(logging.WARNING):
        call = channel.unary_unary(METHOD + method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as info:
            call(GARBAGE, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "is not a valid vectorworld.v1." in info.value.details()
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


def test_garbage_on_a_stream_is_invalid_argument(server: SimServer) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stream = channel.stream_stream(METHOD + "StreamSession", request_serializer=lambda b: b,
                                       response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as info:
            list(stream(iter([GARBAGE]), timeout=30))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_the_resolved_config_sets_every_field(client: SimClient) -> None:
    session = client.create_session(seed=3)
    response = client.stub.CreateSession(pb.CreateSessionRequest(config=session_pb2.SessionConfig(seed=3)))
    config = response.config
    for name in ("target_km", "observation_radius_m", "max_steps", "agent_capacity", "terminate_on_collision",
                 "ego_start_speed_mps"):
        assert config.HasField(name), name
    assert config.max_steps == int(round(config.target_km * 1000.0 / 1.0 / 0.1))  # 1 m/s, as documented
    info = client.stub.GetSession(pb.GetSessionRequest(session_id=session.id)).info
    assert info.config.max_steps == config.max_steps


def test_a_finished_episode_names_no_reset_rpc(client: SimClient) -> None:
    session = client.create_session(seed=0, max_steps=1)
    session.step()
    with pytest.raises(grpc.RpcError) as info:
        session.step()
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "reset" not in info.value.details().lower() and "create a new one" in info.value.details()


def test_negative_seeds_from_other_languages_are_refused(client: SimClient) -> None:
    wrapped = 2**64 - 1  # a JavaScript client's -1 written into the uint64 seed
    with pytest.raises(grpc.RpcError) as info:
        client.stub.CreateSession(pb.CreateSessionRequest(config=session_pb2.SessionConfig(seed=wrapped)))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "config.seed" in info.value.details()
    assert client.create_session(seed=2**63 - 1).step_index == 0  # the largest seed still runs


def test_every_enforced_config_limit_is_in_the_proto_comments() -> None:
    import re
    from pathlib import Path

    from vectorworld.sim import config as config_module

    proto = (Path(__file__).resolve().parents[2] / "proto/vectorworld/v1/session.proto").read_text()
    bounds = {"seed": "2^63 - 1", "target_km": f"{config_module.MAX_TARGET_KM:g}",
              "observation_radius_m": f"{config_module.MAX_OBSERVATION_RADIUS_M:g}",
              "agent_capacity": str(config_module.MAX_AGENT_CAPACITY),
              "ego_start_speed_mps": f"{config_module.MAX_EGO_START_SPEED_MPS:g}",
              "max_steps": str(config_module.MAX_STEPS)}
    assert {name for name, _, _ in config_module._LIMITS} == set(bounds)  # a new limit needs its proto line
    for name, bound in bounds.items():
        comment = re.search(r"((?:\s*//[^\n]*\n)+)\s*(?:optional )?\w+ " + name + r" = \d+;", proto)
        assert comment is not None, name
        assert bound in comment.group(1), (name, bound, comment.group(1))
