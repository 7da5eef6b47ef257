"""Observation encodings: lane deltas (LANE_DELIVERY_DELTA) and agent tables (AGENT_LAYOUT_TABLE) decode to
exactly what the plain encoding (every lane, one Agent message per agent) decodes to, on the wire and over
the served session, including lanes leaving and entering the radius, edited lanes and lost replies."""

from __future__ import annotations

import dataclasses

import grpc
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim_server.client import SimClient
from tests.sim_server.conftest import TEST_DEFAULTS
from tests.sim_server.test_service import code_of
from tests.wire.test_codec import (
    agent_tables,
    assert_agents_equal,
    make_lane,
    reference_agents,
    reference_agents_from_proto,
)
from vectorworld.errors import DataFormatError
from vectorworld.scene import HISTORY_STEPS, Agents, Lane
from vectorworld.sim.observation import Observation
from vectorworld.sim.session import Session
from vectorworld.v1 import simulator_service_pb2 as pb
from vectorworld.v1 import world_pb2
from vectorworld.wire import codec
from vectorworld.wire import raw as wire_raw
from vectorworld.wire import table as wire_table

CHURN = {"target_km": 0.2, "observation_radius_m": 15.0}
"""A short test-straight episode whose small radius makes lanes leave and enter the view every few steps."""


def assert_lanes_equal(a: tuple[Lane, ...], b: tuple[Lane, ...]) -> None:
    assert [lane.id for lane in a] == [lane.id for lane in b]
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.points, y.points)
        assert (x.width_m, x.speed_limit_mps, x.lane_type, x.successors, x.predecessors, x.left_neighbors,
                x.right_neighbors, x.tile_id) == (y.width_m, y.speed_limit_mps, y.lane_type, y.successors,
                                                  y.predecessors, y.left_neighbors, y.right_neighbors, y.tile_id)


def assert_observations_equal(a: Observation, b: Observation) -> None:
    assert_agents_equal(a.agents, b.agents)
    assert_lanes_equal(a.lanes, b.lanes)
    np.testing.assert_array_equal(a.route_polyline, b.route_polyline)
    for name in ("step", "sim_time_us", "ego_slot", "route_lane_ids", "step_metrics", "terminated", "truncated",
                 "end_reason", "km"):
        assert getattr(a, name) == getattr(b, name), name


# --------------------------------------------------------------------------- lane deltas on the wire
def _variant(lane: Lane, kind: str) -> Lane:
    """The lane again: the same object, an equal copy (a new object, same bytes) or an edited copy."""
    if kind == "same":
        return lane
    fields = {f.name: getattr(lane, f.name) for f in dataclasses.fields(Lane) if f.init}
    if kind == "edited":
        fields["successors"] = (*lane.successors, 1000 + len(lane.successors))
    return Lane(**fields)


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.lists(st.tuples(st.integers(0, 11), st.sampled_from(["same", "same", "copy", "edited"])),
                               max_size=9), min_size=2, max_size=25))
def test_lane_delta_stream_rebuilds_every_complete_lane_set(steps: list[list[tuple[int, str]]]) -> None:
    current = {i: make_lane(i, offset=float(i)) for i in range(12)}
    encoder, decoder = codec.LaneDeltaEncoder(), codec.LaneDecodeCache()
    previous: dict[int, Lane] | None = None
    for step, draw in enumerate(steps):
        ids = list(dict.fromkeys(i for i, _ in draw))  # distinct ids, in drawn order
        for i, kind in draw:
            current[i] = _variant(current[i], kind)
        lanes = tuple(current[i] for i in ids)
        delta = encoder.encode(lanes, step)
        msg = world_pb2.Observation(step=step)
        msg.MergeFromString(delta.wire)
        msg = world_pb2.Observation.FromString(msg.SerializeToString())
        if previous is None:
            assert msg.lane_delivery == world_pb2.LANE_DELIVERY_FULL and delta.sent == len(lanes)
        else:  # only new lanes and lanes whose content changed are sent
            expected = sum(i not in previous or codec.lanes_to_wire([previous[i]], 5) !=
                           codec.lanes_to_wire([current[i]], 5) for i in ids)
            assert msg.lane_delivery == world_pb2.LANE_DELIVERY_DELTA and msg.lane_base_step == step - 1
            assert delta.sent == len(msg.lanes) == expected and list(msg.lane_ids) == ids
        decoded = decoder.observation_lanes(msg)
        assert_lanes_equal(decoded, lanes)
        assert decoder.holds(step)
        previous = dict(zip(ids, lanes, strict=True))


