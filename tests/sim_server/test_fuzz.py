"""Hypothesis fuzz: random and malformed requests never crash the server; every answer is OK or a
well-formed status code of the documented set."""

from __future__ import annotations

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim_server import simulator_service_pb2_grpc
from sim_server.server import create_server
from tests.sim_server.conftest import server_config
from vectorworld.v1 import session_pb2
from vectorworld.v1 import simulator_service_pb2 as pb

ALLOWED = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ABORTED,
           grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.RESOURCE_EXHAUSTED}
floats = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from([0.0, 1.0, -1e308, 1e-9])

control = st.builds(lambda a, s: session_pb2.EgoCommand(control=session_pb2.ControlCommand(
    accel_mps2=a, steering_rad=s)), floats, floats)
pose = st.builds(lambda x, y, yaw: {"x_m": x, "y_m": y, "yaw_rad": yaw}, floats, floats, floats)
trajectory = st.builds(lambda ps: session_pb2.EgoCommand(trajectory=session_pb2.TrajectoryCommand(
    poses=ps)), st.lists(pose, max_size=5))
state = st.builds(lambda p, v: session_pb2.EgoCommand(state=session_pb2.StateCommand(pose=p, speed_mps=v)),
                  pose, floats)
command = st.one_of(control, trajectory, state, st.just(session_pb2.EgoCommand()),
                    st.just(session_pb2.EgoCommand(builtin_planner=session_pb2.BuiltinPlannerCommand())))
config = st.builds(lambda seed, km, r, gen, n: session_pb2.SessionConfig(
    seed=seed, target_km=km, observation_radius_m=r, generator=gen, max_steps=n),
    st.integers(0, 2**64 - 1), floats, floats, st.sampled_from(["", "test-straight", "bogus", "\x00"]),
    st.integers(-2**63, 2**63 - 1))


@pytest.fixture(scope="module")
def fuzz_server():
    srv = create_server(server_config(max_sessions=4))
    channel = grpc.insecure_channel(f"127.0.0.1:{srv.port}")
    stub = simulator_service_pb2_grpc.SimulatorServiceStub(channel)
    live = stub.CreateSession(pb.CreateSessionRequest()).session_id
    yield stub, live, channel
    channel.close()
    srv.stop(grace_s=1.0)


def _call(fn, *args) -> grpc.StatusCode:  # noqa: ANN001
    try:
        fn(*args, timeout=30)
    except grpc.RpcError as err:
        assert err.code() in ALLOWED, (err.code(), err.details())
        assert err.details()
        return err.code()
    return grpc.StatusCode.OK


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cmd=command, expected=st.integers(-5, 5), use_live=st.booleans(), junk_id=st.text(max_size=40))
def test_random_steps(fuzz_server, cmd, expected, use_live, junk_id) -> None:  # noqa: ANN001
    stub, live, _ = fuzz_server
    session_id = live if use_live else junk_id
    _call(stub.Step, pb.StepRequest(session_id=session_id, expected_step=expected, command=cmd))
    _call(stub.GetSession, pb.GetSessionRequest(session_id=session_id, include_observation=True))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cfg=config)
def test_random_configs(fuzz_server, cfg) -> None:  # noqa: ANN001
    stub, _, _ = fuzz_server
    try:
        response = stub.CreateSession(pb.CreateSessionRequest(config=cfg), timeout=30)
    except grpc.RpcError as err:
        assert err.code() in ALLOWED, (err.code(), err.details())
        return
    stub.CloseSession(pb.CloseSessionRequest(session_id=response.session_id))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.binary(max_size=200), method=st.sampled_from(
    ["CreateSession", "Step", "GetSession", "ListSessions", "CloseSession"]))
def test_malformed_bytes(fuzz_server, payload, method) -> None:  # noqa: ANN001
    stub, _, channel = fuzz_server
    raw = channel.unary_unary(f"/vectorworld.v1.SimulatorService/{method}")
    try:
        raw(payload, timeout=30)
    except grpc.RpcError as err:
        # Undecodable bytes are refused by the framework (INTERNAL "failed to deserialize") before the
        # servicer; decodable ones must get a documented code.
        assert err.code() in ALLOWED | {grpc.StatusCode.INTERNAL}, err.code()
    # The server still answers.
    stub.ListSessions(pb.ListSessionsRequest(), timeout=30)
