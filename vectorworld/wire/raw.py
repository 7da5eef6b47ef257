"""The wire format of the hot paths: lane, tile and agent messages built and read in bulk (see "raw
wire format" below). :mod:`vectorworld.wire.lanes` caches and delta-encodes lanes on top of these;
:mod:`vectorworld.wire.codec` builds every other message.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from vectorworld.errors import ConfigError, DataFormatError
from vectorworld.scene import HISTORY_STEPS, Agents, AgentType, Lane, LaneType, Tile
from vectorworld.v1 import world_pb2
from vectorworld.wire.varint import I32, I64, LEN, VARINT, encode_varint, field_tag, read_varint
from vectorworld.world.streaming import STRAIGHT_FALLBACK

# Frame.policy_of codes (0 ego, 1 NPC policy, 2 log replay) <-> Controller.
_CONTROLLER_TO_WIRE = {0: world_pb2.CONTROLLER_EGO, 1: world_pb2.CONTROLLER_NPC_POLICY,
                       2: world_pb2.CONTROLLER_LOG_REPLAY}
_CONTROLLER_FROM_WIRE = {v: k for k, v in _CONTROLLER_TO_WIRE.items()}


# --------------------------------------------------------------------------- geometry and map
def polyline_to_proto(points: np.ndarray, out: world_pb2.Polyline | None = None) -> world_pb2.Polyline:
    """points: (P, 2) m, global frame."""
    msg = world_pb2.Polyline() if out is None else out
    msg.MergeFromString(_polyline_body(points))
    return msg


def polyline_to_wire(points: np.ndarray, field_number: int) -> bytes:
    """The wire bytes of ``points`` ((P, 2) m) as the Polyline field ``field_number`` of the enclosing message
    (merge them with ``MergeFromString``); nothing for an empty polyline (the field stays unset)."""
    body = _polyline_body(points)
    return field_tag(field_number, LEN) + encode_varint(len(body)) + body if body else b""


def _polyline_body(points: np.ndarray) -> bytes:
    """A Polyline's fields: x_m and y_m as packed doubles (their raw little-endian bytes); empty if P = 0."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if not len(pts):
        return b""
    size = encode_varint(8 * len(pts))
    return b"".join((_POLYLINE_X, size, pts[:, 0].astype("<f8").tobytes(),
                     _POLYLINE_Y, size, pts[:, 1].astype("<f8").tobytes()))


def polyline_from_proto(msg: world_pb2.Polyline, field_name: str = "polyline") -> np.ndarray:
    """(P, 2) float64, read in bulk from the packed arrays' bytes; raises ConfigError if the coordinate
    arrays differ in length."""
    n = len(msg.x_m)
    if n != len(msg.y_m):
        raise ConfigError(f"{field_name}: x_m has {n} values but y_m has {len(msg.y_m)}")
    if n == 0:
        return np.zeros((0, 2))
    data = msg.SerializeToString()  # canonical: each coordinate array one packed field
    spans = length_delimited_spans(data)
    (x_at, x_size), (y_at, y_size) = spans.get(1, (0, 0)), spans.get(2, (0, 0))
    if x_size != 8 * n or y_size != 8 * n:  # pragma: no cover - not produced by a protobuf serializer
        return np.stack([np.asarray(msg.x_m, np.float64), np.asarray(msg.y_m, np.float64)], -1)
    out = np.empty((n, 2))
    out[:, 0], out[:, 1] = np.frombuffer(data, "<f8", n, x_at), np.frombuffer(data, "<f8", n, y_at)
    return out


def lane_to_proto(lane: Lane, out: world_pb2.Lane | None = None) -> world_pb2.Lane:
    msg = world_pb2.Lane() if out is None else out
    msg.id = int(lane.id)
    polyline_to_proto(lane.points, msg.centerline)
    msg.width_m = float(lane.width_m)
    msg.speed_limit_mps = float(lane.speed_limit_mps)
    msg.lane_type = int(lane.lane_type)
    msg.successors.extend(int(i) for i in lane.successors)
    msg.predecessors.extend(int(i) for i in lane.predecessors)
    msg.left_neighbors.extend(int(i) for i in lane.left_neighbors)
    msg.right_neighbors.extend(int(i) for i in lane.right_neighbors)
    msg.tile_id = int(lane.tile_id)
    return msg


