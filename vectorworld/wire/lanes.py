"""Lanes on the wire: per-lane byte cache, per-session memos, and delta delivery (``LANE_DELIVERY_DELTA``).

An observation of the procedural world holds ~140 lanes (~65 KB, ~70 % of the message) and the lanes in
view change only every few steps, by one or two lanes. Three layers avoid re-sending and re-decoding them:

* every lane is serialized once in its life (:data:`_LANE_WIRE`, keyed by the immutable lane object);
* FULL delivery: :class:`LaneEncodeMemo` (server) reuses the previous observation's encoded lane block,
  :class:`LaneDecodeCache` (client) reuses lanes whose bytes it decoded for the previous observation;
* DELTA delivery: :class:`LaneDeltaEncoder` (server, one per session) sends the ids of the lanes in view
  plus the lanes new or changed since the session's previous observation; :class:`LaneDecodeCache`
  rebuilds the complete, ordered lane tuple from the lanes it holds (``Observation.lane_delivery`` in
  proto/vectorworld/v1/world.proto defines the fields).

Only protobuf is imported (no grpc): this is core code shared by the server and the client.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from vectorworld.errors import DataFormatError
from vectorworld.scene import Lane
from vectorworld.v1 import world_pb2
from vectorworld.wire.raw import lane_from_proto, lane_to_proto
from vectorworld.wire.varint import LEN, VARINT, encode_varint, field_tag

DELTA = world_pb2.LANE_DELIVERY_DELTA
FULL = world_pb2.LANE_DELIVERY_FULL
_OBSERVATION = world_pb2.Observation.DESCRIPTOR.fields_by_name
LANES_FIELD = _OBSERVATION["lanes"].number
_DELIVERY_FULL = field_tag(_OBSERVATION["lane_delivery"].number, VARINT) + encode_varint(FULL)
_DELIVERY_DELTA = field_tag(_OBSERVATION["lane_delivery"].number, VARINT) + encode_varint(DELTA)
_IDS_TAG = field_tag(_OBSERVATION["lane_ids"].number, LEN)
_BASE_STEP_TAG = field_tag(_OBSERVATION["lane_base_step"].number, VARINT)


class _LaneWireCache:
    """Serialized ``Lane`` messages by lane object, each prefixed with its length varint.

    Lanes are immutable values (an edited lane is a new object, see :class:`~vectorworld.scene.LaneGraph`),
    so a lane is encoded once in its life; an entry goes when its lane is garbage-collected (weak
    reference), so the cache never outlives the worlds that hold the lanes. Thread-safe under the GIL."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Lane], bytes]] = {}

    def get(self, lane: Lane) -> bytes:
        key = id(lane)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is lane:
            return entry[1]
        data = lane_to_proto(lane).SerializeToString()
        data = encode_varint(len(data)) + data
        entries = self._entries

        def forget(ref: weakref.ref[Lane]) -> None:
            if entries.get(key, (None,))[0] is ref:
                entries.pop(key, None)

        entries[key] = (weakref.ref(lane, forget), data)
        return data

    def __len__(self) -> int:
        return len(self._entries)


_LANE_WIRE = _LaneWireCache()


def lanes_to_wire(lanes: Sequence[Lane], field_number: int) -> bytes:
    """The wire bytes of ``lanes`` as entries of the repeated ``Lane`` field ``field_number`` of the
    enclosing message (merge them with ``MergeFromString``); each lane is serialized once in its life."""
    tag, cache = field_tag(field_number, LEN), _LANE_WIRE
    return tag + tag.join([cache.get(lane) for lane in lanes]) if lanes else b""


