"""Agent history deltas (HISTORY_DELIVERY_DELTA): the client rebuilds, bit for bit, the observations a FULL
session sends, on the wire (random histories, edits, ids leaving and coming back) and over served episodes
in which agents appear, disappear and reappear, across a resync and a lost base."""

from __future__ import annotations

import dataclasses
import math

import grpc
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim_server.client import SimClient
from tests.sim_server.conftest import TEST_DEFAULTS
from tests.sim_server.test_observation_encoding import assert_observations_equal
from vectorworld.errors import DataFormatError
from vectorworld.scene import HISTORY_STEPS, Agents
from vectorworld.sim.observation import Observation
from vectorworld.sim.session import Session
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.v1 import world_pb2
from vectorworld.vehicle.commands import StateCommand
from vectorworld.wire import codec
from vectorworld.wire import table as wire_table

CHURN = {"target_km": 1.0, "observation_radius_m": 8.0, "max_steps": 400, "terminate_on_collision": False}
"""A test-straight episode driven by :func:`commands`: with this small radius agents come into view, leave it
and come back every few steps."""
FIELDS = [f.name for f in dataclasses.fields(Agents)]


def commands(first: Observation, count: int) -> list[StateCommand]:
    """The ego sweeps back and forth (+-8 m) while advancing 2 m per step along the straight road (+x)."""
    x0, y0 = (float(v) for v in first.agents.xy[0])
    return [StateCommand(x0 + 2.0 * k + 8.0 * math.sin(k / 2.0), y0, 0.0, 5.0) for k in range(1, count + 1)]


def assert_identical(a: Observation, b: Observation) -> None:
    """Equal observations, and bit-identical agent arrays (-0.0 is not 0.0, NaN payloads count)."""
    assert_observations_equal(a, b)
    for name in FIELDS:
        x, y = np.asarray(getattr(a.agents, name)), np.asarray(getattr(b.agents, name))
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name


# --------------------------------------------------------------------------- on the wire
@st.composite
def episodes(draw: st.DrawFn) -> list[Agents]:
    """Observations' agents over a few steps: ids from a small pool enter and leave (and come back), often
    the same agents in the same order; a kept agent's history usually shifts as the engine shifts it,
    sometimes not (edits, -0.0, NaN, a current state that differs from its newest entry, an invalid newest
    entry, an older entry's validity flipped); now and then duplicate ids."""
    steps, pool = draw(st.integers(2, 12)), 8
    states = {i: (np.zeros((HISTORY_STEPS, 4)), np.zeros(HISTORY_STEPS, bool)) for i in range(pool)}
    values = st.sampled_from([0.0, -0.0, 1.5, -2.25, math.nan, math.inf, 1e300])
    out = []
    for _ in range(steps):
        ids = draw(st.lists(st.integers(0, pool - 1), min_size=1, max_size=6, unique=True))
        if out and draw(st.booleans()):  # the same agents as in the previous step (the usual case)
            ids = list(dict.fromkeys(out[-1].id.tolist()))
        if draw(st.integers(0, 9)) == 0:
            ids.append(ids[0])  # duplicate id: never a delta
        agents = Agents.empty(len(ids))
        for row, i in enumerate(ids):
            history, valid = states[i]
            current = np.array([draw(values), draw(values), draw(values), draw(values)])
            history = np.concatenate([history[1:], current[None]])
            valid = np.concatenate([valid[1:], [True]])
            kind = draw(st.sampled_from(["shift"] * 12 + ["edit", "negzero", "drift", "invalid", "flag"]))
            if kind == "edit":
                history[draw(st.integers(0, HISTORY_STEPS - 1)), draw(st.integers(0, 3))] = draw(values)
            elif kind == "negzero":
                history[0, 0] = -history[0, 0] if history[0, 0] == 0.0 else history[0, 0]
            elif kind == "invalid":
                valid[-1] = False
            elif kind == "flag":  # an older entry's validity changes, its values do not
                k = draw(st.integers(0, HISTORY_STEPS - 2))
                valid[k] = not valid[k]
            states[i] = (history, valid)
            agents.id[row], agents.valid[row] = i, True
            agents.xy[row], agents.yaw[row], agents.speed[row] = current[:2], current[2], current[3]
            if kind == "drift":  # the current state is not the newest history entry
                agents.speed[row] = 7.0
            agents.history[row], agents.history_valid[row] = history, valid
        out.append(agents)
    return out


def _observation(agents: Agents, step: int, encoder: codec.HistoryDeltaEncoder) -> world_pb2.Observation:
    obs = Observation(step=step, sim_time_us=step * 100_000, agents=agents, ego_slot=0, lanes=(), route_lane_ids=(),
                      route_polyline=np.zeros((0, 2)), step_metrics=codec.step_metrics_from_proto(
                          world_pb2.StepMetrics()), terminated=False, truncated=False,
                      end_reason=codec.end_reason_from_proto(0), km=0.0)
    msg = codec.observation_to_proto(obs, agent_table=True, history_delta=encoder)
    return world_pb2.Observation.FromString(msg.SerializeToString())