def lane_from_proto(msg: world_pb2.Lane) -> Lane:
    lane_type = msg.lane_type if msg.lane_type in LaneType._value2member_map_ else LaneType.UNDEFINED
    return Lane(id=msg.id, points=polyline_from_proto(msg.centerline, f"lane {msg.id} centerline"),
                width_m=msg.width_m, speed_limit_mps=msg.speed_limit_mps, lane_type=LaneType(lane_type),
                successors=tuple(msg.successors), predecessors=tuple(msg.predecessors),
                left_neighbors=tuple(msg.left_neighbors), right_neighbors=tuple(msg.right_neighbors),
                tile_id=msg.tile_id)


def tile_to_proto(tile: Tile, out: world_pb2.Tile | None = None) -> world_pb2.Tile:
    """The tile without its wall-clock latency (that goes into FrameTimings)."""
    msg = world_pb2.Tile() if out is None else out
    msg.id, msg.order, msg.generator = int(tile.id), int(tile.order), tile.generator
    msg.center_x_m, msg.center_y_m = (float(v) for v in tile.center_xy)
    msg.yaw_rad, msg.size_m = float(tile.yaw), float(tile.size_m)
    msg.lane_ids.extend(int(i) for i in tile.lane_ids)
    return msg


def tile_from_proto(msg: world_pb2.Tile, latency_ms: float = 0.0) -> Tile:
    """The Tile; the wire names the straight fallback by its generator (``Tile.fallback`` is not sent)."""
    return Tile(id=msg.id, center_xy=np.array([msg.center_x_m, msg.center_y_m]), yaw=msg.yaw_rad,
                order=msg.order, generator=msg.generator, lane_ids=tuple(msg.lane_ids),
                latency_ms=latency_ms, size_m=msg.size_m, fallback=msg.generator == STRAIGHT_FALLBACK)


# --------------------------------------------------------------------------- raw wire format
# An observation leaves the server every 0.1 s with ~50 agents and ~150 lanes; building it one field at a
# time through the protobuf API costs ~1 ms, and reading it back the same way ~4 ms. The hot paths write
# the wire format directly and hand it to the native parser with one MergeFromString: agents as fixed-size
# numpy records (every field written, zeros included, varints padded to 10 bytes: all valid encodings
# that parse to the same message, whose own serialization is then canonical), lanes as bytes cached per
# immutable lane object. Decoding reads agents in bulk (rows of scalars, histories from the canonical
# serialization's tail) and reuses unchanged lanes. tests/wire/test_codec.py checks both
# directions against field-by-field construction with the protobuf API. Cheaper still, per session:
# agents as one table of packed columns (table.py) and lanes as deltas (lanes.py).
_POLYLINE_X, _POLYLINE_Y = field_tag(1, LEN), field_tag(2, LEN)


def length_delimited_spans(data: bytes | bytearray) -> dict[int, tuple[int, int]]:
    """Field number -> (offset, size) of the length-delimited fields (packed arrays, sub-messages, strings)
    of the serialized message ``data``, the last occurrence of each; fields of other wire types are skipped.
    Raises DataFormatError on malformed bytes."""
    out: dict[int, tuple[int, int]] = {}
    pos, end = 0, len(data)
    try:
        while pos < end:
            key, pos = read_varint(data, pos)
            wire_type = key & 7
            if wire_type == LEN:
                size, pos = read_varint(data, pos)
                out[key >> 3] = (pos, size)
                pos += size
            elif wire_type == VARINT:
                pos = read_varint(data, pos)[1]
            elif wire_type in (I64, I32):
                pos += 8 if wire_type == I64 else 4
            else:
                raise DataFormatError(f"unsupported protobuf wire type {wire_type} at byte {pos}")
    except IndexError:
        raise DataFormatError("truncated protobuf message") from None
    if pos != end:
        raise DataFormatError("truncated protobuf message")
    return out


_HISTORY_FIELDS = ("history_x_m", "history_y_m", "history_yaw_rad", "history_speed_mps")
_F8, _VARINT10 = ("<f8",), ("u1", (10,))
_VARINT10_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)
_VARINT10_MORE = np.array([0x80] * 9 + [0], np.uint8)
_Item = tuple[str, bytes, tuple[Any, ...] | None]


def _varint10(values: np.ndarray) -> np.ndarray:
    """(N, 10) uint8: each int64 as a 10-byte varint (zero-padded groups; still a valid varint, and the
    parser's re-serialization is the canonical short form)."""
    v = np.asarray(values).astype(np.int64).view(np.uint64)
    return ((v[:, None] >> _VARINT10_SHIFTS) & np.uint64(0x7F)).astype(np.uint8) | _VARINT10_MORE


