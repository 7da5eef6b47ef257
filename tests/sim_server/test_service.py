"""SimulatorService end to end over the in-process server: episodes, stream, errors, served == local."""

from __future__ import annotations

import dataclasses

import grpc
import numpy as np
import pytest

from sim_server.client import SimClient
from sim_server.server import create_server
from tests.sim_server.conftest import TEST_DEFAULTS, drive_local_and_served, server_config
from vectorworld.batch.episode import run_episode
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.observation import EndReason
from vectorworld.sim.session import Session
from vectorworld.v1 import session_pb2
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.vehicle.commands import ControlCommand, StateCommand, TrajectoryCommand

DETERMINISTIC_FIELDS = ("km", "steps", "completed", "end_reason", "ego_collisions", "ego_offroad_rate",
                        "npc_collisions_per_km", "npc_offroad_per_km", "kinematic_infeasibility_rate",
                        "ego_comfort_rate", "sim_s", "tiles", "fallback_tiles")


def code_of(call) -> grpc.StatusCode:  # noqa: ANN001
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()


def test_full_episode_over_step(client: SimClient) -> None:
    session = client.create_session(seed=3)
    obs = session.observation
    assert obs.step == 0 and obs.sim_time_us == 0 and obs.agents.id[obs.ego_slot] == 0
    steps = 0
    while not obs.done:
        obs = session.step()
        steps += 1
        assert obs.step == steps and obs.sim_time_us == steps * 100_000
    assert obs.end_reason == EndReason.GOAL_REACHED and obs.terminated and obs.km >= 0.05
    report = session.close()
    assert report["completed"] and report["steps"] == steps


def test_full_episode_over_stream(client: SimClient) -> None:
    session = client.create_session(seed=4)

    def until_done():
        while not session.observation.done:
            yield None

    observations = list(session.stream(until_done()))
    assert [o.step for o in observations] == list(range(1, len(observations) + 1))
    assert observations[-1].end_reason == EndReason.GOAL_REACHED
    assert session.close()["steps"] == len(observations)


def test_stream_past_the_end_fails_precondition(client: SimClient) -> None:
    session = client.create_session(seed=4, max_steps=3)
    received = []
    with pytest.raises(grpc.RpcError) as info:
        for obs in session.stream([None] * 5):
            received.append(obs.step)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert received == [1, 2, 3]


def test_stream_lazy_commands_follow_observations(client: SimClient) -> None:
    session = client.create_session(seed=5)
    seen = []

    def commands():
        for _ in range(10):
            obs = session.observation
            seen.append(obs.step)
            ego = obs.agents.xy[obs.ego_slot]
            yield StateCommand(float(ego[0]) + 0.5, float(ego[1]), 0.0, 5.0)

    out = list(session.stream(commands()))
    assert [o.step for o in out] == list(range(1, 11))
    assert out[-1].agents.speed[0] == pytest.approx(5.0)


def test_served_session_matches_local_session_and_rollout(client: SimClient) -> None:
    local, obs, remote, robs = drive_local_and_served(client, seed=11, target_km=0.08)
    config = local.config
    local_report = local.report()
    served_report = remote.close()
    rollout_report = run_episode(config)
    for name in DETERMINISTIC_FIELDS:
        assert served_report[name] == local_report[name] == rollout_report[name], name
    np.testing.assert_array_equal(robs.agents.xy[0], obs.agents.xy[0])


def test_command_kinds_are_applied(client: SimClient) -> None:
    session = client.create_session(seed=1)
    ego = session.observation.agents
    x0, y0 = ego.xy[0]
    obs = session.step(ControlCommand(accel_mps2=-2.0, steering_rad=0.0))
    assert obs.agents.speed[0] < ego.speed[0]
    x, y = obs.agents.xy[0]
    poses = np.array([[x + 0.6 * (k + 1), y, 0.0] for k in range(10)])
    obs = session.step(TrajectoryCommand(poses))
    assert obs.agents.xy[0, 0] > x
    obs = session.step(StateCommand(float(x0) + 3.0, float(y0), 0.0, 4.0))
    np.testing.assert_allclose(obs.agents.xy[0], [x0 + 3.0, y0])


# --------------------------------------------------------------------------- error codes
def test_unknown_session_is_not_found(stub) -> None:  # noqa: ANN001
    builtin = session_pb2.EgoCommand(builtin_planner=session_pb2.BuiltinPlannerCommand())
    assert code_of(lambda: stub.Step(pb.StepRequest(session_id="nope", command=builtin))) == \
        grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: stub.GetSession(pb.GetSessionRequest(session_id="nope"))) == \
        grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: stub.CloseSession(pb.CloseSessionRequest(session_id="nope"))) == \
        grpc.StatusCode.NOT_FOUND