@settings(max_examples=80, deadline=None)
@given(steps=episodes())
def test_history_deltas_rebuild_every_history_bit_for_bit(steps: list[Agents]) -> None:
    encoder, cache = codec.HistoryDeltaEncoder(), codec.AgentHistoryCache()
    previous: Agents | None = None
    for step, agents in enumerate(steps):
        msg = _observation(agents, step, encoder)
        decoded = codec.observation_from_proto(msg, history_cache=cache).agents
        for name in ("id", "xy", "yaw", "speed", "history", "history_valid"):
            assert getattr(decoded, name).tobytes() == getattr(agents, name).tobytes(), (step, name)
        duplicates = len(set(agents.id.tolist())) < len(agents.id)
        if previous is None or duplicates or len(set(previous.id.tolist())) < len(previous.id):
            assert msg.history_delivery == world_pb2.HISTORY_DELIVERY_FULL and not msg.agent_table.history_sent
        else:
            assert msg.history_delivery == world_pb2.HISTORY_DELIVERY_DELTA and msg.history_base_step == step - 1
            sent = list(msg.agent_table.history_sent)
            assert len(msg.agent_table.history) == sum(sent) * HISTORY_STEPS * 4
            for row, i in enumerate(agents.id.tolist()):  # a history is left out only if it is a pure shift
                if i not in previous.id.tolist():
                    assert sent[row], "an agent new in view must carry its history"
                    continue
                old = previous.history[previous.id.tolist().index(i)]
                old_valid = previous.history_valid[previous.id.tolist().index(i)]
                current = np.array([agents.xy[row, 0], agents.xy[row, 1], agents.yaw[row], agents.speed[row]])
                shifted = (agents.history[row, :-1].tobytes() == old[1:].tobytes()
                           and agents.history[row, -1].tobytes() == current.tobytes()
                           and (agents.history_valid[row] == np.append(old_valid[1:], True)).all())
                assert sent[row] != shifted, (step, row)
        previous = agents


def test_history_delta_decoding_refuses_what_it_cannot_rebuild() -> None:
    agents = Agents.empty(2)
    agents.id[:], agents.valid[:], agents.history_valid[:] = (4, 5), True, True
    encoder = codec.HistoryDeltaEncoder()
    base = _observation(agents, 0, encoder)
    moved = dataclasses.replace(agents, history=np.concatenate([agents.history[:, 1:], agents.history[:, -1:]], 1))
    delta = _observation(moved, 1, encoder)
    assert delta.history_delivery == world_pb2.HISTORY_DELIVERY_DELTA and not any(delta.agent_table.history_sent)
    with pytest.raises(DataFormatError, match="AgentHistoryCache"):
        codec.observation_from_proto(delta)
    with pytest.raises(DataFormatError, match="GetSession"):  # no base held: a lost reply
        codec.AgentHistoryCache().observation_agents(delta)
    cache = codec.AgentHistoryCache()
    other = world_pb2.Observation()
    other.CopyFrom(base)
    other.agent_table.id[1] = 9  # the base lacks agent 5
    cache.observation_agents(other)
    with pytest.raises(DataFormatError, match=r"agents \[5\]"):
        cache.observation_agents(delta)
    with pytest.raises(DataFormatError, match="AgentHistoryCache"):
        wire_table.agents_from_table(delta.agent_table)
    with pytest.raises(Exception, match="AGENT_LAYOUT_TABLE"):
        codec.observation_to_proto(Observation(0, 0, agents, 0, (), (), np.zeros((0, 2)),
                                              codec.step_metrics_from_proto(world_pb2.StepMetrics()), False,
                                              False, codec.end_reason_from_proto(0), 0.0),
                                  history_delta=codec.HistoryDeltaEncoder())


def test_the_client_keeps_its_own_copy_of_the_histories() -> None:
    agents = Agents.empty(1)
    agents.id[0], agents.valid[0], agents.history_valid[0] = 3, True, True
    encoder, cache = codec.HistoryDeltaEncoder(), codec.AgentHistoryCache()
    first = codec.observation_from_proto(_observation(agents, 0, encoder), history_cache=cache)
    first.agents.history[:] = 99.0  # a planner scribbling on the arrays it was handed
    moved = dataclasses.replace(agents, history=np.concatenate([agents.history[:, 1:], agents.history[:, -1:]], 1))
    again = codec.observation_from_proto(_observation(moved, 1, encoder), history_cache=cache)
    assert again.agents.history.tobytes() == moved.history.tobytes()


