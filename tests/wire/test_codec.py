"""The fast wire paths (raw-bytes agent records, cached lane bytes, bulk decoding) against the plain
protobuf API: the messages they build and the values they decode must be exactly those of field-by-field
construction and reading."""

from __future__ import annotations

import gc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorworld.scene import HISTORY_STEPS, Agents, Lane, LaneType
from vectorworld.sim.metrics import StepMetrics
from vectorworld.sim.observation import EndReason, Frame, Observation
from vectorworld.v1 import world_pb2
from vectorworld.wire import codec
from vectorworld.wire import lanes as wire_lanes
from vectorworld.wire import raw as wire_raw

FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.sampled_from([0.0, -0.0]))
CONTROLLERS = {0: world_pb2.CONTROLLER_EGO, 1: world_pb2.CONTROLLER_NPC_POLICY, 2: world_pb2.CONTROLLER_LOG_REPLAY}


# --------------------------------------------------------------------------- reference (plain protobuf API)
def reference_agents(agents: Agents, slots: np.ndarray, out: object, include_history: bool = True,
                     policy_of: np.ndarray | None = None) -> None:
    """The field-by-field construction the fast path must reproduce exactly."""
    for slot in slots:
        a = out.add()
        a.id, a.agent_type = int(agents.id[slot]), int(agents.agent_type[slot])
        a.pose.x_m, a.pose.y_m, a.pose.yaw_rad = (float(v) for v in (*agents.xy[slot], agents.yaw[slot]))
        a.speed_mps, a.length_m, a.width_m = (float(v) for v in (agents.speed[slot], agents.length[slot],
                                                                 agents.width[slot]))
        if include_history:
            h = agents.history[slot]
            a.history_x_m.extend(h[:, 0].tolist())
            a.history_y_m.extend(h[:, 1].tolist())
            a.history_yaw_rad.extend(h[:, 2].tolist())
            a.history_speed_mps.extend(h[:, 3].tolist())
            a.history_valid.extend(agents.history_valid[slot].tolist())
        if policy_of is not None:
            a.slot = int(slot)
            a.controller = CONTROLLERS.get(int(policy_of[slot]), world_pb2.CONTROLLER_UNSPECIFIED)


def reference_observation(obs: Observation) -> world_pb2.Observation:
    msg = world_pb2.Observation(step=obs.step, sim_time_us=obs.sim_time_us, ego_index=obs.ego_slot)
    reference_agents(obs.agents, np.flatnonzero(obs.agents.valid), msg.agents)
    for lane in obs.lanes:
        wire_raw.lane_to_proto(lane, msg.lanes.add())
    msg.route_lane_ids.extend(obs.route_lane_ids)
    codec.polyline_to_proto(obs.route_polyline, msg.route_polyline)
    codec.step_metrics_to_proto(obs.step_metrics, msg.step_metrics)
    msg.terminated, msg.truncated, msg.km = obs.terminated, obs.truncated, obs.km
    msg.end_reason = codec.end_reason_to_proto(obs.end_reason)
    return msg


# --------------------------------------------------------------------------- random inputs
@st.composite
def agent_tables(draw: st.DrawFn, steps: int = HISTORY_STEPS) -> Agents:
    n = draw(st.integers(0, 6))
    agents = Agents.empty(n, steps)
    agents.valid[:] = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    agents.id[:] = draw(st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1) | st.integers(0, 300), min_size=n,
                                 max_size=n))
    agents.agent_type[:] = draw(st.lists(st.integers(-128, 127) | st.integers(0, 4), min_size=n, max_size=n))
    for array in (agents.yaw, agents.speed, agents.length, agents.width):
        array[:] = draw(st.lists(FLOATS, min_size=n, max_size=n))
    agents.xy[:] = np.reshape(draw(st.lists(FLOATS, min_size=2 * n, max_size=2 * n)), (n, 2))
    agents.history[:] = np.reshape(draw(st.lists(FLOATS, min_size=4 * n * steps, max_size=4 * n * steps)),
                                   (n, steps, 4))
    agents.history_valid[:] = np.reshape(draw(st.lists(st.booleans(), min_size=n * steps,
                                                       max_size=n * steps)), (n, steps))
    return agents