class LaneEncodeMemo:
    """The encoded lanes of a session's previous observation, reused while the next observation holds the
    very same lane objects (most steps: the lanes in view change every few steps). One per session; it
    keeps those lanes alive until the next call. Concurrent calls are safe (they may only miss)."""

    def __init__(self) -> None:
        self._last: tuple[int, tuple[Lane, ...], bytes] = (0, (), b"")

    def encode(self, lanes: Sequence[Lane], field_number: int) -> bytes:
        number, previous, data = self._last
        if number == field_number and len(previous) == len(lanes) and all(map(operator.is_, previous, lanes)):
            return data
        data = lanes_to_wire(lanes, field_number)
        self._last = (field_number, tuple(lanes), data)
        return data


@dataclass(frozen=True)
class LaneDelta:
    """What :meth:`LaneDeltaEncoder.encode` puts into an Observation.

    delivery: ``LANE_DELIVERY_FULL`` (every lane in view is sent) or ``LANE_DELIVERY_DELTA``; sent: how many
    lanes are sent; ids: every lane id in view, in order (DELTA); base_step: step of the observation the
    delta applies to (DELTA); wire: the wire bytes of all of that as Observation fields (lanes,
    lane_delivery, lane_ids, lane_base_step), to merge with ``MergeFromString``."""

    delivery: int
    sent: int
    ids: tuple[int, ...]
    base_step: int
    wire: bytes


def _delta_wire(lanes: Sequence[Lane], ids_wire: bytes, base_step: int) -> bytes:
    """Observation fields of a DELTA: the lanes sent, lane_delivery, lane_ids (packed, given), lane_base_step."""
    return (lanes_to_wire(lanes, LANES_FIELD) + _DELIVERY_DELTA + ids_wire
            + _BASE_STEP_TAG + encode_varint(base_step & ((1 << 64) - 1)))


def _ids_wire(ids: Sequence[int]) -> bytes:
    """The packed ``lane_ids`` field."""
    data = b"".join([encode_varint(i) for i in ids])
    return _IDS_TAG + encode_varint(len(data)) + data


class LaneDeltaEncoder:
    """Server side of ``LANE_DELIVERY_DELTA`` for one session: the lanes of the last observation it encoded.

    Call :meth:`encode` for every observation the session sends from CreateSession, Step and StreamSession,
    in step order and under the session's lock (GetSession's complete observations do not go through it).
    A lane counts as changed when the lane of its id is another object whose bytes differ (lanes are
    immutable; an edited lane is a new object)."""

    def __init__(self) -> None:
        self._step: int | None = None
        self._lanes: tuple[Lane, ...] = ()
        self._ids: tuple[int, ...] = ()
        self._ids_wire = b""
        self._by_id: dict[int, Lane] = {}

    def encode(self, lanes: Sequence[Lane], step: int) -> LaneDelta:
        """The lane fields of the observation of ``step`` holding ``lanes``; remembers them as the base of
        the next delta. The first observation (and one with duplicate lane ids) goes out complete."""
        base_step, held = self._step, self._lanes
        if base_step is not None and len(held) == len(lanes) and all(map(operator.is_, held, lanes)):
            self._step = step  # the very same lanes as last time (most steps)
            return LaneDelta(DELTA, 0, self._ids, base_step, _delta_wire((), self._ids_wire, base_step))
        ids = tuple(int(lane.id) for lane in lanes)
        by_id = dict(zip(ids, lanes, strict=True))
        if len(by_id) != len(ids):  # duplicate ids: no delta can name them; start afresh next time
            self._step, self._lanes, self._ids, self._ids_wire, self._by_id = None, (), (), b"", {}
            return LaneDelta(FULL, len(lanes), (), 0, lanes_to_wire(lanes, LANES_FIELD) + _DELIVERY_FULL)
        ids_wire = self._ids_wire if ids == self._ids else _ids_wire(ids)
        if base_step is None:
            out = LaneDelta(FULL, len(lanes), (), 0, lanes_to_wire(lanes, LANES_FIELD) + _DELIVERY_FULL)
        else:
            previous, cache = self._by_id, _LANE_WIRE
            changed = [lane for lane in lanes if (old := previous.get(int(lane.id))) is not lane
                       and (old is None or cache.get(old) != cache.get(lane))]
            out = LaneDelta(DELTA, len(changed), ids, base_step, _delta_wire(changed, ids_wire, base_step))
        self._step, self._lanes, self._ids, self._ids_wire, self._by_id = step, tuple(lanes), ids, ids_wire, by_id
        return out