# --------------------------------------------------------------------------- served sessions
def test_history_deltas_serve_the_full_observations_step_by_step(client: SimClient, stub) -> None:  # noqa: ANN001
    delta = client.create_session(seed=7, history_delivery="delta", **CHURN)  # and delta lanes, agent table
    full = client.create_session(seed=7, **CHURN)  # the client's defaults: delta lanes, table, full histories
    plain = client.create_session(seed=7, lane_delivery="full", agent_layout="messages", **CHURN)
    local = Session(dataclasses.replace(TEST_DEFAULTS, seed=7, **CHURN))
    expected = local.reset()
    for session in (delta, full, plain):
        assert_identical(session.observation, expected)
    seen, previous = set(expected.agents.id.tolist()), set(expected.agents.id.tolist())
    appeared = left = reappeared = omitted = 0
    real_step, replies = client.stub.Step, []

    def recording(request, **kwargs):  # noqa: ANN001, ANN003, ANN202
        response = real_step(request, **kwargs)
        replies.append(response.observation)
        return response

    client.stub.Step = recording
    for k, command in enumerate(commands(expected, 80)):
        if k == 40:  # someone else steps the session: the client resyncs through GetSession, then deltas go on
            request = pb.StepRequest(session_id=delta.id, expected_step=delta.step_index)
            codec.command_to_proto(command, request.command)
            stub.Step(request)
            with pytest.raises(grpc.RpcError):
                delta.step(command)
            assert_identical(delta.resync(), local.step(command))
            full.step(command), plain.step(command)
            continue
        expected = local.step(command)
        for session in (delta, full, plain):
            assert_identical(session.step(command), expected)
        reply = replies[-3]  # the delta session's reply
        assert reply.history_delivery == world_pb2.HISTORY_DELIVERY_DELTA
        omitted += len(reply.agent_table.history_sent) - sum(reply.agent_table.history_sent)
        ids = set(expected.agents.id.tolist())
        appeared, left = appeared + len(ids - seen), left + len(previous - ids)
        reappeared += len((ids - previous) & seen)
        seen, previous = seen | ids, ids
    assert appeared >= 2 and left >= 3 and reappeared >= 2  # agents did appear, disappear and reappear
    assert omitted >= 60  # and most histories were left out
    assert full.observation.step == delta.observation.step == 80
    infos = {info.session_id: info for info in client.list_sessions()}
    assert infos[delta.id].history_delivery == world_pb2.HISTORY_DELIVERY_DELTA
    assert infos[full.id].history_delivery == infos[plain.id].history_delivery == world_pb2.HISTORY_DELIVERY_FULL


def test_delta_replies_omit_histories_and_get_session_is_complete(client: SimClient, stub) -> None:  # noqa: ANN001
    session = client.create_session(seed=3, history_delivery="delta")
    sizes = {}
    for name in ("delta", "full"):
        other = client.create_session(seed=3, history_delivery=name)
        request = pb.StepRequest(session_id=other.id, expected_step=0)
        request.command.builtin_planner.SetInParent()
        sizes[name] = stub.Step(request).observation
    reply = sizes["delta"]
    assert reply.history_delivery == world_pb2.HISTORY_DELIVERY_DELTA and reply.history_base_step == 0
    assert not any(reply.agent_table.history_sent) and not reply.agent_table.history
    assert sizes["full"].history_delivery == world_pb2.HISTORY_DELIVERY_UNSPECIFIED
    assert reply.ByteSize() < sizes["full"].ByteSize() - len(reply.agent_table.id) * HISTORY_STEPS * 32
    session.step()
    full = stub.GetSession(pb.GetSessionRequest(session_id=session.id, include_observation=True)).observation
    assert full.history_delivery != world_pb2.HISTORY_DELIVERY_DELTA and not full.agent_table.history_sent
    assert len(full.agent_table.history) == len(full.agent_table.id) * HISTORY_STEPS * 4


@pytest.mark.parametrize(("options", "cache"), [({}, "_lanes"),
                                               ({"lane_delivery": "full", "history_delivery": "delta"}, "_histories")])
def test_a_delta_on_a_step_the_client_never_decoded_is_resolved(client: SimClient, options: dict, cache: str) -> None:
    """A lane delta (default encoding) or a history delta on a base the client lost is read complete instead."""
    session = client.create_session(seed=4, **options)
    session.step()
    setattr(session, cache, type(getattr(session, cache))())  # as if step 1's lanes / histories were lost
    local = Session(dataclasses.replace(TEST_DEFAULTS, seed=4))
    local.reset()
    local.step()
    assert_identical(session.step(), local.step())  # reads step 2 complete from GetSession
    assert_identical(session.step(), local.step())


def test_bad_history_delivery_is_invalid_argument_naming_the_field(stub) -> None:  # noqa: ANN001
    for request in (pb.CreateSessionRequest(history_delivery=7),
                    pb.CreateSessionRequest(history_delivery=world_pb2.HISTORY_DELIVERY_DELTA),  # with MESSAGES
                    pb.CreateSessionRequest(history_delivery=world_pb2.HISTORY_DELIVERY_DELTA,
                                            agent_layout=world_pb2.AGENT_LAYOUT_MESSAGES)):
        with pytest.raises(grpc.RpcError) as info:
            stub.CreateSession(request)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "history_delivery" in info.value.details()
    assert not stub.ListSessions(pb.ListSessionsRequest()).sessions  # nothing was created
    with SimClient("127.0.0.1:1") as offline:
        for options in ({"history_delivery": "sometimes"}, {"history_delivery": "delta", "agent_layout": "messages"}):
            with pytest.raises(ValueError, match="history_delivery"):
                offline.create_session(**options)