def test_invalid_commands_name_the_field(client: SimClient, stub) -> None:  # noqa: ANN001
    session = client.create_session(seed=0)
    cases = {
        "control.accel_mps2": session_pb2.EgoCommand(control=session_pb2.ControlCommand(accel_mps2=float("nan"))),
        "control.steering_rad": session_pb2.EgoCommand(control=session_pb2.ControlCommand(steering_rad=5.0)),
        "trajectory.poses": session_pb2.EgoCommand(trajectory=session_pb2.TrajectoryCommand()),
        "state.speed_mps": session_pb2.EgoCommand(state=session_pb2.StateCommand(speed_mps=float("inf"))),
        "command": session_pb2.EgoCommand(),
    }
    for field_name, command in cases.items():
        with pytest.raises(grpc.RpcError) as info:
            stub.Step(pb.StepRequest(session_id=session.id, expected_step=0, command=command))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, field_name
        assert field_name in info.value.details(), (field_name, info.value.details())
    assert session.step().step == 1  # rejected commands did not advance the session


def test_invalid_configs_name_the_field(stub) -> None:  # noqa: ANN001
    cases = [("target_km", session_pb2.SessionConfig(target_km=-1.0)),
             ("observation_radius_m", session_pb2.SessionConfig(observation_radius_m=float("nan"))),
             ("generator", session_pb2.SessionConfig(generator="no-such-generator")),
             ("generator", session_pb2.SessionConfig(generator="learned:/etc")),  # the server picks checkpoints
             ("planner", session_pb2.SessionConfig(planner="os:system")),
             ("scenario", session_pb2.SessionConfig(scenario="womd:/etc/passwd")),
             ("max_steps", session_pb2.SessionConfig(max_steps=0))]
    for field_name, config in cases:
        with pytest.raises(grpc.RpcError) as info:
            stub.CreateSession(pb.CreateSessionRequest(config=config))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, field_name
        assert field_name in info.value.details(), (field_name, info.value.details())


def test_resends_answer_the_kept_reply_and_stale_steps_are_aborted(client: SimClient, stub) -> None:  # noqa: ANN001
    session = client.create_session(seed=0)
    builtin = session_pb2.EgoCommand(builtin_planner=session_pb2.BuiltinPlannerCommand())
    request = pb.StepRequest(session_id=session.id, expected_step=0, command=builtin)
    first = stub.Step(request)
    assert first.step == 1
    again = stub.Step(request)  # the same request again (a lost reply): the same reply, not a second step
    assert again.SerializeToString() == first.SerializeToString()
    assert stub.GetSession(pb.GetSessionRequest(session_id=session.id)).step == 1
    other = pb.StepRequest(session_id=session.id, expected_step=0,
                           command=session_pb2.EgoCommand(control=session_pb2.ControlCommand(accel_mps2=1.0)))
    with pytest.raises(grpc.RpcError) as info:
        stub.Step(other)  # step 0 again with another command: a conflict
    assert info.value.code() == grpc.StatusCode.ABORTED
    assert dict(info.value.trailing_metadata())["vw-current-step"] == "1"
    assert code_of(lambda: stub.Step(pb.StepRequest(session_id=session.id, expected_step=7,
                                                    command=builtin))) == grpc.StatusCode.ABORTED
    assert stub.GetSession(pb.GetSessionRequest(session_id=session.id)).step == 1


def test_finished_episode_is_failed_precondition(client: SimClient) -> None:
    session = client.create_session(seed=0, max_steps=2)
    session.step()
    assert session.step().end_reason == EndReason.MAX_STEPS
    assert code_of(session.step) == grpc.StatusCode.FAILED_PRECONDITION
    assert client.get_session(session.id).finished


def test_session_cap_is_resource_exhausted() -> None:
    srv = create_server(server_config(max_sessions=2))
    try:
        with SimClient(f"127.0.0.1:{srv.port}") as c:
            a = c.create_session(seed=0)
            c.create_session(seed=1)
            assert code_of(lambda: c.create_session(seed=2)) == grpc.StatusCode.RESOURCE_EXHAUSTED
            a.close()
            c.create_session(seed=2)  # room again
    finally:
        srv.stop(grace_s=1.0)


class _ExplodingPlanner:
    name = "exploding"

    def reset(self) -> None:
        pass

    def plan(self, inp):  # noqa: ANN001, ANN201
        raise RuntimeError("planner blew up")