@dataclass(frozen=True)
class _Held:
    """The lanes of the last observation a :class:`LaneDecodeCache` decoded: its step, lane ids, lanes."""

    step: int
    ids: tuple[int, ...]
    lanes: tuple[Lane, ...]


class LaneDecodeCache:
    """Client-side lanes of one session: decodes complete and delta lane sets into the full lane tuple.

    Complete sets (FULL or UNSPECIFIED): a lane whose bytes equal one decoded for the previous observation
    is the same :class:`Lane` value and is reused (exact: equal bytes, equal message). Deltas: lanes not
    sent are taken from the previous observation. Holds the lanes of the latest observation only. One per
    session, used by one consumer at a time (the server's step order is the decode order)."""

    def __init__(self) -> None:
        self._last: tuple[list[bytes], tuple[Lane, ...]] = ([], ())
        self._held: _Held | None = None

    def holds(self, step: int) -> bool:
        """True if the lanes of the observation of ``step`` are held (a delta based on it can be applied)."""
        return self._held is not None and self._held.step == step

    def decode(self, msgs: Sequence[world_pb2.Lane]) -> tuple[Lane, ...]:
        """A complete lane set (the ``lanes`` of a FULL observation)."""
        keys = [msg.SerializeToString() for msg in msgs]
        previous_keys, previous = self._last
        if keys == previous_keys:  # the same lanes as last time (most steps)
            return previous
        known = dict(zip(previous_keys, previous, strict=True))
        lanes = []
        for key, msg in zip(keys, msgs, strict=True):
            lane = known.get(key)
            if lane is None:
                lane = known[key] = lane_from_proto(msg)
            lanes.append(lane)
        out = tuple(lanes)
        self._last = (keys, out)
        return out

    def observation_lanes(self, msg: world_pb2.Observation) -> tuple[Lane, ...]:
        """The complete lanes of ``msg`` in order, whether it carries them all or a delta; remembers them.

        Raises DataFormatError for a delta whose base step is not held (check :meth:`holds` first; the
        remedy is a complete observation from GetSession) or that names a lane it neither sends nor had."""
        if msg.lane_delivery != DELTA:
            lanes = self.decode(msg.lanes)
            self._held = _Held(msg.step, tuple(int(lane.id) for lane in lanes), lanes)
            return lanes
        held = self._held
        if held is None or held.step != msg.lane_base_step:
            raise DataFormatError(f"observation {msg.step}: its lanes are a delta on the observation of step "
                                  f"{msg.lane_base_step}, but the client holds "
                                  f"{'none' if held is None else f'those of step {held.step}'}; read the "
                                  f"complete observation with GetSession(include_observation=true)")
        ids = tuple(msg.lane_ids)
        if not msg.lanes and ids == held.ids:  # the same lanes as last time (most steps)
            lanes = held.lanes
        else:
            known = dict(zip(held.ids, held.lanes, strict=True))
            sent = [lane_from_proto(m) for m in msg.lanes]
            known.update((lane.id, lane) for lane in sent)
            try:
                lanes = tuple(known[i] for i in ids)
            except KeyError as err:
                raise DataFormatError(f"observation {msg.step}: lane_ids names lane {err.args[0]}, which is "
                                      f"neither in its lanes nor in the observation of step "
                                      f"{msg.lane_base_step}") from None
            extra = {lane.id for lane in sent} - set(ids)
            if extra:
                raise DataFormatError(f"observation {msg.step}: lanes {sorted(extra)[:5]} are sent but not "
                                      f"in lane_ids")
        self._held = _Held(msg.step, ids, lanes)
        return lanes