def test_delta_decoding_refuses_what_it_cannot_rebuild() -> None:
    encoder = codec.LaneDeltaEncoder()
    encoder.encode((make_lane(1), make_lane(2)), 0)
    msg = world_pb2.Observation(step=1)
    msg.MergeFromString(encoder.encode((make_lane(2), make_lane(3)), 1).wire)
    assert msg.lane_delivery == world_pb2.LANE_DELIVERY_DELTA
    with pytest.raises(DataFormatError, match="GetSession"):  # no base held: a lost reply
        codec.LaneDecodeCache().observation_lanes(msg)
    with pytest.raises(DataFormatError, match="LaneDecodeCache"):
        codec.observation_from_proto(msg)
    holder = codec.LaneDecodeCache()
    holder.observation_lanes(world_pb2.Observation(step=5, lanes=[wire_raw.lane_to_proto(make_lane(2))]))
    with pytest.raises(DataFormatError, match="step 0"):  # holds another step's lanes
        holder.observation_lanes(msg)
    base = world_pb2.Observation(step=0, lanes=[wire_raw.lane_to_proto(make_lane(1))])
    for bad_ids in ([1, 3, 9], [1]):  # 9: neither sent nor held; 3: sent but not listed
        holder.observation_lanes(base)
        bad = world_pb2.Observation()
        bad.CopyFrom(msg)
        bad.ClearField("lane_ids")
        bad.lane_ids.extend(bad_ids)
        with pytest.raises(DataFormatError, match="lane"):
            holder.observation_lanes(bad)


def test_duplicate_lane_ids_are_sent_complete() -> None:
    encoder = codec.LaneDeltaEncoder()
    encoder.encode((make_lane(1),), 0)
    twice = (make_lane(1), make_lane(1, offset=2.0))
    assert encoder.encode(twice, 1).delivery == world_pb2.LANE_DELIVERY_FULL
    assert encoder.encode(twice, 2).delivery == world_pb2.LANE_DELIVERY_FULL  # no base to build on


# --------------------------------------------------------------------------- agent tables on the wire
def _table(agents: Agents) -> world_pb2.AgentTable:
    msg = world_pb2.Observation()
    msg.MergeFromString(wire_table.agent_table_to_wire(agents, np.arange(agents.capacity), 16))
    return world_pb2.Observation.FromString(msg.SerializeToString()).agent_table


@settings(max_examples=60, deadline=None)
@given(agents=agent_tables())
def test_agent_table_decodes_to_the_agent_messages_values(agents: Agents) -> None:
    messages = world_pb2.Observation()
    reference_agents(agents, np.arange(agents.capacity), messages.agents)
    table = _table(agents)
    assert list(table.id) == [a.id for a in messages.agents]
    decoded = wire_table.agents_from_table(table)
    assert_agents_equal(decoded, reference_agents_from_proto(messages.agents))
    assert_agents_equal(decoded, codec.agents_from_proto(messages.agents))
    assert decoded.agent_type.dtype == np.int8 and decoded.xy.flags.writeable and decoded.history.flags.writeable
    some = np.flatnonzero(agents.valid)
    held = world_pb2.Observation()
    held.MergeFromString(wire_table.agent_table_to_wire(agents, some, 16))
    assert list(held.agent_table.id) == agents.id[some].tolist()


@pytest.mark.parametrize("steps", [0, 4, HISTORY_STEPS + 3])
def test_agent_table_with_another_history_length(steps: int) -> None:
    agents = Agents.empty(3, steps)
    agents.id[:], agents.xy[:] = (5, 6, 7), np.arange(6.0).reshape(3, 2)
    agents.history[:] = np.arange(agents.history.size, dtype=float).reshape(agents.history.shape)
    agents.history_valid[:] = True
    reference = world_pb2.Observation()
    reference_agents(agents, np.arange(3), reference.agents, include_history=bool(steps))
    assert_agents_equal(wire_table.agents_from_table(_table(agents)),
                        reference_agents_from_proto(reference.agents))


def test_malformed_agent_table_names_the_column() -> None:
    agents = Agents.empty(2)
    agents.id[:] = (1, 2)
    table = _table(agents)
    table.x_m.append(3.0)
    with pytest.raises(DataFormatError, match="agent_table.x_m holds 3 values, expected 2"):
        wire_table.agents_from_table(table)
    table = _table(agents)
    del table.history[-4:]
    with pytest.raises(DataFormatError, match="agent_table.history"):
        wire_table.agents_from_table(table)