def make_lane(lane_id: int, offset: float = 0.0, successors: tuple[int, ...] = ()) -> Lane:
    points = np.stack([np.linspace(0.0, 30.0, 7), np.full(7, offset)], -1)
    return Lane(id=lane_id, points=points, lane_type=LaneType.SURFACE_STREET, successors=successors,
                left_neighbors=(lane_id + 1,), tile_id=3)


def make_observation(agents: Agents, lanes: tuple[Lane, ...]) -> Observation:
    return Observation(step=7, sim_time_us=700_000, agents=agents, ego_slot=0, lanes=lanes, route_lane_ids=(1, 2),
                       route_polyline=np.array([[0.0, 0.0], [5.0, 1.0]]),
                       step_metrics=StepMetrics((4,), True, 1, 0, 2, 5, False, 0.8), terminated=False,
                       truncated=True, end_reason=EndReason.MAX_STEPS, km=0.25)


# --------------------------------------------------------------------------- encoding
@settings(max_examples=60, deadline=None)
@given(agents=agent_tables())
def test_observation_encoding_equals_field_by_field(agents: Agents) -> None:
    obs = make_observation(agents, (make_lane(1), make_lane(2, 3.5, (1,))))
    expected = reference_observation(obs).SerializeToString(deterministic=True)
    assert codec.observation_to_proto(obs).SerializeToString(deterministic=True) == expected
    memo = codec.LaneEncodeMemo()
    for _ in range(2):  # first call fills the memo, second reuses it
        assert codec.observation_to_proto(obs, lane_memo=memo).SerializeToString(deterministic=True) == expected


@settings(max_examples=40, deadline=None)
@given(agents=agent_tables(), include_history=st.booleans(),
       codes=st.lists(st.integers(-128, 127) | st.integers(-1, 2), min_size=6, max_size=6))
def test_frame_agents_equal_field_by_field(agents: Agents, include_history: bool, codes: list[int]) -> None:
    policy_of = np.array(codes[:agents.capacity], np.int8)
    slots = np.flatnonzero(agents.valid)
    expected = world_pb2.Frame()
    reference_agents(agents, slots, expected.agents, include_history, policy_of)
    frame = Frame(step=1, sim_time_us=100_000, agents=agents, ego_slot=0, policy_of=policy_of, new_tiles=(),
                  new_lanes=(make_lane(5),), removed_lane_ids=(), ego_plan=np.zeros((0, 3)),
                  step_metrics=StepMetrics(), km=0.0, tile_ms=0.0, npc_policy_ms=0.0, end_reason=EndReason.NONE)
    msg = codec.frame_to_proto(frame, include_history=include_history)
    assert list(msg.agents) == list(expected.agents)
    assert list(msg.new_lanes) == [wire_raw.lane_to_proto(make_lane(5))]
    held = world_pb2.Frame()
    wire_raw.agents_to_proto(agents, slots, held.agents, include_history, policy_of)
    assert held == expected


def test_lane_bytes_are_cached_per_lane_object_and_dropped_with_it() -> None:
    lane = make_lane(11)
    first = codec.lanes_to_wire([lane], 5)
    assert codec.lanes_to_wire([lane], 5) == first
    edited = Lane(**{**{f: getattr(lane, f) for f in ("id", "points", "width_m", "speed_limit_mps",
                                                        "lane_type", "left_neighbors", "tile_id")},
                     "successors": (12,)})
    msg = world_pb2.Observation()
    msg.MergeFromString(codec.lanes_to_wire([edited], 5))
    assert list(msg.lanes[0].successors) == [12]  # a replaced lane is a new object: encoded afresh
    size = len(wire_lanes._LANE_WIRE)
    del lane, edited
    gc.collect()
    assert len(wire_lanes._LANE_WIRE) <= size - 2


def test_lane_memo_reencodes_when_any_lane_object_changes() -> None:
    a, b = make_lane(1), make_lane(2)
    memo = codec.LaneEncodeMemo()
    assert memo.encode((a, b), 5) == codec.lanes_to_wire((a, b), 5)
    b2 = make_lane(2, successors=(9,))
    msg = world_pb2.Observation()
    msg.MergeFromString(memo.encode((a, b2), 5))
    assert list(msg.lanes[1].successors) == [9]
    assert memo.encode((a,), 7) == codec.lanes_to_wire((a,), 7)