def test_unexpected_error_is_internal_and_server_stays_up() -> None:
    def factory(config: SessionConfig) -> Session:
        return Session(config, planner=_ExplodingPlanner())

    srv = create_server(server_config(), factory=factory)
    try:
        with SimClient(f"127.0.0.1:{srv.port}") as c:
            session = c.create_session(seed=0)
            with pytest.raises(grpc.RpcError) as info:
                session.step()
            assert info.value.code() == grpc.StatusCode.INTERNAL
            assert "planner blew up" in info.value.details()
            # The broken session refuses further steps; the server still serves other calls.
            assert code_of(session.step) == grpc.StatusCode.FAILED_PRECONDITION
            other = c.create_session(seed=1)
            assert other.step(ControlCommand(0.0, 0.0)).step == 1
            assert len(c.list_sessions()) == 2
            session.close()
    finally:
        srv.stop(grace_s=1.0)


def test_get_and_list_sessions(client: SimClient, stub) -> None:  # noqa: ANN001
    ids = [client.create_session(seed=s).id for s in range(3)]
    remote = client.session(ids[1])
    remote.step()
    status = client.get_session(ids[1], include_observation=True)
    assert status.step == 1 and status.observation is not None and status.observation.step == 1
    assert status.report["steps"] == 1
    page = stub.ListSessions(pb.ListSessionsRequest(page_size=2))
    assert [s.session_id for s in page.sessions] == ids[:2] and page.next_page_token
    rest = stub.ListSessions(pb.ListSessionsRequest(page_size=2, page_token=page.next_page_token))
    assert [s.session_id for s in rest.sessions] == ids[2:] and not rest.next_page_token
    assert [s.session_id for s in client.list_sessions()] == ids
    assert code_of(lambda: stub.ListSessions(pb.ListSessionsRequest(page_token="x1"))) == \
        grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(lambda: stub.ListSessions(pb.ListSessionsRequest(page_size=-1))) == \
        grpc.StatusCode.INVALID_ARGUMENT


def test_scenarios_are_confined_to_the_scenario_dir(tmp_path) -> None:  # noqa: ANN001
    from sim_server.metrics import ServerMetrics
    from sim_server.service import SimulatorServicer
    from sim_server.sessions import SessionManager
    from vectorworld.errors import ConfigError

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.tfrecord").write_bytes(b"")
    (tmp_path / "secret").write_bytes(b"")
    manager = SessionManager(1, 60.0)
    servicer = SimulatorServicer(manager, server_config(scenario_dir=tmp_path / "logs"),
                                 ServerMetrics(lambda: 0.0))
    ok = servicer._confine_scenario(dataclasses.replace(TEST_DEFAULTS, scenario="womd:a.tfrecord#2"))
    assert ok.scenario == f"womd:{(tmp_path / 'logs' / 'a.tfrecord').resolve()}#2"
    (tmp_path / "logs" / "scene.json").write_bytes(b"")
    (tmp_path / "logs" / "dataset").mkdir()
    for accepted in ("gpudrive:scene.json", "scenarionet:dataset", "womd-example:a.tfrecord#0"):
        kind, _, rest = accepted.partition(":")
        path, sep, selector = rest.partition("#")
        resolved = servicer._confine_scenario(dataclasses.replace(TEST_DEFAULTS, scenario=accepted))
        assert resolved.scenario == f"{kind}:{(tmp_path / 'logs' / path).resolve()}{sep}{selector}"
    for bad in ("womd:../secret", f"womd:{tmp_path / 'secret'}", "womd:*.tfrecord", "/etc/passwd",
                "womd:missing.tfrecord", "gpudrive:dataset", "pickle:a.tfrecord"):
        with pytest.raises(ConfigError, match="config.scenario"):
            servicer._confine_scenario(dataclasses.replace(TEST_DEFAULTS, scenario=bad))
    closed = SimulatorServicer(manager, server_config(), ServerMetrics(lambda: 0.0))
    with pytest.raises(ConfigError, match="scenario-dir"):
        closed._confine_scenario(dataclasses.replace(TEST_DEFAULTS, scenario="womd:a.tfrecord"))


class _LostReply(grpc.RpcError):
    """A transport failure after the server had already applied the call."""

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "connection reset (simulated)"


def test_step_retry_never_applies_twice(client: SimClient) -> None:
    session = client.create_session(seed=2)
    real_step = client.stub.Step
    calls = []

    def flaky(request, **kwargs):  # noqa: ANN001, ANN003, ANN202
        calls.append(request.expected_step)
        response = real_step(request, **kwargs)
        if len(calls) == 1:
            raise _LostReply()
        return response

    client.stub.Step = flaky
    client.backoff_s = 0.0
    obs = session.step()  # applied, reply lost, retried with the same index -> ABORTED -> adopt state
    assert calls == [0, 0] and obs.step == 1 and session.step_index == 1
    assert client.get_session(session.id).step == 1
    assert session.step().step == 2