def _layout(items: list[_Item]) -> tuple[np.dtype, np.ndarray]:
    """A packed record type of (tag bytes, value) pairs and a record with the tags filled in."""
    fields: list[tuple[Any, ...]] = []
    for name, tag, value in items:
        fields.append((f"{name}_tag", "u1", (len(tag),)))
        if value is not None:
            fields.append((name, *value))
    dtype = np.dtype(fields)
    template = np.zeros((), dtype)
    for name, tag, _value in items:
        template[f"{name}_tag"] = np.frombuffer(tag, np.uint8)
    return dtype, template


def _history_items(steps: int) -> list[_Item]:
    """Agent fields 7-11 (packed history arrays of ``steps`` entries) as written canonically."""
    items: list[_Item] = [(name, field_tag(number, LEN) + encode_varint(8 * steps), ("<f8", (steps,)))
                          for number, name in zip((7, 8, 9, 10), _HISTORY_FIELDS, strict=True)]
    return items + [("history_valid", field_tag(11, LEN) + encode_varint(steps), ("u1", (steps,)))]


@functools.lru_cache(maxsize=64)
def _agent_layout(field_number: int, steps: int, with_slot: bool) -> tuple[np.dtype, np.ndarray]:
    """A fixed-size record holding one whole ``Agent`` entry of the repeated field ``field_number``: its
    tag and length, then every field (zeros included; varints padded to 10 bytes). ``steps``: history
    length (0: no history fields); ``with_slot``: also slot and controller (frames)."""
    pose = field_tag(3, LEN) + encode_varint(27) + field_tag(1, I64)
    body: list[_Item] = [("id", field_tag(1, VARINT), _VARINT10), ("agent_type", field_tag(2, VARINT), _VARINT10),
                         ("x", pose, _F8), ("y", field_tag(2, I64), _F8), ("yaw", field_tag(3, I64), _F8),
                         ("speed", field_tag(4, I64), _F8), ("length", field_tag(5, I64), _F8),
                         ("width", field_tag(6, I64), _F8)]
    if steps:
        body += _history_items(steps)
    if with_slot:
        body += [("slot", field_tag(12, VARINT), _VARINT10), ("controller", field_tag(13, VARINT), _VARINT10)]
    size = _layout(body)[0].itemsize
    return _layout([("entry", field_tag(field_number, LEN) + encode_varint(size), None), *body])


def agents_to_wire(agents: Agents, slots: Sequence[int] | np.ndarray, field_number: int,
                   include_history: bool = True, policy_of: np.ndarray | None = None) -> bytes:
    """The wire bytes of one ``Agent`` per slot as entries of the repeated field ``field_number`` of the
    enclosing message (merge them with ``MergeFromString``). ``policy_of``: as in :func:`agents_to_proto`."""
    slots = np.asarray(slots, dtype=np.intp).reshape(-1)
    steps = agents.history.shape[1] if include_history else 0
    dtype, template = _agent_layout(field_number, steps, policy_of is not None)
    rec = np.empty(len(slots), dtype)
    rec[...] = template
    rec["id"], rec["agent_type"] = _varint10(agents.id[slots]), _varint10(agents.agent_type[slots])
    rec["x"], rec["y"] = agents.xy[slots, 0], agents.xy[slots, 1]
    rec["yaw"], rec["speed"] = agents.yaw[slots], agents.speed[slots]
    rec["length"], rec["width"] = agents.length[slots], agents.width[slots]
    if steps:
        history = agents.history[slots]
        for k, name in enumerate(_HISTORY_FIELDS):
            rec[name] = history[:, :, k]
        rec["history_valid"] = agents.history_valid[slots]
    if policy_of is not None:
        rec["slot"] = _varint10(slots)
        codes = policy_of[slots]
        controllers = np.full(len(slots), world_pb2.CONTROLLER_UNSPECIFIED, np.int64)
        for code, controller in _CONTROLLER_TO_WIRE.items():
            controllers[codes == code] = controller
        rec["controller"] = _varint10(controllers)
    return rec.tobytes()


def agents_to_proto(agents: Agents, slots: Sequence[int], out: Any, include_history: bool = True,
                    policy_of: np.ndarray | None = None) -> None:
    """Append one ``Agent`` per slot in ``slots`` to the repeated field ``out``.

    With ``policy_of`` ((C,) int8, Frame convention) the agents also get their slot and controller.
    Messages that embed agents use :func:`agents_to_wire` directly (no intermediate copy).
    """
    holder = world_pb2.Observation()
    holder.MergeFromString(agents_to_wire(agents, slots, 3, include_history, policy_of))
    out.extend(holder.agents)