# --------------------------------------------------------------------------- decoding
def reference_agents_from_proto(msgs: object, history_steps: int = HISTORY_STEPS) -> Agents:
    """One agent at a time (the semantics of agents_from_proto without capacity)."""
    out = Agents.empty(len(msgs), history_steps)
    for k, a in enumerate(msgs):
        out.id[k], out.valid[k] = a.id, True
        out.agent_type[k] = a.agent_type if 0 <= a.agent_type <= 4 else 0
        out.xy[k], out.yaw[k], out.speed[k] = (a.pose.x_m, a.pose.y_m), a.pose.yaw_rad, a.speed_mps
        out.length[k], out.width[k] = a.length_m, a.width_m
        h = min(len(a.history_x_m), history_steps)
        if h:
            hist = np.stack([list(a.history_x_m), list(a.history_y_m), list(a.history_yaw_rad),
                             list(a.history_speed_mps)], -1)
            out.history[k, -h:], out.history_valid[k, -h:] = hist[-h:], np.asarray(a.history_valid, bool)[-h:]
        else:
            out.history[k, -1], out.history_valid[k, -1] = (a.pose.x_m, a.pose.y_m, a.pose.yaw_rad, a.speed_mps), True
    return out


def assert_agents_equal(a: Agents, b: Agents) -> None:
    for name in ("id", "valid", "agent_type", "xy", "yaw", "speed", "length", "width", "history", "history_valid"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@settings(max_examples=60, deadline=None)
@given(agents=agent_tables(), lengths=st.lists(st.sampled_from([0, 3, HISTORY_STEPS, HISTORY_STEPS + 2]),
                                                min_size=6, max_size=6),
       extra=st.lists(st.booleans(), min_size=6, max_size=6))
def test_agent_decoding_equals_field_by_field(agents: Agents, lengths: list[int], extra: list[bool]) -> None:
    msg = world_pb2.Observation()
    reference_agents(agents, np.arange(agents.capacity), msg.agents)
    for a, h, slot in zip(msg.agents, lengths, extra, strict=False):
        if h != HISTORY_STEPS:  # ragged or missing histories take the field-by-field path
            for name in ("history_x_m", "history_y_m", "history_yaw_rad", "history_speed_mps", "history_valid"):
                values = list(getattr(a, name))
                del getattr(a, name)[:]
                getattr(a, name).extend((values * 2)[:h])
        if slot:  # a slot field after the histories moves them off the tail: still decoded right
            a.slot = 3
    decoded = codec.agents_from_proto(world_pb2.Observation.FromString(msg.SerializeToString()).agents)
    assert_agents_equal(decoded, reference_agents_from_proto(msg.agents))


def test_lane_decode_cache_reuses_unchanged_lanes_only() -> None:
    msg = world_pb2.Observation()
    for lane in (make_lane(1), make_lane(2)):
        wire_raw.lane_to_proto(lane, msg.lanes.add())
    cache = codec.LaneDecodeCache()
    first = cache.decode(msg.lanes)
    again = cache.decode(msg.lanes)
    assert again is first or all(x is y for x, y in zip(again, first, strict=True))
    msg.lanes[1].successors.append(7)  # same number of lanes, one edited
    second = cache.decode(msg.lanes)
    assert second[0] is first[0] and second[1] is not first[1] and second[1].successors == (7,)
    wire_raw.lane_to_proto(make_lane(3), msg.lanes.add())
    third = cache.decode(msg.lanes)
    assert third[0] is first[0] and third[1] is second[1] and third[2].id == 3
    np.testing.assert_array_equal(third[2].points, make_lane(3).points)
    plain = codec.observation_from_proto(msg)
    cached = codec.observation_from_proto(msg, codec.LaneDecodeCache())
    assert [lane.id for lane in plain.lanes] == [lane.id for lane in cached.lanes] == [1, 2, 3]