# --------------------------------------------------------------------------- served sessions
def test_compact_and_plain_encodings_serve_identical_observations(client: SimClient) -> None:
    compact = client.create_session(seed=7, **CHURN)  # the client's defaults: lane deltas, agent table
    plain = client.create_session(seed=7, lane_delivery="full", agent_layout="messages", **CHURN)
    local = Session(dataclasses.replace(TEST_DEFAULTS, seed=7, **CHURN))
    expected = local.reset()
    assert_observations_equal(compact.observation, expected)
    assert_observations_equal(plain.observation, expected)
    left = entered = 0
    stream = compact.stream(None for _ in iter(lambda: compact.observation.done, True))
    for obs in stream:
        previous, expected = expected, local.step()
        assert_observations_equal(obs, expected)
        assert_observations_equal(plain.step(), expected)
        ids, before = {lane.id for lane in expected.lanes}, {lane.id for lane in previous.lanes}
        left, entered = left + bool(before - ids), entered + bool(ids - before)
    assert expected.done and left >= 3 and entered >= 3  # lanes did leave and enter the view
    infos = {info.session_id: info for info in client.list_sessions()}
    assert infos[compact.id].lane_delivery == world_pb2.LANE_DELIVERY_DELTA
    assert infos[compact.id].agent_layout == world_pb2.AGENT_LAYOUT_TABLE
    assert infos[plain.id].lane_delivery == world_pb2.LANE_DELIVERY_FULL
    assert infos[plain.id].agent_layout == world_pb2.AGENT_LAYOUT_MESSAGES


def test_delta_replies_carry_only_changes_and_get_session_is_complete(client: SimClient, stub) -> None:  # noqa: ANN001
    session = client.create_session(seed=3)
    builtin = pb.StepRequest(session_id=session.id, expected_step=0)
    builtin.command.builtin_planner.SetInParent()
    reply = stub.Step(builtin).observation
    assert reply.lane_delivery == world_pb2.LANE_DELIVERY_DELTA and reply.lane_base_step == 0
    assert len(reply.lanes) < len(reply.lane_ids) and not reply.agents and len(reply.agent_table.id) >= 1
    full = stub.GetSession(pb.GetSessionRequest(session_id=session.id, include_observation=True)).observation
    assert full.lane_delivery != world_pb2.LANE_DELIVERY_DELTA and [m.id for m in full.lanes] == list(reply.lane_ids)
    # the raw Step moved the session past the client object: its next step is refused, resync() recovers
    assert code_of(session.step) == grpc.StatusCode.ABORTED
    assert session.resync().step == 1
    local = Session(dataclasses.replace(TEST_DEFAULTS, seed=3))
    local.reset()
    local.step()
    for _ in range(5):  # deltas keep applying on the complete set GetSession returned
        assert_observations_equal(session.step(), local.step())


def test_lost_reply_recovers_through_get_session_with_deltas(client: SimClient) -> None:
    from tests.sim_server.test_service import _LostReply

    session = client.create_session(seed=2, **CHURN)
    real_step = client.stub.Step
    lost = {3}

    def flaky(request, **kwargs):  # noqa: ANN001, ANN003, ANN202
        response = real_step(request, **kwargs)
        if request.expected_step in lost:
            lost.discard(request.expected_step)
            raise _LostReply()
        return response

    client.stub.Step, client.backoff_s = flaky, 0.0
    local = Session(dataclasses.replace(TEST_DEFAULTS, seed=2, **CHURN))
    local.reset()
    for _ in range(30):  # step 3's reply is lost: ABORTED on retry, the client adopts GetSession's state
        assert_observations_equal(session.step(), local.step())
    assert not lost


def test_bad_encoding_options_are_invalid_argument_naming_the_field(stub) -> None:  # noqa: ANN001
    for field in ("lane_delivery", "agent_layout"):
        request = pb.CreateSessionRequest(**{field: 7})
        with pytest.raises(grpc.RpcError) as info:
            stub.CreateSession(request)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and field in info.value.details()
    assert not stub.ListSessions(pb.ListSessionsRequest()).sessions  # nothing was created
    with SimClient("127.0.0.1:1") as offline, pytest.raises(ValueError, match="lane_delivery"):
        offline.create_session(lane_delivery="sometimes")