AGENT_TYPES = np.array(sorted(AgentType._value2member_map_), np.int64)
_AGENT_ROW = np.dtype([("id", "<i8"), ("agent_type", "<i8"), ("x", "<f8"), ("y", "<f8"), ("yaw", "<f8"),
                       ("speed", "<f8"), ("length", "<f8"), ("width", "<f8")])


def agents_from_proto(msgs: Sequence[world_pb2.Agent], capacity: int | None = None,
                      history_steps: int = HISTORY_STEPS) -> Agents:
    """Agents with ``capacity`` slots (default: one per message). Messages go to their ``slot`` when
    ``capacity`` is given, else in order. Agents without history get their current state as the only
    valid history entry; longer histories keep their last ``history_steps`` entries."""
    n = len(msgs)
    cap = n if capacity is None else capacity
    out = Agents.empty(cap, history_steps)
    if n == 0:
        return out
    if capacity is None:
        slots = np.arange(n)
    else:
        slots = np.fromiter((a.slot for a in msgs), np.int64, n)
        bad = np.flatnonzero((slots < 0) | (slots >= cap))
        if bad.size:
            k = int(bad[0])
            raise ConfigError(f"agents[{k}].slot = {slots[k]} is outside the capacity {cap}")

    rows = np.array([(a.id, a.agent_type, p.x_m, p.y_m, p.yaw_rad, a.speed_mps, a.length_m, a.width_m)
                     for a in msgs for p in (a.pose,)], _AGENT_ROW)
    out.id[slots], out.valid[slots] = rows["id"], True
    types = rows["agent_type"]
    known = AGENT_TYPES[np.minimum(np.searchsorted(AGENT_TYPES, types), len(AGENT_TYPES) - 1)] == types
    out.agent_type[slots] = np.where(known, types, 0)
    out.xy[slots, 0], out.xy[slots, 1], out.yaw[slots] = rows["x"], rows["y"], rows["yaw"]
    out.speed[slots], out.length[slots], out.width[slots] = rows["speed"], rows["length"], rows["width"]
    if history_steps:
        history, valid, ok = _histories_from_wire(msgs, history_steps)
        out.history[slots[ok]], out.history_valid[slots[ok]] = history[ok], valid[ok]
        for k in np.flatnonzero(~ok).tolist():  # other layouts (ragged or no history): field by field
            _history_from_proto(msgs[k], out, int(slots[k]), history_steps)
    return out


def _histories_from_wire(msgs: Sequence[world_pb2.Agent], steps: int
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The histories of agents whose five history arrays have exactly ``steps`` entries, read in bulk
    from the tail of their serialization: (N, steps, 4) float64, (N, steps) bool and ok (N,) bool.

    Serialization is canonical (fields in number order, zeros omitted, unknown fields last), so an agent
    without slot, controller or unknown fields ends with exactly the records of fields 7-11; ``ok`` is
    False where those tags and lengths are not all in place (the caller decodes those field by field)."""
    dtype, template = _history_layout(steps)
    size = dtype.itemsize
    tails = [a.SerializeToString()[-size:] for a in msgs]
    if any(len(tail) < size for tail in tails):
        tails = [tail.rjust(size, b"\0") for tail in tails]
    rec = np.frombuffer(b"".join(tails), dtype)
    ok = (rec["history_valid"] <= 1).all(-1)
    for name in dtype.names:
        if name.endswith("_tag"):
            ok &= (rec[name] == template[name]).all(-1)
    history = np.stack([rec[name] for name in _HISTORY_FIELDS], -1)
    return history, rec["history_valid"].astype(bool), ok


@functools.lru_cache(maxsize=16)
def _history_layout(steps: int) -> tuple[np.dtype, np.ndarray]:
    return _layout(_history_items(steps))


def _history_from_proto(a: world_pb2.Agent, out: Agents, slot: int, history_steps: int) -> None:
    h = min(len(a.history_x_m), history_steps)
    if h:
        hist = np.stack([np.asarray(getattr(a, name), np.float64) for name in _HISTORY_FIELDS], -1)
        out.history[slot, -h:] = hist[-h:]
        out.history_valid[slot, -h:] = np.asarray(a.history_valid, bool)[-h:]
    elif history_steps:
        out.history[slot, -1] = (a.pose.x_m, a.pose.y_m, a.pose.yaw_rad, a.speed_mps)
        out.history_valid[slot, -1] = True


def policy_of_from_proto(msgs: Sequence[world_pb2.Agent], capacity: int) -> np.ndarray:
    """(C,) int8 Frame.policy_of: -1 for free slots."""
    out = np.full(capacity, -1, np.int8)
    for a in msgs:
        out[a.slot] = _CONTROLLER_FROM_WIRE.get(a.controller, -1)
    return out
